"""A sweep's HTML page (report.html in the sweep's folder): its sentences, a log-log chart per
analysis and axis (each strategy fitted or picked, its points with their intervals, its fitted
line, the plan's picks ringed, crossovers marked with their intervals), and the fits' and points'
tables. Charts are at most 1280 px wide."""

from __future__ import annotations

import json
import math
from pathlib import Path

from markupsafe import Markup
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from harness.base.atomic import write_atomic
from harness.record.sweep_classes import class_text
from harness.record.sweep_fits import NEAR, exponent_interval, exponent_text, size_of
from harness.record.sweep_record import PointTiming, ScalingFit, SweepRecord, axis_name
from harness.report.charts import MARKERS, _figure, _log_axis, literal, to_svg
from harness.report.html import environment
from harness.record.verdict import TOO_WIDE, UNREADABLE_SPAN
from harness.report.sweep import (SHOWN_POINT_COLUMNS, model_note, pick_rows, points_text, read_sweep, seconds_interval,
                                  shown_points, sweep_lines)

REPORT = "report.html"
CHART_INCHES = (9.0, 4.2)  # 864 x 403 px at 96 dpi: inside the page's 1280 px


def _chart_groups(record: SweepRecord) -> dict[tuple[str, str, str], list[ScalingFit]]:
    groups: dict[tuple[str, str, str], list[ScalingFit]] = {}
    for fit in record.fits:
        groups.setdefault((fit.analysis, fit.axis, json.dumps(fit.fixed)), []).append(fit)
    return groups


def _timed(record: SweepRecord, first: ScalingFit, strategy: str) -> list[tuple[float, PointTiming, bool]]:
    """A strategy's timings along the chart's axis: (size, timing, whether the plan picked it there)."""
    return [(size_of(p.values[first.axis]), t, p.chosen.get(first.analysis) == strategy) for p in record.points
            if all(p.values[k] == v for k, v in first.fixed.items())
            for t in p.timings if t.analysis == first.analysis and t.strategy == strategy]


def _drawn(record: SweepRecord, fits: list[ScalingFit]) -> list[str]:
    """Every strategy fitted, then every one the plan picked at a point of the chart (torch,
    picked at one rank only, was left off: too few points for a fit)."""
    first = fits[0]
    picked = [p.chosen.get(first.analysis, "") for p in record.points
              if all(p.values[k] == v for k, v in first.fixed.items())]
    return list(dict.fromkeys([f.strategy for f in fits] + [s for s in picked if s]))


@literal
def scaling_figure(record: SweepRecord, fits: list[ScalingFit]) -> Figure:
    """Seconds per matrix against the swept size, log-log, one colour and marker per strategy, each
    strategy's markers dodged a little in x (dodge), a ring round the plan's pick at each point."""
    fig = _figure(*CHART_INCHES)
    ax = fig.add_subplot()
    first = fits[0]
    fitted = {f.strategy: f for f in fits}
    ringed = False
    drawn = _drawn(record, fits)
    for i, strategy in enumerate(drawn):
        timed = _timed(record, first, strategy)
        if not timed:
            continue
        x = [n * dodge(i, len(drawn)) for n, _, _ in timed]
        y = [t.seconds for _, t, _ in timed]
        wide = [seconds_interval(t.low, t.high) == TOO_WIDE for _, t, _ in timed]  # no bar: walk 24's 6 µs-250 ms
        below = [0.0 if w else t.seconds - t.low for (_, t, _), w in zip(timed, wide)]
        above = [0.0 if w or not math.isfinite(t.high) else t.high - t.seconds for (_, t, _), w in zip(timed, wide)]
        fit = fitted.get(strategy)
        label = f"{strategy}: ^{exponent_text(fit.power.exponent)}" if fit else f"{strategy}: too few points to fit"
        bars = ax.errorbar(x, y, yerr=[below, above], fmt=MARKERS[i % len(MARKERS)], capsize=3, label=label)
        if fit is not None:
            lo, hi = min(fit.sizes), max(fit.sizes)
            line = [lo * (hi / lo) ** (j / 20) for j in range(21)]
            ax.plot(line, [fit.power.at(n) for n in line], "-", color=bars[0].get_color(), linewidth=1)
        for n, (_, t, _), w in zip(x, timed, wide):
            if w:
                ax.annotate(TOO_WIDE, (n, t.seconds), xytext=(5, 0), textcoords="offset points", fontsize=7, va="center")
        picks = [(n, t.seconds) for n, (_, t, picked) in zip(x, timed) if picked]
        if picks:
            ax.plot(*zip(*picks), "o", markersize=13, markerfacecolor="none", markeredgecolor="#222",
                    label="_" if ringed else "the plan's pick")
            ringed = True
    ax.set_xscale("log")
    ax.set_yscale("log")
    _mark_crossovers(ax, record, first)
    _log_axis(ax.yaxis, seconds=True)
    _log_axis(ax.xaxis)
    ax.set_xlabel(first.axis)
    ax.set_ylabel("seconds per matrix")
    ax.legend(fontsize=8, loc="best")
    return fig


