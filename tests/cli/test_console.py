"""The consoles' width without a terminal: what COLUMNS asks for (a pipe into `tee` in a 100-column
terminal), else 160; a terminal's own width is rich's to read; a line wrapped on a terminal, or in
a pipe at the COLUMNS asked for, hangs under its item."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from harness.cli.console import WIDE, say, width
from harness.data.registry import build_source
from harness.data.workload import Workload
from harness.machine.info import probe
from harness.plan.compiler import compile_plan
from harness.report.plan_view import plan_lines
from harness.specs.reading import load_spec
from tests.conftest import CONFIGS, ROOT


@pytest.mark.parametrize("columns, expected", [("100", 100), (None, WIDE), ("", WIDE), ("wide", WIDE), ("0", WIDE),
                                               ("-5", WIDE), ("99999999", WIDE)])
def test_without_a_terminal_the_width_is_columns_else_wide(columns: str | None, expected: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert width(False) == expected
    assert width(True) is None


def test_a_piped_command_draws_its_tables_at_the_columns_asked_for() -> None:
    """The consoles a command's tables are drawn on, in a process whose stdout and stderr are pipes."""
    code = "from harness.cli.console import out, err; print(out.width, err.width)"
    for columns, expected in (("100", "100 100"), (None, f"{WIDE} {WIDE}")):
        env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | ({"COLUMNS": columns} if columns else {})
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert done.stdout.split() == expected.split(), done.stderr


def test_a_wrapped_plan_line_hangs_under_its_item() -> None:
    """`harness plan` at 100 columns (issue 48, CLI 3): a sub-line's continuation went to column 0
    and read as a new item; it hangs two columns past the line's own indent, cut between words."""
    spec = load_spec(CONFIGS / "task_geometry.toml", [])
    plan = compile_plan(spec, Workload.from_source(build_source(spec.data, spec.experiment.seed, Path("."))),
                        probe(), None)
    wrapped = 0
    for line in plan_lines(plan):
        terminal = Console(file=io.StringIO(), width=100, force_terminal=True)
        say(line, terminal, hang=2)
        first, *rest = terminal.file.getvalue().splitlines()  # type: ignore[attr-defined]
        own = len(line) - len(line.lstrip(" "))
        assert first.startswith(line[:own + 10]) and len(first) <= 100
        assert all(s.startswith(" " * (own + 2)) and s[own + 2] != " " and len(s) <= 100 for s in rest), rest
        # cut between words: the words are the line's
        assert " ".join([first, *rest]).split() == line.replace("\\[", "[").split()
        wrapped += bool(rest)
    assert wrapped >= 3  # the case asked about: the plan's long sub-lines do wrap at 100 columns


def test_a_pipe_wraps_lines_at_the_columns_asked_for_and_keeps_them_whole_without() -> None:
    """Issue 48 (piped output): `COLUMNS=100 harness plan ... | cat` fitted its table to 100 columns
    but printed ~300-character reason lines; without COLUMNS a pipe keeps each line whole (grep)."""
    lines = {}
    for columns in ("100", None):
        env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | ({"COLUMNS": columns} if columns else {})
        done = subprocess.run([sys.executable, "-m", "harness", "plan", str(CONFIGS / "smoke.toml")], cwd=ROOT,
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        lines[columns] = done.stdout.splitlines()
    assert max(map(len, lines["100"])) <= 100
    assert max(map(len, lines[None])) > 200  # the same reasons, each on one line
    long = next(line for line in lines[None] if len(line) > 200)
    at = next(i for i, line in enumerate(lines["100"]) if line.startswith(long[:40]))  # wrapped, hanging under it:
    assert lines["100"][at + 1].startswith("  ") and lines["100"][at + 1].split()[0] in long.split()
