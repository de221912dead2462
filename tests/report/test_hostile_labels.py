"""A record's labels are data (issue 50): a point's environment from an older or edited record
(a spec refuses such values today) prints as text, never as rich markup (`[/bold]` ended a run in
a MarkupError, its results unprinted) and never as a terminal escape sequence."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from harness.cli.console import say
from harness.record.run_record import RunRecord
from harness.report.exports import results_markdown
from harness.report.fitting import Fitted
from harness.report.labels import printable
from harness.report.terminal import run_screen
from tests.report.test_run_screen import real

HOSTILE = ["[/bold]", "[red]x[/red]", "\x1b[31mred", "\x1b]0;title\x07", "a\u202eb", "[link=file:///etc]x"]


def _with_label(record: RunRecord, value: str) -> str:
    """The spectrum's baseline timed under OMP_WAIT_POLICY=`value`: its label is in the verdict,
    the table, the frontier and the verification; returns the label."""
    a = next(a for a in record.analyses if a.name == "spectrum")
    t = next(t for t in a.timings if t.role == "baseline")
    v = next(v for v in a.verification if v.strategy == t.label)
    t.env, t.variant = {"OMP_WAIT_POLICY": value}, f"+OMP_WAIT_POLICY={value}"
    v.strategy = t.label
    return t.label


def _printed(shown: list[object]) -> str:
    console = Console(width=400, file=io.StringIO(), color_system=None, force_terminal=True, record=True)
    for item in shown:
        if isinstance(item, Fitted):
            console.print(item)
        else:
            say(str(item), console)
    return console.export_text()


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("options", [{}, {"wide": True}, {"verbose": True, "explain": True}])
def test_a_hostile_label_prints_as_text(tmp_path: Path, value: str, options: dict[str, bool]) -> None:
    record = real("main_job", tmp_path)
    label = _with_label(record, value)
    text = _printed(run_screen(record, **options))
    assert printable(label) in text and "\x1b" not in text and "\u202e" not in text
    assert f"faster than {printable(label)}" in text.splitlines()[0]  # the verdict names the baseline


@pytest.mark.parametrize("value", [v for v in HOSTILE if not v.isprintable()])
def test_a_hostile_label_in_the_markdown(tmp_path: Path, value: str) -> None:
    """`harness report --format md` prints to the terminal too."""
    record = real("main_job", tmp_path)
    label = _with_label(record, value)
    markdown = results_markdown(record)
    assert printable(label) in markdown and "\x1b" not in markdown
    assert "\u202e" not in markdown


@pytest.mark.parametrize("name", ["[/bold]", "[red]x", "a|b [link=x]y"])
def test_an_analysis_name_with_markup_prints_as_text(tmp_path: Path, name: str) -> None:
    """A spec's analysis name is free printable text, so `[/bold]` is a name: every line that names
    the analysis (verdicts, the table, --verbose's wall-time and variance lines) prints it as typed."""
    record = real("main_job", tmp_path)
    for a in record.analyses:
        a.name = f"{name}{a.name}"
    text = _printed(run_screen(record, verbose=True, explain=True))
    assert all(f"{name}{a}" in text for a in ("spectrum", "top3", "geometry"))
