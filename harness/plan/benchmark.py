"""The benchmark phase as planned: what each timed (analysis, strategy, group) wants, the
budget in rounds less the float64 references' estimate, and the floor."""

from __future__ import annotations

from collections.abc import Callable, Collection

from harness.bench.budget import WHOLE_SAMPLE_S, Allocation, ItemKey, allocate, calls_for, floor_s
from harness.data.layout import AdapterLayout
from harness.data.workload import Workload
from harness.machine.info import MachineInfo
from harness.plan.model import BenchPlan, Candidate, Plan
from harness.specs.sections import Spec
from harness.strategies import cost
from harness.strategies.gram import DualGramStrategy, FactoredGramStrategy
from harness.strategies.registry import STRATEGIES


def want(spec: Spec, candidate: Candidate, group: str, size: int, workers: int, baseline: bool = False) -> Allocation:
    """One item: a round's call takes one matrix, one per worker for a fan-out strategy (or its
    fan-out would not be measured), or the whole sample when that is cheap (WHOLE_SAMPLE_S); the
    rounds rotate through `sample` matrices spread over the group, every strategy of a round on
    the same ones."""
    b = spec.benchmark
    sample = size if b.sample == 0 else min(b.sample, size)
    per_call = min(workers, size) if STRATEGIES[candidate.strategy].fans_out else 1
    if per_call == 1 and candidate.per_matrix_s[group] * sample <= WHOLE_SAMPLE_S:
        per_call = sample  # cheap: the whole sample in every round's call
    per_matrix = candidate.per_matrix_s[group]
    return Allocation(group=group, per_matrix_s=per_matrix, matrices=per_call, warmup=b.warmup,
                calls=calls_for(per_matrix * per_call, b.repeats), repeats=b.repeats, sample=max(sample, per_call),
                baseline=baseline)


def reference_seconds(
    workload: Workload, machine: MachineInfo, layout: AdapterLayout | None, per_group: dict[str, int], positions: int,
) -> float:
    """Estimated seconds of the float64 references of `per_group` matrices of each shape group
    and of the first `positions` positions of a PCA (whose `layout` is then given)."""
    total = 0.0
    rate = cost.cpu_flops_per_s(machine)
    for group in workload.groups():
        n = per_group.get(group.label, 0)
        if workload.has_factors:
            total += n * cost.factored_flops(group.shape, group.rank or min(group.shape)) / rate
        else:
            total += n * 2.0 * cost.svd_flops(group.shape, vectors=False) / rate  # float64: ~2x
    if positions and layout is not None:
        gram = FactoredGramStrategy() if workload.has_factors else DualGramStrategy()
        total += gram.seconds(layout.head(positions), machine, "numpy")
    return total


def share_budget(
    budget_s: float, wants: dict[ItemKey, Allocation], pca: set[str], references: Callable[[dict[str, int], int], float],
) -> tuple[dict[ItemKey, Allocation], float, float]:
    """The budget, less the references' estimate, in rounds; returns the allocations, the
    references' estimate and the floor. References are shared by matrix (and position): each
    group needs as many as the most distinct matrices any of its items' rounds visit."""
    per_group: dict[str, int] = {}
    positions = 0
    allocations = allocate(wants, budget_s)
    for (analysis, _strategy, group), a in allocations.items():
        visited = min(a.sample, a.matrices * (a.rounds + 1))
        if analysis in pca:
            positions = max(positions, visited)
        else:
            per_group[group] = max(per_group.get(group, 0), visited)
    refs = references(per_group, positions)
    return allocate(wants, budget_s - refs), refs, floor_s(wants) + refs


def timed_here(plan: Plan, kept: Collection[str]) -> BenchPlan:
    """The benchmark phase as this run times it: a resumed run takes over the analyses its stopped
    run finished (`kept`), whose floor and planned rounds are then not its own. Counted, a resumed
    run's clock read `bench 0.0/21 s floor` and ended at `12/21 s`, its limit left room for rounds
    the floor of the rest never had, and its Plan sentence said `planned 20.9 s` (walk 15)."""
    bench = plan.bench
    assert bench is not None, "a plan compiled by this harness has a benchmark plan"
    steps = [s for s in plan.steps if s.analysis in kept]
    floor = bench.floor_s - floor_s({(s.analysis, t.label, a.group): a for s in steps for t in s.timed
                                     for a in t.allocations})
    estimate = bench.estimate_s - sum(t.estimate_s for s in steps for t in s.timed)
    return bench.model_copy(update={"floor_s": max(floor, 0.0), "estimate_s": max(estimate, floor, 0.0)})
