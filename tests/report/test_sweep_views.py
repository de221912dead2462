"""A sweep's record as its views show it (issue 49): the planner's picks and the crossover in the
headline, the page, the md and the chart; fits' classes and exponents, unstable points, the Points
table and its footnote. On a known record: numpy flat, factored growing as rank^2."""

from __future__ import annotations

import re
from pathlib import Path

from harness.record.run_record import load_record
from harness.record.sweep_fits import fit_sweep
from harness.record.sweep_record import PointRecord, PointTiming, SweepRecord


def known_sweep(ranks: tuple[int, ...] = (8, 16, 32, 64, 128), numpy_s: float = 1e-3) -> SweepRecord:
    """numpy at 1 ms (`numpy_s`) whatever the rank, factored at 1 us * rank^2 (each within 3%): they
    cross at rank ~32; the plan picked factored everywhere, so it is wrong at ranks 64 and 128."""
    points = []
    for i, rank in enumerate(ranks):
        wobble = 1 + 0.03 * (-1) ** i
        timings = [PointTiming(analysis="spectrum", strategy=name, seconds=s, low=s / 1.1, high=s * 1.1)
                   for name, s in (("numpy", numpy_s / wobble), ("factored", 1e-6 * rank**2 * wobble))]
        points.append(PointRecord(values={"data.rank": rank}, folder=f"rank-{rank}", complete=True, passed=True,
                                  chosen={"spectrum": "factored"}, timings=timings))
    record = SweepRecord(experiment="known", spec_path="known.toml", command="harness run known.toml",
                         started="now", axes={"data.rank": list(ranks)}, points=points)
    return fit_sweep(record)


def test_a_crossing_beyond_the_swept_range_is_said_one_way_with_its_distance() -> None:
    """Walk 12: two runs of one sweep said `no two strategies' fits cross inside or near the swept range`
    and `numpy overtakes factored above rank 510 (...), beyond the swept range`: nearly equal fits, one
    crossing just past twice the range's end and one just inside it. Each now says where the fits meet
    and how far beyond the range, in one form; the chart draws only those within 2x."""
    from harness.report.sweep import sweep_lines
    from harness.report.sweep_page import scaling_figure

    form = re.compile(r"spectrum: by their fitted costs, factored is cheaper than numpy over the swept rank 4-16; their fits meet at "
                      r"rank (\S+) \(\S+-\S+\), (\S+)x above the swept range \(largest 16\)")
    said = {}
    for numpy_s in (0.97e-3, 1.1e-3):  # they meet at rank ~31 (within 2x of 16) and ~33 (past it)
        record = known_sweep(ranks=(4, 8, 16), numpy_s=numpy_s)
        [c] = record.crossovers
        [line] = [line for line in sweep_lines(record) if "numpy" in line and "factored" in line and ";" in line]
        found = form.fullmatch(line)
        assert found and float(found[2]) == round(c.crossing.size / 16, 1), line
        said[numpy_s] = float(found[1])
        [ax] = scaling_figure(record, record.fits).axes
        legend = [text.get_text() for text in ax.get_legend().get_texts()]
        assert ("numpy overtakes factored (95%)" in legend) == (c.distance <= 2)
    assert said[0.97e-3] < 32 < said[1.1e-3]





