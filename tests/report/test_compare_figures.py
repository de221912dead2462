"""`harness compare`'s figures as a newcomer read them (walk-through, "Compare (2)"): one interval
level on every label, time columns in B/A's own statistic, each run's own figure in an unstable
summary, no interval too wide to mean anything, and ratios and p values in one format."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from rich.console import Console

from harness.base.units import format_p, format_ratio
from harness.record.run_record import RunRecord
from harness.report import ratio_chart
from harness.report.compare import compare_records, compare_rounds
from harness.report.compare_view import apart_note, compare_table, unstable_lines
from harness.report.html import write_compare

from .test_compare_steps import MAIN_RUN
from .test_run_screen import real


def _timed(record: RunRecord, run: str, seconds: list[float], reasons: list[list[str]] | None = None) -> RunRecord:
    """The record with every group's rounds `seconds` per matrix, all of run `run`; with `reasons`,
    its groups in turn flagged unstable for them."""
    out = record.model_copy(deep=True)
    groups = [g for an in out.analyses for t in an.timings for g in t.groups]
    for i, g in enumerate(groups):
        samples = [s * g.sampled for s in seconds]
        g.rounds, g.pooled, g.spread = [f"{run}#x#{j}" for j in range(len(seconds))], 0, 0.03
        g.measurement.samples_s, g.measurement.median_s = samples, float(np.median(samples))
        g.measurement.reasons = reasons[i % len(reasons)] if reasons else []
        g.measurement.unstable = bool(g.measurement.reasons)
    return out


def _header(c_table: object) -> list[str]:
    return [str(col.header) for col in c_table.table.columns]  # type: ignore[attr-defined]


def test_one_interval_level_on_every_label(tmp_path: Path) -> None:
    """The terminal said "99% CI" and the HTML, its chart and footnote "95% interval", of one interval."""
    record = real("main_job", tmp_path)
    a, b = _timed(record, "A", [1.0, 1.1, 1.2]), _timed(record, "B", [1.3, 1.4, 1.5])
    for alpha, level, other in ((0.01, "99%", "95%"), (0.05, "95%", "99%")):
        c = compare_records(a, b, ("runs/a", "runs/b"), alpha=alpha)
        assert c.level == level
        table = compare_table(c, explain=True)
        assert f"B / A ({level} CI)" in _header(table) and f"with a {level} interval" in str(table.table.caption)
        assert f"{level} interval (bar)" in ratio_chart.ratio_figure(c).axes[0].get_xlabel()
        html = write_compare([c], tmp_path / f"{alpha}.html").read_text()
        assert f"<th>{level} interval</th>" in html and f"with a {level} interval" in html
        assert f"Its bar is the {level} interval" in html and other not in html


def test_the_time_columns_show_the_run_tables_figure_and_the_ratio_is_named_unpaired(tmp_path: Path) -> None:
    """runs/main2's table said `geometry dual_gram 246 ms !`, compare `247 ms  381 ms  1.55`: B's
    column was the geometric mean of its own rounds, the table's the median over all of them, pooled
    too. Now the columns are the table's figures, the ratio's test is named unpaired (walk 21: "paired rounds"
    over Welch's t of two runs' rounds, which are not paired), and a row
    whose medians' ratio disagrees with it is marked, with one line under the table saying why."""
    from .test_run_screen import table_rows

    a = real("main_job", tmp_path)
    b = a.model_copy(deep=True)  # B as a second run makes it: A's rounds pooled, then 1 round of its own, slower
    for g in (g for an in b.analyses for t in an.timings for g in t.groups):
        g.rounds, g.pooled = g.rounds + [g.rounds[0].replace("2026", "2027")], len(g.rounds)
        g.measurement.samples_s = g.measurement.samples_s + [3 * max(g.measurement.samples_s)]
        g.measurement.median_s = float(np.median(g.measurement.samples_s))
    c = compare_records(a, b, ("runs/main", "runs/main2"))
    table = compare_table(c)
    columns = {str(col.header): [str(cell) for cell in col._cells] for col in table.table.columns}
    for record, column in ((a, "A median"), (b, "B median")):
        shown = {r["strategy"].removesuffix(" *"): r["per matrix"].removesuffix(" !") for r in table_rows(record)
                 if r["analysis"] == "geometry"}
        assert shown  # one group each: the row's figure is the group's
        for r, cell in zip(c.rows, columns[column]):
            if r.analysis == "geometry":
                assert cell == shown[r.strategy]
    assert "B / A (99% CI)" in columns
    assert all(r.ratio > 2 and r.times_apart for r in c.rows)  # B's own round, 3x; its median, all but A's
    assert all(cell.endswith(" ≠") for cell in columns["B / A (99% CI)"])
    fitted = table.fit(Console(width=200), 200)
    assert "The medians use every round each record holds, pooled ones too." in str(fitted.caption)
    caption = str(compare_table(c, True).table.caption)
    assert "B / A: the geometric mean of B's own rounds" in caption and "Welch's unpaired t" in caption
    html = write_compare([c], tmp_path / "c.html").read_text()
    assert "<th>A median</th><th>B median</th><th>B / A</th>" in html and "&ne;" in html
    for text in (caption, html):  # "paired" only as "unpaired" and "not paired"
        assert "Welch's unpaired t" in text and text.replace("unpaired", "").count("paired") == text.count("not paired") == 1
    assert "paired" not in " ".join(map(str, [*columns, fitted.caption]))


