"""Charts for the HTML report as inline SVG strings: matplotlib Figures rendered straight to SVG
(no pyplot, no display, no global backend), text kept as text so the page stays small."""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, Locator, LogLocator, MaxNLocator, NullFormatter

from harness.report.frontier import TIE, has_points, points as frontier_points, tolerance
from harness.report.labels import COMPUTE_TOTAL, COMPUTED_MARK, strategy_label
from harness.record.run_record import AnalysisRecord, RunRecord, StrategyTiming
from harness.record.verdict import TOO_WIDE, readable_interval, significance
from harness.base.units import format_ratio, format_seconds, format_speedup

if TYPE_CHECKING:  # the rc keys matplotlib knows, for rc_context
    from matplotlib.typing import RcKeyType

FONT_POINTS = 9
NAME_POINTS = 10  # what names a chart's rows or series (a timing chart's strategies, a roofline's legend)
# names come from files (adapters, modules, strategies of a record): never parsed as mathtext, where
# "$\\fakecmd{x}$" crashed the label parser. Each Text reads this as it is made, tick labels as
# they are drawn: so over a chart's building (`literal`) and its drawing (to_svg) alike
LITERAL: dict[RcKeyType, object] = {"text.parse_math": False}
SVG_RC: dict[RcKeyType, object] = {"svg.fonttype": "none", "font.size": FONT_POINTS, "font.family": "sans-serif",
                                   **LITERAL}
literal = matplotlib.rc_context(LITERAL)


def to_svg(fig: Figure) -> str:
    """The figure as an <svg> element, without the XML prolog and DOCTYPE (whose DTD URL a
    validator might fetch)."""
    buf = io.StringIO()
    with matplotlib.rc_context(SVG_RC):  # constrained layout fits the labels: no second, "tight" draw
        fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.index("<svg"):]


def set_title(ax: Axes, title: str) -> None:
    """The title, wrapped at draw time where it would pass the figure's edge (the main job's
    spectrum title was cut there). The wrap measures a line holding two $ as mathtext whatever
    parse_math says (matplotlib 3.11), so every $ is escaped: drawn as typed, never parsed."""
    ax.set_title(title.replace("$", r"\$"), fontsize=FONT_POINTS, wrap=True, parse_math=True)


def _figure(width: float, height: float) -> Figure:
    with matplotlib.rc_context(SVG_RC):
        return Figure(figsize=(width, height), layout="constrained")


def _inches(text: str, points: float) -> float:
    """A generous width of `text` set at `points` in a sans-serif face: 0.62 em a character."""
    return len(text) * points * 0.62 / 72


def _fixed(width: float, height: float, left: float, right: float, bottom: float = 0.55, top: float = 0.15,
           wspace: float = 0.05) -> Figure:
    """A figure whose margins (inches) are set from its labels' lengths: constrained layout
    measures every label, a second draw that doubled a chart's cost (0.2 s of a timing chart, and
    the main job's report draws one per analysis)."""
    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                        wspace=wspace)
    return fig


GOOD, BAD, NEUTRAL, SAMPLE = "#1b7f3a", "#b00020", "#8a8a8a", "#5b7fa6"  # faster, slower, the baseline, a sample
PALE_GOOD, PALE_BAD = "#8cc79c", "#e08a98"  # faster or slower by one round: no interval to say how sure
DOT_AREA, BAR_POINTS = 30.0, 1.2  # a sample's dot (points squared: 6 pt across) and the bar it is drawn over


def speedup_color(t: StrategyTiming) -> str:
    """Colour says what the interval says: green faster, red slower, grey for the baseline and for
    a speedup whose interval holds 1 (not significant); without an interval, its direction, paler."""
    said = significance(t)
    if said == "no interval" and t.speedup is not None and t.speedup != 1:
        return PALE_GOOD if t.speedup > 1 else PALE_BAD
    return {"faster": GOOD, "slower": BAD}.get(said, NEUTRAL)


