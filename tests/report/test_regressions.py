"""Judging a speedup's change between two commits from asv's series: a change only when it is
significant and beyond asv's factor, "no change" only when a x1.5 change is ruled out, and
"inconclusive" (never a verdict) for a busy machine, a wide interval or a point not timed."""

from __future__ import annotations

import re

import math
from pathlib import Path

import pytest

from harness.report.history import load
from harness.report.regressions import RESOLUTION, Side, compare_commits, judge, sides

pytest.importorskip("asv")


def side(commit: str, speedup: float | None, interval: float | None = 1.22, busy: float = 0.0) -> Side:
    return Side(commit=commit, speedup=speedup, interval=interval, busy=busy)


def test_a_one_and_a_half_times_slowdown_at_the_harness_floor_is_a_regression() -> None:
    # one run each, intervals at the single-run floor (spread 0.10: x1.22 either way)
    j = judge("box-cpu", "e:a/torch", side("a" * 40, 3.0), side("b" * 40, 2.0))
    assert j.verdict == "regression" and j.p < 0.01
    assert j.ratio == pytest.approx(2 / 3) and j.low < 2 / 3 < j.high < 1
    assert "regression" in j.describe() and "3.00x -> 2.00x" in j.describe()
    # as the run report and compare write them: 3 significant figures, p as a decimal (not 4.7e-03)
    assert re.search(r"\(0\.667x, 99% interval 0\.\d{3}-0\.\d{3}; p=0\.00\d+\)", j.describe()), j.describe()
    assert judge("box-cpu", "e:a/torch", side("a", 2.0), side("b", 3.0)).verdict == "improvement"


def test_identical_speedups_are_no_change_only_when_a_large_change_is_ruled_out() -> None:
    narrow = judge("m", "p", side("a", 2.0, 1.05), side("b", 2.04, 1.05))
    assert narrow.verdict == "no change" and 1 / RESOLUTION < narrow.low < narrow.high < RESOLUTION
    wide = judge("m", "p", side("a", 2.0, 1.6), side("b", 2.04, 1.6))
    assert wide.verdict == "inconclusive" and "too wide" in wide.why


def test_small_significant_changes_are_not_reported() -> None:
    # p tiny, but within asv's factor 1.1: not a change (harness compare's rule)
    assert judge("m", "p", side("a", 2.0, 1.01), side("b", 1.9, 1.01)).verdict == "no change"


@pytest.mark.parametrize("before, after, why", [
    (side("a", 3.0, busy=1.0), side("b", 1.0), "busy"),
    (side("a", 3.0), side("b", None), "not timed"),
    (side("a", 3.0, interval=None), side("b", 1.0), "not timed"),
    (side("a", 3.0, interval=math.inf), side("b", 1.0), "not timed"),
])
def test_a_busy_or_missing_side_is_inconclusive_however_large_the_change(before: Side, after: Side, why: str) -> None:
    j = judge("m", "p", before, after)
    assert j.verdict == "inconclusive" and why in j.why


def test_series_from_asv_results_pair_ratio_interval_and_busy(tmp_path: Path) -> None:
    from benchmarks.history_page import MACHINES, SLOW, write_results

    commits = write_results(tmp_path / "asv", commits=3)
    found = sides(load(tmp_path / "asv"))
    by_commit = found[(MACHINES[0], SLOW)]
    assert list(by_commit) == commits
    first = by_commit[commits[0]]
    assert first.speedup and first.interval == pytest.approx(1.15) and first.busy == 0.0
    judged = compare_commits(load(tmp_path / "asv"), commits[0], commits[-1])
    assert {(j.machine, j.point) for j in judged if j.verdict == "regression"} == {(MACHINES[0], SLOW)}
    assert {j.verdict for j in judged} <= {"regression", "no change"}
