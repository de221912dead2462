"""The run table's columns as drawn at 100 and 160 columns (issue 48): the rounds column outlasts
the others a long speedup cell pushes out, and `--explain` explains what is drawn, the rounds'
forms too, never a column the width left out."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from harness.record.run_record import RECORD, RunRecord, load_record
from harness.report.labels import COMPUTE_TOTAL, RESUMED
from harness.report.terminal import ERRORS_APART, RUN_COLUMNS, run_table

RECORDS = Path(__file__).parent / "records"


def _record(tmp_path: Path, long_cell: bool) -> RunRecord:
    shutil.copy(RECORDS / "main_job.json", tmp_path / RECORD)
    record = load_record(tmp_path)
    if long_cell:  # the walk-through's second run: `1,453x (interval too wide to say) ?`
        fastest = max(record.analyses[0].timings, key=lambda t: t.speedup or 0)
        fastest.speedup, fastest.speedup_ci, fastest.unresolved = 1453.0, (13.79, 152983.0), True
    return record


def _drawn(record: RunRecord, width: int, wide: bool = False, verbose: bool = False) -> tuple[list[str], str]:
    fitted = run_table(record, wide=wide, explain=True, verbose=verbose)
    table = fitted.fit(Console(width=width, file=io.StringIO()), width)
    return [str(c.header) for c in table.columns], " ".join(str(table.caption).split())


@pytest.mark.parametrize("width", [90, 160])
@pytest.mark.parametrize("long_cell", [False, True])
def test_the_rounds_column_outlasts_dtype(width: int, long_cell: bool, tmp_path: Path) -> None:
    headers, _ = _drawn(_record(tmp_path, long_cell), width)
    assert "rounds" in headers
    assert ("dtype" in headers) == (width == 160)  # at 90 columns something leaves: dtype, first


@pytest.mark.parametrize("width", [100, 160])
def test_explain_notes_only_the_columns_drawn(width: int, tmp_path: Path) -> None:
    headers, caption = _drawn(_record(tmp_path, True), width, wide=True)
    assert ("GFLOP/s: achieved" in caption) == ("GFLOP/s" in headers)
    assert ("Device (library)" in caption) == ("device" in headers)
    assert ("dtype: its arithmetic" in caption) == ("dtype" in headers)
    assert (f"{ERRORS_APART} gives each" in caption) == (ERRORS_APART in headers)
    assert "the last column gives each" not in caption
    assert width == 160 or ERRORS_APART not in headers  # the case the walk-through saw


@pytest.mark.parametrize("verbose", [False, True])
def test_explain_says_what_each_form_of_rounds_means(verbose: bool, tmp_path: Path) -> None:
    _, caption = _drawn(_record(tmp_path, False), 160, verbose=verbose)
    for form in ("3+6, this run's 3 and 6 pooled", "0+3, none timed by this run", f"3+6 r, resumed: {RESUMED}"):
        assert form in caption  # walk 9: `resumed` was explained in docs/limits.md alone
    assert "a mean, not a median" in caption  # walk 11: "median over the rounds" of two groups' average
    assert ("3+2 (torch 1)" in caption) == verbose  # the benchmark summary it explains is printed with --verbose only


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("width", [100, 200])
def test_explain_describes_what_is_drawn_and_says_where_the_rest_is(width: int, wide: bool, tmp_path: Path) -> None:
    """Walk 6: at 100 columns the speedup's note was `the baseline's compute total over the
    strategy's`, of a compute total the width had left out; at 200 every column is drawn."""
    headers, caption = _drawn(_record(tmp_path, False), width, wide=wide)
    explained, _, left_out = caption.partition("(left out at this width: ")
    assert (COMPUTE_TOTAL in explained.lower()) == (COMPUTE_TOTAL in headers)
    gone = [c for c in RUN_COLUMNS + ((ERRORS_APART,) if wide else ()) if c not in headers]
    assert [c for c in gone if c in left_out] == gone and bool(left_out) == bool(gone)
    assert not gone or "columns show" in left_out and "HTML report (`harness report RUN`)" in left_out
    assert ("--wide gives each" in explained) == (not wide)  # the values' and vectors' errors apart
    assert (width == 100) == bool(gone)


