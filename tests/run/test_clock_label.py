"""The benchmark's progress counter (run.clock) over a scripted clock: it only grows, through one-off
work (a worker's start, verifying answers) and from one analysis to the next, and it names its limit
the way the run's Benchmark line does (walk 5: `spectrum: timed 1.0/13.6 s` fell to `0.0/13.6 s`,
`geometry: 16.9 s, over 13.6 s` to `16.2 s`, and nothing said what 13.6 s was)."""

from __future__ import annotations

import re

from harness.bench.budget import Budget
from harness.run.clock import BenchClockLabel, clock_text


class Scripted(Budget):
    """A budget whose clock reads `now`, set by the test."""

    now: float = 0.0

    def clock(self) -> float:  # type: ignore[override]
        return self.now


def test_the_counter_only_grows_through_one_off_work_and_across_analyses() -> None:
    budget = Scripted(4.0, 13.6, {"spectrum": 5.0, "geometry": 5.0}, {"spectrum": 1.0, "geometry": 1.0})
    label = BenchClockLabel("spectrum", budget, 13.6, "floor")
    shown: list[str] = []

    def at(t: float) -> None:
        budget.now = t
        shown.append(str(label))

    with budget.outside():  # imports before the first analysis opens
        at(0.5)
        budget.open("spectrum")
        at(1.0)
    at(1.5)
    with budget.outside():  # a worker starts mid-analysis: the counter holds
        at(3.0)
        with budget.outside():
            at(4.0)
        at(5.0)
    at(6.0)
    budget.close("spectrum")
    label = BenchClockLabel("geometry", budget, 13.6, "floor")
    at(7.0)
    budget.open("geometry")
    for t in (9.0, 17.0):
        at(t)
    with budget.outside():
        at(20.0)
    at(24.0)
    seconds = [float(re.match(r"bench (\d+(?:\.\d)?)/", s).group(1)) for s in shown[:-1]]  # type: ignore[union-attr]
    assert seconds == [0, 0, 0, 0, 0, 0, 2, 2, 4, 12, 12]  # whole seconds under a 14 s floor
    assert shown[6] == "bench 2/14 s floor · spectrum"
    assert shown[-1] == "bench +1.9 s floor · geometry"  # 15.5 s: the over-floor figure once


def test_the_label_keeps_its_sign_and_the_analysis_at_100_columns() -> None:
    """Walk 12 could not read `geometry: 19.4 > 15.9 s floor`; walk 14 lost the analysis at 100
    columns (32 cells) and read `timed 21.9 of 20.0 s` past the floor as a fraction over 100%: past
    its limit, by how much, said once; the analysis whole in 32 cells up to 99 s and 8 letters."""
    under, over = clock_text("spectrum", 12.8, 13.9, "budget"), clock_text("geometry", 21.9, 20.0, "floor")
    assert str(under) == "bench 13/14 s budget · spectrum" and under.fitted(32) == str(under)
    assert str(over) == "bench +1.9 s floor · geometry" and over.fitted(32) == str(over)
    assert str(clock_text("top3", 9.9, 17.6, "floor")) == "bench 10/18 s floor · top3"
    for text in (clock_text("svd_topk", 98.7, 99.1, "budget"), clock_text("svd_topk", 1013.8, 13.9, "budget")):
        assert text.fitted(32) == str(text) and "svd_topk" in str(text)


def test_one_off_work_is_named_while_it_holds_the_counter() -> None:
    """Walk 9: `spectrum: 0.0/3.0 s budget` stood for 6 s while a point's workers started. While
    named one-off work runs the label names it (the innermost), and the counter comes back after."""
    budget = Scripted(3.0, 3.0, {"spectrum": 1.0}, {"spectrum": 1.0})
    label = BenchClockLabel("spectrum", budget, 3.0)
    budget.open("spectrum")
    shown: list[str] = []
    with budget.outside("verifying answers"):
        shown.append(str(label))
        with budget.outside("starting workers"):
            shown.append(str(label))
        with budget.outside():  # unnamed inside: the named one around it is still under way
            shown.append(str(label))
    budget.now = 1.2
    shown.append(str(label))
    assert shown == ["spectrum: verifying answers", "spectrum: starting workers", "spectrum: verifying answers",
                     "bench 1.2/3.0 s budget · spectrum"]


def test_the_count_is_the_benchmarks_not_the_analysis_under_way() -> None:
    """Walk 13: `top3: 12.7 of 21.0 s floor` showed the instant top3 began, before it timed anything,
    and `top3: 0.4 s over floor` for 4 s while top3 computed its answers: read as top3's own seconds.
    The label says whose count it is, the analysis under way after it."""
    budget = Scripted(10.0, 21.0, {"spectrum": 5.0, "top3": 5.0}, {"spectrum": 1.0, "top3": 1.0})
    budget.open("spectrum")
    budget.now = 12.7
    budget.close("spectrum")
    label = BenchClockLabel("top3", budget, 21.0, "floor")
    assert str(label) == "bench 13/21 s floor · top3"  # top3 begun: none of it top3's
    budget.spent_s = 21.4
    assert label.phrases().fitted(32) == "bench +0.4 s floor · top3"


def test_one_label_keeps_one_precision_as_its_count_passes_10_s() -> None:
    """Walk 18: `bench 9.3/13 s floor · top3`, then `bench 12/13 s floor · top3` on one row. Both figures
    whole under a limit from 10 s, both in tenths under a limit below it; whole within 32 cells (but for an
    8-letter name under a budget below 10 s: 33)."""
    assert [str(clock_text("top3", s, 13.0, "floor")) for s in (0.0, 9.3, 12.4)] == [
        "bench 0/13 s floor · top3", "bench 9/13 s floor · top3", "bench 12/13 s floor · top3"]
    assert [str(clock_text("svd_topk", s, 4.0, "budget")) for s in (0.0, 2.9)] == [
        "bench 0.0/4.0 s budget · svd_topk", "bench 2.9/4.0 s budget · svd_topk"]
    assert str(clock_text("svd_topk", 9.0, 9.97, "budget")) == "bench 9/10 s budget · svd_topk"
    for text in (clock_text("svd_topk", 9.94, 9.94, "floor"), clock_text("svd_topk", 9.3, 99.4, "budget")):
        assert text.fitted(32) == str(text)
