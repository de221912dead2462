"""compile(spec, workload, machine) -> Plan, in passes that each build their objects once:
candidates per analysis, their modelled estimates put on the footing of this machine's measurements
(plan.calibration) and a choice per analysis, what each timed item wants, the budget shared across
them, then the steps and the plan. Nothing is mutated after it is built."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from harness.bench.budget import POSITIONS, Allocation, ItemKey, rounds_note
from harness.base.units import plural
from harness.bench.conditions import load_average
from harness.bench.threads import default_threads, loaded_threads
from harness.data.layout import AdapterLayout
from harness.data.workload import Workload
from harness.linalg.device import cuda_missing_reason, planning_for
from harness.machine.cluster import LOCAL_CLUSTER, ClusterInfo, local_cluster
from harness.machine.info import MachineInfo
from harness.machine.picks import Pick
from harness.machine.wisdom import Wisdom
from harness.plan.benchmark import reference_seconds, share_budget, want
from harness.plan.calibration import Calibration, calibrated, calibration
from harness.plan.candidates import Costing, evaluate, evaluate_gram
from harness.plan.choice import choose
from harness.plan.model import MAX_SLOWDOWN, BenchPlan, Candidate, GroupInfo, Plan, PlanError, Step, Timed
from harness.plan.overheads import overheads
from harness.plan.spread import position_tasks, spread, task_count
from harness.plan.variants import default_precision, env_points, points, tf32_problems
from harness.specs.sections import Analysis, PcaAnalysis, Spec
from harness.strategies.base import OpRequest
from harness.strategies.registry import BASELINES, STRATEGIES


@dataclass(frozen=True)
class Choice:
    """One analysis after the first pass: its op, every candidate, the chosen one and why, and
    the strategies to time with their roles, by the groups (or PCA positions) they are timed on."""

    analysis: Analysis
    op: OpRequest
    candidates: list[Candidate]  # where the full analysis runs: the choice is made among these
    timing: list[Candidate]  # on this machine, where the benchmark phase times: the same where no cluster runs the work
    chosen: Candidate
    reason: str
    roles: dict[str, str]  # strategy (or variant) label -> "baseline", "compare" or "chosen"
    sizes: dict[str, int]  # group label (pca: POSITIONS) -> how many matrices (positions)
    pick: Pick | None  # the `auto` pick to keep in this machine's wisdom; None: named, or the work runs elsewhere

    def named(self) -> list[Candidate]:
        """The candidates of the strategies to time, in the order of their roles."""
        by_name = {c.label: c for c in self.timing}
        return [by_name[name] for name in self.roles]

    def timed(self) -> list[Candidate]:
        return [c for c in self.named() if c.available]


def _layout(spec: Spec, workload: Workload) -> AdapterLayout | None:
    """The adapters' layout, built once, when a PCA or a pairwise feature needs it."""
    if any(isinstance(a, PcaAnalysis) or a.features for a in spec.analysis):
        return AdapterLayout.from_workload(workload)
    return None


def _candidates(analysis: Analysis, op: OpRequest, spec: Spec, workload: Workload, layout: AdapterLayout | None,
                costing: Costing) -> list[Candidate]:
    serving = [s for s in STRATEGIES.values() if op.op in s.ops]
    if isinstance(analysis, PcaAnalysis):
        assert layout is not None
        return [evaluate_gram(s, layout, workload, costing, spec, analysis.tolerance, p)  # type: ignore[arg-type]
                for s in serving for p in points(s.name, analysis, spec)]
    groups = workload.groups()
    return [evaluate(s, op, workload, groups, costing, spec, analysis.tolerance, p)  # type: ignore[arg-type]
            for s in serving for p in points(s.name, analysis, spec)]


@dataclass(frozen=True)
class Evaluated:
    """One analysis' candidates as costed, before the machine's calibration and the choice."""

    op: OpRequest
    sizes: dict[str, int]  # group label (pca: POSITIONS) -> how many matrices (positions)
    candidates: list[Candidate]


