"""The accuracy/time frontier of an analysis: every timed (strategy, precision, compiled) point at
its workload time and its measured error, the Pareto-optimal ones (no other point both faster and
more accurate, errors within a factor TIE a tie) joined, the tolerance as a line. The points and the terminal lines; the chart
(harness.report.charts.frontier_chart) draws the same points. No matplotlib here: `harness run`
prints these lines without paying for its import."""

from __future__ import annotations

from dataclasses import dataclass

from harness.record.run_record import AnalysisRecord, RunRecord
from harness.report.labels import total_text

# A slower point is on the frontier only when its error is under 1/TIE of every faster point's:
# errors are measured on a few sampled matrices (4 for one point, 8 for another in one run), and the
# same arithmetic's errors differ by tens of percent between samples, so 2.653e-08 against 2.668e-08
# is a tie, not a win worth 2000x the time. A factor of 2 is well above that noise and well under
# the gap between precisions (float32 to float64 is ~1e8).
TIE = 2.0


@dataclass(frozen=True)
class Point:
    label: str  # the strategy, or its point "torch@bfloat16+compiled"
    precision: str
    compiled: bool
    seconds: float  # the workload total, compute only
    extrapolated: bool  # `seconds` scaled up from a sample of the matrices
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
        found.append(Point(t.label, t.precision or record.plan.dtype, t.compiled, t.estimate_total_s, t.extrapolated, error,
                           v.passed, analysis.computed(t)))
    found.sort(key=lambda p: (p.seconds, p.error))
    best, marked = float("inf"), []
    for p in found:  # fastest first: on the frontier when clearly more accurate than every faster point
        on = p.error * TIE < best
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
            lines.append(f"  {p.label}{mark}: {total_text(p.seconds, p.extrapolated)}, error {p.error:.1e}, {meets}")
    return lines
