"""The history page writes numbers as run reports do (`2,090x (780-5,601)`, not `2.09e+03x
(780-5.6e+03)`), draws a lone commit's interval, and names a strategy with no value at a commit
under its chart (issue 48's walk-through, History 3)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from harness.report.history import load
from harness.report.history_charts import Trend, roof_figure, trend_figure
from harness.report.history_page import write_history

from .test_history import TRACKS, write_meta, write_run

pytest.importorskip("asv")

F = math.sqrt(5601 / 780)  # the interval factor of a 2,090x speedup whose interval is about 780-5,601


def write_speedups(root: Path, points: list[str], commits: list[dict[str, tuple[float, float, float]]]) -> Path:
    """The speedups suite's results on vm-cpu: per commit, point -> (speedup, interval factor, busy
    share), NaN where not measured; a point missing from a commit is NaN throughout."""
    names = {track: f"speedups.MainJob.{track}" for track in TRACKS}
    write_meta(root, "vm-cpu", {name: {"name": name, "type": "track", "unit": "x", "param_names": ["point"],
                                       "params": [[repr(p) for p in points]], "version": "1"} for name in names.values()})
    for i, measured in enumerate(commits):
        values = [measured.get(p, (math.nan,) * 3) for p in points]
        tracks = {"track_time_ratio": [1 / v[0] for v in values], "track_interval": [v[1] for v in values],
                  "track_busy": [v[2] for v in values]}
        write_run(root, "vm-cpu", i, {names[t]: [tracks[t], [[repr(p) for p in points]], "1", 0, 1.0] + [None] * 6
                                      for t in TRACKS})
    return root


BASE = (1.0, 1.0, 0.0)  # the baseline: exactly 1, interval x1


def test_speedups_ratios_and_ticks_as_run_reports_write_them(tmp_path: Path) -> None:
    points = ["e:spectrum/numpy", "e:spectrum/torch", "e:spectrum/dual"]
    wide = (2090.0, F, 0.0)
    root = write_speedups(tmp_path / "asv", points, [{points[0]: BASE, points[1]: (2090.0, 1.05, 0.0), points[2]: wide},
                                                     {points[0]: BASE, points[1]: (1000.0, 1.05, 0.0), points[2]: wide}])
    page = write_history(load(root), root, tmp_path / "history.html").read_text()
    # the table: each newest speedup with its interval, as the run report's `1,670x (743-3,753)`
    assert '<td class="num">2,090x (780-5,601) ?</td>' in page and '<td class="num">1,000x (952-1,050)</td>' in page
    # the headline's and the steps table's regression, 2,090x -> 1,000x (not 2.09e+03x -> 1e+03x)
    assert re.search(r"e:spectrum/torch on vm-cpu, 2,090x &rarr; 1,000x\s+\(0\.478x, 99% interval 0\.437-0\.524, "
                     r"p&lt;0\.001\)", page)
    assert re.search(r'<td class="num">2,090x &rarr; 1,000x</td>\s*<td class="num">0\.478 \(99%: 0\.437-0\.524\)</td>',
                     page)
    svg = page[page.index("<svg"):page.index("</svg>")]
    ticks = re.findall(r">([^<>]*)</text>", svg)
    assert "1,000" in ticks and not [t for t in ticks if "e+" in t or re.fullmatch(r"\d{4,}", t)]


def test_a_speedup_the_run_would_mark_unresolved_is_marked_so_in_the_table(tmp_path: Path) -> None:
    """`1.23x (0.47-3.24)` had no `?` where `harness run` marks an interval that wide (walk-through 6):
    wider than the default precision, ±25%, it is marked; within it, not; with none, marked."""
    points = ["e:a/numpy", "e:a/wide", "e:a/edge", "e:a/narrow", "e:a/none"]
    root = write_speedups(tmp_path / "asv", points, [{points[0]: BASE, points[1]: (1.23, 2.63, 0.0),
                                                      points[2]: (2.0, 1.26, 0.0), points[3]: (2.0, 1.24, 0.0),
                                                      points[4]: (3.0, math.nan, 0.0)}])
    page = write_history(load(root), root, tmp_path / "history.html").read_text()
    cells = dict(re.findall(r"<tr><td>(\w+)</td><td class=\"num\">([^<]*)</td></tr>", page))
    assert cells == {"wide": "1.23x (0.468-3.23) ?", "edge": "2.00x (1.59-2.52) ?", "narrow": "2.00x (1.61-2.48)",
                     "none": "3.00x (no interval) ?"}


def test_a_lone_commits_interval_is_a_bar_a_run_of_two_a_band() -> None:
    from matplotlib.collections import PolyCollection

    commits = ["c0", "c1", "c2", "c3"]
    lone = Trend(label="torch", machine="vm-cpu", values={"c0": 2090.0}, bands={"c0": (780.0, 5601.0)})
    fig = trend_figure([lone], commits[:1], ["vm-cpu"], "speedup", reference=1.0)
    bars = [(list(line.get_xdata()), list(line.get_ydata())) for line in fig.axes[0].get_lines()]
    assert ([0, 0], [780.0, 5601.0]) in bars and not fig.axes[0].collections
    # two banded commits, one without an interval, one banded again: a band over c0-c1, a bar at c3
    run = Trend(label="torch", machine="vm-cpu", values=dict.fromkeys(commits, 10.0),
                bands={c: (8.0, 12.0) for c in ("c0", "c1", "c3")})
    ax = trend_figure([run], commits, ["vm-cpu"], "speedup", reference=1.0).axes[0]
    [band] = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert sorted({float(x) for x, _ in band.get_paths()[0].vertices}) == [0.0, 1.0]
    bars = [(list(line.get_xdata()), list(line.get_ydata())) for line in ax.get_lines()]
    assert ([3, 3], [8.0, 12.0]) in bars and not any(x == [2, 2] for x, _ in bars)


def test_a_point_on_the_1x_line_is_drawn_over_it() -> None:
    """Walk 8: process_pool at 0.999x sat on the dashed 1x line and was hard to see."""
    run = Trend(label="process_pool", machine="vm-cpu", values={"c0": 0.999, "c1": 1.0})
    ax = trend_figure([run], ["c0", "c1"], ["vm-cpu"], "speedup", reference=1.0).axes[0]
    [one] = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    [points] = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert points.get_zorder() > one.get_zorder() and points.get_markersize() >= 5
    assert points.get_markeredgecolor() == "white"


def test_a_strategy_with_no_value_at_a_commit_is_named_under_its_chart(tmp_path: Path) -> None:
    """top3/torch "n/a this commit" left the legend without a word: a note under the chart names it
    and why, as far as the suite's series tell (a busy share recorded: it was timed)."""
    points = ["e:top3/numpy", "e:top3/dual", "e:top3/torch"]
    root = write_speedups(tmp_path / "asv", points, [{points[0]: BASE, points[1]: (3.0, 1.1, 0.0)},
                                                     {points[0]: BASE, points[1]: (math.nan, math.nan, 0.0)}])
    page = write_history(load(root), root, tmp_path / "history.html").read_text()
    chart = page[page.index(">e: top3</h3>"):page.index("<table", page.index(">e: top3</h3>"))]
    notes = re.findall(r"<li>([^<]*)</li>", chart)
    assert notes == ["dual: no value at 01ababab (timed, but with no speedup over its baseline)",
                     "torch: no value at 00ababab, 01ababab (not timed: skipped on a busy machine, failed, or unable "
                     "to run here; asv&#39;s log of the run says which)"]
    table = page[page.index("<table", page.index(">e: top3</h3>")):]
    assert re.search(r"<td>torch</td><td class=\"num\">-</td>", table)  # its row, not left out