def _evaluate(i: int, analysis: Analysis, spec: Spec, workload: Workload, layout: AdapterLayout | None,
              costing: Costing) -> Evaluated:
    """Pass 1, for one analysis: its candidates where the work runs; ValueError names a k or a
    components the workload cannot have, with the analysis' key."""
    op = OpRequest(analysis.op, getattr(analysis, "k", None))
    if isinstance(analysis, PcaAnalysis):
        assert layout is not None
        if analysis.components > (most := layout.n - analysis.center):  # centring spends one: the n-th is empty
            has = f"{most} a PCA of {plural(layout.n, 'adapter')} has (centred: one fewer than the adapters)" if analysis.center \
                else f"{plural(most, 'adapter')} of the workload"
            raise ValueError(f"analysis[{i}].components: {analysis.components} exceeds the {has}")
        op = OpRequest("pca", analysis.components)
        sizes = {POSITIONS: len(layout.positions)}
    else:
        sizes = {g.label: len(g) for g in workload.groups()}
        if op.k is not None and (small := [g for g in workload.groups() if op.k > min(g.shape)]):  # the k's fault
            raise ValueError(f"analysis[{i}].k: {op.k} exceeds min(m, n) of the {small[0].label} group (at most "
                             f"{min(small[0].shape)} there)")
    with _planning_for(costing):
        return Evaluated(op, sizes, _candidates(analysis, op, spec, workload, layout, costing))


def pick_key(op: OpRequest, sizes: dict[str, int], spec: Spec) -> str:
    """What an `auto` pick is kept under in the wisdom: the problem (op, k, each group and its
    count), the device and dtype asked; not the threads, which a busy machine's load moves."""
    k = "" if op.k is None else f" k={op.k}"
    groups = ", ".join(f"{label} x{count}" for label, count in sorted(sizes.items()))
    return f"{op.op}{k} on {groups} ({spec.execution.dtype}, device {spec.execution.device})"


def _choose(
    i: int, analysis: Analysis, found: Evaluated, scale: Calibration, spec: Spec,
    workload: Workload, layout: AdapterLayout | None, timing: Costing | None, picks: Wisdom | None,
) -> Choice:
    """Pass 1, continued: one analysis' modelled estimates scaled by the machine's measurements
    (`scale`, plan.calibration), the choice among them (an `auto` one keeping the previous pick
    `picks` holds unless another is clearly faster), the timed ones on this machine (`timing`, where
    that is another); ValueError names the problem with the analysis' key."""
    op, sizes = found.op, found.sizes
    candidates = [calibrated(c, sizes, scale.factors) for c in found.candidates]
    key = pick_key(op, sizes, spec)
    keeps = picks if analysis.strategy == "auto" else None  # the wisdom an `auto` pick is kept in
    try:
        chosen, reason = choose(analysis.strategy, candidates, op.op, workload, analysis.tolerance, scale.error,
                                None if keeps is None else keeps.picked(key))
    except ValueError as exc:
        raise ValueError(f"analysis[{i}].strategy: {exc}") from None
    timed = candidates if timing is None else _candidates(analysis, op, spec, workload, layout, timing)
    roles = _roles(analysis, spec, op, chosen)
    own = env_points(analysis, timed, {c.strategy for c in timed if roles.get(c.label) in ("baseline", "compare")})
    roles.update((c.label, "compare") for c in own)
    if roles[chosen.label] == "compare":  # named in the compare list too: the pick is what a reader looks for
        roles[chosen.label] = "chosen"
    return Choice(analysis, op, candidates + own, timed + own, chosen, reason, roles, sizes,
                  None if keeps is None else Pick(key=key, label=chosen.label))


def _choices(spec: Spec, workload: Workload, layout: AdapterLayout | None, costing: Costing,
             local: Costing) -> tuple[list[Choice], list[str]]:
    """Pass 1 over every analysis: the choices, and every problem in the analyses' order.
    The machine's measured/modelled factors are taken over every analysis' candidates at once."""
    found: dict[int, Evaluated] = {}
    problems: dict[int, str] = {}
    for i, analysis in enumerate(spec.analysis):
        try:
            found[i] = _evaluate(i, analysis, spec, workload, layout, costing)
        except ValueError as exc:
            problems[i] = str(exc)
    every = [c for f in found.values() for c in f.candidates]
    scale = calibration(every)
    choices = []
    for i, f in found.items():
        try:
            choices.append(_choose(i, spec.analysis[i], f, scale, spec, workload, layout,
                                   None if costing is local else local, costing.wisdom if costing.here else None))
        except ValueError as exc:
            problems[i] = str(exc)
    return choices, [problems[i] for i in sorted(problems)]


