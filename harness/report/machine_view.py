"""What `harness system` and `harness calibrate --show` print: the machine, its thread settings,
what would make timings unreliable right now, its roofs and every measurement its wisdom keeps."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from rich.table import Table

from harness.base.units import format_bytes, format_rate, format_seconds, format_share
from harness.bench.conditions import Conditions
from harness.bench.noise import condition_reasons
from harness.machine.info import MachineInfo
from harness.machine.processes import Busy
from harness.machine.roofline import Roof, roof_device
from harness.machine.wisdom import Wisdom
from harness.report.fitting import Fitted


def system_lines(machine: MachineInfo, c: Conditions, busy: Sequence[Busy] = ()) -> list[str]:
    """`harness system`: the machine, its thread settings, and what would make timings
    unreliable right now (naming the `busy` processes), with a verdict."""
    pools = "; ".join(" ".join(filter(None, (p.api, p.version, f"{p.threads} threads"))) for p in machine.blas) or "none found"
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
    if busy:
        lines.append("busiest processes: " + escape("; ".join(b.describe() for b in busy)))
    if reasons:
        lines += [f"[bold yellow]warning:[/] {r}" for r in reasons]
        lines.append("[bold yellow]timings taken now would be unreliable[/]: stop what is busy (above), or run anyway "
                     "and re-run later (a run marks what load cost it; `--budget 30s` buys more rounds)")
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


def wisdom_tables(w: Wisdom, path: object) -> list[str | Table | Fitted]:
    """`harness calibrate --show`: the roofs, the reads, and every measurement kept."""
    lines: list[str | Table | Fitted] = [f"wisdom: {path}", "machine: " + "; ".join(f"{k} {v}" for k, v in w.machine.items())]
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
        roof = w.roofs.get(roof_device(o.device))
        peak = roof.peak(o.dtype) if roof is not None else None
        table.add_row(o.op + (f" k={o.k}" if o.k else ""), o.strategy, f"{o.shape[0]}x{o.shape[1]}",
                      str(o.rank or "-"), o.device, o.dtype, str(o.threads), format_seconds(o.seconds),
                      format_rate(gflops), format_share(gflops / peak) if peak else "-", str(o.samples),
                      o.when[:16], o.source)
    return [*lines, Fitted(table, WISDOM_OPTIONAL)]
