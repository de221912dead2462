"""The consoles' width without a terminal: what COLUMNS asks for (a pipe into `tee` in a 100-column
terminal), else 160; a terminal's own width is rich's to read."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.cli.console import WIDE, width


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