@pytest.mark.parametrize("terminal", [False, True])
def test_the_note_on_columns_left_out_names_what_shows_them(terminal: bool, tmp_path: Path) -> None:
    """Walk-through 7: piped, the note said `a wider terminal shows it` where there is no terminal; walk 22
    met both wordings in two compares. One wording, in a terminal and a pipe alike: the width that draws the
    whole table, and that width does."""
    fitted = run_table(_record(tmp_path, False), wide=True)
    console = Console(width=100, file=io.StringIO(), force_terminal=terminal)
    note = " ".join(str(fitted.fit(console, 100).caption).split())
    shows = re.search(r"; (\d+) columns show (it|them) \(COLUMNS=(\d+)\), and so does the HTML report", note)
    assert shows is not None and shows.group(1) == shows.group(3) and "wider terminal" not in note, note
    needed = int(shows.group(1))
    assert [c.header for c in fitted.fit(console, needed).columns] == [c.header for c in fitted.table.columns]
    assert len(fitted.fit(console, needed - 1).columns) < len(fitted.table.columns)  # the least that shows them


def _too_wide(record: RunRecord) -> RunRecord:
    """The walk-through's second main run: the fastest's interval around 1, its ends 1,000x apart."""
    fastest = max(record.analyses[0].timings, key=lambda t: t.speedup or 0)
    fastest.speedup_ci, fastest.unresolved = (0.01, 100 * fastest.speedup), True
    return record


@pytest.mark.parametrize("width", range(80, 201, 4))
def test_the_columns_stay_when_an_interval_is_too_wide_to_read(width: int, tmp_path: Path) -> None:
    """Issue 48: `24.22x (interval too wide to say) ?` widened the speedup column, and the second
    run of the same spec at 100 columns lost its dtype column; `--wide` never shows less."""
    headers, _ = _drawn(_record(tmp_path, False), width)
    assert set(_drawn(_too_wide(_record(tmp_path, False)), width)[0]) >= set(headers)  # the cell costs no column
    assert set(_drawn(_too_wide(_record(tmp_path, False)), width, wide=True)[0]) >= set(headers)


def test_a_too_wide_interval_is_explained_under_the_table(tmp_path: Path) -> None:
    _, caption = _drawn(_too_wide(_record(tmp_path, False)), 100)
    assert "too wide (" in caption and "holds 1 and its ends are over 1,000x apart" in caption


def _other_run(record: RunRecord) -> RunRecord:
    """The next run of the same spec, its values as narrow as they come: the pick's mark on the
    shortest name, times of three figures, intervals `1.20x (1.10-1.30)` where the fixture's are
    `1,453x (1,086-2,501) ?`, every row timed."""
    for a in record.analyses:
        a.strategy = min((t.label for t in a.timings), key=len)
        a.skipped = []
        for t in a.timings:
            for g in t.groups:
                g.measurement.median_s = 1.23e-3 * g.sampled
            t.estimate_total_s = 1.23
            if t.role != "baseline":
                t.speedup, t.speedup_ci, t.unresolved = 1.2, (1.1, 1.3), False
    return record


@pytest.mark.parametrize("width", range(80, 201, 4))
def test_a_width_shows_the_same_columns_in_every_run_of_a_spec(width: int, tmp_path: Path) -> None:
    """Walk-through 3: at 100 columns one run of the smoke spec drew the compute total and the next
    did not, two characters apart; what a width shows hangs on the width, not on one run's values."""
    headers, _ = _drawn(_record(tmp_path, False), width)
    assert _drawn(_other_run(_record(tmp_path, False)), width)[0] == headers
    assert set(_drawn(_other_run(_record(tmp_path, False)), width, wide=True)[0]) >= set(headers)