def test_an_unstable_summary_gives_each_runs_own_figures(tmp_path: Path) -> None:
    """"load 10.0 on 2 cores (in A and B)" when A had 7.6-8.1 and B 9.6-10.0."""
    record = real("main_job", tmp_path)
    a = _timed(record, "A", [1.0, 1.1, 1.2], [["load 7.6 on 2 cores"], ["load 8.1 on 2 cores"]])
    b = _timed(record, "B", [1.0, 1.1, 1.2], [["load 9.6 on 2 cores"], ["load 10.0 on 2 cores",
                                                                           "IQR 148% of median"]])
    c = compare_records(a, b, ("a", "b"))
    n, iqr = len(c.rows), [r.label for r in c.rows if "B: IQR 148% of median" in r.unstable]
    assert iqr and unstable_lines(c) == [f"{n} of {n} groups unstable (both runs):", "  A: load 7.6-8.1 on 2 cores, B: load "
                                         f"9.6-10.0 on 2 cores ({n} groups)", f"  B: IQR 148% of median ({n // 2} groups)"]


def test_unstable_groups_are_counted_once_and_a_cause_of_few_names_them(tmp_path: Path) -> None:
    """Walk 14: `16 groups unstable: A: load …`, `9 groups unstable: …`, `1 group unstable: B: its 2
    samples differ by 4.2x`: the 9 and the 1 were within the 16, and the 1 named no group."""
    record = real("main_job", tmp_path)
    a = _timed(record, "A", [1.0, 1.1, 1.2], [["load 5.1 on 2 cores"]] * 2 + [[]] * 2)
    b = _timed(record, "B", [1.0, 1.1, 1.2], [["IQR 26% of median"], []])
    one = b.analyses[0].timings[0].groups[0].measurement
    one.reasons = [*one.reasons, "2 samples differ by 4.2x"]
    c = compare_records(a, b, ("a", "b"))
    n, (named,) = len(c.rows), [r.label for r in c.rows if any(u.endswith("4.2x") for u in r.unstable)]
    label = [r.label for r in c.rows]
    in_a, in_b = sum(1 for i in range(n) if i % 4 < 2), sum(1 for i in range(n) if i % 2 == 0)
    flagged = sum(1 for i in range(n) if i % 4 < 2 or i % 2 == 0)
    assert named in label and unstable_lines(c) == [  # each cause counts its groups; which they are: --verbose (walk 23)
        f"{flagged} of {n} groups unstable (both runs):", f"  A: load 5.1 on 2 cores ({in_a} groups)",
        f"  B: IQR 26% of median ({in_b} groups)", "  B: 2 samples differ by 4.2x (1 group)"]
    assert any(line.startswith(f"unstable: {named} ") for line in unstable_lines(c, verbose=True))
    few = _timed(record, "A", [1.0, 1.1, 1.2], [["IQR 30% of median"], [], [], []])  # walk 15: A, B, B, A
    every = _timed(record, "B", [1.0, 1.1, 1.2], [["load 6.0 on 2 cores"]])
    lines = unstable_lines(compare_records(few, every, ("a", "b")))
    assert lines[1:] == ["  B: load 6.0 on 2 cores (18 groups)", f"  A: IQR 30% of median ({(n + 3) // 4} groups)"]  # the machine's first


