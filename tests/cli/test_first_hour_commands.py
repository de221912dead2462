"""Issue 48's commands: `calibrate --quick` that keeps nothing exits 4 with a line saying why and
what to do, its lines wrap between words; `harness system` names the busiest processes; the API's
rows show as a DataFrame's head would, not as ~100 KB of dicts."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from harness.api.rows import Rows
from harness.cli.console import say
from harness.cli.main import main
from harness.machine import wisdom
from harness.machine.info import probe
from harness.machine.processes import TICKS_PER_S, busiest, cpu_ticks
from harness.report.machine_view import system_lines
from harness.run.calibrate import kept_note
from harness.bench.conditions import Conditions


def test_a_calibration_that_kept_nothing_exits_4_with_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    note = kept_note(0, ["other processes took 68% of the 2 CPUs"] * 15)
    assert note is not None

    def kept_none(where: Path, machine: object, display: object, quick: bool) -> tuple[object, list[str], int]:
        return wisdom.learn(where, probe()), [note], 0

    monkeypatch.setenv(wisdom.ENV, str(tmp_path))
    monkeypatch.setattr("harness.cli.commands.calibrate.measure_machine", kept_none)
    assert main(["calibrate", "--quick"]) == 4
    said = capsys.readouterr()
    assert said.out == "" and "kept none of 15 measurements" in said.err and "quiet machine" in said.err
    with pytest.raises(SystemExit):  # walk 20: nothing but the code said it exits 4, the README's list neither
        main(["calibrate", "--help"])
    assert "4 kept none" in " ".join(capsys.readouterr().out.split())
    readme = " ".join((Path(__file__).parents[2] / "README.md").read_text().split())
    assert "or `calibrate` kept no measurement" in readme[readme.index("Exit codes:"):]


def test_a_note_wraps_between_words_on_a_terminal() -> None:
    note = kept_note(0, ["other processes took 68% of the 2 CPUs"] * 15)
    assert note is not None
    console = Console(file=io.StringIO(), width=100, force_terminal=True, record=True, color_system=None)
    say(note, console)
    text = console.export_text()
    assert max(map(len, text.splitlines())) <= 100 and set(note.split()) <= set(text.split())


def test_a_calibration_that_could_time_nothing_says_so() -> None:
    assert kept_note(3, []) is None and "kept no measurement" in (kept_note(0, []) or "")


def fake_proc(root: Path, ticks: dict[int, int]) -> Path:
    for pid, t in ticks.items():
        (root / str(pid)).mkdir(parents=True, exist_ok=True)
        fields = ["S"] + ["0"] * 10 + [str(t), "0"] + ["0"] * 30  # utime is the 14th field, stime the 15th
        (root / str(pid) / "stat").write_text(f"{pid} (busy (one)) " + " ".join(fields))
        (root / str(pid) / "cmdline").write_bytes(f"python\0-m\0job{pid}\0".encode())
    return root


def test_the_busiest_processes_are_named_by_their_command(tmp_path: Path) -> None:
    before = cpu_ticks(fake_proc(tmp_path / "a", {10: 0, 11: 0, 12: 0, 99: 0}))
    after = cpu_ticks(fake_proc(tmp_path / "b", {10: 100, 11: 40, 12: 1, 99: 300}))
    busy = busiest(before, after, seconds=1.0, own=99)

    assert [b.pid for b in busy] == [10, 11] and busy[0].command == "python -m job10"
    assert busy[0].share == pytest.approx(100 / TICKS_PER_S)
    lines = system_lines(probe(), Conditions(cores=2, load_before=3.2, load_after=3.4, running_after=5, others_cpu=0.93, steal=0.0), busy)
    named = next(line for line in lines if line.startswith("busiest processes"))
    assert "python -m job10 (pid 10," in named and "job99" not in named


def test_rows_without_pandas_show_their_head_not_every_dict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    rows = Rows({f"column_{c}": c * r for c in range(30)} for r in range(500))
    shown = repr(rows)
    assert shown.startswith("500 rows x 30 columns: column_0, column_1")
    # the header wrapped at 100 columns between names, then 3 rows and the count of the rest
    assert len(shown.splitlines()) == 4 + 3 + 1 and len(shown) < 2_000 and rows[499]["column_2"] == 998


def test_system_names_each_pool_without_blanks_and_says_what_to_do_when_busy() -> None:
    """`openmp  2 threads` (a pool without a version) and a busy verdict with no next step."""
    from harness.machine.info import ThreadPool

    machine = probe().model_copy(update={"blas": [
        ThreadPool(api="openmp", library="libgomp", version=None, threads=2),
        ThreadPool(api="openblas", library="libscipy_openblas64_", version="0.3.31", threads=2)]})
    lines = system_lines(machine, Conditions(cores=2, load_before=3.2, load_after=3.4, running_after=5,
                                             others_cpu=0.93, steal=0.0))
    threads = next(line for line in lines if line.startswith("threads: "))
    assert threads.startswith("threads: openmp 2 threads; openblas 0.3.31 2 threads; torch ")
    assert "stop what is busy" in lines[-1] and "--budget 30s" in lines[-1]


def test_validate_hangs_its_continuation_as_every_command_does() -> None:
    """Walk 10: at 100 columns `validate` wrapped `shows what would run` to column 0, where `run`,
    `plan`, `compare` and `system` indent their continuations."""
    import os
    import subprocess
    import sys

    from tests.conftest import CONFIGS

    env = {**os.environ, "COLUMNS": "60"}
    done = subprocess.run([sys.executable, "-m", "harness", "validate", str(CONFIGS / "smoke.toml")],
                          capture_output=True, text=True, env=env, timeout=300)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) >= 2, done.stdout + done.stderr
    assert all(len(line) <= 60 for line in lines) and all(line.startswith("  ") for line in lines[1:])