def _planning_for(costing: Costing) -> AbstractContextManager[None]:
    """Devices resolved for the machine the costing is for: a Dask worker's, from its probe."""
    if costing.here:
        return nullcontext()
    return planning_for(costing.machine.torch_missing, costing.machine.cuda_device is not None)


def _roles(analysis: Analysis, spec: Spec, op: OpRequest, chosen: Candidate) -> dict[str, str]:
    """The labels to time: the baseline at the run's precision, every point of each compared
    strategy, and the chosen point."""
    base = analysis.baseline or BASELINES[op.op]
    at = default_precision(analysis, spec)
    roles = {next(p.label for p in points(base, analysis, spec) if p.precision == at and not p.compiled): "baseline"}
    for name in analysis.compare:
        for p in points(name, analysis, spec):
            roles.setdefault(p.label, "compare")
    roles.setdefault(chosen.label, "chosen")
    return roles


def _wants(choices: list[Choice], spec: Spec, workers: int) -> dict[ItemKey, Allocation]:
    """Pass 2: what every timed (analysis, strategy, group) wants when the budget allows."""
    return {(c.analysis.label, t.label, group): want(spec, t, group, size, workers, c.roles[t.label] == "baseline")
            for c in choices for t in c.timed() for group, size in c.sizes.items()}


def _spread(c: Choice, threads: int | None) -> tuple[dict[str, int], int | None]:
    """The chosen candidate's batch sizes and the task count, split for `threads` worker threads
    (plan.spread); as planned, and no task count, for work in this process (`threads` None)."""
    if threads is None:
        return c.chosen.batch_sizes, None
    if c.op.op == "pca":
        return c.chosen.batch_sizes, position_tasks(c.sizes[POSITIONS], threads)
    batches = spread(c.chosen.batch_sizes, c.sizes, c.chosen.per_matrix_s, threads)
    return batches, task_count(batches, c.sizes)


def _step(c: Choice, wants: dict[ItemKey, Allocation], allocations: dict[ItemKey, Allocation],
          threads: int | None) -> Step:
    """Pass 4: the step, its timed strategies carrying their share of the budget, its work split
    for `threads` worker threads (None: in this process)."""
    timed = []
    for t in c.timed():
        keys = [k for k in wants if k[:2] == (c.analysis.label, t.label)]
        mine = [allocations[k] for k in keys]
        timed.append(Timed(**t.model_dump(include={"strategy", "precision", "compiled", "env", "variant"}),
                           role=c.roles[t.label], device=t.device or "",
                           batch_sizes=t.batch_sizes, allocations=mine, cut=rounds_note(mine)))
    a = c.analysis
    batches, tasks = _spread(c, threads)
    return Step(
        analysis=a.label, op=c.op.op, k=c.op.k, tolerance=a.tolerance, precision=c.chosen.precision,
        features=a.features,
        energy_tau=a.energy_tau, strategy=c.chosen.strategy, device=c.chosen.device or "",
        batch_sizes=batches, tasks=tasks, reads_ahead=c.chosen.reads_ahead, estimate_s=c.chosen.estimate_s or 0.0,
        reason=c.reason, timed=timed, skipped=[x for x in c.named() if not x.available],
        candidates=c.candidates, pick=c.pick,
    )


def _threads(asked: int | None, cores: int) -> tuple[int, str]:
    """The threads of every in-process timing and why: `benchmark.threads` up to the cores this
    process may use (1024 on 2 cores was recorded as 1024 while BLAS ran on 2), else what other
    processes leave free."""
    if asked is None:
        return default_threads(cores)
    if asked > cores:
        return cores, f"benchmark.threads = {asked}, capped at the machine's {cores} cores"
    return asked, "benchmark.threads"


def _work_costing(spec: Spec, local: Costing, cluster: ClusterInfo | None,
                  wisdom_of: Callable[[MachineInfo], Wisdom] | None) -> Costing:
    """What the full analyses are costed with: this machine's, or a Dask worker's (the one with the
    fewest cores of those that will run the work: the GPU workers when `auto` or `cuda` finds
    some) with its wisdom, each task bounded by the cluster's memory."""
    if cluster is None:
        return local
    if cluster.scheduler == LOCAL_CLUSTER:
        return local._replace(cluster=cluster)
    gpu = spec.execution.device in ("auto", "cuda") and cluster.serving("cuda")
    worker = cluster.machine("cuda" if gpu else "cpu")
    assert worker is not None  # a cluster without a usable worker is refused when joined
    # a chunk on a worker gets a serial executor: fan-out strategies run one-wide there
    return Costing(worker, wisdom_of(worker) if wisdom_of else None, local.threads, 1, cluster, here=False)