@pytest.mark.parametrize("width", [100, 160])
def test_no_line_of_a_drawn_table_ends_in_blanks(width: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Walk-through 3: the blank rows between analyses were 95-100 spaces, and every row carried the
    padding of its last column, into a copy or a pipe (`COLUMNS=100 harness run ... | tee log`)."""
    monkeypatch.setenv("COLUMNS", str(width))
    out = io.StringIO()
    Console(width=width, file=out).print(run_table(_record(tmp_path, False), explain=True))
    lines = out.getvalue().splitlines()
    assert len(lines) > 10 and not [line for line in lines if line != line.rstrip()]


def test_a_note_under_the_table_hangs_as_every_warning_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Walk-through 6: at 160 columns the `% of peak >100%` note's second line began at column 0,
    unlike every other wrapped warning (in a pipe without COLUMNS it is whole: tests/base/test_lines.py)."""
    monkeypatch.setenv("COLUMNS", "100")
    out = io.StringIO()
    Console(width=100, file=out).print(run_table(_record(tmp_path, False), wide=True))
    lines = out.getvalue().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("(left out at this width:"))
    assert len(lines[at]) <= 100 and lines[at + 1].startswith("  ") and lines[at + 1].strip()


def _resumed(record: RunRecord, resumed: bool = True, own: int = 10, pooled: int = 12, kept: int = 0) -> RunRecord:
    """The walk 9 resumed run: each timing taken over from the stopped run, its rounds `10+12 r`;
    `kept`: of this run's rounds, those the stopped run timed (`10+12 (2 resumed)`)."""
    for a in record.analyses:
        for t in a.timings:
            t.resumed, t.resumed_rounds = resumed, kept
            for g in t.groups:
                g.rounds, g.pooled = [f"r.{i}#{a.name}#{i}" for i in range(own + pooled)], pooled
    return record


@pytest.mark.parametrize("width", [100, 140, 160])
@pytest.mark.parametrize("name", ["main_job", "busy_run"])
def test_a_column_a_wide_value_left_out_is_said(name: str, width: int, tmp_path: Path) -> None:
    """Walk 9: `3+6 resumed` widened the rounds column and the default 100-column table lost its
    dtype without a word; whatever the width holds for the same run not resumed and one resumed
    part way (`10+12 (2 resumed)`, still wide) leaves out, the line under the table names, as --wide's does."""
    shutil.copy(RECORDS / f"{name}.json", tmp_path / RECORD)
    console = Console(width=width, file=io.StringIO(), force_terminal=True)
    plain = run_table(_resumed(load_record(tmp_path), resumed=False)).fit(console, width)
    assert "left out at this width" not in str(plain.caption)  # the width alone leaves them silently
    table = run_table(_resumed(load_record(tmp_path), resumed=False, kept=2)).fit(console, width)
    headers = [str(c.header) for c in table.columns]
    gone = [str(c.header) for c in plain.columns if c.header not in headers]
    _, said, left_out = " ".join(str(table.caption).split()).partition("(left out at this width: ")
    assert bool(said) == bool(gone) and all(c in left_out.split(";")[0] for c in gone)
    assert said or name == "busy_run" or width == 160  # main_job's lose a column at 100 and 140


@pytest.mark.parametrize(("own", "pooled"), [(3, 6), (3, 12)])
@pytest.mark.parametrize("name", ["main_job", "busy_run"])
def test_a_resumed_run_draws_the_columns_of_the_same_run_not_resumed(name: str, own: int, pooled: int, tmp_path: Path) -> None:
    """Walk 12: at 100 columns the resumed run's `3+6 resumed` cost it the dtype every other run of
    the spec showed; its mark (`3+6 r`) is no wider than the header, and the line under the table says it."""
    shutil.copy(RECORDS / f"{name}.json", tmp_path / RECORD)
    for width in range(80, 200, 2):
        console = Console(width=width, file=io.StringIO(), force_terminal=True)
        plain, resumed = (run_table(_resumed(load_record(tmp_path), on, own, pooled)).fit(console, width) for on in (False, True))
        assert [c.header for c in resumed.columns] == [c.header for c in plain.columns], width
        if "rounds" in [c.header for c in resumed.columns]:
            cells = resumed.columns[[c.header for c in resumed.columns].index("rounds")]._cells
            assert f"{own}+{pooled} r" in map(str, cells)
            timed = ", ".join(a.name for a in load_record(tmp_path).analyses if a.timings)
            assert f"r ({timed}): resumed, {RESUMED}" in " ".join(str(resumed.caption).split())
