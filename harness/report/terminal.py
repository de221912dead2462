"""Terminal tables of a plan, of a run record and of a comparison of runs."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console, ConsoleOptions
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Column, Table

from harness.bench.conditions import Conditions
from harness.bench.noise import condition_reasons, group_reasons
from harness.machine.info import MachineInfo
from harness.machine.roofline import Roof, roof_device
from harness.plan.model import Candidate, Plan, Timed
from harness.record.run_record import UNTIMED, AnalysisRecord, RunRecord, StrategyTiming
from harness.base.units import (
    format_bytes, format_interval, format_rate, format_seconds, format_share, format_speedup,
)
from harness.bench.budget import MIN_ROUNDS, OVERRUN
from harness.machine.wisdom import Wisdom
from harness.linalg.precision import SHORT

if TYPE_CHECKING:  # scipy.stats is slow to import; the CLI loads compare only when asked
    from harness.report.compare import Comparison


@dataclass(frozen=True)
class Fitted:
    """A table drawn at the width it gets without splitting a word: while its narrowest layout
    (every column as wide as its longest word) is wider than the terminal, the optional columns
    go, in the order given, and the caption says which. Rich alone would fold "strategy" into
    "strate/gy" and "~120.2 ms" into "~120.2 / ms" at 100 columns."""

    table: Table
    optional: tuple[str, ...] = ()

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Table]:
        yield self.fit(console, options.max_width)

    def fit(self, console: Console, width: int) -> Table:
        """The table as drawn `width` columns wide: fewer columns, fixed widths."""
        table, left_out = self.table, []
        for name in self.optional:
            if Measurement.get(console, console.options.update_width(1 << 20), table).minimum <= width:
                break  # measured unbounded: rich clamps a measurement to the width it is given
            table = copy.copy(table)
            table.columns = [c for c in table.columns if c.header != name]
            left_out.append(name)
        table = copy.copy(table)
        table.columns = _laid_out(console, table.columns, width)
        if left_out:
            note = f"(left out at this width: {', '.join(left_out)}; a wider terminal shows them)"
            table.caption = f"{table.caption}\n{note}" if table.caption else note
        return table


def _laid_out(console: Console, columns: list[Column], width: int) -> list[Column]:
    """Columns of fixed widths: each its longest word, and what the width leaves shared max-min
    fairly (a column that wants little more gets it whole; the rest share what is left). Rich narrows the widest columns first when a table is too wide, which
    splits words even where the words alone would fit."""
    unbounded = console.options.update_width(1 << 20)
    spans = [[Measurement.get(console, unbounded, cell) for cell in [c.header, *c._cells]] for c in columns]
    least = [max(m.minimum for m in span) for span in spans]
    most = [max(m.maximum for m in span) for span in spans]
    spare = max(0, width - (3 * len(columns) + 1) - sum(least))  # a cell's padding and its border
    wants = [b - a for a, b in zip(least, most, strict=True)]
    extra = [0] * len(columns)
    order = sorted(range(len(columns)), key=lambda i: wants[i])  # max-min fair: modest columns whole
    for left, i in enumerate(order):
        extra[i] = min(wants[i], spare // (len(order) - left))
        spare -= extra[i]
    laid = []
    for column, low, more in zip(columns, least, extra, strict=True):
        column = copy.copy(column)
        column.width = low + more
        laid.append(column)
    return laid


def executor_label(plan: Plan) -> str:
    """Where full analyses run, as the plan and the record say it."""
    if plan.executor == "local":
        return f"executor local (in this process; {plan.workers} workers for fan-out strategies)"
    if plan.cluster is not None:  # the workers the work was sized for, not this machine's cores
        return f"executor dask: {plan.cluster.describe()}"
    where = f" at {plan.dask_address}" if plan.dask_address else (" (LocalCluster)" if plan.executor == "dask" else "")
    return f"executor {plan.executor}{where}, {plan.workers} workers x {plan.threads_per_worker} threads"


def _timed_label(t: Timed) -> str:
    """`numpy (baseline) ~390 ms`, and the rounds the budget affords it."""
    label = f"{t.label} ({t.role})"
    if t.allocations:
        label += f" ~{format_seconds(t.estimate_s)}"
    return label + (f": {t.cut}" if t.cut else "")


def _threads(n: int, why: str) -> str:
    """`2 threads per timing (the machine's 2 cores)`."""
    return f"{n} thread{'' if n == 1 else 's'} per timing" + (f" ({escape(why)})" if why else "")  # "[benchmark]" is markup


def floor_note(plan: Plan) -> str | None:
    """The line a plan and a run print when the floor is more than the budget."""
    b = plan.bench
    if b is None or b.floor_s <= b.budget_s:
        return None
    return (f"the benchmark's floor (every strategy's first call and {MIN_ROUNDS} round{'s' if MIN_ROUNDS > 1 else ''}) is "
            f"~{format_seconds(b.floor_s)}, more than its budget of {format_seconds(b.budget_s)}: it spends the "
            "floor (less where earlier runs' rounds are pooled); --budget sets more")


def bench_plan_line(plan: Plan) -> str:
    b = plan.bench
    if b is None:
        return ""
    return (f"Benchmark: budget {format_seconds(b.budget_s)}, floor {format_seconds(b.floor_s)}"
            f"{' (over the budget: the floor is spent)' if b.floor_s > b.budget_s else ''}, to a target of "
            f"±{format_share(b.target)}, est. {format_seconds(b.estimate_s)} "
            f"(float64 references {format_seconds(b.references_s)}), {_threads(b.threads, b.threads_reason)}; "
            f"whole run est. {format_seconds(plan.estimate_s)}"
            + (" (of which " + ", ".join(f"{k} {format_seconds(v)}" for k, v in plan.overheads.items()) + ")"
               if plan.overheads else ""))


def plan_table(plan: Plan) -> Fitted:
    groups = ", ".join(f"{g.label} x{g.count}" for g in plan.groups)
    table = Table(
        title=f"Plan: {plan.n_matrices} matrices ({groups}), {plan.dtype}, "
        f"budget {format_bytes(plan.memory_budget)}, {executor_label(plan)}",
        title_justify="left",
        caption=bench_plan_line(plan),
        caption_justify="left",
        show_lines=True,
    )
    for column in ("analysis", "strategy", "device", "batch", "est. time", "timed vs baseline (est.)", "reason",
                   "estimates from"):
        table.add_column(column, overflow="fold")
    for step in plan.steps:
        timed = "\n".join(_timed_label(t) for t in step.timed)
        skipped = "".join(f"\nskipped {c.label}: {c.reason}" for c in step.skipped)
        op = step.op + (f" k={step.k}" if step.k else "")
        table.add_row(
            f"{step.analysis}\n{op}",
            step.strategy,
            step.device,
            ", ".join(f"{g}:{b}" for g, b in step.batch_sizes.items())
            + ("\nnext chunk read ahead" if step.reads_ahead else ""),
            format_seconds(step.estimate_s),
            timed + skipped,
            step.reason,
            "\n".join(f"{c.strategy}: {_basis(c)}" for c in step.candidates if c.available),
        )
    return Fitted(table, ("estimates from", "batch"))


def _basis(c: Candidate) -> str:
    """`measured on this machine, 2026-11-23, 14 samples`, per group where groups differ."""
    texts = set(c.basis.values())
    if len(texts) == 1:
        return texts.pop()
    return "; ".join(f"{group}: {text}" for group, text in c.basis.items())


def device_library(backend: str) -> tuple[str, str]:
    """(device, library) of a backend: `numpy` is numpy's arrays on the CPU, `cpu` and `cuda` are
    torch's, so "numpy on numpy" and "torch on cpu" read as the two columns they are."""
    return roof_device(backend), "numpy" if backend == "numpy" else "torch"  # type: ignore[arg-type]


