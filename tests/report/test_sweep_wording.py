"""A sweep's sentences as walk-throughs 13 and 14 read them: a crossing past the largest rank said inside a
clipped interval that left it out, a finding said twice, two points' bimodal modes merged into
ranges, a class that changed between runs at one RMS; a pick's finding said three times, and a
fitted order beside a point's verdict that did not bear it out. On known records (test_sweep_views)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from harness.record.sweep_fits import fit_sweep
from harness.record.sweep_record import AxisLimit, SweepRecord, point_record
from tests.report.test_run_screen import real
from tests.report.test_sweep_views import known_sweep, sweep_of

SAID_CROSSING = re.compile(r"rank (\S+) \((\S+?)(?:-| to past )(\S+?)(?:, the largest [^)]*)?\)")


def limited(record: SweepRecord, size: int) -> SweepRecord:
    """The record refitted with every point's rank bounded by a size x size delta."""
    limit = AxisLimit(size=float(size), shape=(size, size))
    return fit_sweep(record.model_copy(update={"points": [p.model_copy(update={"limits": {"data.rank": limit}})
                                                          for p in record.points]}))


def test_a_crossing_is_never_said_outside_its_own_interval_and_a_limit_past_it_once() -> None:
    """Walk 13: `their fits meet at rank 694 (450-512, clipped to the largest rank of a 512x512
    delta), 2.7x above it, past the largest rank of a 512x512 delta: within it, they may never meet`."""
    from harness.report.sweep import crossover_sentence
    from harness.report.sweep_page import scaling_figure

    for numpy_s, size in ((0.97e-3, 24), (1.1e-3, 24), (0.97e-3, 32), (1.1e-3, 64)):
        record = limited(known_sweep(ranks=(4, 8, 16), numpy_s=numpy_s), size)
        [c] = record.crossovers
        said = crossover_sentence(c)
        assert said.count(f"{size}x{size}") <= 1 and "above it" not in said, said
        if c.past:  # all its interval past the limit: the point and its interval, the limit once, the range's end named
            assert said == (f"spectrum: by their fitted costs, factored is cheaper than numpy over the swept rank 4-16; "
                            f"their fits would meet at rank ~{c.crossing.size:.3g} ({c.crossing.low:.3g}-"
                            f"{c.crossing.high:.3g}), {c.distance:.1f}x above the swept range (largest 16) and "
                            f"past the largest rank of a {size}x{size} delta ({size}): within it they may never meet")
            [ax] = scaling_figure(record, record.fits).axes  # nor drawn in a band that leaves it out
            assert not any("overtakes" in t.get_text() for t in ax.get_legend().get_texts())
        else:
            found = SAID_CROSSING.search(said)
            assert found and float(found[2]) <= float(found[1]) <= float(found[3]), said
            assert said.endswith(f"{c.distance:.1f}x above the swept range (largest 16)"), said
    assert sum(limited(known_sweep(ranks=(4, 8, 16), numpy_s=s), 24).crossovers[0].past for s in (0.97e-3, 1.1e-3)) == 2


def test_an_exponent_outside_its_cost_models_interval_is_said_once() -> None:
    """Walk 13: `finding: spectrum, numpy: cost grows as rank^-0.04 (-0.06 to -0.02), outside its interval:
    the cost model says 0.00`, then `spectrum, numpy: cost grows as rank^-0.04 (-0.06 to -0.02), its cost
    model says 0.00; no class within its interval`, in the terminal and the page's headline alike."""
    from harness.report.sweep import sweep_lines
    from harness.report.sweep_page import render_sweep

    record = known_sweep()
    model = {"numpy": 1, "factored": 2}  # numpy's exponent leaves out its model's; factored's holds it
    points = [p.model_copy(update={"timings": [t.model_copy(update={"model_s": 1e-6 * p.values["data.rank"] ** model[
        t.strategy]}) for t in p.timings]}) for p in record.points]
    record = fit_sweep(record.model_copy(update={"points": points}))
    assert [f.strategy for f in record.fits if f.finding] == ["numpy"]
    lines = sweep_lines(record)
    [said] = [line for line in lines if "spectrum, numpy: cost grows" in line]
    assert said.startswith("finding: spectrum, numpy: cost grows as rank^") and lines.index(said) == 0
    assert "outside its interval: the cost model says 1.00, 0.92 above the interval; class constant (RMS 3%, 0-" in said, said
    headline = render_sweep(record).split('<div class="headline">')[1].split("</div>")[0]
    assert headline.count("spectrum, numpy: cost grows") == 1 and headline.count("cost model says 1.00") == 1


