"""The charts of `harness history`, as inline SVG: series across commits (a colour per strategy or
parameter set, a line style per machine, 95% interval bands, an error bar at a lone point,
judged changes marked) and each strategy's share of each machine's measured roof.

Labels are placed by matplotlib's layout only (ticks, titles, a legend outside the axes), never
annotated onto the data, so no two can overlap however the lines fall; commit ticks are thinned to
MAX_TICKS, unrotated, so a long history stays legible. Every name drawn (strategy, parameter,
machine, benchmark) comes from asv's results, which are data: mathtext is off (LITERAL), so
"$\\fakecmd{x}$" is drawn as written instead of failing matplotlib's parser."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from harness.report.charts import BAD, GOOD, NAME_POINTS, _figure, _log_axis, literal, to_svg

STYLES = ["-", "--", ":", "-."]  # one per machine, in the page's machine order
MARKS = {"regression": ("v", BAD), "improvement": ("^", GOOD)}
MAX_TICKS = 8  # commit labels across a chart: 8 short hashes fit unrotated
WIDTH, HEIGHT = 5.6, 3.3  # inches: two side by side in the page's 1100 px


@dataclass(frozen=True)
class Trend:
    """One line: a strategy (or parameter set) on one machine, by commit."""

    label: str
    machine: str
    values: dict[str, float]  # commit -> value
    bands: dict[str, tuple[float, float]] = field(default_factory=dict)  # commit -> its interval
    marks: dict[str, str] = field(default_factory=dict)  # commit -> "regression" or "improvement"


def _ticks(commits: Sequence[str]) -> list[int]:
    """At most MAX_TICKS commit positions, evenly spread, the newest always among them."""
    if len(commits) <= MAX_TICKS:
        return list(range(len(commits)))
    step = -(-len(commits) // MAX_TICKS)
    return sorted({*range(len(commits) - 1, -1, -step)})


def _intervals(ax: Axes, t: Trend, commits: Sequence[str], x_of: dict[str, int], colour: str) -> None:
    """The trend's 95% intervals: a band over each run of consecutive measured commits that have
    one, an error bar at a lone one (a band over one commit is not drawn, and the dot alone looked
    precise). A measured commit without an interval ends a band: none is drawn across it."""
    measured = [c for c in commits if c in t.values]
    for banded, group in itertools.groupby(measured, key=t.bands.__contains__):
        run = list(group)
        if not banded:
            continue
        lows, highs = [t.bands[c][0] for c in run], [t.bands[c][1] for c in run]
        if len(run) > 1:
            ax.fill_between([x_of[c] for c in run], lows, highs, color=colour, alpha=0.15, lw=0)
        else:  # a line with caps, not errorbar: asv's data may put the value outside its interval
            ax.plot([x_of[run[0]]] * 2, [lows[0], highs[0]], color=colour, lw=1, marker="_", ms=7)


def _tick_over(ax: Axes, drawn: Sequence[float], which: str = "y", lowest: bool = False) -> None:
    """Widen the axis (`which`) to the first round value (1, 2, 5 x 10^k on a log axis, the
    locator's next tick on a linear one) at which a labelled tick sits at or beyond the highest
    value or interval end drawn, or with `lowest` at or below the lowest: the bench_dense svd
    chart's bars reached 3-4 over a last label of 2, its roof chart's points at 3-5% had no label
    left of 10."""
    log = getattr(ax, f"get_{which}scale")() == "log"
    finite = [v for v in drawn if np.isfinite(v) and (v > 0 or not log)]
    if not finite:
        return
    get_lim, set_lim = getattr(ax, f"get_{which}lim"), getattr(ax, f"set_{which}lim")
    (low, high), locator = get_lim(), getattr(ax, f"{which}axis").get_major_locator()
    edge = min(finite) if lowest else max(finite)
    beyond = (lambda v: v <= edge) if lowest else (lambda v: v >= edge)
    if log:
        e = math.floor(math.log10(edge))
        limits = sorted((m * 10.0**k for k in range(e - 2, e + 3) for m in (1, 2, 5)), reverse=lowest)
    else:
        limits = sorted(locator.tick_values(low, high), reverse=lowest)
    for limit in [low if lowest else high, *filter(beyond, limits)]:
        ends = (min(low, limit), high) if lowest else (low, max(high, limit))
        if any(beyond(t) and ends[0] <= t <= ends[1] for t in locator.tick_values(*ends)):
            set_lim(*ends)
            return


def trend_chart(trends: Sequence[Trend], commits: Sequence[str], machines: Sequence[str], ylabel: str,
                reference: float | None = None, log: bool = True) -> str:
    return to_svg(trend_figure(trends, commits, machines, ylabel, reference, log))


@literal
def trend_figure(trends: Sequence[Trend], commits: Sequence[str], machines: Sequence[str], ylabel: str,
                 reference: float | None = None, log: bool = True) -> Figure:
    """Value against commit (oldest left), on a log axis unless `log` is False (a value that may
    be 0 or below: an exponent); `reference` (a speedup's 1) as a grey line."""
    labels = sorted({t.label for t in trends})
    colour = {label: f"C{i % 10}" for i, label in enumerate(labels)}
    style = {m: STYLES[i % len(STYLES)] for i, m in enumerate(machines)}
    x_of = {c: i for i, c in enumerate(commits)}
    fig = _figure(WIDTH, HEIGHT)
    ax = fig.subplots()
    for t in trends:
        xs = [x_of[c] for c in commits if c in t.values]
        ys = [t.values[c] for c in commits if c in t.values]
        # a white rim and a zorder over the 1x line: a point at 0.999x hid in its dashes (walk 8)
        ax.plot(xs, ys, ls=style[t.machine], color=colour[t.label], marker="o", ms=5, mec="white", mew=0.8, lw=1.3,
                zorder=3)
        _intervals(ax, t, commits, x_of, colour[t.label])
        for c, verdict in t.marks.items():
            marker, edge = MARKS[verdict]
            ax.plot([x_of[c]], [t.values[c]], marker=marker, ms=9, mfc="none", mec=edge, mew=1.6)
    if reference is not None:
        ax.axhline(reference, color="#888", lw=0.8, ls="--", zorder=1)
    if log:
        ax.set_yscale("log")
        _log_axis(ax.yaxis)
    _tick_over(ax, [v for t in trends for v in [*t.values.values(), *(high for _, high in t.bands.values())]])
    ticks = _ticks(commits)
    ax.set_xticks(ticks, [commits[i][:8] for i in ticks], fontsize=7)
    ax.set_xlim(-0.5, max(len(commits) - 0.5, 0.5))
    ax.set_xlabel("commit (oldest left)", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.grid(True, which="major", lw=0.4, color="#ddd")
    handles = [Line2D([], [], color=colour[label], lw=2, label=label) for label in labels]
    if len(machines) > 1:
        handles += [Line2D([], [], color="#555", ls=style[m], lw=1.3, label=m) for m in machines]
    marked = {v for t in trends for v in t.marks.values()}
    handles += [Line2D([], [], ls="", marker=MARKS[v][0], mfc="none", mec=MARKS[v][1], ms=8, label=v)
                for v in MARKS if v in marked]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(3, len(handles)), fontsize=7, frameon=False)
    return fig


@literal
def roof_figure(rows: Sequence[str], machines: Sequence[str], shares: dict[tuple[str, str], float]) -> Figure:
    """Each row's (strategy's) achieved share of each machine's roof at its intensity, a point per
    machine on a log axis (bars there had lengths that meant nothing), in the page's machine
    order. A share over 100% is hollow: no kernel beats its roof, so its count does not hold (the
    run report's `% of peak >100%`)."""
    fig = _figure(WIDTH * 1.5, 0.9 + 0.28 * len(rows) * max(len(machines), 1))
    ax = fig.subplots()
    height = 0.8 / max(len(machines), 1)
    y = np.arange(len(rows))
    for i, machine in enumerate(machines):
        values = np.array([100 * shares.get((row, machine), np.nan) for row in rows])
        at = y + (i - (len(machines) - 1) / 2) * height
        over = values > 100
        ax.scatter(values[~over], at[~over], s=24, color=f"C{i % 10}", label=machine, zorder=3)
        ax.scatter(values[over], at[over], s=24, facecolors="none", edgecolors=f"C{i % 10}", zorder=3)
    ax.axvline(100, color="#333", lw=1, ls="--")
    ax.set_xscale("log")
    _log_axis(ax.xaxis)
    _tick_over(ax, [100 * v for v in shares.values()], "x", lowest=True)
    ax.set_yticks(y, rows, fontsize=NAME_POINTS)  # at 7 they were half the size of the trends' tick labels
    ax.invert_yaxis()
    ax.set_xlabel("% of the machine's measured roof at the kernel's flops per byte (log scale)", fontsize=8)
    ax.grid(True, axis="x", lw=0.4, color="#ddd")
    fig.legend(loc="outside lower center", ncols=min(3, len(machines)), fontsize=7, frameon=False)
    return fig


def roof_chart(rows: Sequence[str], machines: Sequence[str], shares: dict[tuple[str, str], float]) -> str:
    return to_svg(roof_figure(rows, machines, shares))