def test_each_runs_causes_count_and_name_their_groups_alike_machine_causes_first(tmp_path: Path) -> None:
    """Walk 15: `B: IQR 44-56% of median in 4 groups; A: IQR 29-84% of median in svdvals numpy on 32x48r4,
    svd numpy on 48x32r4, svd torch on 32x48r4`: one run's groups counted, the other's named; and a run's
    causes by how many groups they flag, where every page says the machine's first."""
    record = real("main_job", tmp_path)
    a = _timed(record, "A", [1.0, 1.1, 1.2], [["load 5.0 on 2 cores", "IQR 30% of median"], ["IQR 31% of median"],
                                              [], [], [], []])
    b = _timed(record, "B", [1.0, 1.1, 1.2], [["IQR 40% of median"], [], [], []])
    c = compare_records(a, b, ("a", "b"))
    label = [r.label for r in c.rows]
    flagged = sum(1 for i in range(len(label)) if i % 6 < 2 or i % 4 == 0)
    in_load, in_iqr, in_b = (sum(1 for i in range(len(label)) if test(i)) for test in (
        lambda i: i % 6 == 0, lambda i: i % 6 < 2, lambda i: i % 4 == 0))
    iqr = sum(1 for i in range(len(label)) if i % 6 < 2 or i % 4 == 0)  # A's or B's
    assert in_iqr and in_b and unstable_lines(c) == [
        f"{flagged} of {len(label)} groups unstable (both runs):", f"  A: load 5.0 on 2 cores ({in_load} groups)",
        f"  A: IQR 30-31% of median, B: IQR 40% of median ({iqr} groups)"]


def test_groups_not_judged_say_which_cause_is_whose(tmp_path: Path) -> None:
    """Walk 15: `6 of 16 groups have fewer than 2 rounds on a side …, or so few and scattered that the
    interval spans over 100x`, when all 6 had one round on a side: each cause counts and names its groups."""
    record = real("main_job", tmp_path)
    a, b = _timed(record, "A", [1.0, 4.0]), _timed(record, "B", [1.5, 5.0])  # 2 scattered rounds a side: too wide
    for g in [g for an in b.analyses for t in an.timings for g in t.groups][:3]:
        g.rounds, g.measurement.samples_s = g.rounds[:1], g.measurement.samples_s[:1]  # 1 round
    c = compare_records(a, b, ("a", "b"))
    few, wide = ([r.label for r in c.rows if (r.n_b == 1) == one] for one in (True, False))
    assert len(few) == 3 and c.not_judged == (
        f"not judged: {len(c.rows)} of {len(c.rows)} groups, none testable: 3 groups (e.g. {few[0]}, "
        f"{few[1]}) have fewer than 2 rounds on a side (a round times each strategy once); {len(wide)} groups (e.g. "
        f"{wide[0]}, {wide[1]}) have rounds so few and scattered that the interval spans over 100x; for a verdict "
        f"give each run more time: `{MAIN_RUN} -o a-30s --fresh --budget 30s` and `{MAIN_RUN} -o b-30s "
        "--fresh --budget 30s`, then `harness compare a-30s b-30s`")
    gated = compare_records(a, b, ("a", "b"), gate=True)  # walk 17: the gate's `7 with too few rounds` held a
    assert gated.inconclusive == [  # too wide row, beside the footer's causes: counted as the rows say them
        f"none of {len(c.rows)} groups could be gated (3 with too few rounds, {len(wide)} too wide)"]


