"""compile(spec, workload, machine) -> Plan: a strategy, device and batch size per analysis, and why."""

from __future__ import annotations

import sys
from typing import NamedTuple

import numpy as np
from pydantic import BaseModel, computed_field

from harness.bench.budget import POSITIONS, Allocation, ItemKey, Want, allocate, cut_note
from harness.bench.references import reference_seconds
from harness.bench.threads import default_threads
from harness.data.layout import AdapterLayout
from harness.data.workload import ShapeGroup, Workload
from harness.linalg.device import Backend, cuda_missing_reason, torch_module
from harness.machine import MachineInfo
from harness.features import PAIRWISE_FEATURES
from harness.spec import PcaAnalysis, Spec
from harness.strategies import cost
from harness.strategies.base import OpRequest, Strategy, StrategyBase
from harness.strategies.gram import GramStrategy
from harness.strategies.registry import BASELINES, STRATEGIES
from harness.units import format_bytes, format_seconds
from harness.wisdom import MODELLED, Wisdom, width

CUDA_HEADROOM = 0.8  # leave room for the allocator's fragmentation and LAPACK workspaces
# Matrices per chunk at most, whatever the budget allows: batched kernels gain nothing past a few
# hundred, while a chunk of 1,064 LoRA deltas held ~0.6 GB of transient QR factors, and smaller
# chunks mean finer progress and less to redo after a kill.
MAX_BATCH = 256


class GroupInfo(BaseModel):
    label: str
    shape: tuple[int, int]
    rank: int | None
    count: int


class Candidate(BaseModel):
    strategy: str
    device: str | None
    estimate_s: float | None
    batch_sizes: dict[str, int] = {}
    per_matrix_s: dict[str, float] = {}  # estimate per shape group (pca: per position)
    basis: dict[str, str] = {}  # per group: measured on this machine (wisdom), or modelled
    reason: str | None = None  # why it cannot run, when it cannot
    reads_ahead: bool = False  # the next chunk is read while this one is computed (batches leave room)

    @property
    def available(self) -> bool:
        return self.reason is None


class Timed(BaseModel):
    strategy: str
    role: str  # "baseline", "compare" or "chosen"
    device: str
    batch_sizes: dict[str, int]
    allocations: list[Allocation] = []  # its share of the benchmark budget, per shape group
    cut: str | None = None  # what the budget cut, and why

    @computed_field  # type: ignore[prop-decorator]
    @property
    def estimate_s(self) -> float:
        """Seconds its allocations are estimated to take."""
        return sum(a.estimate_s for a in self.allocations)


class Step(BaseModel):
    analysis: str
    op: str
    k: int | None
    tolerance: float
    features: list[str] = []
    energy_tau: float = 0.9
    strategy: str
    device: str
    batch_sizes: dict[str, int]
    reads_ahead: bool = False  # the next chunk is read while this one is computed
    estimate_s: float
    reason: str
    timed: list[Timed]
    skipped: list[Candidate]
    candidates: list[Candidate]


class BenchPlan(BaseModel):
    """The benchmark phase as planned: its budget, what a strategy gets when the budget allows,
    the threads of every in-process timing, and the estimated seconds of it all."""

    budget_s: float
    warmup: int
    repeats: int
    sample: int
    threads: int
    threads_reason: str = ""  # the spec's, or the cores other processes left free
    references_s: float  # float64 references of the sampled matrices, once per run
    estimate_s: float  # every allocation, and the references


class Plan(BaseModel):
    device_requested: str
    dtype: str
    memory_budget: int
    workers: int
    executor: str = "local"
    threads_per_worker: int = 1
    dask_address: str | None = None
    sample: int
    n_matrices: int
    groups: list[GroupInfo]
    steps: list[Step]
    bench: BenchPlan | None = None  # None only in records of schema version 1
    # estimated seconds of the work around the analyses: loading every matrix once, features,
    # importing torch, starting workers
    overheads: dict[str, float] = {}
    skipped_inputs: list[str] = []  # input tensors not analysed, `file: tensor (why)` each

    @computed_field  # type: ignore[prop-decorator]
    @property
    def estimate_s(self) -> float:
        """The whole run: full analyses, the work around them, and the benchmark phase."""
        bench = self.bench.estimate_s if self.bench is not None else 0.0
        return sum(s.estimate_s for s in self.steps) + sum(self.overheads.values()) + bench


class PlanError(Exception):
    """The spec asks for something this machine or workload cannot do; one line per problem."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def memory_budget(requested: int, backend: Backend) -> int:
    """The spec's budget, capped on CUDA by what the device has free right now."""
    if backend == "cuda":
        torch = torch_module()
        assert torch is not None
        free, _total = torch.cuda.mem_get_info()
        return min(requested, int(free * CUDA_HEADROOM))
    return requested