def test_a_sweeps_unstable_causes_are_said_as_a_runs_naming_each_row_and_its_point(tmp_path: Path) -> None:
    """Walk 13: `bimodal: 9-10 samples near 111-229 µs, 2-3 near 197-371 µs in 2 measurements`: two
    points' modes merged into overlapping ranges; a run says `bimodal calls (two clusters of times)`
    and names its rows."""
    from harness.report.sweep import sweep_lines

    run = real("main_job", tmp_path)
    flagged = run.analyses[0].timings[1].groups[0].measurement  # spectrum process_pool
    flagged.reasons = ["bimodal: 9 samples near 111 µs, 2 near 197 µs", *flagged.reasons]
    point = point_record({"data.rank": 8}, "rank-8", run)
    assert point.unstable_rows[:3] == [("spectrum", "numpy"), ("spectrum", "numpy"), ("spectrum", "process_pool")]
    record = known_sweep()
    rows = {8: [("spectrum", "numpy")], 32: [("spectrum", "factored")]}
    reasons = {8: [["bimodal: 9 samples near 111 µs, 2 near 197 µs"]],
               32: [["bimodal: 10 samples near 229 µs, 3 near 371 µs", "load 5.2 on 2 cores"]]}
    points = [p.model_copy(update={"measurements": 2, "unstable": reasons.get(p.values["data.rank"], []),
                                   "unstable_rows": rows.get(p.values["data.rank"], [])}) for p in record.points]
    [said] = [line for line in sweep_lines(record.model_copy(update={"points": points})) if "unstable" in line]
    assert said.startswith("2 of 10 measurements (a strategy on one shape group) unstable (!) at 2 of 5 points: "
                           "load 5.2 on 2 cores in 1 measurement; bimodal calls (two clusters of times) in spectrum numpy "
                           "at data.rank=8, spectrum factored at data.rank=32; read the exponents"), said  # the machine's first
    assert "near" not in said


def test_classes_within_one_exponents_interval_are_not_told_apart_nor_a_class_far_from_its_points() -> None:
    """Walk 13: `class rank log rank (RMS 36%)` in one run, `class rank^2 (RMS 36%)` in the next: both
    classes lie within the exponent's interval, and which fits better is the noise's choice."""
    from harness.report.sweep import fit_sentence
    from harness.report.sweep_page import render_sweep

    ranks = [8, 16, 32, 64, 128]
    both = sweep_of([1e-6 * r**1.6 * off for r, off in zip(ranks, [0.8, 1.3, 1.1, 0.7, 1.25])], [1.1] * 5)
    factored = both.fits[1]
    assert list(factored.within) == ["n log n", "n^2", "n"]
    said = fit_sentence(factored).split("; ")[-1]  # walk 15: both over 25%, then no class, not both named
    low, high = factored.rms_interval["n log n"]
    assert said == f"no class fits within 25% (RMS {min(factored.within.values()):.0%}, {low * 100:.0f}-{high:.0%})", said
    assert f"<td>{said}</td>" in render_sweep(both)
    near = factored.model_copy(update={"within": {"n log n": 0.12, "n^2": 0.2}, "rms_interval": {}})  # before intervals
    assert fit_sentence(near).endswith("; classes not told apart: rank log rank (RMS 12%), rank^2 (RMS 20%)")
    one = factored.model_copy(update={"within": {"n log n": 0.3, "n^2": 0.2}, "rms_interval": {}})
    assert fit_sentence(one).endswith("; class rank^2 (RMS 20%)")
    far = sweep_of([1e-6 * r**1.6 * off for r, off in zip(ranks, [1.0, 1.3, 0.75, 1.2, 0.85])], [1.1] * 5).fits[1]
    assert list(far.within)[0] == "n log n" and far.rms is not None and far.rms > 0.25
    low, high = far.rms_interval["n log n"]
    assert fit_sentence(far).endswith(f"; no class fits within 25% (RMS {far.rms:.0%}, {low * 100:.0f}-{high:.0%})")
    assert "; class rank^2 (RMS 3%, " in fit_sentence(known_sweep().fits[1])  # told apart: named


