"""What the benchmark phase times: one point (a strategy at a precision, eager or compiled, in its
own environment) on each of an analysis' shape groups. The parent keeps a Subject per group: what
its rounds are pooled under, how its answer is judged against the float64 references, which
matrices each round visits. The point's worker process gets a Work, a picklable recipe it builds
its inputs and context from (bench.worker): per-matrix ops and a PCA differ only here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from harness.base.executors import LazyExecutor, process_pool
from harness.bench.budget import Allocation
from harness.compute import chunks as chunk_tasks
from harness.compute.pca import gram_errors, scoped_grams
from harness.compute.references import References, checked
from harness.data.layout import AdapterLayout
from harness.data.workload import MatrixRef, ShapeGroup, Source, chunks
from harness.linalg.compiling import CompileLog
from harness.linalg.device import Backend
from harness.linalg.precision import storage_dtype
from harness.machine.measurements import Item
from harness.plan.model import Step, Timed
from harness.record.verification import Verification
from harness.specs.sections import PcaAnalysis
from harness.strategies.base import ExecContext, OpRequest, OpResult, Strategy
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


def rotating(items: Sequence[Any], per_call: int, r: int) -> list[Any]:
    """The `per_call` items round r visits: the sample in turn, wrapping around."""
    start = (r * per_call) % len(items)
    return [items[(start + i) % len(items)] for i in range(per_call)]


@dataclass(frozen=True)
class Context:
    """What a worker builds its ExecContext from: the plan's, for one point."""

    backend: Backend
    precision: str  # the arithmetic
    compiled: bool
    workers: int  # a fan-out strategy's local pool
    threads_per_worker: int
    seed: int

    def build(self) -> tuple[ExecContext, LazyExecutor]:
        pool = LazyExecutor(lambda: process_pool(self.workers, self.threads_per_worker, (chunk_tasks.__name__,)),
                            "starting a timing pool")
        ctx = ExecContext(dtype=storage_dtype(self.precision), backend=self.backend, workers=self.workers,
                          seed=self.seed, executor=pool, precision=self.precision,
                          compiled=CompileLog() if self.compiled else None)
        return ctx, pool


class _Target:
    """What a worker times, built from its Work: `prepare(part, r)` is group `part`'s call on
    round r's inputs."""

    def __init__(self, work: MatrixWork | PcaWork) -> None:
        self.strategy: Any = STRATEGIES[work.strategy]
        self.source = work.source
        self.ctx, self._pool = work.context.build()
        self.backend = work.context.backend

    def warm(self) -> None:
        self.strategy.warm(self.backend, self.source)  # no timed call imports torch or compiles a kernel
        if self.strategy.fans_out:
            self.ctx.executor()  # started now: a pool's start-up is never inside a timed call

    def notes(self) -> dict[str, Any]:
        log = self.ctx.compiled
        return {} if log is None else {"compile_s": log.seconds, "compile_note": log.describe()}

    def close(self) -> None:
        self._pool.close()


@dataclass(frozen=True)
class MatrixWork:
    """A per-matrix op's point: each group's sample, the matrices a call takes, its batch size."""

    label: str
    strategy: str
    op: OpRequest
    groups: tuple[tuple[tuple[MatrixRef, ...], int, int], ...]  # (sample, per call, batch size) per group
    source: Source
    context: Context

    def build(self) -> MatrixTarget:
        return MatrixTarget(self)


class MatrixTarget(_Target):
    def __init__(self, work: MatrixWork) -> None:
        super().__init__(work)
        self.work = work

    def prepare(self, part: int, r: int) -> Callable[[], object]:
        sample, per_call, batch = self.work.groups[part]
        batches = load_batches(self.strategy, self.source, rotating(sample, per_call, r), batch, self.ctx.dtype)
        return partial(compute_batches, self.strategy, self.work.op, batches, self.ctx)


@dataclass(frozen=True)
class PcaWork:
    """A PCA's point: round r times one position's Gram, loading included (streaming the deltas
    once is what dual_gram is about), from the source itself, never from the run's factor memo."""

    label: str
    strategy: str
    layout: AdapterLayout
    visited: int  # the first positions the rounds rotate through
    source: Source
    context: Context
    memory_budget: int

    def build(self) -> PcaTarget:
        return PcaTarget(self)


