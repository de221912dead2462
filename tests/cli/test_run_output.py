"""What `harness run` leaves on the screen: the table right below the progress display (no blank
lines from the live display closing, on a terminal or not), and a record whose command
reproduces the run."""

from __future__ import annotations

import argparse
import io
import re
import shlex
from pathlib import Path

import pytest
from rich.console import Console

from harness.cli import main as cli
from harness.record.run_record import load_record
from harness.report.labels import verdict_lines
from harness.cli.commands import run as run_command
from harness.base.progress import Display
from tests.conftest import CONFIGS

SMOKE = str(CONFIGS / "smoke.toml")
CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")


def screen(output: str) -> list[str]:
    """The lines a terminal shows after `output`: text, CR, LF, cursor up (CSI A) and erase line
    (CSI 2K) applied; other escapes dropped; trailing empty lines left out."""
    lines, row, col, i = [""], 0, 0, 0
    while i < len(output):
        if m := CSI.match(output, i):
            if m.group(2) == "A":
                row = max(0, row - int(m.group(1) or 1))
            elif m.group(2) == "K":
                lines[row] = ""
            i = m.end()
            continue
        ch = output[i]
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row, col = row + 1, 0
            lines += [""] * (row + 1 - len(lines))
        elif ch != "\x1b":
            line = lines[row].ljust(col)
            lines[row] = line[:col] + ch + line[col + 1:]
            col += 1
        i += 1
    while lines and not lines[-1].strip():
        lines.pop()
    return [line.rstrip() for line in lines]


def test_the_screen_emulation_applies_cursor_moves() -> None:
    assert screen("a\nbb\r\x1b[2K\x1b[1A\x1b[2Kc\n") == ["c"]


def test_the_live_display_leaves_no_blank_line_on_a_terminal() -> None:
    """Every phase ended, the live display's last render is empty; older rich versions then ended
    it with a newline nobody erased, the blank lines above the run table."""
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=100, height=30, color_system=None)
    console.print("before")
    with Display(console) as display:
        assert display.progress is not None  # live, as on a terminal
        with display.phase("outer", total=2) as outer:
            with display.phase("inner", total=3) as inner:
                inner.item("matrix 1")
                inner.advance(3)
                display.progress.refresh()  # two lines drawn
            outer.advance(2)
    console.print("the table")
    assert screen(buffer.getvalue()) == ["before", "the table"]


def test_run_output_starts_with_the_verdicts_then_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One line per analysis first, whatever it says: a verdict, or why none (at load 5-8 an analysis
    was left untimed and the test, which wanted a speedup in every line, failed)."""
    assert cli.main(["run", SMOKE, "-o", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    record = load_record(tmp_path / "r")
    verdicts = verdict_lines(record)  # a verdict, or why none (a busy machine may leave one untimed)
    assert [v.split(": ")[0] for v in verdicts[: len(record.analyses)]] == [a.name for a in record.analyses]
    assert out.startswith("\n".join(verdicts) + "\nsmoke: 12 matrices on "), out[:400]
    lines = out.splitlines()  # no blank line but the table's between its analyses
    names = {a.name for a in record.analyses}
    assert all(lines[i + 1].split()[0] in names for i, line in enumerate(lines) if not line.strip())


def parse(argv: list[str]) -> argparse.Namespace:
    return cli.parser().parse_args(argv)


def test_the_recorded_command_has_the_flags_and_leaves_the_output_folder_out() -> None:
    """The report's Reproduce command runs as shown: with the run's -o it was refused, the folder
    holding the run (a newcomer's walk-through); without it, it writes a fresh folder under results/."""
    argv = ["run", SMOKE, "--set", "data.adapters=4", "--budget", "5s", "-o", "out dir", "--report", "--no-cache"]
    command = run_command._run_command(parse(argv))
    assert shlex.split(command) == ["harness", "run", SMOKE, "--set=data.adapters=4", '--set=benchmark.budget="5s"',
                                    "--report", "--no-cache"]
    assert shlex.split(run_command._run_command(parse(["run", SMOKE]))) == ["harness", "run", SMOKE]
    # and the command parses back to the same arguments, a fresh folder's
    again = parse(shlex.split(command)[1:])
    assert (again.output, again.report, again.no_cache) == (None, True, True)


def test_the_ctrl_c_line_promises_only_what_a_resume_keeps() -> None:
    """A resume keeps a finished analysis' timings only where its own plan times it alike
    (run.folder.finished_analyses); the line said every finished one kept them, in words a
    newcomer could not parse ("of the 2 finished, each its new plan times alike keeps its timings")."""
    held = run_command.holds({"complete": False, "analyses": [{}, {}]}, 3)
    assert held == ("a record marked incomplete after 2 of 3 analyses; the same command again resumes it: the 2 "
                    "finished analyses keep their timings where the new plan times them the same way, the rest are "
                    "timed; what it computed comes back from the cache")
    assert run_command.holds({"analyses": [{}]}, 2, interrupted=True).endswith(
        "the 1 finished analysis keeps its timings where the new plan times it the same way, the rest are timed but "
        "for the rounds already timed of the analysis it stopped in; what it computed comes back from the cache")
    assert run_command.holds({"analyses": "?"}, 1).endswith("after 0 of 1 analysis; the same command again resumes "
                                                            "it: what it computed comes back from the cache")
    assert run_command.holds({"analyses": []}, 1, cached=False).endswith(  # --no-cache: nothing comes back
        "resumes it: what it computed is computed again (--no-cache)")
    assert run_command.holds({"complete": True}, 2) == "its finished record (its measurements were not kept)"