@literal
def timing_figure(analysis: AnalysisRecord) -> Figure:
    """Left, every timed sample of each strategy per matrix (a strip, jittered, so two modes or a
    wide spread are seen, as criterion draws them) with its median; right, the speedup against
    the baseline on a log axis (1,578x and 0.71x both readable), its 95% interval over the rounds
    as error bars, green when faster and red when slower. Strategies are labelled as the tables label them."""
    names = [f"{strategy_label(analysis, t.label, analysis.computed(t))} ({t.role})" for t in analysis.timings]
    y = np.arange(len(names))
    # right: half a tick label ("10000") past the last tick; wspace: the two axes' inner edges hold
    # half the widest tick label each ("500 µs", "0.0001"): at 5% of an axis, a busy run's "10 ms"
    # ran into "1e-4" between them
    fig = _fixed(9.0, 0.5 * len(names) + 1.1, left=_inches(max(names, key=len), FONT_POINTS) + 0.15,
                 right=0.3, wspace=0.2)
    ax_t, ax_s = fig.subplots(1, 2, sharey=True)
    jitter = np.random.default_rng(0)  # the same page for the same record
    for yi, t in zip(y, analysis.timings):
        samples = np.concatenate([np.asarray(g.measurement.samples_s) / max(g.sampled, 1) for g in t.groups])
        # over the bar, outlined, several times its width: a lone sample (n=1) sits on it (walk 12: a bar with
        # no dot to see; walk 13: a dot of 3 pt, a 1-pixel speck on a 1.5 pt bar at 1280 px)
        ax_t.scatter(samples, yi + jitter.uniform(-0.25, 0.25, len(samples)), s=DOT_AREA, alpha=0.8, color=SAMPLE,
                     edgecolors="white", linewidths=0.8, zorder=3)
        median = t.seconds_per_matrix
        ax_t.plot([median, median], [yi - 0.35, yi + 0.35], color="#222", lw=BAR_POINTS)
        ax_t.annotate(format_seconds(median), (samples.max(), yi), xytext=(4, 0), textcoords="offset points",
                      fontsize=7, va="center")
    ax_t.set_xscale("log")
    _log_axis(ax_t.xaxis, seconds=True, ticks=4)
    ax_t.margins(x=0.25)
    ax_t.set_xlabel(TIMING_AXIS)
    ax_t.set_yticks(y, names, fontsize=NAME_POINTS)
    ax_t.invert_yaxis()
    if any(t.speedup is not None for t in analysis.timings):
        speedup = np.array([t.speedup or np.nan for t in analysis.timings])
        # the 95% interval of each speedup over the rounds (none: one round, or a record before schema 4)
        # none drawn where the tables say `(too wide)`: an axis of 1e-10 to 1e5 beside "neither end is a figure" (walk 11)
        wide = [readable_interval(t.speedup_ci) == TOO_WIDE for t in analysis.timings]
        ends = np.array([t.speedup_ci if t.speedup_ci and not w else (t.speedup or np.nan,) * 2
                         for t, w in zip(analysis.timings, wide)])
        serr = np.nan_to_num(np.stack([speedup - ends[:, 0], ends[:, 1] - speedup]).clip(min=0), posinf=0.0)
        colors = [speedup_color(t) for t in analysis.timings]
        ax_s.barh(y, speedup - 1, left=1, xerr=serr, color=colors, capsize=3, height=0.6)
        ax_s.set_xscale("log")
        _log_axis(ax_s.xaxis, ticks=4)
        ax_s.axvline(1.0, color="#444", lw=0.8, ls="--")
        sides: dict[bool, list[str]] = {True: [], False: []}  # faster: labels right of the interval, else left
        for yi, sp, lo, hi, t, w in zip(y, speedup, speedup - serr[0], speedup + serr[1], analysis.timings, wide):
            label = format_speedup(sp) + (f" ({TOO_WIDE})" if w else "") + (" ?" if t.unresolved else "")
            sides[bool(sp >= 1)].append(label)
            ax_s.annotate(label, (hi if sp >= 1 else lo, yi), xytext=(4 if sp >= 1 else -4, 0),
                          textcoords="offset points", fontsize=7, va="center", ha="left" if sp >= 1 else "right")
        low, high = min(np.nanmin(speedup - serr[0]), 1.0), max(np.nanmax(speedup + serr[1]), 1.0)
        ax_s.set_xlim(*_label_room(fig, ax_s, low, high, sides[False], sides[True]))
    ax_s.set_xlabel("speedup vs baseline (95% interval)")
    return fig


def _label_room(fig: Figure, ax: Axes, low: float, high: float, left: list[str], right: list[str],
                points: float = 7) -> tuple[float, float]:
    """Log-axis limits around [low, high] that leave each side room for its longest label at
    `points` (a slower strategy's "0.82x ?" left of its interval was drawn across the axis line,
    with a fixed factor of 3 of room)."""
    axis = ax.get_position().width * fig.get_figwidth()  # inches
    need = [(_inches(max(labels, key=len), points) + 0.1) / axis if labels else 0.05 for labels in (left, right)]
    span = math.log10(high / low) if high > low else 1.0
    pad = [share * span / max(1 - sum(need), 0.2) for share in need]  # decades a side
    return low / 10 ** pad[0], high * 10 ** pad[1]