def peak_share(record: RunRecord, t: StrategyTiming) -> float | None:
    """The timing's achieved GFLOP/s over the roof at its intensity, on its device's measured roofs."""
    roof = record.roofs.get(roof_device(t.device))  # type: ignore[arg-type]
    return None if roof is None else roof.share(t.gflops_per_s, t.intensity, record.plan.dtype)


# One vocabulary for the terminal table, the HTML tables and the chart labels: the role says why a
# strategy was timed, a separate mark says which one computed the recorded results (any role can)
COMPUTED_MARK = "*"
COMPUTED_NOTE = f"{COMPUTED_MARK} computed the recorded results"
ROLES_NOTE = ("Role: baseline, the speedups' reference; compare, named in the spec's compare list; chosen, "
              f"timed because the plan chose it. {COMPUTED_NOTE}, whatever its role.")
SPREAD_NOTE = ("[q1, q3]: the 25th and 75th percentiles of the workload total over the samples; "
               "n=1: timed once, no spread to show")


def strategy_label(analysis: AnalysisRecord, strategy: str, computed: bool | None = None) -> str:
    """`torch *` for the strategy (or point, `torch@bfloat16`) that computed the analysis's
    results, else `torch`."""
    computed = strategy == analysis.strategy if computed is None else computed
    return strategy + (f" {COMPUTED_MARK}" if computed else "")


