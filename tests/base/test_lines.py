"""Lines wrapped between words keep a number with its unit (issue 48: at 160 columns a line broke
between `near 173` and `µs`), in the plain helper and on a console, with no NBSP written out."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console
from rich.text import Text

from harness.base.lines import NBSP, print_line, print_shown, wrapped

LINE = "bimodal: 19 samples near 173 µs, 2 near 527 µs; est. 4.66 s, took 73 % of 2.5 GiB at 19.4 GFLOP/s"
UNITS = ("173 µs", "527 µs", "4.66 s", "73 %", "2.5 GiB", "19.4 GFLOP/s")


@pytest.mark.parametrize("width", range(16, len(LINE) + 1))
def test_a_wrapped_line_keeps_each_number_with_its_unit(width: int) -> None:
    lines = wrapped(LINE, width).splitlines()
    assert NBSP not in "".join(lines) and " ".join(lines).split() == LINE.split()
    assert all(len(line) <= width for line in lines)
    joined = [line.strip() for line in lines]
    for pair in UNITS:
        assert any(pair in line for line in joined), (pair, lines)


@pytest.mark.parametrize("width", [30, 40, 47, 60])
def test_a_console_line_keeps_each_number_with_its_unit_and_its_style(width: int) -> None:
    terminal = Console(file=io.StringIO(), width=width, force_terminal=True, color_system=None)
    print_line(terminal, f"[yellow]note:[/] {LINE}", markup=True)
    lines = terminal.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert NBSP not in "".join(lines) and lines[0].startswith("note: bimodal")
    assert all(len(line) <= width for line in lines)
    assert all(any(pair in line for line in lines) for pair in UNITS), lines


def test_a_pipe_without_columns_keeps_every_note_under_the_run_table_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Walk-through 8 (README 1): in a pipe the table's notes wrapped at 160 columns ("--explain says"
    / "  more") while the lines after them were kept whole; `grep` must find every note whole."""
    from harness.record.run_record import RunRecord
    from harness.report.fitting import Fitted
    from harness.report.terminal import run_screen
    from tests.report.test_run_screen import RECORDS

    monkeypatch.delenv("COLUMNS", raising=False)
    record = RunRecord.model_validate_json((RECORDS / "main_job.json").read_text())
    pipe = Console(file=io.StringIO(), width=160, color_system=None)  # as harness.cli.console draws a pipe
    items = run_screen(record, wide=True, explain=True)
    for item in items:
        print_shown(pipe, item)
    drawn = pipe.file.getvalue().splitlines()  # type: ignore[attr-defined]
    table = next(item for item in items if isinstance(item, Fitted))
    notes = [Text.from_markup(line).plain for line in str(table.fit(pipe, 160).caption).split("\n")]
    assert any(len(note) > 160 for note in notes)  # the case at hand: a note longer than the table's width
    assert all(note in drawn for note in notes), [n[:60] for n in notes if n not in drawn]
    lines = [Text.from_markup(line).plain for line in items if isinstance(line, str)]
    assert all(line in drawn for line in lines)


def test_a_command_in_backticks_is_never_parted_where_it_fits_nor_inside_a_substitution() -> None:
    """Walk 10: `harness history` wrapped `"$(harness` / `asv-machine)"` over two lines; pasted, each
    line ran alone."""
    line = ("x: no results here; record some first: `asv machine --yes --machine \"$(harness asv-machine)\"`, then "
            "`asv run --machine \"$M\" --python=same --quick --set-commit-hash \"$(git rev-parse HEAD)\"` (docs)")
    for width in (60, 100, 160):
        shown = wrapped(line, width)
        whole = [c for c in re.findall(r"`[^`]+`", line) if len(c) <= width - 4]
        assert whole and all(c in shown for c in whole), (width, shown)
        assert "$(harness asv-machine)" in shown and "$(git rev-parse HEAD)" in shown, (width, shown)


def test_a_wrap_never_begins_a_line_with_a_lone_minus() -> None:
    """Walk 12: `... (adapters` / `- 1, centred)` at 100 columns read as a bullet."""
    line = "spec.toml: analysis[1].components: 5 exceeds the 2 a PCA of 3 adapters has (adapters - 1, centred)"
    for width in range(30, len(line)):
        lines = wrapped(line, width).splitlines()
        assert not any(part.lstrip().startswith("- ") for part in lines), (width, lines)
        assert " ".join(lines).split() == line.split() and NBSP not in "".join(lines)


def test_a_finished_phases_line_wraps_with_the_hang_and_no_trailing_space(monkeypatch: pytest.MonkeyPatch) -> None:
    """Walk 20: `harness report results/sweep_rank/... 2>err` at COLUMNS=100 broke `rendering the sweep's
    report (results/...: its fits and points) in ` / `713 ms`: a trailing space, no 2-space hang."""
    from harness.base.progress import Display

    monkeypatch.setenv("COLUMNS", "100")
    pipe = Console(file=io.StringIO(), width=100, color_system=None)  # as harness.cli.console draws a pipe
    with Display(pipe) as display:
        assert not display.live
        for name, what in (("rendering the sweep's report", "its fits and points"),
                           ("rendering the report", "tables and charts")):
            with display.phase(name) as phase:
                phase.item(f"results/sweep_rank/20261129T033732Z-250e54f4-and-a-longer-name: {what}")
    lines = pipe.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert len(lines) == 4, lines  # each wrapped once
    assert all(len(line) <= 100 and line == line.rstrip() for line in lines), lines
    assert [line.startswith("  ") for line in lines] == [False, True, False, True], lines
    assert lines[0].startswith("rendering the sweep's report (") and lines[2].startswith("rendering the report (")
