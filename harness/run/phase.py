"""The benchmark phase, one analysis at a time, as a straight pipeline: pooled rounds -> rounds
(each point in its own worker, verified against the float64 references) -> speedups with their
intervals -> record, pool and wisdom.

One Budget (bench.budget) is the phase's clock. Rounds earlier runs of the same code measured on
this machine are pooled (machine.measurements) unless the run is `fresh`; a speedup already
settled by them (bench.series.settlement, the one rule the rounds and the record ask too) costs
no new round. The pool also tells each pair's between-run spread, which a single run's interval
cannot be narrower than (bench.statistics), fresh or not. Verdicts are cached
(store.keys.verification): a re-run that measures nothing computes nothing either."""

from __future__ import annotations

import math
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path


from harness.base.progress import Display
from harness.base.units import now
from harness.bench.budget import Allocation, Budget, Pace, floors
from harness.bench.conditions import Snapshot, snapshot
from harness.bench.series import Line, Round, pair_spread, settlement, speedup, workload_totals
from harness.bench.noise import own_reasons
from harness.bench.worker import Work, WorkerPool
from harness.compute.references import References
from harness.compute.verify import combine
from harness.data.layout import AdapterLayout
from harness.data.memo import MemoSource
from harness.data.workload import ShapeGroup, Source, Workload
from harness.machine import measurements
from harness.machine.info import MachineInfo
from harness.machine.measurements import Item, Measurements
from harness.machine.wisdom import MeasuredError, Observation
from harness.plan.benchmark import timed_here
from harness.plan.model import BenchPlan, Plan, Step, Timed
from harness.record.run_record import UNTIMED, AnalysisRecord, BenchRecord, GroupTiming, Skipped, StrategyTiming
from harness.record.verification import Verification
from harness.specs.sections import PcaAnalysis
from harness.run.clock import own_rounds, stopped_text
from harness.run.eta import (Done, Held, Timing, as_timed, blocks, counted_share, limit_of, timing_left_s, work_left,
                             worker_s)
from harness.run import interrupted
from harness.run.interrupted import Interrupted
from harness.run.items import WILD_PLAN, Timeline, line_of, placed, plausible
from harness.run.rounds import Rounds
from harness.run import subjects as subjects_module
from harness.run.subjects import Context, Subject, matrix_subjects, pca_subjects
from harness.run.timings import group_timing, observation, pair_speedups, strategy_timing
from harness.run.variants import keep_compiled
from harness.store.cache import ResultCache
from harness.store.keys import Keys, entry_label
from harness.strategies.registry import STRATEGIES
from harness.linalg.device import torch_missing_reason


def new_run_id() -> str:
    """A run's id in its round ids: unique, never a timestamp (two runs in one second shared them)."""
    return uuid.uuid4().hex[:12]