class PcaTarget(_Target):
    def __init__(self, work: PcaWork) -> None:
        super().__init__(work)
        self.work = work

    def prepare(self, part: int, r: int) -> Callable[[], object]:
        w = self.work
        return partial(self.strategy.grams, self.source, position(w.layout, w.visited, r), self.ctx, w.memory_budget)


def position(layout: AdapterLayout, visited: int, r: int) -> AdapterLayout:
    """The one position round r visits."""
    return layout.at(int(rotating(list(range(visited)), 1, r)[0]))


@dataclass
class Subject:
    """One timed point on one group, as the parent sees it: its allocation, what its rounds are
    pooled under, the work a round does (flops and bytes per matrix), how its answer on round r
    is judged, and the ids of the matrices round r visits."""

    step: Step
    timed: Timed
    part: int  # its group's index in the point's Work
    allocation: Allocation
    item: Item
    arithmetic: str
    total: int  # matrices (positions) of the group in the workload
    flops: float  # per matrix (position)
    bytes: float
    judge: Callable[[object, int], Verification]
    ids: Callable[[int], list[str]]
    checks: dict[tuple[str, ...], Verification] = field(default_factory=dict)
    fans_out: bool = False  # its strategy spreads a call over a process pool
    costs_by_rank: bool = True  # its work grows with the LoRA rank: the wisdom keys it by rank (Strategy.costs_by_rank)

    @property
    def group(self) -> str:
        return self.allocation.group

    @property
    def name(self) -> str:
        """The strategy, or its point ("torch@bfloat16") where the analysis times several."""
        return self.timed.label


def matrix_subjects(step: Step, timed: Timed, groups: dict[str, ShapeGroup], source: Source,
                    references: References, context: Context, items: list[Item]) -> tuple[list[Subject], MatrixWork]:
    """The point's subjects, one per allocated group, and the Work its worker builds."""
    strategy = STRATEGIES[timed.strategy]
    assert isinstance(strategy, Strategy)
    op = OpRequest(step.op, step.k)
    subjects, parts = [], []
    for i, (a, item) in enumerate(zip(timed.allocations, items)):
        group = groups[a.group]
        sample = sample_refs(group, a.sample)
        parts.append((sample, a.matrices, timed.batch_sizes[a.group]))

        def refs(r: int, sample: tuple[MatrixRef, ...] = sample, a: Allocation = a) -> list[MatrixRef]:
            return rotating(sample, a.matrices, r)

        def judge(result: object, r: int, refs: Callable[[int], list[MatrixRef]] = refs) -> Verification:
            assert isinstance(result, OpResult)
            return checked(timed.label, result, source, refs(r), references, step.tolerance)

        itemsize = storage_dtype(context.precision).itemsize
        work = strategy.work(op, group, itemsize)
        subjects.append(Subject(step, timed, i, a, item, context.precision, len(group), work.flops, work.bytes,
                                judge, lambda r, refs=refs: [ref.id for ref in refs(r)],  # type: ignore[misc]
                                fans_out=strategy.fans_out, costs_by_rank=strategy.costs_by_rank(op, group, itemsize)))
    return subjects, MatrixWork(timed.label, timed.strategy, op, tuple(parts), source, context)


def pca_subjects(step: Step, analysis: PcaAnalysis, timed: Timed, layout: AdapterLayout, source: Source,
                 references: References, context: Context, memory_budget: int,
                 items: list[Item]) -> tuple[list[Subject], PcaWork]:
    """A PCA point's one subject (its positions) and the Work its worker builds."""
    strategy = STRATEGIES[timed.strategy]
    assert isinstance(strategy, GramStrategy)
    a = timed.allocations[0]
    visited = min(a.sample, len(layout.positions))

    def judge(result: object, r: int) -> Verification:
        assert isinstance(result, np.ndarray)
        one = position(layout, visited, r)
        refs = scoped_grams(references.grams(one), one, analysis.scope)
        gram_error, eig_error = gram_errors(scoped_grams(result, one, analysis.scope), refs,
                                            analysis.components, analysis.center)
        return Verification.judged(timed.label, one.n, step.tolerance, max(gram_error, eig_error))

    work = strategy.work(layout, storage_dtype(context.precision).itemsize)
    count = len(layout.positions)
    subject = Subject(step, timed, 0, a, items[0], context.precision, count, work.flops / count, work.bytes / count,
                      judge, lambda r: [p.label for p in position(layout, visited, r).positions])
    return [subject], PcaWork(timed.label, timed.strategy, layout, visited, source, context, memory_budget)
