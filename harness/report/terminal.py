"""Terminal tables of a plan and of a run record."""

from __future__ import annotations

from rich.table import Table

from harness.plan import Plan
from harness.results import AnalysisRecord, RunRecord
from harness.units import format_bytes, format_seconds


def plan_table(plan: Plan) -> Table:
    groups = ", ".join(f"{g.label} x{g.count}" for g in plan.groups)
    table = Table(
        title=f"Plan: {plan.n_matrices} matrices ({groups}), {plan.dtype}, "
        f"budget {format_bytes(plan.memory_budget)}, {plan.workers} workers",
        title_justify="left",
        show_lines=True,
    )
    for column in ("analysis", "strategy", "device", "batch", "est. time", "timed vs baseline", "reason"):
        table.add_column(column, overflow="fold")
    for step in plan.steps:
        timed = ", ".join(f"{t.strategy} ({t.role})" for t in step.timed)
        skipped = "".join(f"\nskipped {c.strategy}: {c.reason}" for c in step.skipped)
        op = step.op + (f" k={step.k}" if step.k else "")
        table.add_row(
            f"{step.analysis}\n{op}",
            step.strategy,
            step.device,
            ", ".join(f"{g}:{b}" for g, b in step.batch_sizes.items()),
            format_seconds(step.estimate_s),
            timed + skipped,
            step.reason,
        )
    return table


def _analysis_rows(table: Table, analysis: AnalysisRecord) -> None:
    checks = {v.strategy: v for v in analysis.verification}
    for t in analysis.timings:
        v = checks[t.strategy]
        per_matrix = sum(g.measurement.median_s for g in t.groups) / sum(g.sampled for g in t.groups)
        errors = f"{v.values_error:.1e}" + (f" / {v.vectors_error:.1e}" if v.vectors_error is not None else "")
        table.add_row(
            analysis.name,
            t.strategy + (" *" if t.strategy == analysis.strategy else ""),
            t.role,
            t.device,
            format_seconds(per_matrix),
            ("~" if t.extrapolated else "") + format_seconds(t.estimate_total_s) + f" ± {format_seconds(t.iqr_total_s)}",
            f"{t.speedup:.1f}x" if t.speedup is not None else "-",
            errors,
            "[green]yes[/]" if v.passed else "[bold red]NO[/]",
        )
    for s in analysis.skipped:
        table.add_row(analysis.name, s.strategy, "skipped", "-", "-", "-", "-", "-", s.reason)


def run_table(record: RunRecord) -> Table:
    table = Table(
        title=f"{record.experiment}: {record.plan.n_matrices} matrices on {record.machine.describe()}",
        title_justify="left",
        caption="* computed the recorded results. Time: median per matrix on the sample; total "
        "scaled to the workload (~ = extrapolated) ± IQR. Error: max |s - s_ref| / s_1 vs float64 "
        "LAPACK / max singular-triplet residual.",
        caption_justify="left",
    )
    for column in ("analysis", "strategy", "role", "device", "per matrix", "workload total",
                   "speedup", "max error", "passed"):
        table.add_column(column, overflow="fold")
    for analysis in record.analyses:
        _analysis_rows(table, analysis)
    return table


def wall_lines(record: RunRecord) -> list[str]:
    return [
        f"{a.name}: {a.n_matrices} matrices through {a.strategy} on {a.device} in {format_seconds(a.wall_s)}"
        for a in record.analyses
    ]
