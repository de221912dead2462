"""Charts for the HTML report as inline SVG strings: matplotlib Figures rendered straight to SVG
(no pyplot, no display, no global backend), text kept as text so the page stays small."""

from __future__ import annotations

import io
from collections.abc import Sequence

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from harness.results import AnalysisRecord
from harness.units import format_seconds, format_speedup

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