def precision_text(record: RunRecord, t: StrategyTiming) -> str:
    """`bf16`, `f32+c` (compiled): a timing's numeric precision, short enough for a column."""
    return SHORT.get(t.precision or record.plan.dtype, t.precision or record.plan.dtype) + ("+c" if t.compiled else "")


UNRESOLVED_MARK = "?"
SPEEDUP_NOTE = (f"Speedup: the baseline's workload total over the strategy's, the geometric mean over the rounds "
                f"that timed both, with its 95% interval (low-high); {UNRESOLVED_MARK}: unresolved, the interval "
                "is wider than the precision asked for. Rounds: this run's + earlier runs' (pooled).")


def speedup_text(t: StrategyTiming) -> str:
    """`1,130x (1,050-1,210)`, `0.94x (0.73-1.22) ?` when unresolved, `1x (baseline)`."""
    if t.role == "baseline":
        return "1x (baseline)"
    if t.speedup is None:
        return f"- {UNRESOLVED_MARK}"
    interval = f" ({format_interval(*t.speedup_ci)})" if t.speedup_ci else " (no interval)"
    return format_speedup(t.speedup) + interval + (f" {UNRESOLVED_MARK}" if t.unresolved else "")


def rounds_text(t: StrategyTiming) -> str:
    """`5+3`: rounds this run timed, and rounds pooled from earlier runs (`reused` when all were)."""
    pooled = min((g.pooled for g in t.groups), default=0)
    own = min((len(g.rounds) for g in t.groups), default=0) - pooled
    if own <= 0 and pooled:
        return f"{pooled} reused"
    return f"{own}+{pooled}" if pooled else str(own)


def spread(t: StrategyTiming) -> str:
    """`[52.1 ms, 61.0 ms]`: the workload total's quartiles as an interval, which a `± IQR` beside
    the median read as a half-width is not; `n=1` when a group was timed once (no spread at all)."""
    if t.fewest_samples < 2:
        return "n=1"
    q1, q3 = t.quartile_totals
    return f"[{format_seconds(q1)}, {format_seconds(q3)}]"


