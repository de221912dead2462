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
from matplotlib.ticker import LogFormatter, LogLocator, NullFormatter

from harness.bench.roofline import Roof, roof_device
from harness.results import AnalysisRecord, RunRecord
from harness.units import format_rate, format_seconds, format_speedup

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


def quartile_totals(analysis: AnalysisRecord) -> list[tuple[float, float]]:
    """Per strategy, the 25th and 75th percentile of the workload total: each group's sample
    quartiles per matrix, scaled to the group's size and summed (as estimate_total_s is)."""
    out = []
    for t in analysis.timings:
        q = np.zeros(2)
        for g in t.groups:
            q += np.percentile(g.measurement.samples_s, [25, 75]) * g.total / g.sampled
        out.append((float(q[0]), float(q[1])))
    return out


def timing_chart(analysis: AnalysisRecord) -> str:
    """Workload time (log scale) and speedup vs the baseline per strategy, IQR as error bars."""
    names = [t.strategy for t in analysis.timings]
    medians = np.array([t.estimate_total_s for t in analysis.timings])
    quartiles = np.array(quartile_totals(analysis))
    y = np.arange(len(names))
    fig = _figure(7.5, 0.45 * len(names) + 1.0)
    ax_t, ax_s = fig.subplots(1, 2, sharey=True)
    colors = ["#c0392b" if t.strategy == analysis.strategy else "#5b7fa6" for t in analysis.timings]
    xerr = np.stack([medians - quartiles[:, 0], quartiles[:, 1] - medians]).clip(min=0)
    # on a log axis a bar's length depends on where it starts: start all at a round decade
    left = 10 ** np.floor(np.log10(max(quartiles[:, 0].min(), 1e-12)))
    ax_t.barh(y, medians - left, left=left, xerr=xerr, color=colors, capsize=3)
    ax_t.set_xscale("log")
    ax_t.xaxis.set_minor_formatter(NullFormatter())  # 2x10^-4, 3x10^-4, ... overlap
    ax_t.set_xlim(left, quartiles[:, 1].max() * 4)  # room for the labels
    ax_t.set_xlabel("workload time, s (median, IQR bars)")
    ax_t.set_yticks(y, names)
    ax_t.invert_yaxis()
    for yi, m, q3 in zip(y, medians, quartiles[:, 1]):
        ax_t.annotate(format_seconds(m), (max(m, q3), yi), xytext=(4, 0), textcoords="offset points",
                      fontsize=7, va="center")
    baseline = next((t.estimate_total_s for t in analysis.timings if t.role == "baseline"), None)
    if baseline is not None:
        speedup = baseline / medians
        # the speedup at the time's quartiles: a slower quartile is a smaller speedup
        serr = np.stack([speedup - baseline / quartiles[:, 1], baseline / quartiles[:, 0] - speedup]).clip(min=0)
        ax_s.barh(y, speedup, xerr=serr, color=colors, capsize=3)
        ax_s.axvline(1.0, color="#444", lw=0.8, ls="--")
        for yi, s, hi in zip(y, speedup, speedup + serr[1]):
            ax_s.annotate(format_speedup(s), (hi, yi), xytext=(4, 0), textcoords="offset points", fontsize=7,
                          va="center")
        ax_s.margins(x=0.15)
    ax_s.set_xlabel("speedup vs baseline (red: chosen)")
    return to_svg(fig)


def decay_chart(bands: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], title: str) -> str:
    """Singular values by index per module: median line and 10-90% band, log scale.

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
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("index i")
    ax.set_ylabel("singular value s_i")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    return to_svg(fig)


def heatmap(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], title: str) -> str:
    """A labelled heatmap, each cell annotated when there are few enough to read."""
    fig = _figure(1.2 + 0.45 * max(len(cols), 4), 1.0 + 0.35 * max(len(rows), 3))
    ax = fig.subplots()
    image = ax.imshow(values, aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
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


def roofline_points(record: RunRecord) -> list[RooflinePoint]:
    """Every (analysis, strategy, shape group) timing with positive flops, bytes and time: the
    others (records before schema 3) have no place on log axes."""
    points = []
    for a in record.analyses:
        for t in a.timings:
            for g in t.groups:
                if g.measurement.median_s <= 0 or not g.flops or not g.bytes:
                    continue
                points.append(RooflinePoint(a.name, t.strategy, roof_device(t.device),  # type: ignore[arg-type]
                                            g.group, g.flops / g.bytes, g.gflops_per_s or 0.0))
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
        label = f"{analysis}: {strategy}" + (f" on {device}" if device != "cpu" else "")
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
