"""Charts for the HTML report as inline SVG strings: matplotlib Figures rendered straight to SVG
(no pyplot, no display, no global backend), text kept as text so the page stays small."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib
import numpy as np
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import LogFormatter, LogLocator, MaxNLocator, NullFormatter

from harness.machine.roofline import Roof, roof_device
from harness.report.compare import Comparison
from harness.report.frontier import points as frontier_points, tolerance
from harness.report.labels import COMPUTED_MARK, COMPUTED_NOTE, strategy_label
from harness.record.run_record import AnalysisRecord, RunRecord
from harness.base.units import format_rate, format_seconds, format_speedup

SVG_RC = {"svg.fonttype": "none", "font.size": 9, "font.family": "sans-serif"}


def to_svg(fig: Figure) -> str:
    """The figure as an <svg> element, without the XML prolog and DOCTYPE (whose DTD URL a
    validator might fetch)."""
    buf = io.StringIO()
    with matplotlib.rc_context(SVG_RC):
        fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _figure(width: float, height: float) -> Figure:
    with matplotlib.rc_context(SVG_RC):
        return Figure(figsize=(width, height), layout="constrained")


GOOD, BAD, NEUTRAL, SAMPLE = "#1b7f3a", "#b00020", "#8a8a8a", "#5b7fa6"  # faster, slower, the baseline, a sample


def speedup_color(speedup: float, baseline: bool) -> str:
    """Colour says good or bad: faster than the baseline green, slower red, the baseline grey."""
    return NEUTRAL if baseline or speedup == 1 else (GOOD if speedup > 1 else BAD)


def timing_figure(analysis: AnalysisRecord) -> Figure:
    """Left, every timed sample of each strategy per matrix (a strip, jittered, so two modes or a
    wide spread are seen, as criterion draws them) with its median; right, the speedup against
    the baseline on a log axis (1,578x and 0.71x both readable), its 95% interval over the rounds
    as error bars, green when faster and red when slower. Strategies are labelled as the tables label them."""
    names = [f"{strategy_label(analysis, t.label, analysis.computed(t))} ({t.role})" for t in analysis.timings]
    y = np.arange(len(names))
    fig = _figure(7.5, 0.5 * len(names) + 1.1)
    ax_t, ax_s = fig.subplots(1, 2, sharey=True)
    jitter = np.random.default_rng(0)  # the same page for the same record
    for yi, t in zip(y, analysis.timings):
        samples = np.concatenate([np.asarray(g.measurement.samples_s) / max(g.sampled, 1) for g in t.groups])
        ax_t.scatter(samples, yi + jitter.uniform(-0.25, 0.25, len(samples)), s=9, alpha=0.55, color=SAMPLE,
                     linewidths=0)
        median = t.seconds_per_matrix
        ax_t.plot([median, median], [yi - 0.35, yi + 0.35], color="#222", lw=1.5)
        ax_t.annotate(format_seconds(median), (samples.max(), yi), xytext=(4, 0), textcoords="offset points",
                      fontsize=7, va="center")
    ax_t.set_xscale("log")
    _log_axis(ax_t.xaxis)
    ax_t.margins(x=0.25)
    ax_t.set_xlabel("seconds per matrix, every timed sample\n(dots; the bar is the median)")
    ax_t.set_yticks(y, names)
    ax_t.invert_yaxis()
    if any(t.speedup is not None for t in analysis.timings):
        speedup = np.array([t.speedup or np.nan for t in analysis.timings])
        # the 95% interval of each speedup over the rounds (none: one round, or a record before schema 4)
        ends = np.array([t.speedup_ci if t.speedup_ci else (t.speedup or np.nan,) * 2 for t in analysis.timings])
        serr = np.nan_to_num(np.stack([speedup - ends[:, 0], ends[:, 1] - speedup]).clip(min=0), posinf=0.0)
        colors = [speedup_color(sp, t.role == "baseline") for sp, t in zip(speedup, analysis.timings)]
        ax_s.barh(y, speedup - 1, left=1, xerr=serr, color=colors, capsize=3, height=0.6)
        ax_s.set_xscale("log")
        _log_axis(ax_s.xaxis)
        ax_s.axvline(1.0, color="#444", lw=0.8, ls="--")
        for yi, sp, lo, hi, t in zip(y, speedup, speedup - serr[0], speedup + serr[1], analysis.timings):
            label = format_speedup(sp) + (" ?" if t.unresolved else "")
            ax_s.annotate(label, (hi if sp >= 1 else lo, yi), xytext=(4 if sp >= 1 else -4, 0),
                          textcoords="offset points", fontsize=7, va="center", ha="left" if sp >= 1 else "right")
        low, high = min(np.nanmin(speedup - serr[0]), 1.0), max(np.nanmax(speedup + serr[1]), 1.0)
        ax_s.set_xlim(low / 3, high * 3)  # room for the labels either side of 1
    ax_s.set_xlabel(f"speedup vs baseline, log scale, 95% interval bars; ? unresolved\n(green faster, red slower; "
                    f"{COMPUTED_NOTE})")
    return fig


def timing_chart(analysis: AnalysisRecord) -> str:
    return to_svg(timing_figure(analysis))


def decay_figure(bands: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], title: str) -> Figure:
    """Singular values by index per module: median line and 10-90% band, log scale, labelled
    even when the values span less than a decade (svd_topk's few values).

    Exact zeros (the min(m, n) - r zeros of a rank-r LoRA spectrum) have no place on a log axis:
    they are left out, so the line ends at the rank instead of the axis reaching 1e-300."""
    fig = _figure(6.0, 3.0)
    ax = fig.subplots()
    zeros = False
    for module, (median, low, high) in bands.items():
        i = np.arange(1, len(median) + 1)
        zeros |= bool(np.any(median <= 0))
        median, low, high = (np.where(a > 0, a, np.nan) for a in (median, low, high))
        (line,) = ax.plot(i, median, lw=1.5, label=module)
        ax.fill_between(i, low, high, color=line.get_color(), alpha=0.2, lw=0)
    if zeros:
        title += " (exact zeros not drawn)"
    ax.set_yscale("log")
    _log_axis(ax.yaxis)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # 1, 2, 3, not 1.25
    ax.set_xlabel("index i")
    ax.set_ylabel("singular value s_i")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    return fig


def decay_chart(bands: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], title: str) -> str:
    return to_svg(decay_figure(bands, title))


def heatmap(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], title: str,
            xlabel: str = "", ylabel: str = "") -> str:
    """A labelled heatmap, each cell annotated when there are few enough to read."""
    fig = _figure(1.2 + 0.45 * max(len(cols), 4), 1.0 + 0.35 * max(len(rows), 3))
    ax = fig.subplots()
    image = ax.imshow(values, aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, shrink=0.8)
    if values.size <= 100:
        for (r, c), v in np.ndenumerate(values):
            ax.text(c, r, f"{v:.2g}", ha="center", va="center", fontsize=6, color="white")
    return to_svg(fig)


def pca_scatter(scores: np.ndarray, labels: Sequence[str], ratio: np.ndarray | None, title: str) -> str:
    """Adapters on the first two principal components (the second is 0 if there is one)."""
    x = scores[:, 0]
    y = scores[:, 1] if scores.shape[1] > 1 else np.zeros_like(x)
    fig = _figure(4.5, 3.5)
    ax = fig.subplots()
    ax.scatter(x, y, s=18, color="#5b7fa6")
    for xi, yi, label in zip(x, y, labels):
        ax.annotate(label, (xi, yi), xytext=(3, 3), textcoords="offset points", fontsize=7)
    pct = [f" ({100 * r:.0f}%)" for r in ratio[:2]] if ratio is not None and len(ratio) >= 2 else ["", ""]
    ax.set_xlabel("PC1" + pct[0])
    ax.set_ylabel("PC2" + pct[1])
    ax.set_title(title, fontsize=9)
    return to_svg(fig)


@dataclass(frozen=True)
class RooflinePoint:
    """One shape group of one timed strategy, placed on the roofline."""

    analysis: str
    strategy: str
    device: str  # the roof it is held against: "cpu" or "cuda"
    group: str
    intensity: float  # flops per byte
    gflops: float  # achieved GFLOP/s
    computed: bool = False  # its strategy computed the analysis's recorded results


def roofline_points(record: RunRecord) -> list[RooflinePoint]:
    """Every (analysis, strategy, shape group) timing with positive flops, bytes and time: the
    others (records before schema 3) have no place on log axes."""
    points = []
    for a in record.analyses:
        for t in a.timings:
            for g in t.groups:
                if g.measurement.median_s <= 0 or not g.flops or not g.bytes:
                    continue
                points.append(RooflinePoint(a.name, t.label, roof_device(t.device),  # type: ignore[arg-type]
                                            g.group, g.flops / g.bytes, g.gflops_per_s or 0.0,
                                            a.computed(t)))
    return points


def roof_polyline(roof: Roof, dtype: str, lo: float, hi: float) -> tuple[list[float], list[float]] | None:
    """The roof min(peak, bandwidth x intensity) over [lo, hi] flops per byte: its ends and, when
    inside, the ridge point where the bandwidth slope meets the compute peak. None without a
    peak for `dtype`."""
    peak = roof.peak(dtype)
    if peak is None:
        return None
    ridge = peak / roof.bandwidth_gbs
    xs = [lo, ridge, hi] if lo < ridge < hi else [lo, hi]
    return xs, [min(peak, roof.bandwidth_gbs * x) for x in xs]


def roof_label(roof: Roof, dtype: str) -> str:
    """`cpu: 55 GFLOP/s float32 peak, 14.5 GB/s`."""
    peak = roof.peak(dtype)
    compute = "" if peak is None else f"{format_rate(peak)} GFLOP/s {dtype} peak, "
    return f"{roof.device}: {compute}{format_rate(roof.bandwidth_gbs)} GB/s"


class PlainLogFormatter(LogFormatter):
    """LogFormatter's choice of which ticks to label, written 0.05 and 2000 rather than 5e-02."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return f"{x:g}" if super().__call__(x, pos) else ""


def _log_axis(axis: Axis) -> None:
    """Decade labels, and 2, 3, 4, 6 x 10^k too when at most one decade is in view: a log axis
    over a narrow range would otherwise have no labels at all."""
    axis.set_major_locator(LogLocator(base=10))
    axis.set_major_formatter(PlainLogFormatter(base=10, labelOnlyBase=False))
    axis.set_minor_locator(LogLocator(base=10, subs="auto"))
    axis.set_minor_formatter(PlainLogFormatter(base=10, labelOnlyBase=False, minor_thresholds=(1, 0.4)))


ROOF_STYLE = {"cpu": "-", "cuda": "--"}
MARKERS = "os^DvPX*<>"


def roofline_figure(points: Sequence[RooflinePoint], roofs: dict[str, Roof], dtype: str) -> Figure:
    """Achieved GFLOP/s against flops per byte, log-log: colour by strategy, marker by analysis,
    each point joined by a dotted line to its device's roof at its intensity (its headroom)."""
    fig = _figure(7.5, 4.5)
    ax = fig.subplots()
    ridges = [p / r.bandwidth_gbs for r in roofs.values() if (p := r.peak(dtype)) is not None]
    xs = [p.intensity for p in points] + ridges
    lo, hi = min(xs) / 2, max(xs) * 2
    for device, roof in sorted(roofs.items()):
        if (line := roof_polyline(roof, dtype, lo, hi)) is not None:
            ax.plot(*line, color="#333", lw=1.4, ls=ROOF_STYLE.get(device, "-."), label=roof_label(roof, dtype))
    colors = {s: f"C{i % 10}" for i, s in enumerate(dict.fromkeys(p.strategy for p in points))}
    markers = {a: MARKERS[i % len(MARKERS)] for i, a in enumerate(dict.fromkeys(p.analysis for p in points))}
    series: dict[tuple[str, str, str], list[RooflinePoint]] = {}
    for p in points:
        series.setdefault((p.analysis, p.strategy, p.device), []).append(p)
    for (analysis, strategy, device), group in series.items():
        x = [p.intensity for p in group]
        y = [p.gflops for p in group]
        mark = f" {COMPUTED_MARK}" if group[0].computed else ""  # as the tables mark it
        label = f"{analysis}: {strategy}{mark}" + (f" on {device}" if device != "cpu" else "")
        ax.scatter(x, y, s=28, color=colors[strategy], marker=markers[analysis], label=label, zorder=3)
        if (roof := roofs.get(device)) is not None and roof.peak(dtype) is not None:
            ceilings = [roof.ceiling(xi, dtype) for xi in x]
            ax.vlines(x, y, ceilings, colors=colors[strategy], linestyles=":", lw=0.8, alpha=0.7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    _log_axis(ax.xaxis)
    _log_axis(ax.yaxis)
    ax.set_xlabel("arithmetic intensity, flops per byte moved")
    ax.set_ylabel("achieved throughput, GFLOP/s")
    ax.set_title(f"Roofline, {dtype}" + ("" if roofs else " (no roofs measured: run `harness calibrate`)"),
                 fontsize=9)
    ax.grid(True, which="major", lw=0.4, color="#ddd")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    return fig


def roofline_chart(points: Sequence[RooflinePoint], roofs: dict[str, Roof], dtype: str) -> str:
    return to_svg(roofline_figure(points, roofs, dtype))


# (largest log10 extent, ticks): round ratios a reader knows (0.5 is 2x faster), finer near 1
RATIO_TICKS = ((0.12, [0.8, 0.9, 1, 1.1, 1.25]), (0.35, [0.5, 0.67, 0.8, 1, 1.25, 1.5, 2]),
               (0.75, [0.2, 0.33, 0.5, 1, 2, 3, 5]), (1.1, [0.1, 0.2, 0.5, 1, 2, 5, 10]),
               (2.2, [0.01, 0.1, 1, 10, 100]))
CHANGE_COLOR = {"slower": "#c0392b", "faster": "#1b7f3a", "not significant": "#5b7fa6", "too few rounds": "#999999"}
CHANGE_LABEL = {"slower": "slower", "faster": "faster", "not significant": "no significant change",
                "too few rounds": "too few rounds for the test"}


def ratio_figure(c: Comparison) -> Figure:
    """B/A per (analysis, strategy, shape group) on a log axis centred on 1: the ratio as a point,
    its 95% interval as its bar (none with too few rounds), the band inside which no change is
    reported shaded, unstable rows hollow and the gate's regressions as red diamonds: where a table
    of ratios hides how wide each one is."""
    rows = c.rows
    ends = [r.ratio_ci or (r.ratio, r.ratio) for r in rows]
    finite = [abs(np.log10(v)) for r, e in zip(rows, ends) for v in (e[0], r.ratio, e[1]) if 0 < v < np.inf]
    extent = 1.4 * max([np.log10(c.factor), *finite]) + 0.01  # room for the labels right of the bars
    lo_x, hi_x = 10**-extent, 10**extent
    fig = _figure(9.0, 0.3 * len(rows) + 1.4)
    ax = fig.subplots()
    ax.axvspan(1 / c.factor, c.factor, color="#e8e8e8", lw=0, zorder=0)
    ax.axvline(1.0, color="#444", lw=0.8, ls="--", zorder=1)
    y = np.arange(len(rows))
    for yi, r, (e_low, e_high) in zip(y, rows, ends):
        color = CHANGE_COLOR[r.change]
        low, high = np.clip([min(e_low, r.ratio), max(e_high, r.ratio)], lo_x, hi_x)
        ax.errorbar(r.ratio, yi, xerr=[[r.ratio - low], [high - r.ratio]], fmt="D" if r.regression else "o",
                    ms=7 if r.regression else 5, color=color, mfc="white" if r.unstable else color, capsize=3,
                    zorder=3)
        ax.annotate(f"{r.ratio:.3g}x", (high, yi), xytext=(4, 0), textcoords="offset points", fontsize=7,
                    va="center", color=color, fontweight="bold" if r.regression else "normal")
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
    ax.set_xlabel("B / A per matrix, log scale: geometric means of the rounds (point), 95% interval (bar)")
    ax.set_title(f"B = {c.b.folder} against A = {c.a.folder}", fontsize=9)
    ax.grid(True, axis="x", which="major", lw=0.4, color="#ddd")
    handles: list[Line2D | Patch] = [Patch(color="#e8e8e8", label=f"within {c.factor:g}x: no change reported")]
    for change in CHANGE_COLOR:
        if any(r.change == change and not r.regression for r in rows):
            handles.append(Line2D([], [], marker="o", ls="", color=CHANGE_COLOR[change], label=CHANGE_LABEL[change]))
    if any(r.unstable for r in rows):
        handles.append(Line2D([], [], marker="o", ls="", color="#666", mfc="white", label="unstable" + (": not gated" if c.gate else "")))
    if any(r.regression for r in rows):
        handles.append(Line2D([], [], marker="D", ls="", color=CHANGE_COLOR["slower"],
                              label=f"regression: fails the {c.gate:g}x gate"))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    return fig


ERROR_FLOOR = 1e-17  # an error of exactly 0 (a reference's own route) drawn at float64's floor


def frontier_figure(record: RunRecord, analysis: AnalysisRecord) -> Figure:
    """Error against workload time, log-log: every point labelled, the frontier joined, the
    tolerance a dashed line."""
    found = frontier_points(record, analysis)
    fig = _figure(6.4, 3.8)
    ax = fig.add_subplot()
    for p in found:
        y = max(p.error, ERROR_FLOOR)
        ax.scatter([p.seconds], [y], color=GOOD if p.passed else BAD, marker="D" if p.compiled else "o",
                   zorder=3)
        ax.annotate(p.label + (" *" if p.computed else ""), (p.seconds, y), textcoords="offset points",
                    xytext=(4, 3), fontsize=7)
    front = [p for p in found if p.on_frontier]
    ax.plot([p.seconds for p in front], [max(p.error, ERROR_FLOOR) for p in front], color=GOOD, lw=1.2,
            label="frontier (no point faster and more accurate)")
    if (tol := tolerance(analysis)) is not None:
        ax.axhline(tol, color=NEUTRAL, ls="--", lw=1, label=f"tolerance {tol:.0e}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _log_axis(ax.xaxis)
    ax.set_xlabel("workload total, compute only (s)")
    ax.set_ylabel("max error / sigma_1")
    ax.set_title(f"{analysis.name}: accuracy/time frontier")
    ax.legend(loc="best", fontsize=7)
    return fig


def frontier_chart(record: RunRecord, analysis: AnalysisRecord) -> str | None:
    return to_svg(frontier_figure(record, analysis)) if frontier_points(record, analysis) else None