def test_the_planners_picks_and_the_crossover_are_shown_in_every_output(tmp_path: Path) -> None:
    from harness.report.sweep import pick_rows, sweep_markdown
    from harness.report.sweep_page import render_sweep

    record = known_sweep()
    [crossing] = record.crossovers
    assert (crossing.a, crossing.b, crossing.inside) == ("numpy", "factored", True)
    assert crossing.crossing.low < 32 < crossing.crossing.high
    rows = pick_rows(record)
    assert [(r["point"], r["planner's pick"], r["fastest measured"], r["agrees"]) for r in rows] == [
        ("data.rank=8", "factored", "factored", "yes"), ("data.rank=16", "factored", "factored", "yes"),
        ("data.rank=32", "factored", "numpy", "not told apart"), ("data.rank=64", "factored", "numpy", "no"),
        ("data.rank=128", "factored", "numpy", "no")]  # the planner line below says by how much
    # a pick whose estimate is not the fastest is not counted as right, overlapping intervals or not
    assert record.planner == ["spectrum: the plan's pick was the fastest measured at 2 of 5 points; at data.rank=32 "
                              "the pick (factored) measured 1.1x slower than numpy (intervals overlap); at "
                              "data.rank=64 the pick (factored) measured 3.9x slower than numpy; at data.rank=128 "
                              "the pick (factored) measured 17x slower than numpy"]
    assert "| data.rank=64 | spectrum | factored | numpy | no |" in sweep_markdown(record)
    page = render_sweep(record)
    assert 'id="planner"' in page and page.count("<tr>") == 1 + 5 + 1 + 2 + 1 + 10  # picks, fits, points
    assert "numpy overtakes factored (95%)" in page  # the crossover's band, in the chart's legend
    # a tie is neither a pass nor a miss: not the miss's red
    styles = {text: style for style, text in re.findall(r'<td class="(\w+)">((?:yes|no|not told apart)[^<]*)</td>', page)}
    assert {styles[r["agrees"]] for r in rows if r["agrees"].startswith("not told apart")} == {"muted"}
    assert {styles[r["agrees"]] for r in rows if r["agrees"] == "no"} == {"fail"}
    many = known_sweep(ranks=(64, 96, 128, 192, 256))  # a miss past the planner line's three: `no: 35x slower`
    assert re.findall(r'<td class="(\w+)">no: \d+x slower</td>', render_sweep(many)) == ["fail"] * 2


def test_the_sweep_chart_draws_every_strategy_the_plan_picked_and_rings_the_picks() -> None:
    """torch, picked at rank 256 only (too few points for a fit), was left off the chart, which
    drew only the fitted strategies; and nothing marked which strategy the plan picked."""
    from harness.report.sweep_page import dodge, scaling_figure

    record = known_sweep()
    last = record.points[-1]
    torch = PointTiming(analysis="spectrum", strategy="torch", seconds=5e-3, low=4e-3, high=6e-3)
    points = [*record.points[:-1], last.model_copy(update={"chosen": {"spectrum": "torch"},
                                                           "timings": [*last.timings, torch]})]
    record = record.model_copy(update={"points": points})
    [ax] = scaling_figure(record, record.fits).axes
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert "torch: too few points to fit" in legend and "the plan's pick" in legend
    assert sum(t.startswith(("numpy: ^", "factored: ^")) for t in legend) == 2
    rings = [line for line in ax.get_lines() if line.get_label() in ("the plan's pick", "_")]
    ringed = {(float(x), float(y)) for line in rings for x, y in zip(line.get_xdata(), line.get_ydata())}
    drawn = ["numpy", "factored", "torch"]  # the fitted, then those only picked: each dodged in x by its place
    picked = {(p.values["data.rank"] * dodge(drawn.index(t.strategy), 3), t.seconds) for p in points
              for t in p.timings if t.strategy == p.chosen["spectrum"]}
    assert ringed == picked and len(picked) == 5


