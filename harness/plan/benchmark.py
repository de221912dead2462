"""The benchmark phase as planned: what each timed (analysis, strategy, group) wants, the
budget shared across them less the float64 references' estimate, and what the budget cut."""

from __future__ import annotations

from collections.abc import Callable

from harness.bench.budget import Allocation, ItemKey, Want, allocate
from harness.data.layout import AdapterLayout
from harness.data.workload import Workload
from harness.machine.info import MachineInfo
from harness.plan.model import Candidate
from harness.spec import Spec
from harness.strategies import cost
from harness.strategies.gram import DualGramStrategy, FactoredGramStrategy
from harness.strategies.registry import STRATEGIES


def want(spec: Spec, candidate: Candidate, group: str, size: int, workers: int) -> Want:
    """What a strategy gets on a group when the budget allows; a fan-out strategy is timed on
    one matrix per worker at least, or its fan-out would not be measured."""
    b = spec.benchmark
    most = size if b.sample == 0 else min(b.sample, size)
    least = min(workers, size) if STRATEGIES[candidate.strategy].fans_out else 1
    return Want(group=group, per_matrix_s=candidate.per_matrix_s[group], matrices=max(most, least),
                min_matrices=least, warmup=b.warmup, repeats=b.repeats)


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
    budget_s: float, wants: dict[ItemKey, Want], pca: set[str], references: Callable[[dict[str, int], int], float],
) -> tuple[dict[ItemKey, Allocation], float]:
    """The budget, less the references' estimate, shared across every timed item; returns the
    allocations and the references' estimate for what they sample. References are shared by
    matrix (and position), so each group needs the most matrices any item of it times."""

    def estimate(counts: dict[ItemKey, int]) -> float:
        per_group: dict[str, int] = {}
        positions = 0
        for (analysis, _strategy, group), n in counts.items():
            if analysis in pca:
                positions = max(positions, n)
            else:
                per_group[group] = max(per_group.get(group, 0), n)
        return references(per_group, positions)

    allocations = allocate(wants, max(budget_s - estimate({k: w.matrices for k, w in wants.items()}), 0.0))
    return allocations, estimate({k: a.matrices for k, a in allocations.items()})
