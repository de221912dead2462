"""Estimated seconds of the work around the analyses that their own estimates leave out:
loading, features, importing torch, starting workers (the run's, and the benchmark's timing workers)."""

from __future__ import annotations

import sys

from harness.bench.budget import PROCESSES
from harness.data.layout import AdapterLayout
from harness.data.workload import Workload
from harness.linalg.features import PAIRWISE_FEATURES
from harness.machine.info import MachineInfo
from harness.plan.model import Step, backends
from harness.specs.sections import Spec
from harness.strategies import cost
from harness.strategies.registry import STRATEGIES


def overheads(
    spec: Spec, workload: Workload, machine: MachineInfo, steps: list[Step], workers: int, layout: AdapterLayout | None,
) -> dict[str, float]:
    """Estimated seconds of what the analyses' own estimates leave out; zeros are left out."""
    features = 0.0
    for step in steps:
        scalar = [f for f in step.features if f not in PAIRWISE_FEATURES]
        pairwise = [f for f in step.features if f in PAIRWISE_FEATURES]
        features += cost.SCALAR_ROW_S * len(workload) * len(scalar)
        if pairwise and layout is not None:
            pairs = layout.n * (layout.n - 1) // 2 * len(layout.positions)
            features += cost.PAIR_ROW_S * pairs * len(pairwise)
        if "delta_cosine" in pairwise and layout is not None:
            flops = sum((layout.n * p.rank) ** 2 * sum(p.shape) if p.rank else layout.n**2 * p.size
                        for p in layout.positions)
            features += flops / (cost.FLOAT64_GEMM_FLOPS_PER_CORE * machine.cores)
    used = backends(steps)
    fan_out = spec.execution.executor != "local" or any(STRATEGIES[t.strategy].fans_out for s in steps for t in s.timed)
    loading = workload.source.load_seconds(workload.refs)
    if overlapped := [s.estimate_s for s in steps if s.reads_ahead]:  # read while an analysis computes
        loading = max(0.0, loading - max(overlapped))
    found = {
        "loading": loading,
        "features": features,
        "torch import": cost.TORCH_IMPORT_S if used & {"cpu", "cuda"} and "torch" not in sys.modules else 0.0,
        "worker start": cost.WORKER_START_S * workers if fan_out else 0.0,
        "timing workers": sum(timing_one_off_s(s) for s in steps),
    }
    return {name: seconds for name, seconds in found.items() if seconds > 0}


def timing_one_off_s(step: Step, worker_s: float = cost.TIMING_WORKER_S) -> float:
    """Estimated seconds of the benchmark's one-off work for a step, beside its timed blocks (walk 10:
    left out, the run's ETA read `~0:00:01` during `geometry: starting workers`): points_one_off_s of
    every point it times."""
    return points_one_off_s(len(step.timed), worker_s)


def points_one_off_s(points: int, worker_s: float = cost.TIMING_WORKER_S) -> float:
    """The one-off work of `points` timed points: a worker per point in each of PROCESSES processes
    started, its answers verified, `worker_s` each (the run's ETA passes what its own workers took)."""
    return worker_s * PROCESSES * points