def test_unstable_measurements_are_said_as_a_run_says_them_and_an_unheld_fit_shows_a_dash() -> None:
    """Every round of a busy machine's sweep flagged: the terminal's lines (and sweep.md, the
    page) say how many and why, not exponents with intervals as if they were clean."""
    from harness.report.sweep import sweep_lines, sweep_markdown
    from harness.report.sweep_page import render_sweep

    busy = "other processes took 51% of the 2 CPUs; load 5.2"
    record = known_sweep()
    assert not any("unstable" in line for line in sweep_lines(record))
    points = [p.model_copy(update={"measurements": 2, "unstable": [[busy]] * (i % 2)})
              for i, p in enumerate(record.points)]
    record = record.model_copy(update={"points": points})
    said = [line for line in sweep_lines(record) if "unstable" in line]
    assert said == [f"2 of 10 measurements (a strategy on one shape group) unstable (!) at 2 of 5 points: {busy}; "
                    "read the exponents and picks "
                    "with care, or re-run on a quiet machine (`harness system` names what is busy)"]
    assert f"- {said[0]}" in sweep_markdown(record)
    page = render_sweep(record)
    fits = page[page.index("<h2>Fits</h2>"):page.index("<h2>Points</h2>")]
    assert "{}" not in fits and "<td>-</td>" not in fits and "held" not in fits  # nothing held: no column of dashes
    # the terminal's `code` is code on the page, not literal backticks
    assert ('re-run on a quiet machine (<code class="cmd"><span class="word">harness</span> <span class="word">system</span>'
            '</code> names what is busy)') in page and "`" not in page


def test_exponents_and_intervals_read_alike_in_the_headline_the_page_and_the_md() -> None:
    """Issue 48: `rank^-0.0071 (-0.03 to 0.016)` in the headline, `-0.01 (-0.03 to 0.02)` in the
    page's fits table; `31.7 ms-72.8 ms` in the md, `31.7 ms to 72.8 ms` on the page."""
    from harness.record.sweep_fits import exponent_interval, exponent_text
    from harness.report.sweep import seconds_interval, sweep_lines, sweep_markdown
    from harness.report.sweep_page import render_sweep

    record = known_sweep()
    page, headline = render_sweep(record), " ".join(sweep_lines(record))
    for fit in record.fits:
        said = f"{exponent_text(fit.power.exponent)} ({exponent_interval(fit.power.low, fit.power.high)})"
        assert f"^{said}" in headline and f">{said}<" in page
    p = record.points[0].timings[0]
    assert seconds_interval(p.low, p.high) in page and seconds_interval(p.low, p.high) in sweep_markdown(record)
    assert "<th>complexity</th>" in page and "complexity class" not in page  # its cells say `class rank^2` (walk 12)


def md_points(md: str) -> list[list[str]]:
    """sweep.md's Points table: its header's cells, then each row's."""
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| point | folder |"))
    table = [lines[start], *(line for line in lines[start + 2:] if line.startswith("| "))]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in table]


def test_the_sweep_md_marks_the_pick_the_plans_estimate_and_the_check_as_the_page_does() -> None:
    """Walk-through 6: sweep.md's Points lacked the page's `(picked)` and `verified`; numpy's model
    read 27.8 ms at rank 16 (the wisdom's measurement) and 41.9 ms elsewhere (the cost model's),
    unmarked. Walk-through 7: the column, captioned the plan's estimate, showed the cost model's
    unscaled 15.6 ms for factored beside the picked torch's 33.2 ms, where the plan compared 73 ms
    (modelled x4.7): the pick read as against its own figures."""
    import csv

    from harness.record.exports import csv_text
    from harness.report.sweep import POINT_COLUMNS, model_note, point_rows, shown_points, sweep_markdown
    from harness.report.sweep_page import render_sweep

    record = known_sweep()
    first = record.points[0]
    numpy, factored = first.timings
    timings = [numpy.model_copy(update={"model_s": 5e-4, "planned_s": 5e-4,
                                        "basis": "measured on this machine, 2026-11-28, 5 samples"}),
               factored.model_copy(update={"model_s": 1e-4, "planned_s": 4.7e-4, "passed": False,
                                           "basis": "modelled x4.7: never measured on this machine"})]
    record = record.model_copy(update={"points": [first.model_copy(update={"timings": timings}), *record.points[1:]]})
    header, *rows = md_points(sweep_markdown(record))
    assert header == ["point", "folder", "analysis", "strategy", "per matrix", "95% interval", "plan's estimate", "verified"]
    assert [r[3] for r in rows[:2]] == ["numpy", "factored (picked)"] and sum("(picked)" in r[3] for r in rows) == 5
    assert [r[6] for r in rows[:3]] == ["500 µs (measured)", "470 µs (modelled x4.7)", "-"]
    assert [r[7] for r in rows[:3]] == ["yes", "FAILED", "yes"]
    page = render_sweep(record)
    for row in shown_points(record):  # the page's cells are the md's
        estimate = row["plan's estimate"]
        assert f"<td>{row['strategy']}</td>" in page and f'<td class="num">{estimate}</td>' in page
    note = model_note(shown_points(record))
    assert note in sweep_markdown(record) and note.replace("'", "&#39;") in page
    second = list(csv.DictReader(csv_text(POINT_COLUMNS, point_rows(record)).splitlines()))[1]  # points.csv's
    assert (float(second["planned_s"]), float(second["model_s"])) == (4.7e-4, 1e-4)