def _cannot_run(strategy: StrategyBase, workload: Workload, spec: Spec) -> Candidate | None:
    """The candidate that says why `strategy` cannot run here at all, or None."""
    if (reason := strategy.unavailable(workload, spec.execution.device)) is None:
        return None
    return Candidate(strategy=strategy.name, device=None, estimate_s=None, reason=reason)


def _resources(strategy: StrategyBase, spec: Spec) -> tuple[Backend, int, int]:
    """Where the strategy would run, the memory budget there, and the item size."""
    backend = strategy.backend(spec.execution.device)
    budget = memory_budget(int(spec.execution.memory_budget), backend)
    return backend, budget, np.dtype(spec.execution.dtype).itemsize


class Costing(NamedTuple):
    """What the planner estimates with: the machine, its wisdom, and the threads timings run on."""

    machine: MachineInfo
    wisdom: Wisdom | None
    threads: int
    workers: int

    def seconds(self, strategy: StrategyBase, op: str, backend: Backend, dtype: str, work: cost.Work,
                shape: tuple[int, int], model: float, count: int = 1) -> tuple[float, str]:
        """Measured seconds where this machine's wisdom covers the work, else the model's; a
        fan-out strategy's measurements count at the width it will run `count` matrices at."""
        wide = width(strategy.fans_out, self.workers, count)
        if self.wisdom is not None and (
                found := self.wisdom.estimate(strategy.name, op, backend, dtype, self.threads, work.flops, shape, wide)):
            return found
        return model, MODELLED


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
) -> Candidate:
    """Can `strategy` run this op here, with what batches, at what estimated cost."""
    if (cannot := _cannot_run(strategy, workload, spec)) is not None:
        return cannot
    backend, budget, itemsize = _resources(strategy, spec)
    batches: dict[str, int] = {}
    per_matrix: dict[str, float] = {}
    basis: dict[str, str] = {}
    needs = {g.label: strategy.bytes_per_matrix(op, g, itemsize) for g in groups}
    inputs = {g.label: workload.source.load_bytes(g.refs[:1], itemsize) for g in groups}  # one matrix's
    ahead = reads_ahead(spec, workload) and all(needs[g] + inputs[g] <= budget for g in needs)
    for group in groups:
        if op.k is not None and op.k > min(group.shape):
            reason = f"k={op.k} exceeds min(m, n) of the {group.label} group"
            return Candidate(strategy=strategy.name, device=backend, estimate_s=None, reason=reason)
        per = needs[group.label]
        if per > budget:
            reason = (
                f"one {group.label} matrix needs {format_bytes(per)}, over the memory budget "
                f"of {format_bytes(budget)}"
            )
            return Candidate(strategy=strategy.name, device=backend, estimate_s=None, reason=reason)
        if ahead:  # the next chunk's inputs beside this chunk's
            per += inputs[group.label]
        batches[group.label] = max(1, min(len(group), budget // per, MAX_BATCH))
        model = strategy.seconds_per_matrix(op, group, costing.machine, backend)
        per_matrix[group.label], basis[group.label] = costing.seconds(
            strategy, op.op, backend, spec.execution.dtype, strategy.work(op, group, itemsize), group.shape, model,
            len(group))
    total = sum(per_matrix[g.label] * len(g) for g in groups)
    return Candidate(strategy=strategy.name, device=backend, estimate_s=total, batch_sizes=batches,
                     per_matrix_s=per_matrix, basis=basis, reads_ahead=ahead)


def evaluate_gram(
    strategy: GramStrategy, layout: AdapterLayout, workload: Workload, costing: Costing, spec: Spec
) -> Candidate:
    """Can `strategy` build the adapters' Gram here, at what cost; batch = dense block columns."""
    if (cannot := _cannot_run(strategy, workload, spec)) is not None:
        return cannot
    backend, budget, itemsize = _resources(strategy, spec)
    dtype = np.dtype(spec.execution.dtype)
    need = strategy.bytes_needed(layout, workload.source, dtype)
    if need > budget:
        reason = f"needs {format_bytes(need)} for one position, over the memory budget of {format_bytes(budget)}"
        return Candidate(strategy=strategy.name, device=backend, estimate_s=None, reason=reason)
    count = len(layout.positions)
    work = strategy.work(layout, itemsize)
    per_position, basis = costing.seconds(
        strategy, "pca", backend, spec.execution.dtype, cost.Work(work.flops / count, work.bytes / count),
        position_shape(layout), strategy.seconds(layout, costing.machine, backend) / count)
    return Candidate(
        strategy=strategy.name,
        device=backend,
        estimate_s=per_position * count,
        batch_sizes=strategy.batch_sizes(layout, workload.source, dtype, budget),
        per_matrix_s={POSITIONS: per_position},
        basis={POSITIONS: basis},
    )


def position_shape(layout: AdapterLayout) -> tuple[int, int]:
    """How wisdom files a PCA position: (adapters, mean parameters per position)."""
    return layout.n, layout.d // len(layout.positions)


def pca_note(workload: Workload) -> str:
    """Why the workload's form decides the PCA strategy, for the plan's reason."""
    if workload.has_factors:
        return "LoRA factors: factored_gram takes the Gram from B.T B and A A.T, no dense delta"
    return "dense deltas: dual_gram streams each (layer, module) once into a float64 Gram"


def _measured(c: Candidate) -> str:
    """A mark on estimates from this machine's measurements, for the plan's reason."""
    measured = sum(b != MODELLED for b in c.basis.values())
    return "" if not measured else ", measured" if measured == len(c.basis) else ", partly measured"


def _auto(candidates: list[Candidate]) -> tuple[Candidate, str]:
    exact = [c for c in candidates if c.available and not STRATEGIES[c.strategy].approximate]
    if not exact:
        raise LookupError("; ".join(f"{c.strategy}: {c.reason}" for c in candidates))
    best = min(exact, key=lambda c: c.estimate_s or 0.0)
    notes = []
    for c in sorted(candidates, key=lambda c: (c.estimate_s is None, c.estimate_s or 0.0)):
        if c is best:
            continue
        if not c.available:
            notes.append(f"{c.strategy} not possible: {c.reason}")
        elif STRATEGIES[c.strategy].approximate:
            notes.append(f"{c.strategy} left out: randomized, so its accuracy depends on the "
                         "spectrum's decay (name it to use it)")
        else:
            notes.append(f"{c.strategy} est. {format_seconds(c.estimate_s)}{_measured(c)}")
    reason = f"auto: fastest exact strategy (est. {format_seconds(best.estimate_s)}{_measured(best)})"
    return best, reason + ("; " + "; ".join(notes) if notes else "")


def _want(spec: Spec, candidate: Candidate, group: str, size: int, workers: int) -> Want:
    """What a strategy gets on a group when the budget allows; a fan-out strategy is timed on
    one matrix per worker at least, or its fan-out would not be measured."""
    b = spec.benchmark
    most = size if b.sample == 0 else min(b.sample, size)
    least = min(workers, size) if STRATEGIES[candidate.strategy].fans_out else 1
    return Want(group=group, per_matrix_s=candidate.per_matrix_s[group], matrices=max(most, least),
                min_matrices=least, warmup=b.warmup, repeats=b.repeats)


def _plan_benchmark(
    spec: Spec, workload: Workload, machine: MachineInfo, steps: list[Step], wants: dict[ItemKey, Want],
    threads: tuple[int, str],
) -> BenchPlan:
    """Share the budget, less the references' estimate, across every timed strategy and group,
    and note on each strategy what was cut."""
    b = spec.benchmark
    pca = {s.analysis for s in steps if s.op == "pca"}

    def references(counts: dict[ItemKey, int]) -> float:
        """References are shared by matrix (and position), so each group needs the most
        matrices any item of it times."""
        per_group: dict[str, int] = {}
        positions = 0
        for (analysis, _strategy, group), n in counts.items():
            if analysis in pca:
                positions = max(positions, n)
            else:
                per_group[group] = max(per_group.get(group, 0), n)
        return reference_seconds(workload, machine, per_group, positions)

    allocations = allocate(wants, max(b.budget - references({k: w.matrices for k, w in wants.items()}), 0.0))
    for step in steps:
        for t in step.timed:
            keys = [k for k in wants if k[:2] == (step.analysis, t.strategy)]
            t.allocations = [allocations[k] for k in keys]
            t.cut = cut_note(t.allocations, [wants[k] for k in keys])
    refs = references({k: a.matrices for k, a in allocations.items()})
    return BenchPlan(budget_s=b.budget, warmup=b.warmup, repeats=b.repeats, sample=b.sample,
                     threads=threads[0], threads_reason=threads[1], references_s=refs,
                     estimate_s=refs + sum(a.estimate_s for a in allocations.values()))


def backends(steps: list[Step]) -> set[str]:
    """Every backend the analyses and their timings use."""
    return {s.device for s in steps} | {t.device for s in steps for t in s.timed}


def _overheads(spec: Spec, workload: Workload, machine: MachineInfo, steps: list[Step], workers: int) -> dict[str, float]:
    """Estimated seconds of what the analyses' own estimates leave out; zeros are left out."""
    features = 0.0
    layout = AdapterLayout.from_workload(workload) if any(s.features for s in steps) else None
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
    overheads = {
        "loading": loading,
        "features": features,
        "torch import": cost.TORCH_IMPORT_S if used & {"cpu", "cuda"} and "torch" not in sys.modules else 0.0,
        "worker start": cost.WORKER_START_S * workers if fan_out else 0.0,
    }
    return {name: seconds for name, seconds in overheads.items() if seconds > 0}


def compile_plan(spec: Spec, workload: Workload, machine: MachineInfo, wisdom: Wisdom | None = None) -> Plan:
    """The plan; `wisdom` (this machine's measurements) replaces the cost model where it covers a candidate."""
    if spec.execution.device == "cuda" and (reason := cuda_missing_reason()) is not None:
        raise PlanError([f"execution.device: 'cuda' requested but {reason}"])
    b = spec.benchmark
    threads = (b.threads, "[benchmark] threads") if b.threads else default_threads(machine.cores)
    workers = spec.execution.workers or machine.cores
    costing = Costing(machine, wisdom, threads[0], workers)
    groups = workload.groups()
    steps: list[Step] = []
    problems: list[str] = []
    wants: dict[ItemKey, Want] = {}
    for i, analysis in enumerate(spec.analysis):
        op = OpRequest(analysis.op, getattr(analysis, "k", None))
        serving = [s for s in STRATEGIES.values() if op.op in s.ops]
        if isinstance(analysis, PcaAnalysis):
            layout = AdapterLayout.from_workload(workload)
            if analysis.components > layout.n:
                problems.append(f"analysis[{i}].components: {analysis.components} exceeds the "
                                f"{layout.n} adapters of the workload")
                continue
            op = OpRequest("pca", analysis.components)
            candidates = [evaluate_gram(s, layout, workload, costing, spec) for s in serving]  # type: ignore[arg-type]
        else:
            candidates = [evaluate(s, op, workload, groups, costing, spec) for s in serving]  # type: ignore[arg-type]
        by_name = {c.strategy: c for c in candidates}
        if analysis.strategy == "auto":
            try:
                chosen, reason = _auto(candidates)
            except LookupError as exc:
                problems.append(f"analysis[{i}].strategy: no strategy can run {op.op} here: {exc}")
                continue
        else:
            chosen = by_name[analysis.strategy]
            if not chosen.available:
                problems.append(f"analysis[{i}].strategy: {chosen.strategy} cannot run: {chosen.reason}")
                continue
            reason = f"named in the spec (est. {format_seconds(chosen.estimate_s)})"
        if op.op == "pca":
            reason = f"{reason}; {pca_note(workload)}"
        baseline = analysis.baseline or BASELINES[op.op]
        roles = {baseline: "baseline"}
        for name in [*analysis.compare, chosen.strategy]:
            roles.setdefault(name, "compare" if name in analysis.compare else "chosen")
        timed, skipped = [], []
        sizes = ({POSITIONS: len(layout.positions)} if isinstance(analysis, PcaAnalysis)
                 else {g.label: len(g) for g in groups})
        for name, role in roles.items():
            c = by_name[name]
            if c.available:
                timed.append(Timed(strategy=name, role=role, device=c.device or "",
                                   batch_sizes=c.batch_sizes))
                for group, size in sizes.items():
                    wants[(analysis.label, name, group)] = _want(spec, c, group, size, workers)
            else:
                skipped.append(c)
        steps.append(
            Step(
                analysis=analysis.label,
                op=op.op,
                k=op.k,
                tolerance=analysis.tolerance,
                features=analysis.features,
                energy_tau=analysis.energy_tau,
                strategy=chosen.strategy,
                device=chosen.device or "",
                batch_sizes=chosen.batch_sizes,
                reads_ahead=chosen.reads_ahead,
                estimate_s=chosen.estimate_s or 0.0,
                reason=reason,
                timed=timed,
                skipped=skipped,
                candidates=candidates,
            )
        )
    if problems:
        raise PlanError(problems)
    return Plan(
        bench=_plan_benchmark(spec, workload, machine, steps, wants, threads),
        overheads=_overheads(spec, workload, machine, steps, workers),
        skipped_inputs=workload.source.skipped(),
        device_requested=spec.execution.device,
        dtype=spec.execution.dtype,
        memory_budget=int(spec.execution.memory_budget),
        workers=workers,
        executor=spec.execution.executor,
        threads_per_worker=spec.execution.threads_per_worker,
        dask_address=spec.execution.dask_address,
        sample=spec.benchmark.sample,
        n_matrices=len(workload),
        groups=[GroupInfo(label=g.label, shape=g.shape, rank=g.rank, count=len(g)) for g in groups],
        steps=steps,
    )

