"""A candidate per (analysis, strategy): can it run here, with what batches, at what estimated
cost, measured (this machine's wisdom) or modelled."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from harness.bench.budget import POSITIONS
from harness.data.layout import AdapterLayout
from harness.data.workload import ShapeGroup, Workload
from harness.linalg.device import Backend, torch_module
from harness.machine.cluster import ClusterInfo
from harness.machine.info import MachineInfo
from harness.machine.wisdom import MODELLED, Estimate, Wisdom, widest, width
from harness.plan.model import Candidate, Variant
from harness.plan.variants import itemsize, measured_miss, refusal
from harness.specs.sections import Spec
from harness.strategies import cost
from harness.strategies.base import OpRequest, Strategy, StrategyBase
from harness.strategies.gram import GramStrategy
from harness.base.units import format_bytes

CUDA_HEADROOM = 0.8  # leave room for the allocator's fragmentation and LAPACK workspaces
# Matrices per chunk at most, whatever the budget allows: the budget (bytes_per_matrix) is what
# bounds a chunk; this cap only keeps progress and what a kill loses finite. A whole group per call
# is what the batched kernels want (the factored Gram route: one call per (shape, rank) group).
MAX_BATCH = 4096


def memory_budget(requested: int, backend: Backend) -> int:
    """The spec's budget, capped on CUDA by what the device has free right now."""
    if backend == "cuda":
        torch = torch_module()
        assert torch is not None
        free, _total = torch.cuda.mem_get_info()
        return min(requested, int(free * CUDA_HEADROOM))
    return requested


def _cannot_run(strategy: StrategyBase, workload: Workload, spec: Spec, point: Variant, tolerance: float,
                costing: Costing, op: str) -> Candidate | None:
    """The candidate that says why `strategy` cannot run here at all, or not at `point`'s
    precision (not offered, out of the tolerance's reach, or measured to miss it), or None."""
    reason = strategy.unavailable(workload, spec.execution.device)
    if reason is None:
        backend = strategy.backend(spec.execution.device)
        reason = refusal(strategy, point, backend, tolerance) or measured_miss(
            point, costing.error(point, op, backend), tolerance)
    if reason is None:
        return None
    return Candidate(**point.model_dump(), device=None, estimate_s=None, reason=reason)


def _too_loose(strategy: StrategyBase, op: OpRequest, groups: list[ShapeGroup], tolerance: float,
               point: Variant) -> Candidate | None:
    """The candidate that says why `strategy` is left out where its error bound (relative to
    sigma_1, whatever the spectrum) exceeds the analysis' tolerance on some group, or None: what
    it would fail in verification is never planned, by `auto` or by name."""
    for group in groups:
        bound = strategy.error_bound(op, group.shape, point.precision)
        if bound is not None and bound > tolerance:
            at = "" if point.precision in ("float32", "float64") else f" at {point.precision}"
            reason = (f"its error bound{at}, {bound:.1e} of sigma_1 on the {group.label} group, exceeds the "
                      f"tolerance {tolerance:g}: it would fail verification (loosen analysis.tolerance "
                      "or choose another strategy)")
            return Candidate(**point.model_dump(), device=None, estimate_s=None, reason=reason)
    return None


def _resources(strategy: StrategyBase, spec: Spec, point: Variant, costing: Costing) -> tuple[Backend, int, int]:
    """Where the strategy would run, the memory budget there, and the item size of its inputs."""
    backend = strategy.backend(spec.execution.device)
    return backend, costing.budget(int(spec.execution.memory_budget), backend), itemsize(point)


class Costing(NamedTuple):
    """What the planner estimates with: the machine, its wisdom, and the threads timings run on;
    for the work a Dask cluster runs, a worker's machine and the cluster whose memory bounds a task."""

    machine: MachineInfo
    wisdom: Wisdom | None
    threads: int
    workers: int
    cluster: ClusterInfo | None = None
    here: bool = True  # `machine` is this process's: its CUDA memory is asked of torch now

    def budget(self, requested: int, backend: Backend) -> int:
        """The spec's budget, capped on CUDA by the device's free memory, and on a cluster by
        what one task may hold on its tightest worker (ClusterInfo.task_memory)."""
        if backend == "cuda" and not self.here:
            free = self.machine.cuda_memory_free
            budget = min(requested, int(free * CUDA_HEADROOM)) if free else requested
        else:
            budget = memory_budget(requested, backend)
        cap = self.cluster.task_memory(backend) if self.cluster is not None else None
        return min(budget, cap) if cap else budget

    def seconds(self, strategy: StrategyBase, op: str, backend: Backend, point: Variant, work: cost.Work,
                shape: tuple[int, int], model: float, count: int = 1) -> Estimate:
        """Measured seconds where this machine's wisdom covers the work, else the model's; a
        fan-out strategy's measurements count at the width it will run `count` matrices at."""
        wide = width(strategy.fans_out, self.workers, count)
        dtype = str(np.dtype(f"f{itemsize(point)}"))
        if self.wisdom is not None and (found := self.wisdom.estimate(
                strategy.name, op, backend, dtype, self.threads, work.flops, shape, wide, point.precision,
                point.compiled)):
            return found
        if self.wisdom is None:
            return Estimate(model, f"{MODELLED}: no measurement")
        return Estimate(model, self.wisdom.unmeasured(strategy.name, op, backend, dtype, self.threads,
                                                      point.precision, point.compiled))

    def error(self, point: Variant, op: str, backend: Backend) -> float | None:
        """The worst error this machine's wisdom measured for the point, or None."""
        return None if self.wisdom is None else self.wisdom.error(point.strategy, op, backend, point.precision,
                                                                   point.compiled)