def test_the_points_footnotes_example_factor_is_one_of_the_tables_own() -> None:
    """Walk-through 8: the footnote said `modelled x4.7: by 4.7` under a table whose factors were
    x3.2 and x3.8; a table with no scaled estimate has no example to give."""
    from harness.report.sweep import model_note, shown_points, sweep_markdown
    from harness.report.sweep_page import render_sweep

    record = known_sweep()
    first = record.points[0]
    numpy, factored = first.timings
    for factors, example in (((3.2, 3.8), "modelled x3.2: by 3.2"), ((None, None), None)):
        timings = [t.model_copy(update={"planned_s": 5e-4, "basis": (f"modelled x{f:g}: never measured on this machine"
                                                                     if f else "measured on this machine, 5 samples")})
                   for t, f in zip((numpy, factored), factors)]
        changed = record.model_copy(update={"points": [first.model_copy(update={"timings": timings}),
                                                       *record.points[1:]]})
        note = model_note(shown_points(changed))
        assert re.findall(r"modelled x[\d.]+: by [\d.]+", note) == ([example] if example else [])
        assert note in sweep_markdown(changed) and note.replace("'", "&#39;") in render_sweep(changed)
def test_a_fits_class_is_named_by_the_swept_key_and_a_held_column_says_what_it_holds() -> None:
    """Walk-through 6: `class 1` and `class n^2` on a rank axis; the page's `held` column of `-`."""
    from harness.report.sweep import fit_sentence, sweep_markdown
    from harness.report.sweep_page import render_sweep

    record = known_sweep()
    classes = {f.strategy: fit_sentence(f).rsplit("; ", 1)[1] for f in record.fits}
    assert classes["numpy"].startswith("class constant (RMS") and classes["factored"].startswith("class rank^2 (RMS")
    assert f"- {fit_sentence(record.fits[1])}" in sweep_markdown(record)
    assert "<td>class rank^2 (RMS" in render_sweep(record) and "n^2" not in render_sweep(record)
    held = record.model_copy(update={"fits": [f.model_copy(update={"fixed": {"data.adapters": 4}}) for f in record.fits],
                                     "points": [p.model_copy(update={"values": {**p.values, "data.adapters": 4}})
                                                for p in record.points]})
    fits = render_sweep(held).split("<h2>Fits</h2>")[1].split("<h2>Points</h2>")[0]
    assert "<th>held at</th>" in fits and "held at: the other swept key's value along the fit" in fits
    assert fits.count('<td>{"data.adapters": 4}</td>') == 2


def sweep_of(factored: list[float], widths: list[float]) -> SweepRecord:
    """known_sweep's numpy and points, factored at `factored` seconds, each interval `widths` times either way."""
    record = known_sweep()
    points = [p.model_copy(update={"timings": [p.timings[0], p.timings[1].model_copy(update={
        "seconds": s, "low": s / w, "high": s * w})]}) for p, s, w in zip(record.points, factored, widths)]
    return fit_sweep(record.model_copy(update={"points": points}))


