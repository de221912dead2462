"""The benchmark phase of one analysis: every compared strategy timed on its share of the
budget, under the plan's thread counts, verified against the run's float64 references, and
cached per strategy (an unstable measurement keeps its reasons: a re-run that reuses it says so,
and `harness run --no-cache` measures again)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from harness.bench.budget import POSITIONS, Allocation, BudgetClock, cut_note, fit
from harness.bench.measure import Measurement, measure
from harness.compute.references import References, checked
from harness.bench.threads import pinned
from harness.store.keys import Keys
from harness.store.cache import ResultCache
from harness.store.entries import TimingEntry
from harness.data.layout import AdapterLayout
from harness.data.workload import DataError, MatrixRef, ShapeGroup, Source, Workload, chunks
from harness.compute.pca import gram_errors, scoped_grams
from harness.plan.model import Plan, Step, Timed
from harness.plan.candidates import position_shape
from harness.base.progress import Display, Phase
from harness.record.run_record import BenchRecord, GroupTiming, StrategyTiming, apply_speedups
from harness.spec import PcaAnalysis
from harness.strategies.base import ExecContext, OpRequest, OpResult, Strategy, StrategyBase
from harness.strategies.gram import GramStrategy
from harness.strategies.numpy_lapack import stack_results
from harness.strategies.registry import STRATEGIES
from harness.base.units import format_seconds, now
from harness.record.verification import Verification
from harness.compute.verify import combine
from harness.machine.wisdom import Observation, width

# One group of one strategy: its timing and its verdict, given the allocation, the seconds
# allowed and the phase to report progress to.
Item = Callable[[Timed, Allocation, float, Phase], tuple[GroupTiming, Verification]]


def sample_refs(group: ShapeGroup, sample: int) -> tuple[MatrixRef, ...]:
    """`sample` matrices spread evenly over the group (all of them for 0). A strategy given
    fewer takes the first ones, so strategies share matrices, and references."""
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


def summarise(strategy: str, role: str, device: str, groups: Sequence[GroupTiming]) -> StrategyTiming:
    """Per-matrix medians scaled to every matrix of the workload."""
    scale = [g.total / g.sampled for g in groups]
    return StrategyTiming(
        strategy=strategy,
        role=role,
        device=device,
        groups=list(groups),
        estimate_total_s=sum(g.measurement.median_s * s for g, s in zip(groups, scale)),
        iqr_total_s=sum(g.measurement.iqr_s * s for g, s in zip(groups, scale)),
        extrapolated=any(g.sampled < g.total for g in groups),
    )


def failure_reason(exc: BaseException) -> str:
    """One line for the record and the run table: the exception's type and first line."""
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return line if len(line) <= 200 else line[:199] + "…"


def _matrices(n: int, group: str) -> str:
    one, many = ("position", "positions") if group == POSITIONS else ("matrix", "matrices")
    return f"{n} {one if n == 1 else many}"