def reads_ahead(spec: Spec, workload: Workload) -> bool:
    """Whether full analyses may read the next chunk while computing this one: in this process
    (a worker loads its own chunk), from a source whose loads are I/O (Source.reads_ahead)."""
    return spec.execution.read_ahead and spec.execution.executor == "local" and workload.source.reads_ahead


def evaluate(
    strategy: Strategy,
    op: OpRequest,
    workload: Workload,
    groups: list[ShapeGroup],
    costing: Costing,
    spec: Spec,
    tolerance: float,
    point: Variant,
) -> Candidate:
    """Can `strategy` run this op here at `point`'s precision, within `tolerance`, with what
    batches, at what estimated cost."""
    if (cannot := _cannot_run(strategy, workload, spec, point, tolerance, costing, op.op)) is not None:
        return cannot
    if (loose := _too_loose(strategy, op, groups, tolerance, point)) is not None:
        return loose
    backend, budget, size = _resources(strategy, spec, point, costing)
    found = dict(**point.model_dump(), device=backend, error=costing.error(point, op.op, backend))
    batches: dict[str, int] = {}
    per_matrix: dict[str, float] = {}
    models: dict[str, float] = {}
    basis: dict[str, str] = {}
    found_s: list[Estimate] = []
    needs = {g.label: strategy.bytes_per_matrix(op, g, size) for g in groups}
    inputs = {g.label: workload.source.load_bytes(g.refs[:1], size) for g in groups}  # one matrix's
    ahead = reads_ahead(spec, workload) and all(needs[g] + inputs[g] <= budget for g in needs)
    for group in groups:
        per = needs[group.label]
        if per > budget:
            reason = (
                f"one {group.label} matrix needs {format_bytes(per)}, over the memory budget "
                f"of {format_bytes(budget)}"
            )
            return Candidate(**found, estimate_s=None, reason=reason)
        if ahead:  # the next chunk's inputs beside this chunk's
            per += inputs[group.label]
        batches[group.label] = max(1, min(len(group), budget // per, MAX_BATCH))
        model = models[group.label] = strategy.seconds_per_matrix(op, group, costing.machine, backend)
        found_s.append(costing.seconds(strategy, op.op, backend, point, strategy.work(op, group, size), group.shape,
                                       model, len(group)))
        per_matrix[group.label], basis[group.label] = found_s[-1].seconds, found_s[-1].basis
    total = sum(per_matrix[g.label] * len(g) for g in groups)
    return Candidate(**found, estimate_s=total, batch_sizes=batches, per_matrix_s=per_matrix, model_s=models,
                     basis=basis, measured={g.label: e.measured for g, e in zip(groups, found_s) if e.measured is not None},
                     busy=max((e.busy for e in found_s if e.busy is not None), default=None),
                     spread=widest(e.spread for e in found_s), reads_ahead=ahead)


def evaluate_gram(
    strategy: GramStrategy, layout: AdapterLayout, workload: Workload, costing: Costing, spec: Spec,
    tolerance: float, point: Variant,
) -> Candidate:
    """Can `strategy` build the adapters' Gram here at `point`'s precision, at what cost; batch =
    dense block columns."""
    if (cannot := _cannot_run(strategy, workload, spec, point, tolerance, costing, "pca")) is not None:
        return cannot
    backend, budget, size = _resources(strategy, spec, point, costing)
    found = dict(**point.model_dump(), device=backend, error=costing.error(point, "pca", backend))
    dtype = np.dtype(f"f{size}")
    need = strategy.bytes_needed(layout, workload.source, dtype)
    if need > budget:
        reason = f"needs {format_bytes(need)} for one position, over the memory budget of {format_bytes(budget)}"
        return Candidate(**found, estimate_s=None, reason=reason)
    count = len(layout.positions)
    work = strategy.work(layout, size)
    model = strategy.seconds(layout, costing.machine, backend) / count
    estimate = costing.seconds(strategy, "pca", backend, point, cost.Work(work.flops / count, work.bytes / count),
                               position_shape(layout), model)
    return Candidate(
        **found,
        estimate_s=estimate.seconds * count,
        batch_sizes=strategy.batch_sizes(layout, workload.source, dtype, budget),
        per_matrix_s={POSITIONS: estimate.seconds},
        model_s={POSITIONS: model},
        basis={POSITIONS: estimate.basis},
        measured={} if estimate.measured is None else {POSITIONS: estimate.measured},
        busy=estimate.busy,
        spread=estimate.spread,
    )


def position_shape(layout: AdapterLayout) -> tuple[int, int]:
    """How wisdom files a PCA position: (adapters, mean parameters per position)."""
    return layout.n, layout.d // len(layout.positions)