def test_the_class_is_said_alike_everywhere_and_never_beyond_the_exponents_interval() -> None:
    """Walk-through 10: `cost grows as rank^1.93 (1.36 to 2.50) ... class rank^3 (RMS 7%)`: the
    class was Google Benchmark's unweighted fit, led by the largest point (here 1.8x off rank^2,
    with a wide interval). A rank^2.5 law has no class within its interval, and says so."""
    from harness.report.sweep import fit_sentence, sweep_lines, sweep_markdown
    from harness.report.sweep_page import render_sweep

    ranks = [8, 16, 32, 64, 128]
    walk = sweep_of([1e-6 * r**2 * off for r, off in zip(ranks, [1.0, 1.25, 0.8, 0.75, 1.8])], [1.1] * 4 + [2.5])
    between = sweep_of([1e-7 * r**2.5 * (1 + 0.02 * (-1) ** i) for i, r in enumerate(ranks)], [1.1] * 5)
    for record, said in ((walk, "closest class rank^2, RMS "), (between, "no class within its interval")):
        numpy, factored = record.fits
        assert factored.power.high < 3 and "; class constant (RMS 3%, 0-" in fit_sentence(numpy)
        sentence = fit_sentence(factored)
        assert sentence.split("; ")[-1].startswith(said) and "rank^3" not in sentence
        assert sentence in sweep_lines(record) and f"- {sentence}" in sweep_markdown(record)
        page = render_sweep(record)
        assert f"<td>{sentence.split('; ')[-1]}</td>" in page and "rank^3" not in page


def test_a_crossover_interval_past_the_largest_rank_says_so_without_its_top() -> None:
    """Walk-through 6: `numpy overtakes factored above rank 500 (358-781)` of 512x512 deltas."""
    from harness.record.sweep_record import AxisLimit, axis_limits
    from harness.plan.model import GroupInfo
    from harness.report.sweep import crossover_sentence

    groups = [GroupInfo(label="w", shape=(512, 768), rank=8, count=2), GroupInfo(label="v", shape=(512, 512), rank=8, count=2)]
    limit = axis_limits({"data.rank": 8, "data.adapters": 2}, groups)
    assert limit == {"data.rank": AxisLimit(size=512.0, shape=(512, 512))}
    record = known_sweep()  # numpy overtakes factored near rank 32
    base = fit_sweep(record.model_copy(update={"points": [p.model_copy(update={"limits": {"data.rank": AxisLimit(
        size=32.0, shape=(32, 32))}}) for p in record.points]}))
    [c] = base.crossovers  # its interval: 30.7 to 32.2
    assert c.crossing.size < 32 < c.crossing.high and c.high == 32 and c.reaches_past
    said = crossover_sentence(c)
    assert (f"above rank {c.crossing.size:.3g} ({c.crossing.low:.3g} to past 32, the largest rank of a 32x32 delta: "
            "they may not meet within it)") in said and "32.2" not in said, said
    [unlimited] = record.crossovers
    assert "past" not in crossover_sentence(unlimited)


def test_a_points_line_says_its_pick_and_leaves_the_finding_to_the_planner_line() -> None:
    """Walk-through 14: the point's line, the planner line and the picks table each said `the pick (torch)
    measured 1.9x slower than factored (intervals overlap)` at rank 256; the point's line now says its pick,
    without its run's verdict (walk-through 6: that verdict, torch against numpy, hid factored's 2.2x)."""
    from harness.run.sweep import point_summary

    run = load_record(Path(__file__).parents[1] / "report" / "records" / "main_job.json")
    run.analyses = [a for a in run.analyses if a.name == "spectrum"]
    record = known_sweep()
    last = record.points[-1]  # factored picked, numpy 17x faster: the planner line's
    assert point_summary(run, last) == f"spectrum picked {run.analyses[0].strategy}"
    assert "17x" in record.planner[0]
