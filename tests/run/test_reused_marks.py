"""A time keeps its unstable mark when a later run reuses its rounds: the reasons earlier runs'
rounds were busy travel with them (a reused `263.8 ms !` read `263.8 ms` in the next run, issue 48),
and they do not keep this run's quiet rounds out of the wisdom."""

from types import SimpleNamespace
from typing import Any, cast

from harness.bench.conditions import Conditions
from harness.bench.noise import EARLIER, own_reasons
from harness.bench.series import Round
from harness.run.rounds import Timeline
from harness.run.timings import group_timing

QUIET = Conditions(cores=2, load_before=0.3, load_after=0.5, running_before=1, running_after=2,
                   others_cpu=0.02, steal=0.0)


def _subject() -> Any:
    return cast(Any, SimpleNamespace(group="48x32", total=4, flops=None, bytes=None,
                                     allocation=SimpleNamespace(warmup=1, matrices=2)))


def _round(n: int, busy: list[str], when: str = "2026-11-28T08:01:00+00:00") -> Round:
    return Round(round=f"abc.0#svd#{n}", seconds=0.100 + n * 1e-4, busy=busy, when=when)


def test_reused_busy_rounds_keep_their_reasons_as_a_range_per_cause() -> None:
    line = Timeline(pooled=[_round(1, ["load 5.3 on 2 cores"]), _round(2, ["load 6.1 on 2 cores"]), _round(3, [])])
    group = group_timing(_subject(), line, None, [])
    assert group.measurement.unstable
    assert group.measurement.reasons == [f"{EARLIER}load 5.3-6.1 on 2 cores"]
    assert group.timed == ["2026-11-28T08:01:00+00:00"] * 3


def test_this_runs_quiet_rounds_beside_busy_earlier_ones_have_no_reason_of_their_own() -> None:
    line = Timeline(pooled=[_round(1, ["load 5.3 on 2 cores"])], new=[_round(2, []), _round(3, [])])
    group = group_timing(_subject(), line, QUIET, [])
    assert group.measurement.unstable  # the time is marked: some of its rounds were busy
    assert own_reasons(group.measurement.reasons) == []  # ... but this run's rounds may still teach the wisdom


def test_quiet_reused_rounds_are_not_marked() -> None:
    group = group_timing(_subject(), Timeline(pooled=[_round(1, []), _round(2, [])]), None, [])
    assert not group.measurement.unstable


def test_each_sample_row_says_when_its_own_round_was_timed() -> None:
    """timings.csv gave every pooled row this run's `started`; `timed` is each round's own time."""
    from harness.record.exports import _group_rows

    line = Timeline(pooled=[_round(1, [], "2026-11-28T08:01:00+00:00")], new=[_round(2, [], "2026-11-28T08:06:53+00:00")])
    group = group_timing(_subject(), line, QUIET, [])
    record = cast(Any, SimpleNamespace(experiment="e", started="2026-11-28T08:06:00+00:00", bench=None,
                                       machine=SimpleNamespace(hostname="h"), plan=SimpleNamespace(dtype="float32")))
    analysis = cast(Any, SimpleNamespace(name="svd", op="svd", k=None, computed=lambda t: False))
    timing = cast(Any, SimpleNamespace(strategy="numpy", role="baseline", device="numpy", precision="float32", compiled=False,
                                       compile_s=None, speedup=None, speedup_ci=None, unresolved=False,
                                       unresolved_reason=None, runs=1, rounds=2, busy_rounds=0, spread=None, env={},
                                       pooled_since=None, cached=False, cut=None))
    rows = list(_group_rows(record, analysis, timing, group))
    assert [(r["pooled"], r["timed"]) for r in rows] == [(True, "2026-11-28T08:01:00+00:00"),
                                                        (False, "2026-11-28T08:06:53+00:00")]


def test_a_bimodal_reason_gives_its_clusters_per_matrix_as_the_table_does() -> None:
    """`bimodal: 3 samples near 69 µs, 9 near 125 µs` beside a row's per-matrix `59 µs`: a round's
    seconds are one call's, of `sampled` matrices (2 here)."""
    seconds = [0.010, 0.011, 0.010, 0.030, 0.031, 0.030, 0.029]
    line = Timeline(pooled=[], new=[Round(round=f"abc.0#svd#{n}", seconds=s) for n, s in enumerate(seconds)])
    group = group_timing(_subject(), line, QUIET, [])
    assert "bimodal: 3 samples near 5.00 ms, 4 near 15.0 ms" in group.measurement.reasons