def test_an_interval_too_wide_to_mean_anything_is_too_few_rounds(tmp_path: Path) -> None:
    """"1.3 (0.000779-2.16e+03)" from 2 rounds a side, and a chart axis over 8 decades."""
    a, b = {"A#x#0": 1.0, "A#x#1": 4.0}, {"B#x#0": 1.5, "B#x#1": 5.0}
    ratio, ci, p, change = compare_rounds(a, b)
    assert (ci, p, change) == (None, None, "too few rounds") and 1 < ratio < 2
    record = real("main_job", tmp_path)
    c = compare_records(_timed(record, "A", [1.0, 4.0]), _timed(record, "B", [1.5, 5.0]), ("a", "b"))
    assert {r.change for r in c.rows} == {"too few rounds"} and not any(r.ratio_ci for r in c.rows)
    assert c.not_judged and "the interval spans over 100x" in c.not_judged
    lo, hi = ratio_chart.ratio_figure(c).axes[0].get_xlim()
    assert 1 / 10 < lo and hi < 10


def test_a_row_with_rounds_enough_says_its_interval_is_too_wide(tmp_path: Path) -> None:
    """`3, 3  too few rounds`: the rounds were enough, the interval over 100x wide; one round a side
    is still too few."""
    import math
    import re

    record = real("main_job", tmp_path)
    c = compare_records(_timed(record, "A", [1.0, 4.0]), _timed(record, "B", [1.5, 5.0]), ("a", "b"))
    said = {r.change_text for r in c.rows}
    assert len(said) == 1 and re.fullmatch(r"too wide \((x[\d,]+|over x1,000) either way\)", said.pop())
    x = int(re.split(r"\(x|\(over x", c.rows[0].wide)[1].split(" ")[0].replace(",", ""))
    assert x > math.sqrt(100)  # over 100x end to end: over 10x either way; from x1,000 said `over x1,000`
    from harness.report.compare_view import summary_line

    # walk 11: the headline said `too few rounds` of rows that read `too wide (...)`
    assert summary_line(c).endswith("none judged (too few rounds or too wide an interval, below)")
    cells = [str(cell) for cell in compare_table(c).table.columns[-1]._cells]
    assert all(c.rows[0].wide in cell for cell in cells)
    assert f">{c.rows[0].wide}</td>" in write_compare([c], tmp_path / "c.html").read_text()
    few = compare_records(_timed(record, "A", [1.0]), _timed(record, "B", [1.5, 5.0]), ("a", "b"))
    assert {r.change_text for r in few.rows} == {"too few rounds"}


def test_ratios_with_3_significant_figures_and_p_as_a_plain_decimal(tmp_path: Path) -> None:
    """`0.754`, `0.81`, `1.3` and `3.3e-01` in one table."""
    assert [format_ratio(x) for x in (0.754, 0.81, 1.3, 0.000779, 2157.0, 12.8)] == [
        "0.754", "0.810", "1.30", "0.000779", "2,160", "12.8"]
    assert [format_p(p) for p in (0.33, 0.0123, 0.0004, None, 0.8, 0.4)] == ["0.33", "0.012", "<0.001", "-", "0.80", "0.40"]
    record = real("main_job", tmp_path)
    c = compare_records(_timed(record, "A", [1.0, 1.1, 1.2]), _timed(record, "B", [1.3, 1.4, 1.5]), ("a", "b"))
    columns = {str(col.header): [str(cell) for cell in col._cells] for col in compare_table(c).table.columns}
    for r, ratio, p in zip(c.rows, columns["B / A (99% CI)"], columns["p-value"]):
        assert r.ratio_ci and ratio == f"{format_ratio(r.ratio)} ({format_ratio(r.ratio_ci[0])}-"\
                                      f"{format_ratio(r.ratio_ci[1])})" and p == format_p(r.p_value)
        assert "e" not in ratio + p and len(ratio.split()[0].replace(".", "").lstrip("0")) == 3


def _kept(fitted: object) -> dict[int, set[str]]:
    """The columns drawn at each width from 160 down to 52."""
    console = Console(width=200)
    return {w: {str(col.header) for col in fitted.fit(console, w).columns} for w in range(160, 50, -2)}  # type: ignore[attr-defined]