# the bar is the table's per-matrix figure, over several shape groups their mean (walk 11: "bar: median" between
# two groups' dots, where no sample was)
TIMING_AXIS = "time per matrix (dots: samples, bar: the table's per matrix)"


def timing_chart(analysis: AnalysisRecord) -> str:
    return to_svg(timing_figure(analysis))


SEEN = 1.05  # lines closer than 5% are one line on a log axis
NUMERICAL_ZERO = float(np.finfo(np.float32).eps)  # per index of the spectrum, times its s_1
SHOWN = 0.03  # a band under 3% of the log axis' height (~5 px) is hidden by its line


@literal
def decay_figure(bands: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], title: str) -> Figure:
    """Singular values by index per module: median line and 10-90% band, log scale, labelled
    even when the values span less than a decade (svd_topk's few values). The title says the
    band only where it shows, and a module whose line coincides with one drawn before it is dashed
    and named so in the legend (mlp_up hid under mlp_down, the legend listing both).

    Zeros (the min(m, n) - r zeros of a rank-r LoRA spectrum) have no place on a log axis: they are
    left out, so the line ends at the rank instead of the axis reaching 1e-300, and so are values a
    float32 SVD cannot tell from zero (under NUMERICAL_ZERO, numpy's matrix_rank tolerance): the
    smoke spectra drew their 1e-7 to 1e-9 noise past rank 4 as if it were spectrum."""
    fig = _figure(6.0, 3.0)
    ax = fig.subplots()
    zeros, widest = False, 1.0
    drawn: dict[str, np.ndarray] = {}
    floors = {module: NUMERICAL_ZERO * len(b[0]) * float(np.max(b[0], initial=0.0)) for module, b in bands.items()}
    ends = [float(f(np.where(a > floors[module], a, np.nan))) for module, b in bands.items()
            for a, f in ((b[1], np.nanmin), (b[2], np.nanmax)) if np.any(a > floors[module])]
    for module, (median, low, high) in bands.items():
        i = np.arange(1, len(median) + 1)
        floor = floors[module]
        zeros |= bool(np.any(median <= floor))
        median, low, high = (np.where(a > floor, a, np.nan) for a in (median, low, high))
        widest = max(widest, float(np.nanmax(high / low, initial=1.0)))
        under = next((m for m, line in drawn.items() if _coincide(line, median)), None)
        (line,) = ax.plot(i, median, lw=1.5, ls="-" if under is None else (0, (4, 3)),
                          label=module if under is None else f"{module} (coincides with {under})")
        ax.fill_between(i, low, high, color=line.get_color(), alpha=0.2, lw=0)
        drawn[module] = median
    span = np.log(max(ends) / min(ends)) if ends else 0.0
    title += (", median and 10-90% band" if np.log(widest) >= SHOWN * span
              else ", median (10-90% band too thin to show)")
    if zeros:
        title += " (zeros not drawn: values under s_1 x min(m, n) x float32's eps)"
    ax.set_yscale("log")
    _log_axis(ax.yaxis)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # 1, 2, 3, not 1.25
    ax.set_xlabel("index i")
    ax.set_ylabel("singular value s_i")
    set_title(ax, title)
    ax.legend(fontsize=8)
    return fig


def _coincide(a: np.ndarray, b: np.ndarray) -> bool:
    """Two medians drawn as one line: the same length, every value within SEEN of the other's."""
    if a.shape != b.shape or not np.any(np.isfinite(a) & np.isfinite(b)):
        return False
    return bool(np.nanmax(np.maximum(a / b, b / a)) < SEEN)


def decay_chart(bands: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], title: str) -> str:
    return to_svg(decay_figure(bands, title))


