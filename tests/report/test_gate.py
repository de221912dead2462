"""The regression gate's judgment over several runs per commit, the run as the unit: the runs'
own spread sets the interval (a busy machine's scattered runs make it inconclusive, however
narrow each run's interval claims to be), and the significance is shared over the points judged."""

from __future__ import annotations

import pytest

from harness.report.gate import difference, judge_runs
from harness.report.regressions import Side


def runs(commit: str, *speedups: float | None, interval: float = 1.05) -> list[Side]:
    return [Side(commit=commit, speedup=s, interval=interval, busy=0.0) for s in speedups]


def test_the_interval_comes_from_the_runs_not_from_their_own_intervals() -> None:
    diff, error, df = difference(runs("a", 2.0, 2.0, 2.0), runs("b", 1.0, 4.0, 2.0))
    assert df == 4 and diff == pytest.approx(0.0) and error > 0.3
    # a busy machine's runs of identical code: each run's interval x1.05, the runs 24x apart
    busy = judge_runs("m", {"e:a/factored": (runs("a", 4950, 35700, 1460), runs("b", 1700, 1660, 1780))},
                      "a" * 40, "b" * 40)[0]
    assert busy.verdict == "inconclusive" and "too wide" in busy.why and busy.high > 1.5


def test_a_consistent_slowdown_is_a_regression_and_names_its_runs() -> None:
    judged = judge_runs("m", {"e:a/torch": (runs("a", 2.21, 2.16, 2.29), runs("b", 1.46, 1.42, 1.5)),
                              "e:a/steady": (runs("a", 5.0, 5.1, 4.9), runs("b", 5.05, 4.95, 5.0))}, "a" * 40, "b" * 40)
    slow, steady = sorted(judged, key=lambda j: j.point != "e:a/torch")
    assert slow.verdict == "regression" and slow.ratio == pytest.approx(0.66, rel=0.02) and slow.high < 1
    assert slow.level == pytest.approx(1 - 2 * 0.05 / 2)  # one-sided, Bonferroni over the 2 points judged
    assert "aaaaaaaa runs 2.21x, 2.16x, 2.29x; bbbbbbbb runs 1.46x, 1.42x, 1.50x" in slow.describe()
    assert steady.verdict == "no change" and 1 / 1.5 < steady.low < steady.high < 1.5
    faster = judge_runs("m", {"p": (runs("a", 1.46, 1.42, 1.5), runs("b", 2.21, 2.16, 2.29))}, "a" * 40, "b" * 40)
    assert faster[0].verdict == "improvement"


def test_a_point_a_run_did_not_time_is_inconclusive_and_not_counted() -> None:
    judged = {j.point: j for j in judge_runs("m", {"x": (runs("a", 3.0, 3.0, 3.0), runs("b", 2.0, None, 2.0)),
                                                   "y": (runs("a", 3.0, 3.1, 2.9), runs("b", 2.0, 2.1, 1.9))},
                                             "a" * 40, "b" * 40)}
    assert judged["x"].verdict == "inconclusive" and judged["x"].ratio is None
    assert judged["x"].level is None  # --json said 0.95 beside no interval, and 90-99% beside the others
    assert judged["x"].why == "bbbbbbbb run 2 did not time it (skipped on a busy machine, or failed)"
    assert judged["y"].level == pytest.approx(0.90)  # the one point judged: alpha 0.05, one-sided
    assert judged["y"].verdict == "regression"


def test_a_point_one_commit_never_ran_says_so_without_an_empty_list_of_runs() -> None:
    """It said "a commit ran it once" beside "aaaaaaaa runs ;" and three runs of the other."""
    [point] = judge_runs("m", {"x": ([], runs("b", 1.26, 1.26, 1.26))}, "a" * 40, "b" * 40)
    assert point.verdict == "inconclusive" and point.why == "aaaaaaaa has no run of it"
    assert "runs ;" not in point.describe() and point.describe().endswith("; bbbbbbbb runs 1.26x, 1.26x, 1.26x")