def _analysis_rows(table: Table, record: RunRecord, analysis: AnalysisRecord) -> None:
    checks = {v.strategy: v for v in analysis.verification}
    for t in analysis.timings:
        v = checks[t.label]
        errors = f"{v.values_error:.1e}" + (f" / {v.vectors_error:.1e}" if v.vectors_error is not None else "")
        table.add_row(
            analysis.name,
            strategy_label(analysis, t.label, analysis.computed(t)),
            t.role,
            *device_library(t.device),
            precision_text(record, t),
            format_seconds(t.seconds_per_matrix) + (" [bold yellow]![/]" if t.unstable else ""),
            escape(("~" if t.extrapolated else "") + format_seconds(t.estimate_total_s)),
            escape(speedup_text(t)),
            rounds_text(t),
            format_rate(t.gflops_per_s),
            format_share(peak_share(record, t)),
            errors,
            "[green]yes[/]" if v.passed else "[bold red]NO[/]",
        )
    timed = {t.label for t in analysis.timings}
    planned = {t.label: t for s in record.plan.steps if s.analysis == analysis.name for t in s.timed}
    for v in analysis.verification:  # raised instead of answering: no timing, only the reason
        if v.reason is not None and v.strategy not in timed:
            plan = planned.get(v.strategy)
            table.add_row(analysis.name, strategy_label(analysis, v.strategy), plan.role if plan else "-",
                          *(device_library(plan.device) if plan else ("-", "-")), "-", "-", "-", "-", "-", "-", "-",
                          "-", f"[bold red]failed:[/] {escape(v.reason)}")
    for s in analysis.skipped:
        table.add_row(analysis.name, s.strategy, "skipped", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", s.reason)


def run_table(record: RunRecord) -> Table:
    table = Table(
        title=f"{record.experiment}: {record.plan.n_matrices} matrices on {record.machine.describe()}",
        title_justify="left",
        caption=f"{ROLES_NOTE} ! measured under unreliable conditions (below). "
        f"Time: median per matrix over the rounds; compute total: scaled to the workload (~ = extrapolated), "
        f"compute only (the wall time of each analysis, loading included, is below the table). {SPEEDUP_NOTE} "
        "GFLOP/s: achieved; % of peak: of the roof at the kernel's flops per byte, min(GEMM peak, "
        "bandwidth x flops/byte), both measured on this machine" + (
            "" if record.roofs else " (none measured: `harness calibrate`)") + "; over 100%: the data fit in "
        "cache (the bandwidth roof is memory's), or the flop count is an upper bound (ARPACK's iterations). "
        "Error: max |s - s_ref| / s_1 vs float64 references / max singular-triplet residual.",
        caption_justify="left",
    )
    for column in RUN_COLUMNS:
        table.add_column(column, overflow="fold")
    for analysis in record.analyses:
        _analysis_rows(table, record, analysis)
    return table


RUN_COLUMNS = ("analysis", "strategy", "role", "device", "library", "precision", "per matrix", "compute total",
               "speedup (95% CI)", "rounds", "GFLOP/s", "% of peak", "max error", "passed")
# what a narrow terminal leaves out first: the verdict lines above the table keep the speedups
RUN_OPTIONAL = ("% of peak", "GFLOP/s", "library", "per matrix", "role", "rounds", "precision", "max error")
COMPARE_OPTIONAL = ("p", "A per matrix", "B per matrix", "group")


def explained(table: Table, explain: bool) -> Table:
    """The table with its caption, the footnote that explains columns and marks, only when asked
    for (`--explain`): printed after every run it is five lines a reader has seen before. The HTML
    report always explains."""
    if not explain:
        table.caption = None
    return table


def bench_lines(record: RunRecord, verbose: bool = False) -> list[str]:
    """The benchmark phase: its budget, floor and rounds, the references, what is unresolved and
    what is unstable: one line per cause (`17 measurements unstable: load 3.2 on 2 cores`), or with `verbose` one
    line per measurement and reason."""
    b = record.bench
    if b is None:
        return []
    why = record.plan.bench.threads_reason if record.plan.bench is not None else ""
    lines = [f"benchmark: {format_seconds(b.spent_s - b.one_off_s)} of warm-ups and rounds for a {format_seconds(b.budget_s)} "
             f"budget (floor {format_seconds(b.floor_s)}), and {format_seconds(b.one_off_s)} of one-off work (imports, "
             f"starting each strategy's own worker process, verifying answers); {b.rounds} rounds timed"
             f"{f' ({b.busy_rounds} blocks of them while the machine was busy: kept, and flagged)' if b.busy_rounds else ''}"
             f", {b.rounds_pooled} pooled from earlier runs; {b.resolved} of {b.resolved + b.unresolved} speedups "
             f"resolved to ±{format_share(b.precision)}; {_threads(b.threads, why)}; float64 references: "
             f"{b.references_computed} computed, "
             f"{b.references_cached} from the cache, {format_seconds(b.references_s)}"]
    if b.spent_s - b.one_off_s > b.limit_s * (1 + OVERRUN):
        lines.append(f"benchmark: over its limit of {format_seconds(b.limit_s)} + {100 * OVERRUN:.0f}%: its rounds ran "
                     "slower than planned (on a quiet machine the floor's rounds are never cut, so that every speedup "
                     "has an interval)")
    untimed = [f"{a.name}: {s.strategy}" for a in record.analyses for s in a.skipped if s.reason == UNTIMED]
    if untimed:
        lines.append(f"not timed, out of time on a busy machine: {', '.join(untimed)} (--budget gives more; a run on "
                     "a quiet machine times them, and later runs pool its rounds)")
    unresolved: list[str] = []
    unstable: list[tuple[str, str]] = []
    for a in record.analyses:
        lines += [f"{a.name}: {v.strategy} [bold red]failed:[/] {escape(v.reason)}" for v in a.verification if v.reason]
        for t in a.timings:
            if t.unresolved and t.unresolved_reason:
                unresolved.append(f"{a.name}: {t.strategy}: {t.unresolved_reason}")
            then = " (rounds of earlier runs; --fresh measures anew)" if t.cached else ""
            unstable += [(f"{a.name}: {t.strategy} on {reason}{then}", reason.split(": ", 1)[-1] + then)
                         for reason in t.unstable]
    if verbose:
        return (lines + [f"unresolved {escape(u)}" for u in unresolved]
                + [f"[bold yellow]unstable[/] {escape(full)}" for full, _ in unstable] + _unstable_advice(b.unstable, ""))
    if unresolved:
        lines.append(f"{len(unresolved)} speedup{'s' if len(unresolved) > 1 else ''} unresolved (marked ?): "
                     "their intervals are wider than the target; a re-run adds a run (intervals narrow with runs, "
                     "not with one run's rounds), --budget gives more; --verbose says why each")
    lines += [f"[bold yellow]{n} measurement{'s' if n > 1 else ''} unstable[/]: {escape(reason)}"
              for n, reason in group_reasons(cause for _, cause in unstable)]
    return lines + _unstable_advice(b.unstable, "; --verbose names each")


def _unstable_advice(count: int, more: str) -> list[str]:
    if not count:
        return []
    return [f"[bold yellow]{count} measurements were unstable[/]: compare their speedups "
            f"with care, or re-run on a quiet machine (`harness system` says what is busy){more}"]


def wall_lines(record: RunRecord, verbose: bool = False) -> list[str]:
    """What the run did, after its table: each analysis's wall time (loading and all, unlike the
    table's compute-only workload total), PCA figures, and the benchmark phase's lines."""
    lines = [
        f"{a.name}: {a.n_matrices} matrices through {a.strategy} on {'{} ({})'.format(*device_library(a.device))} in "
        f"{format_seconds(a.wall_s)} wall, loading included" + _cache_note(a)
        for a in record.analyses
    ]
    return (lines + [line for a in record.analyses for line in _variance_lines(a) + _axes_lines(a)]
            + bench_lines(record, verbose))


def _cache_note(analysis: AnalysisRecord) -> str:
    """Says when the wall time is that of reading the result cache, not of computing, and where
    the computed chunks ran."""
    chunks = analysis.cached_chunks + analysis.computed_chunks
    notes = [f"{analysis.cached_chunks} of {chunks} chunks from the cache"] if analysis.cached_chunks else []
    workers = {p.worker for p in analysis.placements}
    if len(workers) > 1:
        notes.append(f"{len(analysis.placements)} chunks on {len(workers)} workers")
    if retried := sum(p.attempts > 1 for p in analysis.placements):
        notes.append(f"{retried} chunks resubmitted after losing their worker")
    if any(t.cached for t in analysis.timings):
        notes.append("timings reused from earlier runs on this machine")
    return f" ({'; '.join(notes)})" if notes else ""


def _variance_lines(analysis: AnalysisRecord) -> list[str]:
    """op pca: explained-variance ratios, one line for a global PCA, the range for per-layer."""
    ratios = analysis.explained_variance_ratio
    if not ratios:
        return []
    if list(ratios) == ["global"]:
        return [f"{analysis.name}: explained variance ratio " + ", ".join(f"{r:.3f}" for r in ratios["global"])]
    first = [r[0] for r in ratios.values()]
    return [f"{analysis.name}: PC1 explains {min(first):.3f} to {max(first):.3f} of the variance "
            f"across {len(ratios)} (layer, module) PCAs"]


def axes_summary(analysis: AnalysisRecord) -> str | None:
    """op pca with axes = true: the file, its size, its time and its check, in one line."""
    axes = analysis.axes
    if axes is None:
        return None
    size = axes.components * axes.parameters * np.dtype(axes.dtype).itemsize
    passed = next((v.passed for v in analysis.verification if v.strategy == "axes"), False)
    return (f"principal axes ({axes.components} x {axes.parameters:,} {axes.dtype}, {format_bytes(size)}) "
            f"in {axes.file}, written in {format_seconds(axes.seconds)}; max |A A^T - I| = "
            f"{axes.orthonormality_error:.1e}" + ("" if passed else ", over the tolerance: FAILED"))


def _axes_lines(analysis: AnalysisRecord) -> list[str]:
    summary = axes_summary(analysis)
    return [] if summary is None else [f"{analysis.name}: {summary}"]


CHANGE_STYLE = {"slower": "bold red", "faster": "green", "not significant": "", "too few rounds": "yellow"}


def compare_table(comparison: Comparison) -> Table:
    table = Table(
        title=f"{comparison.experiment}: B = {comparison.b.folder} against A = {comparison.a.folder}",
        title_justify="left",
        caption=f"A: {comparison.a.machine}, {comparison.a.started}\nB: {comparison.b.machine}, "
        f"{comparison.b.started}\nB / A: per matrix, the geometric means of the rounds, with a 95% interval; "
        f"changed: Welch's t on the rounds' log seconds p < {comparison.alpha} and B/A beyond "
        f"{comparison.factor}x either way. Rounds both runs share (pooled from one earlier run) are left out."
        + "".join(f"\nnot compared: {u}" for u in comparison.unmatched),
        caption_justify="left",
    )
    for column in ("analysis", "strategy", "group", "A per matrix", "B per matrix", "B / A (95% CI)",
                   "rounds A, B", "p", "change"):
        table.add_column(column, overflow="fold")
    for r in comparison.rows:
        style = CHANGE_STYLE[r.change]
        ci = f" ({r.ratio_ci[0]:.3g}-{r.ratio_ci[1]:.3g})" if r.ratio_ci else ""
        table.add_row(
            r.analysis, r.strategy, r.group, format_seconds(r.median_a_s), format_seconds(r.median_b_s),
            f"{r.ratio:.3g}{ci}", f"{r.n_a}, {r.n_b}" + (f" ({r.shared} shared)" if r.shared else ""),
            "-" if r.p_value is None else f"{r.p_value:.1e}",
            f"[{style}]{r.change}[/]" if style else r.change,
        )
    return table


def system_lines(machine: MachineInfo, c: Conditions) -> list[str]:
    """`harness system`: the machine, its thread settings, and what would make timings
    unreliable right now, with a verdict."""
    pools = "; ".join(f"{p.api} {p.version or ''} {p.threads} threads" for p in machine.blas) or "none found"
    env = ", ".join(f"{k}={v}" for k, v in machine.thread_env.items()) or "none set (each library's defaults)"

    def share(x: float | None) -> str:
        return "unreadable" if x is None else f"{100 * x:.0f}%"

    load = "unreadable" if c.load_before is None else f"{c.load_before:.2f}"
    lines = [
        f"machine: {machine.describe()}",
        f"threads: {pools}; torch {machine.torch_threads or '-'}; environment: {env}",
        f"memory available: {format_bytes(machine.memory_available)} of {format_bytes(machine.memory_total)}",
        f"load average (1 min): {load} on {c.cores} cores; runnable tasks now: {c.running_after or '?'}",
        f"CPU taken by other processes: {share(c.others_cpu)}; CPU steal: {share(c.steal)}",
        f"frequency governor: {c.governor or 'unreadable (typical of a VM or container)'}",
    ]
    reasons = condition_reasons(c)
    if c.governor is not None and c.governor != "performance":
        reasons.append(f"frequency governor {c.governor!r}: clocks change under load ('performance' holds them)")
    if reasons:
        lines += [f"[bold yellow]warning:[/] {r}" for r in reasons]
        lines.append("[bold yellow]timings taken now would be unreliable[/]")
    else:
        lines.append("[green]nothing now would make timings unreliable[/]")
    return lines


def _roof_line(roof: Roof) -> str:
    peaks = ", ".join(f"{dtype} {gflops:.4g}" for dtype, gflops in roof.gemm_gflops.items())
    extra = f"; host to device {roof.transfer_gbs:.3g} GB/s (pinned)" if roof.transfer_gbs else ""
    threads = f", {roof.threads} threads" if roof.threads else ""
    return (f"{roof.device}: GEMM peak GFLOP/s {peaks}; triad bandwidth {roof.bandwidth_gbs:.3g} GB/s{extra} "
            f"({', '.join(roof.libraries)}{threads}; {roof.by}, {roof.measured[:16]})")


WISDOM_OPTIONAL = ("by", "measured", "% of GEMM peak", "samples", "GFLOP/s", "rank", "dtype")


def wisdom_tables(w: Wisdom, path: object) -> list[object]:
    """`harness calibrate --show`: the roofs, the reads, and every measurement kept."""
    lines: list[object] = [f"wisdom: {path}", "machine: " + "; ".join(f"{k} {v}" for k, v in w.machine.items())]
    lines += [_roof_line(roof) for roof in w.roofs.values()] or ["roofs: none measured yet"]
    if w.reads is not None:
        r = w.reads
        cold = f"{r.cold_gbs:.3g} GB/s cold ({r.cold_how})" if r.cold_gbs is not None else f"cold: {r.cold_how}"
        lines.append(f"file reads: {r.cached_gbs:.3g} GB/s from the page cache, {cold}, "
                     f"{format_bytes(r.file_bytes)} file")
    table = Table(title=f"{len(w.observations)} measurements", title_justify="left")
    for column in ("op", "strategy", "shape", "rank", "device", "dtype", "threads", "per matrix", "GFLOP/s",
                   "% of GEMM peak", "samples", "measured", "by"):
        table.add_column(column, overflow="fold")
    for o in sorted(w.observations, key=lambda o: (o.op, o.strategy, o.device, o.flops)):
        gflops = o.flops / o.seconds / 1e9
        roof = w.roofs.get(roof_device(o.device))  # type: ignore[arg-type]
        peak = roof.peak(o.dtype) if roof is not None else None
        table.add_row(o.op + (f" k={o.k}" if o.k else ""), o.strategy, f"{o.shape[0]}x{o.shape[1]}",
                      str(o.rank or "-"), o.device, o.dtype, str(o.threads), format_seconds(o.seconds),
                      format_rate(gflops), format_share(gflops / peak) if peak else "-", str(o.samples),
                      o.when[:16], o.source)
    return [*lines, Fitted(table, WISDOM_OPTIONAL)]