DODGE = 1.05  # each strategy's markers this factor in x from the next's: a point's own size is the fitted line's


def dodge(i: int, count: int) -> float:
    """The factor strategy `i` of `count` is drawn off its size, the strategies centred on it: at rank 256 torch's
    triangle, the pick's ring and numpy's point sat on one spot (walk 22)."""
    return float(DODGE ** (i - (count - 1) / 2))


def _mark_crossovers(ax: Axes, record: SweepRecord, first: ScalingFit) -> None:
    """Each crossover of the chart's fits near the swept range (within NEAR of it, and not past the largest
    value the axis can take: the sentences say the others): a dashed line at the crossing and a band over its
    interval, clipped to the chart (whose range takes in such a crossing)."""
    mine = [c for c in record.crossovers if (c.analysis, c.axis, c.fixed) == (first.analysis, first.axis, first.fixed)
            and c.located and c.distance <= NEAR and (c.limit is None or c.crossing.size <= c.limit.size)]
    if not mine:
        return
    low, high = ax.get_xlim()
    low, high = min(low, *(c.crossing.size / 1.2 for c in mine)), max(high, *(c.crossing.size * 1.2 for c in mine))
    for c in mine:
        ax.axvspan(max(c.crossing.low, low), min(c.high, high), color="#bbb", alpha=0.45, linewidth=0,
                   label=f"{c.a} overtakes {c.b} (95%)")
        ax.axvline(c.crossing.size, color="#555", linestyle="--", linewidth=1)
    ax.set_xlim(low, high)


def wide_note(record: SweepRecord, fits: list[ScalingFit]) -> str | None:
    """The chart's caption for its points drawn without an error bar, their interval too wide to read."""
    drawn = _drawn(record, fits)
    wide = [f"{strategy} at {axis_name(fits[0].axis)} {n:g}" for strategy in drawn
            for n, t, _ in _timed(record, fits[0], strategy) if seconds_interval(t.low, t.high) == TOO_WIDE]
    return None if not wide else (
        f"Drawn without an error bar, marked {TOO_WIDE}: {', '.join(wide)}, whose 95% interval's ends are over "
        f"{UNREADABLE_SPAN:,.0f}x apart, so neither is a figure (the line above says how to re-run that point).")


# what a chart's error bars are, beside the words' paired basis (walk 25: bars apart at rank 256 beside a
# sentence of "too wide to tell")
BARS_NOTE = ("Each error bar is one strategy's own 95% interval of its time at a point. Whether two strategies are "
             "told apart rests on their paired rounds (the picks table gives that figure): bars apart may still be "
             "not told apart.")


def render_sweep(record: SweepRecord) -> str:
    charts = []
    for (analysis, axis, fixed), fits in _chart_groups(record).items():
        held = "" if fixed == "{}" else f" at {fixed}"
        charts.append({"title": f"{analysis}: cost against {axis_name(axis)}{held}",
                       "svg": Markup(to_svg(scaling_figure(record, fits))),
                       "note": " ".join(filter(None, (BARS_NOTE, wide_note(record, fits))))})
    env = environment()
    env.filters["exponent"] = exponent_text  # the headline's numbers, in the headline's form
    rows = shown_points(record)
    return env.get_template("sweep.html.j2").render(
        record=record, lines=sweep_lines(record), exponent_interval=exponent_interval, class_text=class_text,
        held=any(f.fixed for f in record.fits), charts=charts, columns=SHOWN_POINT_COLUMNS, rows=rows,
        model_note=model_note(rows), picks=pick_rows(record), points_text=points_text(record))


def write_sweep_report(folder: Path) -> Path:
    path = folder / REPORT
    html = render_sweep(read_sweep(folder))
    write_atomic(path, lambda fh: fh.write(html.encode()))
    return path

