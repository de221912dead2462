"""A sweep's words carry the figure they rest on (walk 23, configs/sweep_rank.toml, load 4-11 on 2 cores): a picks
row's `not told apart` beside Points intervals that do not overlap, and a `finding:` one run flagged and the next did
not, each now say their own basis on the line."""

from __future__ import annotations

import pytest

from harness.bench.scaling import PowerLaw
from harness.record.sweep_fits import fit_sweep, finding_text
from harness.record.sweep_record import PointRecord, PointTiming, ScalingFit, SweepRecord
from harness.report.sweep import fit_sentence, pick_rows, shown_points, sweep_lines, sweep_markdown
from tests.report.test_sweep_noise import walk16


def test_a_fastest_not_told_apart_gives_its_paired_figure_on_the_row_in_every_view() -> None:
    """Rank 256's Points rows stood apart (numpy 35.0 ms-80.3 ms, factored 13.2 ms-30.2 ms) beside `yes, not told
    apart from numpy`, the paired rounds that decided it in a footnote: the cell now gives them, as the crossover's
    clause does, in the terminal's table, sweep.md and the page alike (pick_rows is each one's)."""
    from harness.report.sweep_page import render_sweep

    record = walk16(2, walk=17)  # rank 256: numpy 48.4 ms-111 ms, factored 8.24 ms-26.0 ms, as walk 23's
    rows = {(r["point"], r["strategy"].removesuffix(" (picked)")): r for r in shown_points(record)}
    numpy, factored = (rows[("data.rank=256", s)]["95% interval"] for s in ("numpy", "factored"))
    [point] = [p for p in record.points if p.values["data.rank"] == 256]
    timed = {t.strategy: t for t in point.timings}
    assert timed["factored"].high < timed["numpy"].low, (numpy, factored)  # the defect's setting: apart on their own
    cell = "yes, not told apart from numpy (4.57x, 0.981-21.3 paired)"
    assert {r["point"]: r["agrees"] for r in pick_rows(record)}["data.rank=256"] == cell
    assert "factored 4.57x (0.981-21.3) over numpy in paired rounds" in " ".join(sweep_lines(record))  # one figure
    assert f"| {cell} |" in sweep_markdown(record) and cell in render_sweep(record)
    # and the chart's bars, apart, say what they are beside the paired basis (walk 25)
    assert "bars apart may still be not told apart" in render_sweep(record)
    note = sweep_markdown(record).rstrip().splitlines()[-1]
    assert "the picks table and the crossover sentences tell two apart by their paired rounds' ratio" in note


def _one_point(numpy: PointTiming, factored: PointTiming) -> SweepRecord:
    points = [PointRecord(values={"data.rank": rank}, folder=f"rank-{rank}", complete=True, passed=True,
                          chosen={"spectrum": numpy.strategy}, timings=[numpy, factored]) for rank in (16, 32)]
    return fit_sweep(SweepRecord(experiment="tie", spec_path="tie.toml", command="harness run tie.toml", started="now",
                                 axes={"data.rank": [16, 32]}, points=points))


@pytest.mark.parametrize(("baseline", "cell"), [
    (True, "yes, not told apart from factored (1.25x, 0.667-2.00 paired)"),  # the fastest is the baseline: turned
    (False, "yes, not told apart from factored (1.10x, intervals overlap)"),  # no paired rounds: their own intervals
])
def test_the_rows_figure_is_the_fastests_speed_over_the_other_whichever_is_the_baseline(baseline: bool, cell: str) -> None:
    """`paired` is the baseline's seconds over a strategy's own: where the fastest is the baseline, the row turns it
    round, so its figure reads as the fastest's edge, as where the other is (4.57x above)."""
    numpy = PointTiming(analysis="spectrum", strategy="numpy", seconds=0.010, low=0.008, high=0.012, baseline=baseline)
    factored = PointTiming(analysis="spectrum", strategy="factored", seconds=0.011, low=0.009, high=0.013,
                           paired=(0.5, 1.5) if baseline else None, speedup=0.8 if baseline else None)
    assert {r["agrees"] for r in pick_rows(_one_point(numpy, factored))} == {cell}


def _fit(low: float, high: float) -> ScalingFit:
    """Walk 23's factored over rank 16..256, its exponent's interval `low` to `high`."""
    power = PowerLaw(exponent=(low + high) / 2, low=low, high=high, intercept=0.0, centre=4.0, intercept_var=0.01,
                     exponent_var=0.01, points=5)
    return ScalingFit(analysis="spectrum", strategy="factored", axis="data.rank", fixed={},
                      sizes=[16.0, 32.0, 64.0, 128.0, 256.0], power=power, complexity=None, rms=None)


def test_a_finding_says_how_far_outside_and_whether_a_rerun_may_not_repeat_it() -> None:
    """Run 1: `rank^1.51 (1.23 to 1.80), outside its interval: the cost model says 2.10`; run 2: `rank^1.69 (1.01 to
    2.38), its cost model says 2.10`: a model miss flagged, then not, with nothing to say the first was near its edge.
    A finding now says how far past the interval the model lies (from the ends as written), and one under the
    interval's half-width past its edge that a re-run may not repeat it."""
    far, near = finding_text(_fit(1.23, 1.80), 2.10), finding_text(_fit(1.60, 2.00), 2.10)
    assert far.endswith("(1.23 to 1.80), outside its interval: the cost model says 2.10, 0.30 above the interval")
    assert near.endswith("(1.60 to 2.00), outside its interval: the cost model says 2.10, 0.10 above the interval "
                         "(under its half-width past the edge: a re-run may not repeat it)")
    just = finding_text(_fit(-0.10, -0.01), 0.0)  # walk 13's numpy: 0.01 past, its half-width 0.045
    assert just.endswith("the cost model says 0.00, 0.01 above the interval (under its half-width past the edge: a "
                         "re-run may not repeat it)")
    low = finding_text(_fit(2.40, 2.60), 2.10)
    assert low.endswith("the cost model says 2.10, 0.30 below the interval")
    fit = _fit(1.23, 1.80).model_copy(update={"finding": far})
    assert fit_sentence(fit).startswith(f"{far};")  # the sentence is the finding's, said once