@dataclass
class BenchPhase:
    """The run's benchmark phase: one budget, one set of references, one pool of earlier rounds."""

    plan: Plan
    workload: Workload
    seed: int
    display: Display
    cores: int
    cache: ResultCache | None = None
    keys: Keys | None = None
    source: str = "run"  # who measured, for the wisdom: "calibrate" or the experiment
    pool: Measurements | None = None  # this machine's stored rounds; None: wisdom is off
    fresh: bool = False  # measure everything anew: pooled rounds only tell the between-run spread
    run_id: str = field(default_factory=new_run_id)
    budget: Budget = field(init=False)
    workers: WorkerPool = field(init=False)  # the timing workers and their forkserver: closed with the run
    references: References = field(init=False)
    new_rounds: dict[Item, list[Round]] = field(default_factory=dict)  # what this run adds to the pool
    observations: list[Observation] = field(default_factory=list)  # what it teaches the wisdom
    errors: list[MeasuredError] = field(default_factory=list)  # each verified point's error, load or not
    notes: list[str] = field(default_factory=list)  # pooled rounds discarded, and why
    discarded: dict[Item, set[str]] = field(default_factory=dict)  # their ids: set aside in the pool for good
    unstable: int = 0
    counts: Counter[str] = field(default_factory=Counter)  # rounds, pooled, busy; resolved and unresolved speedups
    untimed: dict[str, list[Skipped]] = field(default_factory=dict)  # analysis -> what the limit left untimed
    since: Snapshot = field(default_factory=snapshot)  # when the phase began
    pace: Pace = field(default_factory=Pace)
    kept: dict[str, AnalysisRecord] = field(default_factory=dict)  # analyses a stopped run of this folder finished
    timing: Timing | None = None  # the open analysis' rounds and the blocks it took back (run.eta)
    finished: dict[str, Done] = field(default_factory=dict)  # analysis -> what its rounds timed here (run.eta.as_timed)
    interrupted: Interrupted | None = None  # the rounds it timed of the analysis it stopped in (run.interrupted)
    folder: Path | None = None  # the run folder, where the rounds of the analysis being timed are kept
    here: BenchPlan = field(init=False)  # the phase as this run times it: the plan's less the analyses it keeps

    def __post_init__(self) -> None:
        self.here = bench = timed_here(self.plan, set(self.kept))
        per_analysis = floors({(s.analysis, t.label, a.group): a
                               for s in self.plan.steps for t in s.timed for a in t.allocations})
        settled, floored = self._settled()
        settled |= set(self.kept)  # taken over as timed: nothing of the budget is theirs
        self.budget = Budget(bench.budget_s - bench.references_s, bench.limit_s - bench.references_s,
                             {a: 0.0 if a in floored else f for a, (f, _r) in per_analysis.items() if a not in settled},
                             {a: r for a, (_f, r) in per_analysis.items() if a not in settled})
        self.references = References(self.workload.source, self.cache, self.keys,
                                     memory_budget=self.plan.memory_budget)
        self.workers = WorkerPool(self._preload)  # starts nothing yet

    def imported(self) -> None:
        """Until the timing workers' forkserver has imported what they need, before any analysis
        runs, when some analysis will time (a re-run whose pooled rounds settle every analysis
        starts none: 1 s of imports saved; a later need starts it then)."""
        if set(self.budget.floors) or not self.plan.steps:
            self.workers.ready()

    def _preload(self) -> list[str]:
        """What every timing worker imports: the subjects' modules, and torch when a point uses it."""
        torch = any(STRATEGIES[t.strategy].uses_torch for s in self.plan.steps for t in s.timed)
        return [subjects_module.__name__] + (["torch"] if torch and torch_missing_reason() is None else [])

    @cached_property
    def _groups(self) -> dict[str, ShapeGroup]:
        return {g.label: g for g in self.workload.groups()}

    @cached_property
    def _layout(self) -> AdapterLayout:
        return AdapterLayout.from_workload(self.workload)

    def _items(self, step: Step, timed: Timed) -> list[Item]:
        return [placed(self.plan, step, timed, a, self._groups, lambda: self._layout)[0] for a in timed.allocations]

    def _stored(self, item: Item) -> list[Round]:
        return self.pool.rounds(item) if self.pool is not None else []

    def _pooled(self, step: Step, timed: Timed, a: Allocation, item: Item) -> list[Round]:
        """The stored rounds this run pools for an allocation: none when it is fresh, none wildly
        off what this machine's plan expects of the call (said once, with a note)."""
        pooled = [] if self.fresh else self._stored(item)
        why = plausible(pooled, a.per_matrix_s * a.matrices, WILD_PLAN, "this machine's plan expects", a.matrices)
        if why is None:
            return pooled
        self.discarded.setdefault(item, set()).update(r.round for r in pooled)
        note = f"{step.analysis}: pooled rounds of {timed.label} on {a.group} discarded: {why}"
        if note not in self.notes:
            self.notes.append(note)
        return []

    def _lines(self, step: Step, pooled: bool, busy: set[str] | None = None) -> dict[str, Line]:
        """Each point's workload total by round, from the stored rounds: with `pooled`, those this
        run pools (_pooled); else all of them (they tell the spread). The ids of busy ones are
        added to `busy`."""
        out = {}
        for t in step.timed:
            parts = []
            for a in t.allocations:
                item, total = placed(self.plan, step, t, a, self._groups, lambda: self._layout)
                rounds = self._pooled(step, t, a, item) if pooled else self._stored(item)
                parts.append(([r.round for r in rounds], [r.seconds for r in rounds], a.matrices, total))
                if busy is not None:
                    busy |= {r.round for r in rounds if r.busy}
            out[t.label] = workload_totals(parts)
        return out

    def _spreads(self, step: Step) -> dict[str, float | None]:
        """Each point's between-run spread against its baseline, as this machine's stored runs show it."""
        lines = self._lines(step, pooled=False)
        base = next((t.label for t in step.timed if t.role == "baseline"), None)
        return {label: pair_spread(lines[base], line) if base is not None else None for label, line in lines.items()}

    def _settled(self) -> tuple[set[str], set[str]]:
        """The analyses whose every speedup the pooled rounds already settle (no budget), and
        those whose floor they cover (every speedup has an interval: no floor reserved)."""
        bench = self.plan.bench
        assert bench is not None
        settled, floored = set[str](), set[str]()
        if self.pool is None or self.fresh:
            return settled, floored
        for step in self.plan.steps:
            busy: set[str] = set()
            lines, spreads = self._lines(step, pooled=True, busy=busy), self._spreads(step)
            base = next((t.label for t in step.timed if t.role == "baseline"), None)
            if base is None or not step.timed:
                continue
            found = [speedup(lines[base], lines[t.label], spread=spreads[t.label], busy=busy) for t in step.timed
                     if t.label != base]
            if all(settlement(s, bench.target).settled for s in found):
                settled.add(step.analysis)
            if all(s is not None and math.isfinite(s.high) for s in found):
                floored.add(step.analysis)
        return settled, floored

    @property
    def one_worker_s(self) -> float:
        """A timing worker's one-off seconds on an idle machine, as this run's workers took them (run.eta)."""
        return worker_s(self.budget.one_off_s, self.budget.workers, self.plan.slowdown)

    def work_left(self, cached: frozenset[str] = frozenset()) -> tuple[list[float], float]:
        """The run's units and estimate for its ETA: its workers as measured, the limit as left (run.eta)."""
        return work_left(self.plan, set(self.kept), self.interrupted, self.one_worker_s, self.finished,
                         limit_of(self.budget, self.plan.slowdown), cached)

    def _timing_left_s(self, step: Step) -> float:
        """Its timing this run still times, as the limit now leaves it (run.eta)."""
        return timing_left_s(step, step.analysis in self.kept, self.interrupted, self.one_worker_s,
                             limit_of(self.budget, self.plan.slowdown))

    def share_of(self, step: Step) -> Callable[[], float]:
        """The share of the step's work left its blocks say is done, for the run's ETA (run.eta)."""
        return counted_share(step, self._timing_left_s(step), lambda: self.timing, self.one_worker_s,
                             partial(limit_of, self.budget, self.plan.slowdown))

    def held_of(self, step: Step, unit_s: float = 0.0) -> Held:
        """The share of the step's work no time alone counts done, for the run's ETA (run.eta):
        its workers' start as this budget clocks it, against `unit_s`, the step's planned seconds."""
        return Held(step, self._timing_left_s(step), lambda: self.timing, self.one_worker_s, unit_s,
                          lambda: self.budget.one_off_live_s)

    def record(self) -> BenchRecord:
        bench, r, planned = self.here, self.references, self.plan.bench
        assert planned is not None
        return BenchRecord(budget_s=bench.budget_s, floor_s=bench.floor_s, limit_s=bench.limit_s,
                           kept_s=planned.estimate_s - bench.estimate_s,
                           precision=bench.target, rounds=self.counts["rounds"], rounds_pooled=self.counts["pooled"],
                           busy_rounds=self.counts["busy"], resolved=self.counts["resolved"],
                           unresolved=self.counts["unresolved"], spent_s=self.budget.live_s + self.budget.one_off_s,
                           one_off_s=self.budget.one_off_s, threads=bench.threads, run_id=self.run_id,
                           references_computed=r.computed, references_cached=r.cached, references_s=r.seconds,
                           unstable=self.unstable)

    def _context(self, timed: Timed) -> Context:
        return Context(backend=timed.device, precision=timed.precision or self.plan.dtype,  # type: ignore[arg-type]
                       compiled=timed.compiled, workers=self.plan.workers,
                       threads_per_worker=self.plan.threads_per_worker, seed=self.seed)

    @property
    def _source(self) -> Source:
        """What a point's worker loads from: the source itself, never the run's factor memo, whose
        state depends on what the run computed before (dual_gram took 0.2 s a position after a cold
        run's analyses and 0.9 s after a warm one's, in alternating runs)."""
        source = self.workload.source
        return source.inner if isinstance(source, MemoSource) else source

    def time_step(self, step: Step) -> tuple[list[StrategyTiming], list[Verification]]:
        """Every compared point of a per-matrix op, on every shape group."""
        return self._time(step, lambda t: matrix_subjects(step, t, self._groups, self._source, self.references,
                                                          self._context(t), self._items(step, t)))

    def time_pca(self, step: Step, analysis: PcaAnalysis) -> tuple[list[StrategyTiming], list[Verification]]:
        """Every compared Gram point, one position a round, loading included; totals scaled by positions."""
        return self._time(step, lambda t: pca_subjects(step, analysis, t, self._layout, self._source, self.references,
                                                       self._context(t), self.plan.memory_budget, self._items(step, t)))

    def _taken_over(self, step: Step) -> tuple[list[StrategyTiming], list[Verification]] | None:
        """An analysis the stopped run this one resumes finished: its timings and verdicts as that
        run recorded them, each timing marked `resumed`, nothing timed again; its rounds are neither
        pooled nor taught twice (the stopped run kept them) nor counted as this run's."""
        kept = self.kept.get(step.analysis)
        if kept is None:
            return None
        timings = [t.model_copy(update={"resumed": True}) for t in kept.timings]
        for t in timings:
            if t.role != "baseline" and t.speedup is not None:
                self.counts["unresolved" if t.unresolved else "resolved"] += 1
        if kept.skipped:
            self.untimed[step.analysis] = list(kept.skipped)
        return timings, list(kept.verification)

    def _resumed(self, step: Step, subjects: dict[str, list[Subject]], lines: dict[int, Timeline]) -> float:
        """The rounds the stopped run this one resumes timed of `step` before it stopped, taken back as
        this run's (run.interrupted); the seconds they took, which the analysis' budget counts."""
        kept = self.interrupted
        if kept is None or kept.analysis != step.analysis:
            return 0.0
        spent_s = interrupted.restore(kept, [s for group in subjects.values() for s in group], lines)
        if spent_s is None:
            self.notes.append(f"{step.analysis}: the rounds the stopped run timed are timed again: its points differ")
        return spent_s or 0.0

    def _save_rounds(self, step: Step, subjects: dict[str, list[Subject]], lines: dict[int, Timeline]) -> None:
        """After each round, its rounds so far in the run folder, for a resume (one-off work)."""
        if self.folder is not None:
            with self.budget.outside("saving rounds"):
                interrupted.save(self.folder, self.run_id, step.analysis,
                                 [s for group in subjects.values() for s in group], lines)

    def _pooled_lines(self, subjects: dict[str, list[Subject]]) -> dict[int, Timeline]:
        return {id(s): Timeline(pooled=self._pooled(s.step, s.timed, s.allocation, s.item))
                for group in subjects.values() for s in group}

    def _time(self, step: Step, make: Callable[[Timed], tuple[list[Subject], Work]]
              ) -> tuple[list[StrategyTiming], list[Verification]]:
        """The pipeline for one analysis: what a resumed run kept, else each point's subjects and Work
        (`make`), pooled rounds, new rounds, timings, verdicts."""
        if (taken := self._taken_over(step)) is not None:
            return taken
        made = {t.label: make(t) for t in step.timed}
        subjects, works = {k: v[0] for k, v in made.items()}, {k: v[1] for k, v in made.items()}
        bench = self.here
        lines = self._pooled_lines(subjects)
        baseline = next((t.label for t in step.timed if t.role == "baseline"), None)
        chosen = next((t.label for t in step.timed if t.strategy == step.strategy and not t.compiled
                       and (t.precision or self.plan.dtype) == (step.precision or self.plan.dtype)), None)
        spreads = self._spreads(step)
        self.budget.open(step.analysis, self._resumed(step, subjects, lines))
        rounds = Rounds(step.analysis, self.run_id, subjects, works, {t.label: dict(t.env) for t in step.timed},
                        baseline, chosen, lines, bench.target, spreads, self.budget, self.pace, self.display,
                        self.cores, bench.threads, self._lookup, self._keep, self.since, spawn=self.workers.spawn,
                        deadline_s=bench.limit_s, saved=lambda: self._save_rounds(step, subjects, lines))
        kept = {r.round for line in lines.values() for r in line.new}
        planned = max((a.rounds for t in step.timed for a in t.allocations), default=0)
        self.timing = (rounds, blocks(rounds))
        try:
            rounds.run()
        finally:
            self.budget.close(step.analysis)
            self.timing, self.finished[step.analysis] = None, as_timed(rounds)
        if rounds.stopped:
            self.display.logged(stopped_text(step.analysis, own_rounds(rounds), rounds.count, planned,
                                             rounds.processes, bench.limit_s, bench.limit))
        interrupted.clear(self.folder)
        self.counts["rounds"] += rounds.count
        self.notes += rounds.set_aside
        self.discarded |= {s.item: {*lines[id(s)].aside} for g in subjects.values() for s in g if lines[id(s)].aside}
        timings, checks = [], []
        for t in step.timed:
            if t.label in rounds.failures:  # no timing, and nothing pooled: a re-run tries again
                checks.append(Verification.failed(t.label, step.tolerance, rounds.failures[t.label]))
                continue
            mine = subjects[t.label]
            if verdicts := [v for s in mine for v in s.checks.values()]:  # a lost worker may have answered none
                checks.append(combine(t.label, verdicts))
            lost = rounds.lost.get(t.label)
            if not all(lines[id(s)].rounds for s in mine):  # cut before a round of every group: a busy machine, a lost worker
                self.untimed.setdefault(step.analysis, []).append(Skipped(strategy=t.label, reason=lost or UNTIMED))
                for s in mine:  # what it did time is kept for later runs
                    if lines[id(s)].new:
                        self.new_rounds.setdefault(s.item, []).extend(lines[id(s)].new)
                continue
            if lost is not None:
                self.notes.append(f"{step.analysis}: {t.label}: {lost}; the rounds it timed are kept")
            groups = [self._group(step, s, lines[id(s)], rounds) for s in mine]
            timings.append(strategy_timing(t, groups, rounds.notes.get(t.label, {}), self.plan.dtype,
                                           [lines[id(s)] for s in mine]))
            timings[-1].resumed_rounds = min(sum(r in kept for r in g.rounds) for g in groups)
        paired = {t.label: line_of(subjects[t.label], lines) for t in step.timed if t.label not in rounds.failures}
        self.counts.update(pair_speedups(timings, paired, baseline, spreads, subjects, lines, bench.target))  # adds
        keep_compiled(timings)
        return timings, checks

    def _group(self, step: Step, s: Subject, line: Timeline, rounds: Rounds) -> GroupTiming:
        """A subject's rounds as a GroupTiming; its new rounds go to the pool and, when quiet,
        stable and verified, to the wisdom."""
        group = group_timing(s, line, rounds.conditions, self._stored(s.item))
        self.unstable += group.measurement.unstable
        self.counts["pooled"] += len(line.pooled)
        self.counts["busy"] += sum(1 for r in line.new if r.busy)
        if line.new:
            self.new_rounds.setdefault(s.item, []).extend(line.new)
        if s.checks and all(v.reason is None for v in s.checks.values()):  # met the tolerance or not
            self.errors.append(MeasuredError(strategy=s.timed.strategy, op=step.op, device=s.timed.device,
                                             precision=s.arithmetic, compiled=s.timed.compiled, when=now(),
                                             error=max(max(v.values_error, v.vectors_error or 0.0)
                                                       for v in s.checks.values())))
        quiet = [r for r in line.new if not r.busy]
        if not all(v.passed for v in s.checks.values()):
            return group
        if quiet and not own_reasons(group.measurement.reasons):  # pooled rounds' load is not this run's
            self.observations.append(observation(step, s, quiet, line.calls, self.here.threads, self.source))
        elif line.new:  # busy or unsteady: kept apart, for the plan until a quiet one exists
            others = rounds.conditions.others_cpu if rounds.conditions is not None else None
            self.observations.append(observation(step, s, line.new, line.calls, self.here.threads, self.source,
                                                 busy=others or 0.0))
        return group

    def _lookup(self, s: Subject, ids: tuple[str, ...]) -> Verification | None:
        key = self._key(s, ids)
        return self.cache.get_model(key, Verification) if self.cache is not None and key else None

    def _keep(self, s: Subject, ids: tuple[str, ...], verdict: Verification) -> None:
        key = self._key(s, ids)
        if self.cache is not None and key and verdict.reason is None:
            self.cache.put_model(key, verdict, entry_label(s.step.problem, s.name, ids))

    def _key(self, s: Subject, ids: tuple[str, ...]) -> str | None:
        return None if self.keys is None else self.keys.verification(s.step, s.name, s.timed.device, s.group, ids,
                                                                     s.arithmetic, s.timed.compiled)

    def keep_rounds(self, where: Path | None, machine: MachineInfo) -> None:
        """Add this run's rounds to the pool, set aside there the pooled ones it discarded; say so."""
        measurements.keep(where, machine, self.new_rounds, say=self.display.note, aside=self.discarded)
        for note in self.notes:
            self.display.note(f"[yellow]note:[/] {note}")
