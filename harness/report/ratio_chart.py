"""The compare page's chart of B / A per shape group, and the caption under it. Each kind of point
(its change, too wide or not, unstable or not, a regression) is drawn with one marker, and the
legend and the caption name each kind drawn from that one description (walk 20: the caption said
"drawn as a grey square" of rows drawn as hollow grey circles, the legend a filled grey circle)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import NullFormatter

from harness.base.units import format_ratio
from harness.report.charts import _figure, literal, set_title
from harness.report.compare import MAX_SPAN, Comparison, GroupComparison
from harness.report.compare_view import CHANGES

# (largest log10 extent, ticks): round ratios a reader knows (0.5 is 2x faster), finer near 1
RATIO_TICKS = ((0.12, [0.8, 0.9, 1, 1.1, 1.25]), (0.35, [0.5, 0.67, 0.8, 1, 1.25, 1.5, 2]),
               (0.75, [0.2, 0.33, 0.5, 1, 2, 3, 5]), (1.1, [0.1, 0.2, 0.5, 1, 2, 5, 10]),
               (2.2, [0.01, 0.1, 1, 10, 100]))
CHANGE_COLOR = {"slower": "#c0392b", "faster": "#1b7f3a", "not significant": "#5b7fa6", "too few rounds": "#999999"}
COLOR_NAME = {"slower": "red", "faster": "green", "not significant": "blue", "too few rounds": "grey"}
CHANGE_LABEL = {"slower": "slower", "faster": "faster", "not significant": "no significant change",
                "too few rounds": "too few rounds for the test"}
SHAPE_NAME = {"o": "circle", "s": "square", "D": "diamond"}


class PointKind(NamedTuple):
    """How one kind of row is drawn and named: the chart, its legend and its caption read this alone."""

    order: tuple[int, int, int]  # the legend's order: by change, too wide after, unstable after, regressions last
    marker: str  # matplotlib's: "o", "s", "D"
    change: str
    hollow: bool  # unstable: drawn white inside
    label: str  # the legend's words

    @property
    def described(self) -> str:
        """`Hollow grey circle, no bar`: the marker in words, as the caption names it."""
        fill = "hollow " if self.hollow else ""
        bar = ", no bar" if self.change == "too few rounds" else ""
        return f"{fill}{COLOR_NAME[self.change]} {SHAPE_NAME[self.marker]}{bar}".capitalize()


def wide_label() -> str:
    return f"interval over {MAX_SPAN:g}x wide, no test"


def point_kind(r: GroupComparison, c: Comparison) -> PointKind:
    """The kind of point a row is drawn as. A regression is stable on both sides (it is gated)."""
    if r.regression:
        return PointKind((len(CHANGES), 0, 0), "D", "slower", False, f"regression: fails the {c.gate:g}x gate")
    label = wide_label() if r.wide else CHANGE_LABEL[r.change]
    unstable = (", unstable, not gated" if c.gate else ", unstable") if r.unstable else ""
    return PointKind((CHANGES.index(r.change), bool(r.wide), bool(r.unstable)), "s" if r.wide else "o", r.change,
                     bool(r.unstable), label + unstable)


def point_kinds(c: Comparison) -> list[PointKind]:
    """Each kind of point the chart draws, once, in the legend's order."""
    return sorted({point_kind(r, c) for r in c.rows}, key=lambda kind: kind.order)


