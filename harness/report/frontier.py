"""The accuracy/time frontier of an analysis: every timed (strategy, precision, compiled) point at
its workload time and its measured error, the Pareto-optimal ones (no other point both faster and
more accurate) joined, the tolerance as a line. Terminal lines and an SVG chart from one list."""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.figure import Figure

from harness.base.units import format_seconds
from harness.record.run_record import AnalysisRecord, RunRecord
from harness.report.charts import GOOD, NEUTRAL, _figure, _log_axis, to_svg

ERROR_FLOOR = 1e-17  # an error of exactly 0 (a reference's own route) drawn at float64's floor


@dataclass(frozen=True)
class Point:
    label: str  # the strategy, or its point "torch@bfloat16+compiled"
    precision: str
    compiled: bool
    seconds: float  # the workload total, compute only
    error: float  # the worst of values' and vectors' errors, relative to sigma_1
    passed: bool
    computed: bool  # the point that computed the analysis' results
    on_frontier: bool = False


def points(record: RunRecord, analysis: AnalysisRecord) -> list[Point]:
    """Every timed point of `analysis` with its verification, frontier ones marked, fastest first."""
    checks = {v.strategy: v for v in analysis.verification}
    found = []
    for t in analysis.timings:
        v = checks.get(t.label)
        if v is None or v.reason is not None:
            continue
        error = max(v.values_error, v.vectors_error or 0.0)
        found.append(Point(t.label, t.precision or record.plan.dtype, t.compiled, t.estimate_total_s, error, v.passed,
                           analysis.computed(t)))
    found.sort(key=lambda p: (p.seconds, p.error))
    best, marked = float("inf"), []
    for p in found:  # fastest first: on the frontier when more accurate than every faster point
        on = p.error < best
        best = min(best, p.error)
        marked.append(Point(**{**p.__dict__, "on_frontier": on}))
    return marked


def tolerance(analysis: AnalysisRecord) -> float | None:
    return next((v.tolerance for v in analysis.verification if v.reason is None), None)


def has_points(analysis: AnalysisRecord) -> bool:
    """An analysis timing several points of one strategy (precisions, or compiled): the terminal
    prints its frontier; the HTML report draws every analysis' anyway."""
    return any(t.variant for t in analysis.timings)


def frontier_lines(record: RunRecord) -> list[str]:
    """`spectrum frontier (tolerance 1e-04): ...`, then one line per frontier point, each well
    under 100 columns: label, workload time, error, and whether it meets the tolerance."""
    lines = []
    for a in record.analyses:
        if not has_points(a):
            continue
        tol = tolerance(a)
        front = [p for p in points(record, a) if p.on_frontier]
        lines.append(f"{a.name} frontier, fastest first (tolerance {tol:.0e}; {len(front)} of "
                     f"{len(points(record, a))} points):" if tol else f"{a.name} frontier:")
        for p in front:
            meets = "meets the tolerance" if p.passed else "misses the tolerance"
            mark = " *" if p.computed else ""
            lines.append(f"  {p.label}{mark}: {format_seconds(p.seconds)}, error {p.error:.1e}, {meets}")
    return lines


def frontier_figure(record: RunRecord, analysis: AnalysisRecord) -> Figure:
    """Error against workload time, log-log: every point labelled, the frontier joined, the
    tolerance a dashed line."""
    found = points(record, analysis)
    fig = _figure(6.4, 3.8)
    ax = fig.add_subplot()
    for p in found:
        y = max(p.error, ERROR_FLOOR)
        ax.scatter([p.seconds], [y], color=GOOD if p.passed else "#b00020", marker="D" if p.compiled else "o",
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
    return to_svg(frontier_figure(record, analysis)) if points(record, analysis) else None