def test_a_picks_finding_is_said_once_in_every_view() -> None:
    """Walk 14: `the pick (torch) measured 1.9x slower than factored (intervals overlap)` in the point's
    line, the planner line and the picks table. The table marks the misses the planner line names, and
    gives the factor of those past the first three, which it leaves to the table."""
    from harness.record.sweep_fits import planner_picks
    from harness.report.sweep import pick_rows, sweep_lines, sweep_markdown
    from harness.report.sweep_page import render_sweep

    record = known_sweep()  # the pick is 1.1x (overlapping), 3.9x and 17x slower than numpy at 3 points
    terminal = "\n".join(sweep_lines(record) + [" ".join(row.values()) for row in pick_rows(record)])
    page, markdown = html.unescape(render_sweep(record)), sweep_markdown(record)
    for finding in ("1.1x slower than numpy (intervals overlap)", "3.9x slower than numpy", "17x slower than numpy"):
        assert terminal.count(finding) == markdown.count(finding) == page.count(finding) == 1, finding
    assert [row["agrees"] for row in pick_rows(record)] == ["yes", "yes", "not told apart", "no", "no"]
    many = known_sweep(ranks=(64, 96, 128, 192, 256))  # the pick slower at all 5, beyond the intervals
    assert many.planner[0].endswith("; 2 more points (the picks table)"), many.planner
    factors = [pick.factor for pick in planner_picks(many)]
    assert [row["agrees"] for row in pick_rows(many)] == ["no"] * 3 + [f"no: {f} slower" for f in factors[3:]]
    assert not any(f in many.planner[0] for f in factors[3:])


def test_a_fitted_order_says_its_source_and_how_many_points_bear_it_out(tmp_path: Path) -> None:
    """Walk 14: `factored is cheaper than numpy over the swept rank 16-256` (the fits) beside the rank-256
    point's verdict `factored is not significantly faster or slower than numpy: 2.36x (0.777-7.18)` (its
    paired rounds): the sentence names its source, and at how many points their own measurements show it."""
    from harness.report.sweep import sweep_lines, sweep_markdown
    from harness.report.sweep_page import render_sweep

    record = known_sweep(ranks=(4, 8, 16))  # factored 62x, 16x and 3.9x faster; its fit cheaper to rank ~32

    def paired(last: tuple[float, float] | None, wide: float = 1.1) -> SweepRecord:
        """numpy the baseline, factored's paired interval `last` at rank 16 (None: a sweep before them,
        factored's own interval there `wide` times either way)."""
        points = [p.model_copy(update={"timings": [p.timings[0].model_copy(update={"baseline": last is not None}),
                                                   p.timings[1].model_copy(update={"paired": ci})]})
                  for p, ci in zip(record.points, [(50.0, 70.0), (12.0, 20.0), last])]
        t = points[-1].timings[1]
        points[-1].timings[1] = t.model_copy(update={"low": t.seconds / wide, "high": t.seconds * wide})
        return fit_sweep(record.model_copy(update={"points": points}))

    head = "spectrum: by their fitted costs, factored is cheaper than numpy over the swept rank 4-16"
    shown = " (the points' own measurements show it at 2 of 3"
    own = "numpy 971 µs (883 µs-1.07 ms) and factored 264 µs (26 µs-2.64 ms)"  # their own intervals
    for sweep, clause in ((paired((3.5, 4.6)), ""),
                          (paired((0.777, 7.18)), f"{shown}, not at data.rank=16: factored 0.777-7.18x over numpy in paired "
                                                  "rounds, too wide to tell)"),
                          (paired((0.2, 0.5)), f"{shown}, the reverse at 1, not at data.rank=16: factored 0.200-0.500x over "
                                               "numpy in paired rounds, the other way)"), (paired(None), ""),
                          (paired(None, wide=10), f"{shown}, not at data.rank=16: {own}, their intervals overlap)")):
        [line] = [line for line in sweep_lines(sweep) if "cheaper" in line]
        assert line.startswith(f"{head}{clause}; their fits meet at rank "), line
        assert f"- {line}" in sweep_markdown(sweep) and line in html.unescape(render_sweep(sweep))
    run = real("main_job", tmp_path)  # a point keeps its run's paired intervals, against its baseline
    timings = {(t.analysis, t.strategy): t for t in point_record({"data.rank": 8}, "rank-8", run).timings}
    for a in run.analyses:
        for t in a.timings:
            kept = timings[(a.name, t.label)]
            assert (kept.baseline, kept.paired) == (t.role == "baseline", t.speedup_ci) and (kept.paired or kept.baseline)