def tick_seconds(x: float) -> str:
    """A tick's time in its unit, as few digits as it needs: `40 µs`, `1.5 ms`, `2 s`."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if x >= scale * 0.999:
            return f"{x / scale:.3g} {unit}"
    return f"{x:g} s"


def tick_number(x: float) -> str:
    """A tick's number as the tables write numbers (format_ratio), its trailing zeros dropped:
    0.5, 1, 20, 1,000, 100,000 (not 1000 and 1e+05 beside a table's 1,130x); below 0.001 a power,
    1e-7 (a spectrum's axis read 0.000000001)."""
    if 0 < x < 0.000995:
        return f"{x:.0e}".replace("e-0", "e-")
    text = format_ratio(x)
    return text.rstrip("0").rstrip(".") if "." in text else text


class SparseLogLocator(Locator):
    """Ticks a log axis can label without one label running into the next: decades, thinned to
    at most `ticks`; where fewer than three decades are in view, 1, 2 and 5 x 10^k (two, 1 ms and
    10 ms, left points near 40 ms a factor 4 from any label: walk 22's sweep chart); where fewer than
    two of those, a few round values (matplotlib's LogLocator labelled every 1e-5 step from 4e-5
    to 2e-4, which ran together on a narrow axis)."""

    def __init__(self, ticks: int = 8) -> None:
        self.ticks = ticks

    def __call__(self) -> list[float]:
        low, high = self.axis.get_view_interval()  # type: ignore[union-attr]
        return self.tick_values(low, high)

    def tick_values(self, vmin: float, vmax: float) -> list[float]:
        low, high = sorted((vmin, vmax))
        if high <= 0:
            return []
        low = low if low > 0 else high / 1e3
        decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
        for mantissas, least in (((1.0,), 3), ((1.0, 2.0, 5.0), 2)):
            values = [m * 10.0**e for e in decades for m in mantissas if low <= m * 10.0**e <= high]
            if len(values) >= least:
                return values[::math.ceil(len(values) / self.ticks)]
        return [v for v in MaxNLocator(nbins=3).tick_values(low, high) if low <= v <= high]


def _log_axis(axis: Axis, seconds: bool = False, ticks: int = 8) -> None:
    """Labelled ticks that never collide (SparseLogLocator), unlabelled minor ticks between them;
    `seconds`: labels in µs, ms and s, as the tables write them."""
    axis.set_major_locator(SparseLogLocator(ticks))
    axis.set_major_formatter(FuncFormatter(lambda x, pos: tick_seconds(x) if seconds else tick_number(x)))
    axis.set_minor_locator(LogLocator(base=10, subs="auto"))
    axis.set_minor_formatter(NullFormatter())


MARKERS = "os^DvPX*<>"  # one per analysis (roofline) or precision (frontier)


ERROR_FLOOR = 1e-17  # an error of exactly 0 (a reference's own route) drawn at float64's floor


@literal
def frontier_figure(record: RunRecord, analysis: AnalysisRecord) -> Figure:
    """Error against workload time, log-log: every point its own marker, named in the legend
    (labels beside points ran into one another where two points sit close: "procnumpyl"), the
    frontier joined, the tolerance a dashed line."""
    found = frontier_points(record, analysis)
    fig = _figure(7.5, 3.8)
    ax = fig.add_subplot()
    for i, p in enumerate(found):
        y = max(p.error, ERROR_FLOOR)
        ax.scatter([p.seconds], [y], color=f"C{i % 10}", marker="D" if p.compiled else MARKERS[i % len(MARKERS)],
                   edgecolors=GOOD if p.passed else BAD, linewidths=1.2, zorder=3,
                   label=p.label + (f" {COMPUTED_MARK}" if p.computed else "") + ("" if p.passed else " (misses)"))
    front = [p for p in found if p.on_frontier]
    ax.plot([p.seconds for p in front], [max(p.error, ERROR_FLOOR) for p in front], color=GOOD, lw=1.2,
            label=f"frontier (no point faster and {TIE:g}x more accurate)")
    if (tol := tolerance(analysis)) is not None:
        ax.axhline(tol, color=NEUTRAL, ls="--", lw=1, label=f"tolerance {tol:.0e}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _log_axis(ax.xaxis, seconds=True)
    _log_axis(ax.yaxis)
    ax.set_xlabel(f"{COMPUTE_TOTAL} (compute only: loading excluded)")
    ax.set_ylabel("max error / sigma_1")
    set_title(ax, f"{analysis.name}: accuracy/time frontier")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    return fig


def frontier_chart(record: RunRecord, analysis: AnalysisRecord) -> str | None:
    """The chart where the analysis times several points of one strategy (precisions, compiled):
    elsewhere its points are the timing chart's strategies again, and its table says it all."""
    return to_svg(frontier_figure(record, analysis)) if has_points(analysis) and frontier_points(record, analysis) else None