@dataclass
class BenchPhase:
    """The run's benchmark phase, one analysis at a time; one budget clock and one set of
    references for the whole run."""

    plan: Plan
    workload: Workload
    context: Callable[[str], ExecContext]
    display: Display
    cores: int
    cache: ResultCache | None = None
    keys: Keys | None = None
    source: str = "run"  # who measured, for the wisdom: "calibrate" or the experiment
    clock: BudgetClock = field(init=False)
    references: References = field(init=False)
    unstable: int = 0
    # what this phase teaches the machine's wisdom: every stable, verified measurement
    observations: list[Observation] = field(default_factory=list)
    shapes: dict[str, tuple[tuple[int, int], int | None]] = field(init=False)  # group -> shape, rank

    def __post_init__(self) -> None:
        assert self.plan.bench is not None, "a plan compiled by this harness has a benchmark plan"
        planned = {(s.analysis, t.strategy, a.group): a.estimate_s
                   for s in self.plan.steps for t in s.timed for a in t.allocations}
        self.clock = BudgetClock(self.plan.bench.budget_s, planned)
        self.references = References(self.workload.source, self.cache, self.keys,
                                     memory_budget=self.plan.memory_budget)
        self.shapes = {g.label: (g.shape, g.rank) for g in self.plan.groups}

    def record(self) -> BenchRecord:
        bench = self.plan.bench
        assert bench is not None
        r = self.references
        return BenchRecord(budget_s=bench.budget_s, spent_s=self.clock.spent_s, threads=bench.threads,
                           references_computed=r.computed, references_cached=r.cached,
                           references_s=r.seconds, unstable=self.unstable)

    def time_step(self, step: Step) -> tuple[list[StrategyTiming], list[Verification]]:
        """Every compared strategy of a per-matrix op, on the sample of every shape group."""
        op = OpRequest(step.op, step.k)
        groups = {g.label: g for g in self.workload.groups()}
        most: dict[str, int] = {}  # the most any strategy may time (a pool wants one per worker)
        for a in (a for t in step.timed for a in t.allocations):
            most[a.group] = max(most.get(a.group, 1), a.max_matrices)
        samples = {label: sample_refs(g, most.get(label, 1)) for label, g in groups.items()}

        def item(timed: Timed, a: Allocation, allowance: float, phase: Phase) -> tuple[GroupTiming, Verification]:
            strategy = STRATEGIES[timed.strategy]
            assert isinstance(strategy, Strategy)
            ctx = self.context(timed.device)
            refs = samples[a.group][: a.matrices]
            if strategy.fans_out:
                ctx.executor()  # started now: a pool's start-up is never inside a timed call
            phase.item(f"loading {_matrices(len(refs), a.group)}")
            batches = load_batches(strategy, self.workload.source, refs, timed.batch_sizes[a.group], ctx.dtype)
            measurement, result = self._measure(strategy, partial(compute_batches, strategy, op, batches, ctx),
                                                a, allowance, ctx, phase)
            del batches  # the float64 references and matrices below come after the timed inputs, not beside
            phase.item("verifying")
            check = checked(timed.strategy, result, self.workload.source, refs, self.references, step.tolerance)
            work = strategy.work(op, groups[a.group], ctx.dtype.itemsize)
            return GroupTiming(group=a.group, sampled=len(refs), total=len(groups[a.group]),
                               measurement=measurement, flops=work.flops, bytes=work.bytes), check

        ids = {label: [r.id for r in refs] for label, refs in samples.items()}
        return self._time(step, ids, item)

    def time_pca(self, step: Step, analysis: PcaAnalysis) -> tuple[list[StrategyTiming], list[Verification]]:
        """Every compared Gram strategy on the first positions of every adapter, loading
        included (streaming the deltas once is what dual_gram is about); scaled by positions."""
        layout = AdapterLayout.from_workload(self.workload)
        plan = self.plan
        self.shapes[POSITIONS] = (position_shape(layout), None)

        def item(timed: Timed, a: Allocation, allowance: float, phase: Phase) -> tuple[GroupTiming, Verification]:
            strategy = STRATEGIES[timed.strategy]
            assert isinstance(strategy, GramStrategy)
            ctx = self.context(timed.device)
            sub = layout.head(a.matrices)
            measurement, grams = self._measure(
                strategy, partial(strategy.grams, self.workload.source, sub, ctx, plan.memory_budget), a, allowance,
                ctx, phase)
            phase.item("verifying")
            refs = scoped_grams(self.references.grams(sub), sub, analysis.scope)
            gram_error, eig_error = gram_errors(scoped_grams(grams, sub, analysis.scope), refs,
                                                analysis.components, analysis.center)
            check = Verification.judged(timed.strategy, len(sub.positions) * sub.n, step.tolerance,
                                        max(gram_error, eig_error))
            work = strategy.work(sub, ctx.dtype.itemsize)
            return GroupTiming(group=POSITIONS, sampled=len(sub.positions), total=len(layout.positions),
                               measurement=measurement, flops=work.flops / len(sub.positions),
                               bytes=work.bytes / len(sub.positions)), check

        most = max((a.max_matrices for t in step.timed for a in t.allocations), default=1)
        return self._time(step, {POSITIONS: [p.label for p in layout.head(most).positions]}, item)

    def _learn(self, step: Step, timed: Timed, group: GroupTiming, check: Verification) -> None:
        """Keep a measurement for the wisdom unless it is unreliable: noisy, or of a wrong answer."""
        m = group.measurement
        if m.unstable or not check.passed or group.flops is None:
            return
        shape, rank = self.shapes[group.group]
        bench = self.plan.bench
        assert bench is not None
        self.observations.append(Observation(
            strategy=timed.strategy, op=step.op, k=step.k, shape=shape, rank=rank, dtype=self.plan.dtype,
            device=timed.device, threads=bench.threads,
            width=width(STRATEGIES[timed.strategy].fans_out, self.plan.workers, group.sampled),
            seconds=group.seconds_per_matrix, flops=group.flops,
            samples=len(m.samples_s), when=now(), source=self.source))

    def _measure(
        self, strategy: StrategyBase, fn: Callable[[], object], a: Allocation, allowance: float, ctx: ExecContext,
        phase: Phase,
    ) -> tuple[Measurement, object]:
        bench = self.plan.bench
        assert bench is not None
        what = _matrices(a.matrices, a.group)
        calls = a.warmup + a.repeats
        strategy.warm(ctx.backend)  # no timed call imports torch or compiles a kernel; pinning sees torch

        def on_call(call: str) -> None:
            if phase.done < calls:
                phase.advance()
            phase.item(f"{what}, {call}")

        with pinned(bench.threads):
            return measure(fn, warmup=a.warmup, repeats=a.repeats, backend=ctx.backend, cores=self.cores,
                           allowance_s=allowance, min_time_s=a.min_time_s, min_samples=a.min_samples,
                           on_call=on_call)

    def _reuse(self, step: Step, timed: Timed, key: str | None) -> TimingEntry | None:
        """The cached timing of `timed` under `key`, its share of the budget settled as spent."""
        hit = self.cache.get_model(key, TimingEntry) if self.cache is not None and key else None
        if hit is not None:
            hit.timing.role, hit.timing.cached = timed.role, True
            for a in timed.allocations:
                self.clock.done((step.analysis, timed.strategy, a.group), timed.strategy, 0.0, None)
        return hit

    def _keep(self, step: Step, timed: Timed, key: str | None, entry: TimingEntry) -> None:
        if self.cache is not None and key:
            self.cache.put_model(key, entry, f"{step.analysis}: timing of {timed.strategy} on {timed.device}")

    def _time(
        self, step: Step, sample_ids: dict[str, list[str]], item: Item
    ) -> tuple[list[StrategyTiming], list[Verification]]:
        bench = self.plan.bench
        assert bench is not None
        timings: list[StrategyTiming] = []
        checks: list[Verification] = []
        for timed in step.timed:
            key = None
            if self.cache is not None and self.keys is not None:
                key = self.keys.timing(step, timed, sample_ids, budget_s=bench.budget_s,
                                       threads=bench.threads, workers=self.plan.workers)
            if (hit := self._reuse(step, timed, key)) is not None:
                timings.append(hit.timing)
                checks.append(hit.verification)
                continue
            groups, group_checks, done = [], [], []
            failure: str | None = None  # why the strategy raised instead of answering
            for planned in timed.allocations:
                name = (step.analysis, timed.strategy, planned.group)
                if failure is not None:  # failed on an earlier group: not timed again
                    self.clock.done(name, timed.strategy, 0.0, None)
                    continue
                start = time.perf_counter()
                allowance = self.clock.allowance(name)
                want = planned.want(bench.warmup, bench.repeats, self.clock.correction(timed.strategy))
                a = fit(want, allowance)
                title = f"{step.analysis}: timing {timed.strategy} on {planned.group}"
                with self.display.phase(title, a.warmup + a.repeats) as phase:
                    try:
                        group, check = item(timed, a, allowance, phase)
                    except (MemoryError, DataError):
                        raise  # the machine or the input files are in trouble, not one strategy
                    except Exception as exc:  # one strategy failing must not cost the others
                        failure = f"{failure_reason(exc)} (on {planned.group})"
                        phase.summary = f"failed: {failure}"
                        self.clock.done(name, timed.strategy, time.perf_counter() - start, None)
                        continue
                    m = group.measurement
                    phase.summary = (f"{_matrices(group.sampled, a.group)}, {len(m.samples_s)} calls, median "
                                     f"{format_seconds(m.median_s)}" + (", UNSTABLE" if m.unstable else ""))
                per_matrix = group.seconds_per_matrix
                self._learn(step, timed, group, check)
                ratio = per_matrix / planned.per_matrix_s if planned.per_matrix_s > 0 else None
                self.clock.done(name, timed.strategy, time.perf_counter() - start, ratio)
                self.unstable += group.measurement.unstable
                groups.append(group)
                group_checks.append(check)
                done.append(a.model_copy(update={"per_matrix_s": per_matrix,
                                                 "repeats": len(group.measurement.samples_s)}))
            if failure is not None:  # no timing, and never cached: a re-run tries again
                checks.append(Verification.failed(timed.strategy, step.tolerance, failure))
                continue
            timing = summarise(timed.strategy, timed.role, timed.device, groups)
            timing.cut = cut_note(done, [p.want(bench.warmup, bench.repeats) for p in timed.allocations])
            timings.append(timing)
            checks.append(combine(timed.strategy, group_checks))
            self._keep(step, timed, key, TimingEntry(timing=timing, verification=checks[-1]))
        apply_speedups(timings)
        return timings, checks