@pytest.mark.parametrize("log", [True, False])
def test_the_y_axis_labels_a_tick_at_or_above_the_highest_bar(log: bool) -> None:
    """The bench_dense svd chart's bars reached about 3-4 with no tick label above 2."""
    commits = ["c0", "c1", "c2"]
    trends = [Trend(label="svd", machine="vm-cpu", values={"c0": 2.4, "c1": 3.1, "c2": 2.8},
                    bands={"c0": (2.1, 2.9), "c1": (2.6, 4.3)}),
              Trend(label="eigh", machine="vm-cpu", values={"c0": 0.9, "c2": 1.2}, bands={"c2": (1.0, 1.5)})]
    fig = trend_figure(trends, commits, ["vm-cpu"], "seconds", log=log)
    fig.draw_without_rendering()
    ax = fig.axes[0]
    low, high = ax.get_ylim()
    labelled = [t.get_position()[1] for t in ax.yaxis.get_majorticklabels()
                if t.get_text() and low <= t.get_position()[1] <= high]
    assert max(labelled) >= 4.3 and high >= 4.3, (labelled, high)


@pytest.mark.parametrize("lowest", [0.0315, 0.063, 0.315])
def test_the_roof_charts_axis_labels_a_tick_at_or_below_the_lowest_point(lowest: float) -> None:
    """bench_dense's roof chart had points at 3-5% and no tick label left of 10 (walk-through 6)."""
    rows = ["svdvals/numpy", "svd/numpy", "svd_topk/torch_lowrank"]
    fig = roof_figure(rows, ["vm-cpu"], dict(zip([(r, "vm-cpu") for r in rows], [lowest, 0.28, 0.9])))
    fig.canvas.draw()
    ax = fig.axes[0]
    labelled = [t.get_position()[0] for t in ax.get_xticklabels() if t.get_text()]
    low = ax.get_xlim()[0]
    assert any(low <= t <= 100 * lowest for t in labelled) and any(t >= 90 for t in labelled)
