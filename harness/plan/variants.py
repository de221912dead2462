"""The points an analysis times: each serving strategy at each of the analysis' `precisions`,
eager and (with `compile = true`) compiled, and why a point is not offered or cannot meet the
tolerance before anything is timed."""

from __future__ import annotations

from harness.linalg.device import Backend, cuda_missing_reason
from harness.linalg.precision import UNIT_ROUNDOFF, low, meets, storage_dtype
from harness.plan.model import Candidate, Variant, env_suffix, variant_suffix
from harness.specs.sections import Analysis, Spec
from harness.strategies.base import StrategyBase

TF32_ONLY_CUDA = ("tf32 is a mode of NVIDIA tensor cores (Ampere and later) for float32 products, and {why}: "
                  "ask for float32 here")


def precisions(analysis: Analysis, spec: Spec) -> list[str]:
    """The analysis' precisions; without any, the run's [execution] dtype alone."""
    return list(analysis.precisions) or [spec.execution.dtype]


def default_precision(analysis: Analysis, spec: Spec) -> str:
    """Where a baseline is timed: the run's dtype when the analysis asks for it, else its first."""
    wanted = precisions(analysis, spec)
    return spec.execution.dtype if spec.execution.dtype in wanted else wanted[0]


def points(strategy: str, analysis: Analysis, spec: Spec) -> list[Variant]:
    """Every (precision, compiled) point of `strategy` in this analysis, labelled apart when the
    analysis has more than one point per strategy."""
    pairs = [(p, c) for p in precisions(analysis, spec) for c in ((False, True) if analysis.compile else (False,))]
    return [Variant(strategy=strategy, precision=p, compiled=c, variant=variant_suffix(p, c) if len(pairs) > 1 else "")
            for p, c in pairs]


def env_points(analysis: Analysis, candidates: list[Candidate], strategies: set[str]) -> list[Candidate]:
    """Each eager, runnable point of `strategies` again in each of the analysis' environments: timed
    in a worker started with it, never the point that runs the analysis (this process keeps the
    user's environment)."""
    return [c.model_copy(update={"env": env, "variant": c.variant + env_suffix(env)})
            for env in analysis.environments for c in candidates
            if c.strategy in strategies and c.available and not c.compiled and not c.env]


def tf32_problems(spec: Spec) -> list[str]:
    """One line per analysis asking for tf32 on a machine without CUDA (or with device cpu)."""
    asked = [i for i, a in enumerate(spec.analysis) if "tf32" in a.precisions]
    if not asked:
        return []
    why = ("execution.device is 'cpu'" if spec.execution.device in ("cpu", "numpy")
           else (cuda_missing_reason() or ""))
    if not why:
        return []
    return [f"analysis[{i}].precisions: " + TF32_ONLY_CUDA.format(why=why) for i in asked]


def refusal(strategy: StrategyBase, point: Variant, backend: Backend, tolerance: float) -> str | None:
    """Why `strategy` has no such point here, or why its precision cannot meet the tolerance; None
    when it is offered."""
    if (why := strategy.not_offered(point.precision, backend)) is not None:
        return f"{point.precision} not offered: {why}"
    if point.compiled and (why := strategy.not_compiled(point.precision, backend)) is not None:
        return f"compiled not offered: {why}"
    if low(point.precision) and not meets(point.precision, tolerance):  # float32's own is checked by verifying
        return (f"{point.precision} rounds every input by up to {UNIT_ROUNDOFF[point.precision]:.1e} of its value, "
                f"above the tolerance {tolerance:g}: it cannot meet it (loosen analysis.tolerance)")
    return None


def measured_miss(point: Variant, error: float | None, tolerance: float) -> str | None:
    """The refusal of a point whose error, measured on this machine, exceeds the tolerance."""
    if error is None or error <= tolerance:
        return None
    return (f"its error measured on this machine at {point.precision}, {error:.1e} of sigma_1, exceeds the "
            f"tolerance {tolerance:g}")


def itemsize(point: Variant) -> int:
    return storage_dtype(point.precision).itemsize


def needs_measurement(point: Variant) -> bool:
    """Points `auto` chooses only once their error or their speed is measured: narrow precisions
    (their error depends on the data) and compiled kernels (they are kept only where they win)."""
    return low(point.precision) or point.compiled