@literal
def ratio_figure(c: Comparison) -> Figure:
    """B/A per (analysis, strategy, shape group) on a log axis centred on 1: the ratio as a point,
    its interval at the comparison's level as its bar (none with too few rounds), the band inside which no change is
    reported shaded, each kind of point as point_kind draws it: where a table of ratios hides how wide each one is."""
    rows = c.rows
    ends = [r.ratio_ci or (r.ratio, r.ratio) for r in rows]
    finite = [abs(np.log10(v)) for r, e in zip(rows, ends) for v in (e[0], r.ratio, e[1]) if 0 < v < np.inf]
    extent = 1.4 * max([np.log10(c.factor), *finite]) + 0.01  # room for the labels beside the bars
    lo_x, hi_x = 10**-extent, 10**extent
    fig = _figure(9.0, 0.3 * len(rows) + 1.4)
    ax = fig.subplots()
    ax.axvspan(1 / c.factor, c.factor, color="#e8e8e8", lw=0, zorder=0)
    ax.axvline(1.0, color="#444", lw=0.8, ls="--", zorder=1)
    y = np.arange(len(rows))
    for yi, r, (e_low, e_high) in zip(y, rows, ends):
        kind = point_kind(r, c)
        color = CHANGE_COLOR[kind.change]
        low, high = np.clip([min(e_low, r.ratio), max(e_high, r.ratio)], lo_x, hi_x)
        ax.errorbar(r.ratio, yi, xerr=[[r.ratio - low], [high - r.ratio]], fmt=kind.marker,
                    ms=7 if r.regression else 5, color=color, mfc="white" if kind.hollow else color, capsize=3, zorder=3)
        faster = r.ratio < 1  # its label left of its bar: away from the 1x line, which struck "0.711x" through
        # B / A as the tables write it: `0.931`, not `0.931x` (a ratio of times, not a speedup)
        ax.annotate(format_ratio(r.ratio), (low if faster else high, yi), xytext=(-4 if faster else 4, 0),
                    textcoords="offset points", fontsize=7, va="center", ha="right" if faster else "left", color=color,
                    fontweight="bold" if r.regression else "normal")
    ax.set_xscale("log")
    ax.set_xlim(lo_x, hi_x)
    ticks = next((t for limit, t in RATIO_TICKS if extent <= limit), None)
    if ticks is None:  # beyond 100x either way: every few decades
        k = int(np.ceil(extent))
        ticks = sorted({10.0 ** (s * e) for e in range(0, k + 1, int(np.ceil(k / 3))) for s in (-1, 1)})
    ticks = [t for t in ticks if lo_x <= t <= hi_x]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks(y, [r.label for r in rows], fontsize=7)
    for label, r in zip(ax.get_yticklabels(), rows):
        if r.regression:
            label.set_color(CHANGE_COLOR["slower"])
            label.set_fontweight("bold")
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first row on top, as in the table
    ax.set_xlabel(f"B / A per matrix, log scale: geometric means of the rounds (point), {c.level} interval (bar)")
    # the folders' names: their paths are on the page, and a long one ran past the chart's edge
    set_title(ax, f"B = {Path(c.b.folder).name} against A = {Path(c.a.folder).name}")
    ax.grid(True, axis="x", which="major", lw=0.4, color="#ddd")
    _ratio_legend(ax, c)
    return fig


def _ratio_legend(ax: Axes, c: Comparison) -> None:
    """ratio_figure's legend: the shaded band, then an entry for each kind of point drawn, its marker
    drawn as the chart draws it (hollow where the rows are)."""
    handles: list[Line2D | Patch] = [Patch(color="#e8e8e8", label=f"within {c.factor:g}x: no change reported")]
    for kind in point_kinds(c):
        color = CHANGE_COLOR[kind.change]
        handles.append(Line2D([], [], marker=kind.marker, ls="", color=color, mfc="white" if kind.hollow else color,
                              label=kind.label))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def ratio_caption(c: Comparison) -> str:
    """The words under the chart, in short sentences: what a point and its bar are, then each kind of
    point drawn, by its marker and its legend's words."""
    said = [f"B / A per matrix on a log scale centred on 1. A point is the ratio of the rounds' geometric means. "
            f"Its bar is the {c.level} interval, from Welch's t on log seconds. Shaded: within {c.factor:g}x, "
            "where no change is reported even when significant."]
    kinds = point_kinds(c)
    if any(kind.change in ("slower", "faster") for kind in kinds):
        said.append(f"Slower and faster need p < {c.alpha:g}.")
    said += [f"{kind.described}: {kind.label}." for kind in kinds]
    return " ".join(said)