def test_a_narrow_terminal_leaves_the_medians_and_p_first_and_the_group_last(tmp_path: Path) -> None:
    """Walk 9: at 100 columns the group left, and two `spectrum numpy` rows read alike; now the
    medians (together: walk 20 kept B's alone) and the p-value leave first (B / A and the change say what they decide), the group last,
    rows "too few rounds" or not. Each left out is named in the caption."""
    record = real("main_job", tmp_path)
    a, b = _timed(record, "A", [1.0, 1.1, 1.2]), _timed(record, "B", [1.3, 1.4, 1.5])
    few = b.model_copy(deep=True)
    few.analyses[0].timings[0].groups[0].rounds[:2] = ["A#x#0", "A#x#1"]  # two of A's rounds pooled in B
    for c in (compare_records(a, b, ("runs/a", "runs/b")), compare_records(a, few, ("runs/a", "runs/b"))):
        fitted = compare_table(c)
        console = Console(width=200, force_terminal=True)  # a terminal's note: a wider one shows the rest
        assert {"p-value", "rounds A, B", "group", "A median", "B median"} <= {str(col.header) for col in fitted.fit(console, 200).columns}
        kept_at = _kept(fitted)
        assert {"group", "rounds A, B"} <= kept_at[100]
        order = ["A median", "B median", "p-value", "rounds A, B", "group"]
        for kept in kept_at.values():
            gone = [name for name in order if name not in kept]
            assert gone == order[:len(gone)], kept
        assert any("group" not in kept for kept in kept_at.values())  # the narrow widths were reached
        assert all(("A median" in kept) == ("B median" in kept) for kept in kept_at.values())  # both or neither (walk 20)
        narrow = next(w for w, kept in kept_at.items() if "A median" not in kept)
        # not a bare "p"; what left, each named
        said = re.search(r"\(left out at this width: A median, B median; (\d+) columns show them \(COLUMNS=\1\)\)",
                         str(fitted.fit(console, narrow).caption))
        assert said is not None and "A median" in {str(col.header) for col in fitted.fit(console, int(said[1])).columns}
        assert re.search(r"\d+ columns show them \(COLUMNS=\d+\)\)",
                         str(fitted.fit(console, min(kept_at, key=lambda w: len(kept_at[w]))).caption))


def test_a_cause_earlier_runs_rounds_gave_is_said_once_with_this_runs(tmp_path: Path) -> None:
    """Walk-through 3: `A: earlier runs' rounds: load 4.8-5.2-4.9-5.7 on 2 cores` stood in one
    line and `A: load 5.2 on 2 cores` in another: one cause, its range over both, its source said."""
    record = real("main_job", tmp_path)
    a = _timed(record, "A", [1.0, 1.1, 1.2], [["load 5.2 on 2 cores"], ["earlier runs' rounds: load 4.8 on 2 cores"]])
    b = _timed(record, "B", [1.0, 1.1, 1.2], [["earlier runs' rounds: load 7.4 on 2 cores"],
                                              ["earlier runs' rounds: load 10.3 on 2 cores"]])
    c = compare_records(a, b, ("a", "b"))
    n = len(c.rows)
    assert unstable_lines(c) == [f"{n} of {n} groups unstable (both runs; some of A's and all of B's from earlier runs' "
                                 "pooled rounds):", f"  A: load 4.8-5.2 on 2 cores, B: load 7.4-10.3 on 2 cores ({n} groups)"]


def test_earlier_runs_rounds_are_said_of_the_run_that_pooled_them(tmp_path: Path) -> None:
    """Walk 12: `A: ...; B: other processes took 67-70% of the 2 CPUs, load 6.7-6.9 on 2 cores (some
    from earlier runs' pooled rounds)` of a --fresh B, which pooled none: A's were."""
    record = real("main_job", tmp_path)
    a = _timed(record, "A", [1.0, 1.1, 1.2], [["other processes took 66% of the 2 CPUs", "earlier runs' rounds: load 6.1 on 2 cores"]])
    b = _timed(record, "B", [1.0, 1.1, 1.2], [["other processes took 67% of the 2 CPUs", "load 6.7 on 2 cores"],
                                              ["other processes took 70% of the 2 CPUs", "load 6.9 on 2 cores"]])
    lead, *causes = unstable_lines(compare_records(a, b, ("a", "b")))
    assert lead.endswith("(both runs; some of A's from earlier runs' pooled rounds):")  # not B's
    assert causes[1].startswith("  A: load 6.1 on 2 cores, B: load 6.7-6.9 on 2 cores")


