"""The roofline chart: every timed shape group's achieved GFLOP/s against its arithmetic
intensity, under the roofs `harness calibrate` measured (pure figure builders, like charts)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from harness.base.units import format_rate
from harness.machine.roofline import Roof, roof_device
from harness.record.run_record import RunRecord
from harness.report.charts import MARKERS, NAME_POINTS, _fixed, _inches, _log_axis, literal, set_title, to_svg
from harness.report.labels import COMPUTED_MARK


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
                points.append(RooflinePoint(a.name, t.label, roof_device(t.device),
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


ROOF_STYLE = {"cpu": "-", "cuda": "--"}
ABOVE_MARK = "(above its roof)"
ABOVE_NOTE = "hollow: above its roof, count not valid"


def above_roof(point: RooflinePoint, roofs: dict[str, Roof], dtype: str) -> bool:
    """A point over its device's roof, which no kernel beats: its flop or byte count is the cost
    model's and does not hold for that kernel (its data fit in cache, or it does fewer flops than
    the dense count), as the tables' `% of peak >100%` says (labels.ABOVE_ROOF)."""
    roof = roofs.get(point.device)
    ceiling = None if roof is None else roof.ceiling(point.intensity, dtype)
    return ceiling is not None and point.gflops > ceiling


def above_text(points: Sequence[RooflinePoint], roofs: dict[str, Roof], dtype: str) -> str | None:
    """`3 hollow markers (2 strategies: top3 scipy_svds on 2 shape groups, geometry factored_gram) sit above
    their roof`: the markers counted and named by the rows the tables mark `>100%` (walk 24: "3 hollow markers"
    beside two such rows, one strategy's two shape groups); None where none is above."""
    over: dict[str, int] = {}
    for p in points:
        if above_roof(p, roofs, dtype):
            over[f"{p.analysis} {p.strategy}"] = over.get(f"{p.analysis} {p.strategy}", 0) + 1
    count = sum(over.values())
    if not count:
        return None
    names = ", ".join(name + (f" on {n} shape groups" if n > 1 else "") for name, n in over.items())
    strategies = f"{len(over)} strategies: " if 1 < len(over) < count else ""
    return (f"{count} hollow {'marker' if count == 1 else 'markers'} ({strategies}{names}) "
            f"{'sits above its' if count == 1 else 'sit above their'} roof")


@literal
def roofline_figure(points: Sequence[RooflinePoint], roofs: dict[str, Roof], dtype: str) -> Figure:
    """Achieved GFLOP/s against flops per byte, log-log: colour by strategy, marker by analysis,
    each point joined by a dotted line to its device's roof at its intensity (its headroom)."""
    fig = _fixed(9.0, 4.5, left=0.75, right=3.5, top=0.35)  # the right margin is the legend's, set once drawn
    ax = fig.subplots()
    ridges = [peak / r.bandwidth_gbs for r in roofs.values() if (peak := r.peak(dtype)) is not None]
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
        mark = f" {COMPUTED_MARK}" if group[0].computed else ""  # as the tables mark it
        label = f"{analysis}: {strategy}{mark}" + (f" on {device}" if device != "cpu" else "")
        under = [p for p in group if not above_roof(p, roofs, dtype)]
        over = [p for p in group if above_roof(p, roofs, dtype)]
        ax.scatter([p.intensity for p in under], [p.gflops for p in under], s=28, color=colors[strategy],
                   marker=markers[analysis], label=label if under else None, zorder=3)
        if over:  # hollow, and no headroom: its count does not hold (the tables' "% of peak >100%")
            ax.scatter([p.intensity for p in over], [p.gflops for p in over], s=28, facecolors="none",
                       edgecolors=colors[strategy], marker=markers[analysis], zorder=3,
                       label=f"{label} {ABOVE_MARK}" if not under else None)
        held = roofs.get(device)
        if under and held is not None and held.peak(dtype) is not None:
            x = [p.intensity for p in under]
            ceilings = [c for xi in x if (c := held.ceiling(xi, dtype)) is not None]  # each: it has a peak
            ax.vlines(x, [p.gflops for p in under], ceilings, colors=colors[strategy], linestyles=":", lw=0.8, alpha=0.7)
    if any(above_roof(p, roofs, dtype) for p in points):
        ax.scatter([], [], s=28, facecolors="none", edgecolors="#777", label=ABOVE_NOTE)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    _log_axis(ax.xaxis)
    _log_axis(ax.yaxis)
    ax.set_xlabel("arithmetic intensity, flops per byte moved")
    ax.set_ylabel("achieved throughput, GFLOP/s")
    set_title(ax, f"Roofline, {dtype}" + ("" if roofs else " (no roofs measured: run `harness calibrate`)"))
    ax.grid(True, which="major", lw=0.4, color="#ddd")
    _legend_right(fig, ax)
    return fig


PLOT_INCHES = 4.75  # the axes' width beside the legend


def _legend_right(fig: Figure, ax: Axes) -> None:
    """The legend right of the axes, its names at the timing charts' size (at 7 points they were
    read as the page's smallest print); the figure widens by the legend's longest name, so the
    axes keep PLOT_INCHES."""
    _, labels = ax.get_legend_handles_labels()
    right = _inches(max(labels, key=len), NAME_POINTS) + 0.55
    width = 0.75 + PLOT_INCHES + right
    fig.set_figwidth(width)
    fig.subplots_adjust(left=0.75 / width, right=1 - right / width)
    ax.legend(fontsize=NAME_POINTS, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def roofline_chart(points: Sequence[RooflinePoint], roofs: dict[str, Roof], dtype: str) -> str:
    return to_svg(roofline_figure(points, roofs, dtype))
