"""What the benchmark phase times: one strategy on one shape group (a Subject), with the call a
round times, the matrices each round visits, and how its answer is judged against the float64
references. A per-matrix op and a PCA differ only here; the rounds treat both alike."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from harness.bench.budget import Allocation
from harness.compute.pca import gram_errors, scoped_grams
from harness.compute.references import References, checked
from harness.data.layout import AdapterLayout
from harness.data.workload import MatrixRef, ShapeGroup, Source, chunks
from harness.machine.measurements import Item
from harness.plan.model import Step, Timed
from harness.record.verification import Verification
from harness.spec import PcaAnalysis
from harness.strategies.base import ExecContext, OpRequest, OpResult, Strategy, StrategyBase
from harness.strategies.gram import GramStrategy
from harness.strategies.numpy_lapack import stack_results
from harness.strategies.registry import STRATEGIES


def sample_refs(group: ShapeGroup, sample: int) -> tuple[MatrixRef, ...]:
    """`sample` matrices spread evenly over the group (all of them for 0): the matrices the
    rounds rotate through, the same for every strategy, so they share references."""
    if sample == 0 or sample >= len(group):
        return group.refs
    picks = np.unique(np.linspace(0, len(group) - 1, sample).round().astype(int))
    return tuple(group.refs[i] for i in picks)


def load_batches(
    strategy: Strategy, source: Source, refs: Sequence[MatrixRef], batch_size: int, dtype: np.dtype
) -> list[object]:
    """The strategy's inputs for `refs` in planned chunks; loading is never timed."""
    return [strategy.load(source, chunk, dtype) for chunk in chunks(refs, batch_size)]


def compute_batches(strategy: Strategy, op: OpRequest, batches: list[object], ctx: ExecContext) -> OpResult:
    """The timed unit of work (here and in benchmarks/): every batch, results stacked."""
    return stack_results([strategy.compute(op, b, ctx) for b in batches])


@dataclass
class Subject:
    """One timed strategy on one group. `prepare(r)` loads what round r times (untimed) and returns
    the call; `judge(result, r)` checks that call's answer; `ids(r)` names its matrices."""

    step: Step
    timed: Timed
    allocation: Allocation
    strategy: StrategyBase
    ctx: ExecContext
    item: Item  # what its rounds are pooled under
    total: int  # matrices (positions) of the group in the workload
    flops: float  # per matrix (position)
    bytes: float
    prepare: Callable[[int], Callable[[], object]]
    judge: Callable[[object, int], Verification]
    ids: Callable[[int], list[str]]
    warm: Callable[[], None]  # what its first call would import or compile, on its source
    checks: dict[tuple[str, ...], Verification] = field(default_factory=dict)

    @property
    def group(self) -> str:
        return self.allocation.group

    @property
    def name(self) -> str:
        """The strategy, or its point ("torch@bfloat16") where the analysis times several."""
        return self.timed.label


def _rotating(items: Sequence[object], per_call: int, r: int) -> list[object]:
    """The `per_call` items round r visits: the sample in turn, wrapping around."""
    start = (r * per_call) % len(items)
    return [items[(start + i) % len(items)] for i in range(per_call)]


def matrix_subject(
    step: Step, timed: Timed, a: Allocation, group: ShapeGroup, source: Source, references: References,
    ctx: ExecContext, item: Item,
) -> Subject:
    strategy = STRATEGIES[timed.strategy]
    assert isinstance(strategy, Strategy)
    op = OpRequest(step.op, step.k)
    sample = sample_refs(group, a.sample)

    def refs(r: int) -> list[MatrixRef]:
        return _rotating(sample, a.matrices, r)  # type: ignore[return-value]

    def prepare(r: int) -> Callable[[], object]:
        batches = load_batches(strategy, source, refs(r), timed.batch_sizes[a.group], ctx.dtype)
        return partial(compute_batches, strategy, op, batches, ctx)

    def judge(result: object, r: int) -> Verification:
        assert isinstance(result, OpResult)
        return checked(timed.label, result, source, refs(r), references, step.tolerance)

    work = strategy.work(op, group, ctx.dtype.itemsize)
    return Subject(step, timed, a, strategy, ctx, item, len(group), work.flops, work.bytes, prepare, judge,
                   lambda r: [ref.id for ref in refs(r)], partial(strategy.warm, ctx.backend, source))


def pca_subject(
    step: Step, analysis: PcaAnalysis, timed: Timed, a: Allocation, layout: AdapterLayout, source: Source,
    references: References, ctx: ExecContext, memory_budget: int, item: Item,
) -> Subject:
    """Round r times one position's Gram, loading included (streaming the deltas once is what
    dual_gram is about); the rounds rotate through the first `sample` positions."""
    strategy = STRATEGIES[timed.strategy]
    assert isinstance(strategy, GramStrategy)
    visited = list(range(min(a.sample, len(layout.positions))))

    def sub(r: int) -> AdapterLayout:
        return layout.at(int(_rotating(visited, 1, r)[0]))  # type: ignore[call-overload]

    def prepare(r: int) -> Callable[[], object]:
        return partial(strategy.grams, source, sub(r), ctx, memory_budget)

    def judge(result: object, r: int) -> Verification:
        assert isinstance(result, np.ndarray)
        one = sub(r)
        refs = scoped_grams(references.grams(one), one, analysis.scope)
        gram_error, eig_error = gram_errors(scoped_grams(result, one, analysis.scope), refs,
                                            analysis.components, analysis.center)
        return Verification.judged(timed.label, one.n, step.tolerance, max(gram_error, eig_error))

    work = strategy.work(layout, ctx.dtype.itemsize)
    count = len(layout.positions)
    return Subject(step, timed, a, strategy, ctx, item, count, work.flops / count, work.bytes / count, prepare, judge,
                   lambda r: [p.label for p in sub(r).positions], partial(strategy.warm, ctx.backend, source))
