"""The benchmark phase, one analysis at a time, as a straight pipeline: pooled rounds -> rounds
(measure, verify against the float64 references) -> timings with intervals -> record.

One clock (bench.budget.Limit) settles the budget for the whole run: the phase may spend
max(budget, floor), each analysis its floor and a share of the rest. Rounds earlier runs of the
same code measured on this machine are pooled (machine.measurements) unless the run is `fresh`;
a speedup already resolved by them costs no new round. Verdicts are cached (store.keys
.verification) so a re-run that measures nothing computes nothing either.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from harness.base.progress import Display
from harness.base.units import now
from harness.bench.conditions import Snapshot, snapshot
from harness.bench.budget import OVERRUN, Allocation, Limit, floors, resolving_shares
from harness.compute.references import References
from harness.compute.verify import combine
from harness.data.layout import AdapterLayout
from harness.data.memo import MemoSource
from harness.data.workload import ShapeGroup, Workload
from harness.machine import measurements
from harness.machine.info import MachineInfo
from harness.machine.measurements import Item, Measurements, Round
from harness.machine.wisdom import MeasuredError, Observation, width
from harness.plan.candidates import position_shape
from harness.plan.model import Plan, Step, Timed
from harness.record.run_record import (UNTIMED, BenchRecord, GroupTiming, Skipped, StrategyTiming, apply_speedups,
                                       workload_totals)
from harness.record.verification import Verification
from harness.bench.measure import summarised
from harness.spec import PcaAnalysis
from harness.store.cache import ResultCache
from harness.store.keys import TIMING_PACKAGES, Keys, source_digest
from harness.strategies.base import ExecContext
from harness.strategies.registry import STRATEGIES
from harness.run.rounds import Rounds, Timeline, rounds_wanted, still_unresolved
from harness.run.subjects import Subject, matrix_subject, pca_subject
from harness.run.variants import keep_compiled, mark, variant_context


@dataclass(frozen=True)
class BenchClockLabel:
    """The run's progress item, read at every redraw: the benchmark's clock moves as each round
    is counted, not only when the next analysis starts."""

    analysis: str
    limit: Limit

    def __str__(self) -> str:
        return f"{self.analysis}; benchmark {self.limit.live_s:.1f} of {self.limit.limit_s:.1f} s"


def summarise(strategy: str, role: str, device: str, groups: Sequence[GroupTiming]) -> StrategyTiming:
    """Per-matrix medians scaled to every matrix of the workload."""
    scale = [g.total / g.sampled for g in groups]
    return StrategyTiming(
        strategy=strategy, role=role, device=device, groups=list(groups),
        estimate_total_s=sum(g.measurement.median_s * s for g, s in zip(groups, scale)),
        iqr_total_s=sum(g.measurement.iqr_s * s for g, s in zip(groups, scale)),
        extrapolated=any(g.sampled < g.total for g in groups),
    )


@dataclass
class BenchPhase:
    """The run's benchmark phase: one clock, one set of references, one pool of earlier rounds."""

    plan: Plan
    workload: Workload
    context: Callable[[str], ExecContext]
    display: Display
    cores: int
    cache: ResultCache | None = None
    keys: Keys | None = None
    source: str = "run"  # who measured, for the wisdom: "calibrate" or the experiment
    pool: Measurements | None = None  # earlier runs' rounds; None: measure everything anew
    run_id: str = field(default_factory=now)
    limit: Limit = field(init=False)
    references: References = field(init=False)
    new_rounds: dict[Item, list[Round]] = field(default_factory=dict)  # what this run adds to the pool
    observations: list[Observation] = field(default_factory=list)  # what it teaches the wisdom
    errors: list[MeasuredError] = field(default_factory=list)  # each verified point's error, load or not
    unstable: int = 0
    one_off_s: float = 0.0
    counts: dict[str, int] = field(default_factory=lambda: {"rounds": 0, "pooled": 0, "resolved": 0,
                                                            "unresolved": 0})
    untimed: dict[str, list[Skipped]] = field(default_factory=dict)  # analysis -> what the limit left untimed
    since: Snapshot = field(default_factory=snapshot)  # when the phase began
    planned_s: float = 0.0  # the plan's estimate of the blocks timed so far, their warm-ups included
    took_s: float = 0.0  # what they took

    def __post_init__(self) -> None:
        assert self.plan.bench is not None, "a plan compiled by this harness has a benchmark plan"
        per_analysis = floors({(s.analysis, t.label, a.group): a
                               for s in self.plan.steps for t in s.timed for a in t.allocations})
        settled, floored, needs = self._pooled()  # resolved by pooled rounds: no share; floor covered: no floor
        bench = self.plan.bench
        floor_of = {name: 0.0 if name in floored else floor
                    for name, (floor, _round_s) in per_analysis.items() if name not in settled}
        weights = {name: round_s for name, (_floor, round_s) in per_analysis.items() if name not in settled}
        spare = bench.budget_s - bench.references_s - sum(floor_of.values())
        # with every open speedup's spread known, the budget goes where it resolves the most; else
        # every analysis gets as many extra rounds
        resolving = resolving_shares({a: needs[a] for a in weights}, weights, spare) if needs is not None else {}
        self.limit = Limit(bench.limit_s - bench.references_s, bench.budget_s - bench.references_s, floor_of,
                           {name: resolving.get(name, 0.0) for name in weights} if resolving else weights)
        self.references = References(self.workload.source, self.cache, self.keys,
                                     memory_budget=self.plan.memory_budget)

    def _pooled(self) -> tuple[set[str], set[str], dict[str, list[int]] | None]:
        """The analyses whose every speedup the pooled rounds already resolve, those whose floor
        they cover (none when the run is fresh), and the extra rounds each open speedup needs by
        the spread of its pooled rounds (None when some speedup has too few to tell): a re-run
        gives the first kind's share of the budget to the others, reserves no floor for the
        second, and spends the budget where it resolves the most."""
        bench = self.plan.bench
        assert bench is not None
        if self.pool is None:
            return set(), set(), None
        settled, floored = set(), set()
        needs: dict[str, list[int]] | None = {}
        for step in self.plan.steps:
            lines: dict[str, dict[str, float]] = {}
            for t in step.timed:
                parts = []
                for a in t.allocations:
                    item, total = self._placed(step, t, a)
                    pooled = self.pool.rounds(item)
                    parts.append(([r.round for r in pooled], [r.seconds for r in pooled], a.matrices, total))
                lines[t.label] = workload_totals(parts)
            baseline = next((t.label for t in step.timed if t.role == "baseline"), None)
            if step.timed and not still_unresolved(lines, baseline, bench.precision):
                settled.add(step.analysis)
            if step.timed and not still_unresolved(lines, baseline, math.inf):  # any interval at all
                floored.add(step.analysis)
            wanted = rounds_wanted(lines, baseline, bench.precision)
            needs = None if needs is None or wanted is None else {**needs, step.analysis: wanted}
        return settled, floored, needs

    def record(self) -> BenchRecord:
        bench = self.plan.bench
        assert bench is not None
        r = self.references
        return BenchRecord(budget_s=bench.budget_s, floor_s=bench.floor_s, limit_s=bench.limit_s,
                           precision=bench.precision, rounds=self.counts["rounds"],
                           rounds_pooled=self.counts["pooled"], resolved=self.counts["resolved"],
                           unresolved=self.counts["unresolved"], spent_s=self.limit.spent_s + self.one_off_s,
                           one_off_s=self.one_off_s,
                           threads=bench.threads, references_computed=r.computed, references_cached=r.cached,
                           references_s=r.seconds, unstable=self.unstable)

    def _item(self, step: Step, timed: Timed, shape: tuple[int, int], rank: int | None, per_call: int) -> Item:
        bench = self.plan.bench
        assert bench is not None
        return Item(code=source_digest(TIMING_PACKAGES), strategy=timed.strategy, op=step.op, k=step.k, shape=shape,
                    rank=rank, dtype=self.plan.dtype, device=timed.device, threads=bench.threads,
                    width=width(STRATEGIES[timed.strategy].fans_out, self.plan.workers, per_call),
                    precision=timed.precision, compiled=timed.compiled)

    @cached_property
    def _groups(self) -> dict[str, ShapeGroup]:
        return {g.label: g for g in self.workload.groups()}

    @cached_property
    def _layout(self) -> AdapterLayout:
        return AdapterLayout.from_workload(self.workload)

    def _placed(self, step: Step, timed: Timed, a: Allocation) -> tuple[Item, int]:
        """What an allocation's rounds are pooled under, and the matrices (a PCA's positions) of
        its group in the workload."""
        if step.op == "pca":
            return self._item(step, timed, position_shape(self._layout), None, 1), len(self._layout.positions)
        g = self._groups[a.group]
        return self._item(step, timed, g.shape, g.rank, a.matrices), len(g)

    def _context(self, timed: Timed) -> ExecContext:
        return variant_context(self.context(timed.device), timed, self.plan.dtype)

    def time_step(self, step: Step) -> tuple[list[StrategyTiming], list[Verification]]:
        """Every compared strategy of a per-matrix op, on every shape group."""
        subjects = {t.label: [
            matrix_subject(step, t, a, self._groups[a.group], self.workload.source, self.references,
                           self._context(t), self._placed(step, t, a)[0])
            for a in t.allocations] for t in step.timed}
        return self._time(step, subjects)

    def time_pca(self, step: Step, analysis: PcaAnalysis) -> tuple[list[StrategyTiming], list[Verification]]:
        """Every compared Gram strategy, one position a round; totals scaled by positions."""
        # its rounds time loading too: from the source itself, never from the run's factor memo,
        # whose state depends on what the run computed before it (dual_gram took 0.2 s a position
        # after a cold run's analyses and 0.9 s after a warm one's, in alternating runs)
        source = self.workload.source
        source = source.inner if isinstance(source, MemoSource) else source
        subjects = {t.label: [
            pca_subject(step, analysis, t, a, self._layout, source, self.references, self._context(t),
                        self.plan.memory_budget, self._placed(step, t, a)[0])
            for a in t.allocations] for t in step.timed}
        return self._time(step, subjects)

    def _time(self, step: Step, subjects: dict[str, list[Subject]]) -> tuple[list[StrategyTiming], list[Verification]]:
        """The pipeline for one analysis: pooled rounds, new rounds, timings, verdicts."""
        lines = {id(s): Timeline(pooled=self.pool.rounds(s.item) if self.pool is not None else [])
                 for group in subjects.values() for s in group}
        baseline = next((t.label for t in step.timed if t.role == "baseline"), None)
        bench = self.plan.bench
        assert bench is not None
        start = time.perf_counter()
        self.limit.begin()
        rounds = Rounds(step.analysis, self.run_id, subjects, baseline, lines, bench.precision,
                        self.limit.extra(step.analysis), self.limit.limit_s * (1 + OVERRUN) - self.limit.spent_s,
                        self.display, self.cores, self._lookup, self._keep, since=self.since,
                        paced=(self.planned_s, self.took_s))
        rounds.run()
        self.planned_s, self.took_s = self.planned_s + rounds.planned_s, self.took_s + rounds.took_s
        self.limit.done(step.analysis, time.perf_counter() - start - rounds.first_s)  # the budget buys warm-ups and rounds
        self.one_off_s += rounds.first_s
        self.counts["rounds"] += rounds.count
        timings, checks = [], []
        for t in step.timed:
            if t.label in rounds.failures:  # no timing, and nothing pooled: a re-run tries again
                checks.append(Verification.failed(t.label, step.tolerance, rounds.failures[t.label]))
                continue
            mine = subjects[t.label]
            checks.append(combine(t.label, [v for s in mine for v in s.checks.values()]))
            if not any(lines[id(s)].rounds for s in mine):  # cut before its first round on a busy machine
                self.untimed.setdefault(step.analysis, []).append(Skipped(strategy=t.label, reason=UNTIMED))
                continue
            timings.append(mark(summarise(t.strategy, t.role, t.device,
                                          [self._group(step, s, lines[id(s)], rounds) for s in mine]),
                                t, mine[0].ctx, self.plan.dtype))
            timings[-1].cached = not any(lines[id(s)].new for s in mine)
            timings[-1].cut = t.cut
        apply_speedups(timings, bench.precision)
        keep_compiled(timings)
        self._tally(timings)
        return timings, checks

    def _group(self, step: Step, s: Subject, line: Timeline, rounds: Rounds) -> GroupTiming:
        """A subject's rounds as a GroupTiming; its new, unflagged rounds go to the pool and, when
        stable and verified, to the wisdom."""
        measurement = summarised([r.seconds for r in line.rounds], s.allocation.warmup,
                                 rounds.conditions if line.new else None)
        group = GroupTiming(group=s.group, sampled=s.allocation.matrices, total=s.total, measurement=measurement,
                            flops=s.flops, bytes=s.bytes, rounds=[r.round for r in line.rounds],
                            pooled=len(line.pooled), calls=line.calls)
        self.unstable += measurement.unstable
        self.counts["pooled"] += len(line.pooled)
        kept = [r for r in line.new if r.round not in line.flagged]
        if kept:
            self.new_rounds.setdefault(s.item, []).extend(kept)
        if s.checks and all(v.reason is None for v in s.checks.values()):  # met the tolerance or not
            self.errors.append(MeasuredError(strategy=s.timed.strategy, op=step.op, device=s.timed.device,
                                             precision=s.ctx.arithmetic, compiled=s.timed.compiled, when=now(),
                                             error=max(max(v.values_error, v.vectors_error or 0.0)
                                                       for v in s.checks.values())))
        if line.new and not measurement.unstable and all(v.passed for v in s.checks.values()):
            self._learn(step, s, line)
        return group

    def _tally(self, timings: list[StrategyTiming]) -> None:
        for t in timings:
            if t.role != "baseline":
                self.counts["unresolved" if t.unresolved else "resolved"] += 1

    def _learn(self, step: Step, s: Subject, line: Timeline) -> None:
        """This run's rounds of a subject as one observation for the planner's wisdom."""
        bench = self.plan.bench
        assert bench is not None
        shape, rank = s.item.shape, s.item.rank
        per_matrix = float(np.median([r.seconds for r in line.new])) / s.allocation.matrices
        self.observations.append(Observation(
            strategy=s.timed.strategy, op=step.op, k=step.k, shape=shape, rank=rank, dtype=str(s.ctx.dtype),
            device=s.timed.device, threads=bench.threads, width=s.item.width, seconds=per_matrix, flops=s.flops,
            samples=line.calls, when=now(), source=self.source, precision=s.ctx.arithmetic,
            compiled=s.timed.compiled))

    def _lookup(self, s: Subject, ids: tuple[str, ...]) -> Verification | None:
        key = self._key(s, ids)
        return self.cache.get_model(key, Verification) if self.cache is not None and key else None

    def _keep(self, s: Subject, ids: tuple[str, ...], verdict: Verification) -> None:
        key = self._key(s, ids)
        if self.cache is not None and key and verdict.reason is None:
            self.cache.put_model(key, verdict, f"verdict of {s.name} on {len(ids)} of {s.group}")

    def _key(self, s: Subject, ids: tuple[str, ...]) -> str | None:
        return None if self.keys is None else self.keys.verification(s.step, s.name, s.timed.device, s.group, ids,
                                                                     s.ctx.arithmetic, s.timed.compiled)

    def keep_rounds(self, where: Path | None, machine: MachineInfo) -> None:
        """Add this run's unflagged rounds to the pool."""
        measurements.keep(where, machine, self.new_rounds)