def _task_threads(spec: Spec, cluster: ClusterInfo | None, workers: int, device: str) -> int | None:
    """The worker threads a step's tasks share: the cluster's that serve its device, the pool's
    processes, or None for work in this process."""
    if spec.execution.executor == "local":
        return None
    if cluster is not None:
        return cluster.threads("cuda" if device == "cuda" else "cpu")
    return workers


def _cuda_problem(spec: Spec, costing: Costing) -> str | None:
    """Why `device = "cuda"` cannot be honoured where the work runs, or None."""
    if spec.execution.device != "cuda":
        return None
    with _planning_for(costing):
        reason = cuda_missing_reason()
    where = "" if costing.here else " on the dask workers"
    return None if reason is None else f"execution.device: 'cuda' requested but {reason}{where}"


def compile_plan(spec: Spec, workload: Workload, machine: MachineInfo, wisdom: Wisdom | None = None,
                 cluster: ClusterInfo | None = None, wisdom_of: Callable[[MachineInfo], Wisdom] | None = None) -> Plan:
    """The plan; `wisdom` (this machine's measurements) replaces the cost model where it covers a
    candidate. With a Dask executor, the full analyses are planned for `cluster`'s workers (the
    LocalCluster the run will start, when it names none) and the wisdom kept of its machine; the
    benchmark phase is planned for this machine, where it times."""
    b = spec.benchmark
    threads = _threads(b.threads, machine.cores)
    # the cores other processes took when the plan was made slow the whole run, not only the timings
    # (or those the minute's load leaves, when the plan's probe caught a quiet moment)
    free = min(threads[0], loaded_threads(machine.cores, load_average()))
    slowdown = 1.0 if b.threads is not None else min(MAX_SLOWDOWN, machine.cores / free)
    workers = spec.execution.workers or machine.cores
    local = Costing(machine, wisdom, threads[0], workers)
    if spec.execution.executor == "dask" and cluster is None:
        cluster = local_cluster(machine, workers)
    costing = _work_costing(spec, local, cluster, wisdom_of)
    problems = [p for p in [_cuda_problem(spec, costing)] if p] + tf32_problems(spec)  # every refusal at once
    if problems and spec.execution.device == "cuda":  # the analyses' own problems are still found, as on "auto"
        spec = spec.model_copy(update={"execution": spec.execution.model_copy(update={"device": "auto"})})
    layout = _layout(spec, workload)
    choices, refused = _choices(spec, workload, layout, costing, local)
    problems += refused
    if problems:
        raise PlanError(problems)
    wants = _wants(choices, spec, workers)
    pca = {c.analysis.label for c in choices if c.op.op == "pca"}
    allocations, references_s, floor = share_budget(
        b.budget, wants, pca, lambda per_group, positions: reference_seconds(workload, machine, layout, per_group, positions))
    steps = [_step(c, wants, allocations, _task_threads(spec, cluster, workers, c.chosen.device or "")) for c in choices]
    groups = workload.groups()
    return Plan(
        bench=BenchPlan(budget_s=b.budget, floor_s=floor, target=b.target, warmup=b.warmup, sample=b.sample,
                        threads=threads[0], threads_reason=threads[1], references_s=references_s,
                        estimate_s=max(references_s + sum(a.estimate_s for a in allocations.values()), floor)),
        overheads=overheads(spec, workload, machine, steps, workers, layout),
        skipped_inputs=workload.source.skipped(),
        slowdown=slowdown,
        device_requested=spec.execution.device,
        dtype=spec.execution.dtype,
        memory_budget=int(spec.execution.memory_budget),
        workers=workers,
        executor=spec.execution.executor,
        threads_per_worker=spec.execution.threads_per_worker,
        dask_address=spec.execution.dask_address,
        cluster=cluster,
        sample=spec.benchmark.sample,
        n_matrices=len(workload),
        groups=[GroupInfo(label=g.label, shape=g.shape, rank=g.rank, count=len(g)) for g in groups],
        steps=steps,
    )
