"""Walk 16's compare screen: the `≠` footnote says how asv's 1.1x relates to the gate's own factor
where they differ, and a too-wide row never carries `≠` (one carried it, its neighbour not)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.record.run_record import RunRecord
from harness.report.compare import Comparison, compare_records
from harness.report.compare_view import apart_note, compare_table
from harness.report.labels import APART_MARK

from .test_run_screen import real


def _apart(tmp_path: Path, factor: float | None = None) -> Comparison:
    """B pools A's rounds and adds one slow round of its own: every row's B / A has no interval and
    lies beyond 1.1x from the medians' ratio, so every row is marked."""
    tmp_path.mkdir(exist_ok=True)
    a: RunRecord = real("main_job", tmp_path)
    b = a.model_copy(deep=True)
    for g in (g for an in b.analyses for t in an.timings for g in t.groups):
        g.rounds, g.pooled = g.rounds + [g.rounds[0].replace("2026", "2027")], len(g.rounds)
        g.measurement.samples_s = g.measurement.samples_s + [3 * max(g.measurement.samples_s)]
        g.measurement.median_s = float(np.median(g.measurement.samples_s))
    return compare_records(a, b, ("runs/a", "runs/b"), **({} if factor is None else {"factor": factor}))


def test_the_apart_note_relates_the_gates_factor_to_asvs_only_when_they_differ(tmp_path: Path) -> None:
    """`B / A beyond 1.2x` in the header, `over asv's 1.1x from it` in the footnote, unexplained; in
    short sentences since walk 20."""
    gated = apart_note(_apart(tmp_path / "gated", 1.2))
    assert gated is not None and "over 1.1x from B / A (asv's 1.1x, not the gate's 1.2x), which has no" in gated
    plain = apart_note(_apart(tmp_path / "plain"))
    assert plain is not None and "over 1.1x from B / A, which has no" in plain and "gate" not in plain


def test_the_apart_note_says_only_the_rules_of_the_rows_it_marks(tmp_path: Path) -> None:
    """Walk 24: rows `2.38 ≠  1, 1+1  too few rounds` under a note of the interval's rule, which they lack, and of
    too wide rows, of which there were none. Rows of too few rounds alone: their rule alone, in one sentence."""
    c = _apart(tmp_path)
    note = apart_note(c)
    assert note == (f"≠ marks all {len(c.rows)} rows. On each, the medians' ratio is over 1.1x from B / A, which has "
                    "no interval (too few rounds). The medians use every round each record holds, pooled ones too. "
                    "B / A takes each run's own rounds alone, and is the comparison."), note
    # one row with an interval that excludes its medians' ratio: each rule names its own rows
    shown = c.rows[0].time_b_s / c.rows[0].time_a_s
    c.rows[0] = c.rows[0].model_copy(update={"ratio_ci": (2 * shown, 3 * shown)})
    note = apart_note(c)
    assert note is not None and note.startswith(
        f"≠ marks all {len(c.rows)} rows. On {c.rows[0].label}, the medians' ratio lies outside B / A's interval. On "
        f"{len(c.rows) - 1} of {len(c.rows)} rows: {c.rows[1].label}, "), note
    assert "A too wide row" not in note
    # one row marked: `On it`, not `On each` (walk 25)
    c.rows = c.rows[:1]
    assert (note := apart_note(c)) is not None and note.startswith(f"≠ marks {c.rows[0].label}. On it, "), note


def test_a_too_wide_row_never_carries_the_apart_mark(tmp_path: Path) -> None:
    """Walk 16: `0.906 ≠ … too wide (x10 either way)` beside `2.46 … too wide (x624 either way)`."""
    c = _apart(tmp_path)
    assert all(r.times_apart for r in c.rows)
    c.rows[0] = c.rows[0].model_copy(update={"wide": "too wide (x10 either way)"})
    assert not c.rows[0].times_apart
    table = compare_table(c).table
    ratios = [str(cell) for col in table.columns if str(col.header).startswith("B / A") for cell in col._cells]
    assert not ratios[0].endswith(APART_MARK) and all(cell.endswith(APART_MARK) for cell in ratios[1:])
    note, verbose = apart_note(c), apart_note(c, verbose=True)
    assert note is not None and c.rows[0].label not in note and "too wide" not in note  # said with --verbose alone
    assert verbose is not None and "A too wide row is never marked." in verbose
