"""A sweep's HTML page (report.html in the sweep's folder): its sentences, a log-log chart per
analysis and axis (each strategy's points with their intervals, its fitted line, crossovers marked
with their intervals), and the fits' and points' tables. Charts are at most 1280 px wide."""

from __future__ import annotations

import json
import math
from pathlib import Path

from markupsafe import Markup
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from harness.base.atomic import write_atomic
from harness.record.sweep_fits import axis_name, size_of
from harness.record.sweep_record import ScalingFit, SweepRecord, load_sweep
from harness.report.charts import MARKERS, _figure, _log_axis, literal, to_svg
from harness.report.html import environment
from harness.report.sweep import pick_rows, point_rows, sweep_lines

REPORT = "report.html"
CHART_INCHES = (9.0, 4.2)  # 864 x 403 px at 96 dpi: inside the page's 1280 px


def _chart_groups(record: SweepRecord) -> dict[tuple[str, str, str], list[ScalingFit]]:
    groups: dict[tuple[str, str, str], list[ScalingFit]] = {}
    for fit in record.fits:
        groups.setdefault((fit.analysis, fit.axis, json.dumps(fit.fixed)), []).append(fit)
    return groups


@literal
def scaling_figure(record: SweepRecord, fits: list[ScalingFit]) -> Figure:
    """Seconds per matrix against the swept size, log-log, one colour and marker per strategy."""
    fig = _figure(*CHART_INCHES)
    ax = fig.add_subplot()
    first = fits[0]
    for i, fit in enumerate(fits):
        timed = [(size_of(p.values[fit.axis]), t) for p in record.points
                 if all(p.values[k] == v for k, v in fit.fixed.items())
                 for t in p.timings if t.analysis == fit.analysis and t.strategy == fit.strategy]
        x = [n for n, _ in timed]
        y = [t.seconds for _, t in timed]
        below = [t.seconds - t.low for _, t in timed]
        above = [(t.high - t.seconds) if math.isfinite(t.high) else 0.0 for _, t in timed]
        bars = ax.errorbar(x, y, yerr=[below, above], fmt=MARKERS[i % len(MARKERS)], capsize=3,
                           label=f"{fit.strategy}: ^{fit.power.exponent:.2g}")
        lo, hi = min(fit.sizes), max(fit.sizes)
        line = [lo * (hi / lo) ** (j / 20) for j in range(21)]
        ax.plot(line, [fit.power.at(n) for n in line], "-", color=bars[0].get_color(), linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    _mark_crossovers(ax, record, first)
    _log_axis(ax.yaxis, seconds=True)
    _log_axis(ax.xaxis)
    ax.set_xlabel(first.axis)
    ax.set_ylabel("seconds per matrix")
    ax.legend(fontsize=8, loc="best")
    return fig


def _mark_crossovers(ax: Axes, record: SweepRecord, first: ScalingFit) -> None:
    """Each crossover of the chart's fits: a dashed line at the crossing and a band over its
    interval, clipped to the chart (whose range takes in a crossing near the swept one)."""
    mine = [c for c in record.crossovers if (c.analysis, c.axis, c.fixed) == (first.analysis, first.axis, first.fixed)]
    if not mine:
        return
    low, high = ax.get_xlim()
    low, high = min(low, *(c.crossing.size / 1.2 for c in mine)), max(high, *(c.crossing.size * 1.2 for c in mine))
    for c in mine:
        ax.axvspan(max(c.crossing.low, low), min(c.crossing.high, high), color="#bbb", alpha=0.45, linewidth=0,
                   label=f"{c.a} overtakes {c.b} (95%)")
        ax.axvline(c.crossing.size, color="#555", linestyle="--", linewidth=1)
    ax.set_xlim(low, high)


def render_sweep(record: SweepRecord) -> str:
    charts = []
    for (analysis, axis, fixed), fits in _chart_groups(record).items():
        held = "" if fixed == "{}" else f" at {fixed}"
        charts.append({"title": f"{analysis}: cost against {axis_name(axis)}{held}",
                       "svg": Markup(to_svg(scaling_figure(record, fits)))})
    rows = point_rows(record)
    return environment().get_template("sweep.html.j2").render(record=record, lines=sweep_lines(record),
                                                               charts=charts, rows=rows,
                                                               picks=pick_rows(record))


def write_sweep_report(folder: Path) -> Path:
    path = folder / REPORT
    html = render_sweep(load_sweep(folder))
    write_atomic(path, lambda fh: fh.write(html.encode()))
    return path

