"""What the benchmark phase does differently for a point at a precision, or compiled: the context
it computes with, and, once timed, its precision and compilation on the record, a compiled
point kept only where it beats its eager twin."""

from __future__ import annotations

from dataclasses import replace

from harness.linalg.compiling import CompileLog
from harness.linalg.precision import storage_dtype
from harness.plan.model import Plan, Step, Timed
from harness.record.run_record import StrategyTiming
from harness.strategies.base import ExecContext


def variant_context(ctx: ExecContext, timed: Timed, dtype: str) -> ExecContext:
    """`ctx` for `timed`'s point: inputs in its precision's storage dtype, its arithmetic, and a
    fresh compile log when it is compiled (each point's compilations are its own)."""
    precision = timed.precision or dtype
    return replace(ctx, dtype=storage_dtype(precision), precision=precision,
                   compiled=CompileLog() if timed.compiled else None)


def mark(timing: StrategyTiming, timed: Timed, ctx: ExecContext, dtype: str) -> StrategyTiming:
    """The timing carrying its point: precision, compiled, and what compiling cost and produced."""
    timing.precision, timing.compiled, timing.variant = timed.precision or dtype, timed.compiled, timed.variant
    if ctx.compiled is not None:
        timing.compile_s = ctx.compiled.seconds
        timing.compile_note = ctx.compiled.describe()
    return timing


def keep_compiled(timings: list[StrategyTiming]) -> None:
    """A compiled point is kept where it beats its eager twin (same strategy and precision), and
    says by how much either way; `kept` stays None where there is no eager twin to compare."""
    eager = {(t.strategy, t.precision): t for t in timings if not t.compiled}
    for t in timings:
        twin = eager.get((t.strategy, t.precision))
        if not t.compiled or twin is None:
            continue
        ratio = twin.estimate_total_s / t.estimate_total_s
        t.kept = ratio > 1.0
        verdict = "kept" if t.kept else "dropped: eager is as fast or faster"
        t.compile_note = f"{t.compile_note or 'compiled'}; {ratio:.2f}x eager, {verdict}"


def step_dtype(step: Step, plan: Plan) -> str:
    """What the full analysis loads its inputs in: its chosen precision's storage dtype."""
    return str(storage_dtype(step.precision or plan.dtype))