def test_causes_that_flag_the_same_groups_share_one_line(tmp_path: Path) -> None:
    """Walk-through 5: `19 groups unstable: A: other processes took 69-72% ...` and `19 groups
    unstable: A: load 4.8-4.9 on 2 cores` were two lines of the same count and prefix."""
    record = real("main_job", tmp_path)
    a = _timed(record, "A", [1.0, 1.1, 1.2], [["load 4.8 on 2 cores", "IQR 40% of median"],
                                              ["load 4.9 on 2 cores", "IQR 42% of median"]])
    b = _timed(record, "B", [1.0, 1.1, 1.2], [["load 7.4 on 2 cores"]])
    c = compare_records(a, b, ("a", "b"))
    n = len(c.rows)  # one lead, counted once; a line per cause (walk 23)
    assert unstable_lines(c) == [f"{n} of {n} groups unstable (both runs):", f"  A: load 4.8-4.9 on 2 cores, B: load 7.4 on 2 "
                                 f"cores ({n} groups)", f"  A: IQR 40-42% of median ({n} groups)"]


def test_a_ratio_on_the_other_side_of_1_from_its_medians_is_explained_under_the_table(tmp_path: Path) -> None:
    """Walk-through 6: `76 µs  73 µs  1.24 (0.279-5.51)` read as B slower beside a lower B median, and
    only the HTML said why."""
    record = real("main_job", tmp_path)
    c = compare_records(_timed(record, "A", [1.0, 1.1, 1.2], []), _timed(record, "B", [1.0, 1.1, 1.2], []), ("a", "b"))
    assert apart_note(c) is None
    r = c.rows[0]
    c.rows[0] = r.model_copy(update={"time_b_s": r.time_a_s * 0.96, "ratio": 1.24, "ratio_ci": (0.279, 5.51)})
    note = apart_note(c)
    assert note is not None and note.startswith(f"B / A and the medians' ratio lie on either side of 1 on {r.label}. "
                                                "Each lies within B / A's interval.")
    assert "B / A takes each run's own rounds alone" in note


def test_no_ratio_label_is_struck_through_by_the_1x_line(tmp_path: Path) -> None:
    """Walk-through 8: `0.711x` (no interval) was labelled right of its point, across the dashed 1x
    line, where another row's 10x ratio widened the axis; each label stays on its side of 1, inside the axes."""
    record = real("main_job", tmp_path)
    c = compare_records(_timed(record, "A", [1.0, 1.01, 0.99]), _timed(record, "B", [1.05, 1.06, 1.04]), ("a", "b"))
    rows = [c.rows[0].model_copy(update={"ratio": 0.711, "ratio_ci": None, "change": "too few rounds"}),
            c.rows[1].model_copy(update={"ratio": 10.0, "ratio_ci": (9.0, 11.0), "change": "slower"}),
            c.rows[2].model_copy(update={"ratio": 0.1, "ratio_ci": (0.09, 0.11), "change": "faster"}), *c.rows[3:]]
    fig = ratio_chart.ratio_figure(c.model_copy(update={"rows": rows}))
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    ax = fig.axes[0]
    one, box = ax.transData.transform((1.0, 0.0))[0], ax.get_window_extent(renderer)
    assert [t.get_text() for t in ax.texts][:3] == ["0.711", "10.0", "0.100"]  # as the tables write B / A
    for text in ax.texts:
        extent = text.get_window_extent(renderer)
        assert not extent.x0 <= one <= extent.x1, (text.get_text(), extent, one)
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1, (text.get_text(), extent, box)
