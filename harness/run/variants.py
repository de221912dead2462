"""What the benchmark phase does differently for a point at a precision, or compiled, once timed:
a compiled point kept only where it beats its eager twin."""

from __future__ import annotations

from harness.linalg.precision import storage_dtype
from harness.plan.model import Plan, Step
from harness.record.run_record import StrategyTiming


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
