"""`harness --help`'s examples at the reader's width (walk 22: at 80 columns a description's last word
hung alone under its command, `every problem of a spec at` then `once`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.cli.main import EXAMPLES
from tests.conftest import ROOT


def examples_at(columns: int) -> list[str]:
    """The real `harness --help`'s examples block, as printed at `columns`."""
    done = subprocess.run([sys.executable, "-m", "harness", "--help"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": str(columns)}, check=True, cwd=ROOT)  # this checkout's
    lines = done.stdout.splitlines()
    start = lines.index("examples:")
    return lines[start + 1:]


@pytest.mark.parametrize("columns", [60, 80, 100])
def test_no_example_leaves_a_word_alone_on_a_line(columns: int) -> None:
    shown = examples_at(columns)
    width = columns - 2  # argparse's
    assert all(len(line) <= width for line in shown), shown
    continued = [line for line in shown if line and not line.startswith(("  harness ", "`harness"))]
    assert all(len(line.split()) > 1 for line in continued), shown
    assert " ".join(" ".join(shown).split()) == " ".join(EXAMPLES.removeprefix("examples:").split())  # every word, in order
    commands = [line.strip() for line in EXAMPLES.splitlines() if line.startswith("  harness ")]
    if columns == 100:  # wide enough: each example on one line, its columns as written
        assert [line for line in shown if line.startswith("  harness ")] == [f"  {c}" for c in commands]
    else:  # each description on a line of its own, further in than a command's continuation
        assert "      every problem of a spec at once" in shown and "  harness validate configs/smoke.toml" in shown
