"""compile(spec, workload, machine) -> Plan, in passes that each build their objects once:
candidates and a choice per analysis, what each timed item wants, the budget shared across
them, then the steps and the plan. Nothing is mutated after it is built."""

from __future__ import annotations

from dataclasses import dataclass

from harness.bench.budget import POSITIONS, Allocation, ItemKey, rounds_note
from harness.bench.threads import default_threads
from harness.data.layout import AdapterLayout
from harness.data.workload import Workload
from harness.linalg.device import cuda_missing_reason
from harness.machine.info import MachineInfo
from harness.machine.wisdom import Wisdom
from harness.plan.benchmark import reference_seconds, share_budget, want
from harness.plan.candidates import Costing, evaluate, evaluate_gram
from harness.plan.choice import choose
from harness.plan.model import BenchPlan, Candidate, GroupInfo, Plan, PlanError, Step, Timed
from harness.plan.overheads import overheads
from harness.plan.variants import default_precision, points, tf32_problems
from harness.spec import Analysis, PcaAnalysis, Spec
from harness.strategies.base import OpRequest
from harness.strategies.registry import BASELINES, STRATEGIES


@dataclass(frozen=True)
class Choice:
    """One analysis after the first pass: its op, every candidate, the chosen one and why, and
    the strategies to time with their roles, by the groups (or PCA positions) they are timed on."""

    analysis: Analysis
    op: OpRequest
    candidates: list[Candidate]
    chosen: Candidate
    reason: str
    roles: dict[str, str]  # strategy (or variant) label -> "baseline", "compare" or "chosen"
    sizes: dict[str, int]  # group label (pca: POSITIONS) -> how many matrices (positions)

    def named(self) -> list[Candidate]:
        """The candidates of the strategies to time, in the order of their roles."""
        by_name = {c.label: c for c in self.candidates}
        return [by_name[name] for name in self.roles]

    def timed(self) -> list[Candidate]:
        return [c for c in self.named() if c.available]


def _layout(spec: Spec, workload: Workload) -> AdapterLayout | None:
    """The adapters' layout, built once, when a PCA or a pairwise feature needs it."""
    if any(isinstance(a, PcaAnalysis) or a.features for a in spec.analysis):
        return AdapterLayout.from_workload(workload)
    return None


def _choose(
    i: int, analysis: Analysis, spec: Spec, workload: Workload, layout: AdapterLayout | None, costing: Costing,
) -> Choice:
    """Pass 1 for one analysis; ValueError names the problem with the analysis' key."""
    op = OpRequest(analysis.op, getattr(analysis, "k", None))
    serving = [s for s in STRATEGIES.values() if op.op in s.ops]
    tolerance = analysis.tolerance
    if isinstance(analysis, PcaAnalysis):
        assert layout is not None
        if analysis.components > layout.n:
            raise ValueError(f"analysis[{i}].components: {analysis.components} exceeds the "
                             f"{layout.n} adapters of the workload")
        op = OpRequest("pca", analysis.components)
        candidates = [evaluate_gram(s, layout, workload, costing, spec, tolerance, p)  # type: ignore[arg-type]
                      for s in serving for p in points(s.name, analysis, spec)]
        sizes = {POSITIONS: len(layout.positions)}
    else:
        groups = workload.groups()
        candidates = [evaluate(s, op, workload, groups, costing, spec, tolerance, p)  # type: ignore[arg-type]
                      for s in serving for p in points(s.name, analysis, spec)]
        sizes = {g.label: len(g) for g in groups}
    try:
        chosen, reason = choose(analysis.strategy, candidates, op.op, workload, tolerance)
    except ValueError as exc:
        raise ValueError(f"analysis[{i}].strategy: {exc}") from None
    return Choice(analysis, op, candidates, chosen, reason, _roles(analysis, spec, op, chosen), sizes)


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


def _step(c: Choice, wants: dict[ItemKey, Allocation], allocations: dict[ItemKey, Allocation]) -> Step:
    """Pass 4: the step, its timed strategies carrying their share of the budget."""
    timed = []
    for t in c.timed():
        keys = [k for k in wants if k[:2] == (c.analysis.label, t.label)]
        mine = [allocations[k] for k in keys]
        timed.append(Timed(**t.model_dump(include={"strategy", "precision", "compiled", "variant"}),
                           role=c.roles[t.label], device=t.device or "",
                           batch_sizes=t.batch_sizes, allocations=mine, cut=rounds_note(mine)))
    a = c.analysis
    return Step(
        analysis=a.label, op=c.op.op, k=c.op.k, tolerance=a.tolerance, precision=c.chosen.precision,
        features=a.features,
        energy_tau=a.energy_tau, strategy=c.chosen.strategy, device=c.chosen.device or "",
        batch_sizes=c.chosen.batch_sizes, reads_ahead=c.chosen.reads_ahead, estimate_s=c.chosen.estimate_s or 0.0,
        reason=c.reason, timed=timed, skipped=[x for x in c.named() if not x.available],
        candidates=c.candidates,
    )


def compile_plan(spec: Spec, workload: Workload, machine: MachineInfo, wisdom: Wisdom | None = None) -> Plan:
    """The plan; `wisdom` (this machine's measurements) replaces the cost model where it covers a candidate."""
    problems = tf32_problems(spec)  # every refusal at once, as `validate` lists them
    if spec.execution.device == "cuda" and (reason := cuda_missing_reason()) is not None:
        problems.insert(0, f"execution.device: 'cuda' requested but {reason}")
        # the analyses' own problems (k, components, strategies) are still found, as on this machine
        spec = spec.model_copy(update={"execution": spec.execution.model_copy(update={"device": "auto"})})
    b = spec.benchmark
    threads = (b.threads, "[benchmark] threads") if b.threads else default_threads(machine.cores)
    workers = spec.execution.workers or machine.cores
    costing = Costing(machine, wisdom, threads[0], workers)
    layout = _layout(spec, workload)
    choices = []
    for i, analysis in enumerate(spec.analysis):
        try:
            choices.append(_choose(i, analysis, spec, workload, layout, costing))
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise PlanError(problems)
    wants = _wants(choices, spec, workers)
    pca = {c.analysis.label for c in choices if c.op.op == "pca"}
    allocations, references_s, floor = share_budget(
        b.budget, wants, pca, lambda per_group, positions: reference_seconds(workload, machine, layout, per_group, positions))
    steps = [_step(c, wants, allocations) for c in choices]
    groups = workload.groups()
    return Plan(
        bench=BenchPlan(budget_s=b.budget, floor_s=floor, precision=b.precision, warmup=b.warmup, sample=b.sample,
                        threads=threads[0], threads_reason=threads[1], references_s=references_s,
                        estimate_s=max(references_s + sum(a.estimate_s for a in allocations.values()), floor)),
        overheads=overheads(spec, workload, machine, steps, workers, layout),
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
