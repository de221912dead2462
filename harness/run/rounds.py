"""The rounds of one analysis: the baseline and every strategy whose speedup is not yet resolved,
timed back to back on every shape group, the order reversed each round so that drift and load
hit both sides of each ratio alike, until every speedup's interval is within the precision or the
analysis' share of the budget is spent. Rounds earlier runs measured count from the start.

A fast subject's first calls are untimed warm-ups; every answer on a matrix a round visits for the
first time is verified against the float64 references. A strategy that raises is recorded as
failed and leaves the rounds; the others go on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.base.progress import Display, Phase
from harness.bench.budget import BLOCK_S, MAX_ROUNDS, MIN_ROUNDS, calls_for
from harness.bench.conditions import Conditions, Snapshot, between, snapshot
from harness.bench.measure import measure
from harness.bench.noise import condition_reasons
from harness.bench.statistics import rounds_to_resolve
from harness.data.workload import DataError
from harness.linalg.device import synchronize
from harness.machine.measurements import Round
from harness.record.run_record import speedup_interval, workload_totals
from harness.record.verification import Verification
from harness.run.subjects import Subject

# The fewest rounds whose spread plans more: two rounds have one degree of freedom, and one outlier
# among them put the main job's geometry speedup beyond 30 rounds; it got none while others were open.
SPREAD_ROUNDS = 3
PACE_FLOOR = 0.5  # a phase running faster than planned plans no more than twice the rounds
Check = Callable[[Subject, tuple[str, ...]], Verification | None]
Keep = Callable[[Subject, tuple[str, ...], Verification], None]


def failure_reason(exc: BaseException) -> str:
    """One line for the record and the run table: the exception's type and first line."""
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return line if len(line) <= 200 else line[:199] + "…"


@dataclass
class Timeline:
    """One subject's rounds: earlier runs' (pooled) first, then this run's."""

    pooled: list[Round]
    new: list[Round] = field(default_factory=list)
    flagged: set[str] = field(default_factory=set)  # this run's rounds measured under load
    calls: int = 0
    warmed: bool = False

    @property
    def rounds(self) -> list[Round]:
        return self.pooled + self.new


def still_unresolved(totals: dict[str, dict[str, float]], baseline: str | None, precision: float) -> list[str]:
    """The strategies (keys of `totals`, each its workload total by round id) whose speedup
    still needs rounds, in their order: without a live baseline, those with fewer than
    MIN_ROUNDS rounds; else every other one whose paired interval is short of MIN_ROUNDS rounds
    or wider than `precision`."""
    live = [s for s in totals if s != baseline]
    if baseline is None or baseline not in totals or not live:  # nothing to pair with
        return [s for s in totals if len(totals[s]) < MIN_ROUNDS]
    todo = []
    for s in live:
        interval = speedup_interval(totals[baseline], totals[s])
        if interval is None or interval.n < MIN_ROUNDS or not interval.resolved(precision):
            todo.append(s)
    return todo


def rounds_wanted(totals: dict[str, dict[str, float]], baseline: str | None, precision: float) -> list[int] | None:
    """The extra rounds each open speedup needs for an interval within `precision` at the
    spread its rounds show (one beyond MAX_ROUNDS: left out); None when a speedup has fewer
    than SPREAD_ROUNDS rounds paired with a live baseline, whose spread is not yet known."""
    todo = still_unresolved(totals, baseline, precision)
    if baseline is None or baseline not in totals:  # nothing to pair with
        return None if todo else []
    wanted = []
    for s in todo:
        interval = speedup_interval(totals[baseline], totals[s])
        if interval is None or interval.n < SPREAD_ROUNDS:
            return None
        if (rounds := rounds_to_resolve(interval, precision, MAX_ROUNDS)) is not None:
            wanted.append(rounds - interval.n)
    return wanted


def totals(subjects: list[Subject], lines: dict[int, Timeline]) -> dict[str, float]:
    """Round id -> the workload total of one strategy (its subjects are its groups), over the
    rounds that timed every group: as the record computes it (record.run_record.workload_totals)."""
    return workload_totals(([r.round for r in lines[id(s)].rounds], [r.seconds for r in lines[id(s)].rounds],
                            s.allocation.matrices, s.total) for s in subjects)


@dataclass
class Rounds:
    analysis: str
    run_id: str  # the run's id (when it started): the prefix of its round ids
    subjects: dict[str, list[Subject]]  # strategy -> one subject per group, in the plan's order
    baseline: str | None
    lines: dict[int, Timeline]  # id(subject) -> its timeline
    precision: float
    extra_s: float  # what rounds beyond the floor may spend (bench.budget.Limit.extra)
    phase_left_s: float  # what the whole phase has left: max(budget, floor) and its overrun, less what it spent
    display: Display
    cores: int
    lookup: Check
    keep: Keep
    failures: dict[str, str] = field(default_factory=dict)
    count: int = 0  # rounds this run timed
    first_s: float = 0.0  # seconds of one-off work: imports, a pool's start, verifying an answer
    warm_s: float = 0.0  # seconds of warm-up calls: the floor counts them, so the budget does
    conditions: Conditions | None = None
    since: Snapshot | None = None  # when the benchmark phase began: whether the machine is quiet is judged since
    paced: tuple[float, float] = (0.0, 0.0)  # the phase's blocks before this analysis: planned and taken seconds
    planned_s: float = 0.0  # what the plan estimated for the blocks this timed, their warm-ups included
    took_s: float = 0.0  # what they took

    def unresolved(self) -> list[str]:
        """The strategies whose speedup still needs rounds (all of them without a baseline, until
        MIN_ROUNDS), in the plan's order."""
        return still_unresolved({s: totals(self.subjects[s], self.lines) for s in self.subjects
                                 if s not in self.failures}, self.baseline, self.precision)

    def paired(self, strategy: str) -> int:
        own = totals(self.subjects[strategy], self.lines)
        if self.baseline is None or self.baseline in self.failures or strategy == self.baseline:
            return len(own)
        return len(set(own) & set(totals(self.subjects[self.baseline], self.lines)))

    def run(self) -> None:
        """Rounds until resolved or out of time; then a verdict for every subject."""
        start, before, last, floor_s = time.perf_counter(), snapshot(), None, None
        while todo := self.unresolved():
            names = [s for s in self.subjects if s not in self.failures and (s == self.baseline or s in todo)]
            floor = any(self.paired(s) < MIN_ROUNDS for s in todo)
            estimate = last if last is not None else self._estimate(names) * self.pace
            elapsed = time.perf_counter() - start - self.first_s  # warm-ups and rounds: one-offs are said apart
            # the floor's rounds may take what the whole phase has left, the rest only this analysis'
            # share of the budget, counted from when its floor was done; on a quiet machine the floor's
            # rounds are never cut, however much the plan underestimated them: every speedup gets its interval
            if not floor and floor_s is None:
                floor_s = elapsed
            hard = self.phase_left_s
            limit = hard if floor_s is None else min(floor_s + self.extra_s, hard)
            if elapsed + estimate > limit and not (floor and self._quiet(before)):
                break  # on a busy machine, before its first round too: its strategies are then not timed
            began, first, warm = time.perf_counter(), self.first_s, self.warm_s
            # a busy machine's round whose next block would end past the limit is given up before it
            if not self._round(names if self.count % 2 == 0 else names[::-1],
                               lambda subject: (time.perf_counter() - start - self.first_s + self._block_s(subject)
                                                > limit and not self._quiet(before))):
                break
            took = time.perf_counter() - began - (self.first_s - first)  # its warm-ups and its calls
            last = took - (self.warm_s - warm)  # the next round has no warm-ups
        self.conditions = between(before, snapshot(), self.cores)
        for s in self.subjects:
            if s not in self.failures:
                for subject in self.subjects[s]:
                    self._verified(subject)

    def _quiet(self, before: Snapshot) -> bool:
        """Nothing else took the machine since the rounds began (bench.noise.condition_reasons):
        a floor round that runs past the limit is then the plan's misestimate (the wisdom learned
        numpy's svdvals at 190 ms, and it took 315-410 ms for minutes at a time), not a busy
        machine's, whose rounds are cut and marked instead."""
        return not condition_reasons(between(self.since or before, snapshot(), self.cores))

    def _planned(self, subject: Subject) -> float:
        """Seconds of its next block from the plan, its untimed first calls included."""
        a = subject.allocation
        return a.block_s + (0.0 if self.lines[id(subject)].warmed else a.first_s)

    def _estimate(self, names: list[str]) -> float:
        """Seconds of the next round from the plan, the untimed first calls included."""
        return sum(self._planned(subject) for s in names for subject in self.subjects[s])

    @property
    def pace(self) -> float:
        """How much longer than planned the phase's blocks ran so far, this analysis' included (1
        before any): a block not yet timed is estimated at that pace. Under two busy processes
        the main job's spectrum rounds took 2-2.5x their plan, and a top-3 round planned to fit
        the limit took the phase 24% past it."""
        planned, took = self.paced[0] + self.planned_s, self.paced[1] + self.took_s
        return max(took / planned, PACE_FLOOR) if planned > 0 else 1.0

    def _block_s(self, subject: Subject) -> float:
        """Seconds its next block should take: as its last one this run did, else as planned (its
        warm-ups included) at the phase's pace."""
        line = self.lines[id(subject)]
        return line.new[-1].seconds * subject.allocation.calls if line.new else self._planned(subject) * self.pace

    def _round(self, names: list[str], past: Callable[[Subject], bool]) -> bool:
        """One round, False when given up because `past` said so before one of its blocks: a
        round is paired across its strategies, so the blocks it did time are dropped."""
        rid = f"{self.run_id}#{self.analysis}#{self.count}"
        # every subject of the round visits the same matrices: the round after the most any has had
        r = max(len(self.lines[id(x)].rounds) for s in names for x in self.subjects[s])
        total = sum(len(self.subjects[s]) for s in names)
        with self.display.phase(f"{self.analysis}: round {self.count + 1}", total) as phase:
            for s in names:
                for subject in self.subjects[s]:
                    if s in self.failures:
                        break
                    if past(subject):
                        for line in self.lines.values():
                            if line.new and line.new[-1].round == rid:
                                line.new.pop()
                        return False
                    phase.item(f"{s} on {subject.group}")
                    planned, began, first = self._planned(subject), time.perf_counter(), self.first_s
                    self._guarded(subject, lambda: self._block(subject, rid, r, phase))
                    self.planned_s += planned
                    self.took_s += time.perf_counter() - began - (self.first_s - first)  # one-offs said apart
                    phase.advance()
        self.count += 1
        return True

    def _guarded(self, subject: Subject, work: Callable[[], None]) -> None:
        try:
            work()
        except (MemoryError, DataError):
            raise  # the machine or the input files are in trouble, not one strategy
        except Exception as exc:  # one strategy failing must not cost the others
            self.failures[subject.name] = f"{failure_reason(exc)} (on {subject.group})"

    def _first(self, subject: Subject, r: int, verify: bool) -> None:
        """Before a subject's first round: its imports and compilation, a pool's start, and its
        warm-up calls on round r's matrices (with `verify`, at least one, whose answer is checked)."""
        line, began = self.lines[id(subject)], time.perf_counter()
        subject.warm()  # no timed call imports torch or compiles a kernel
        if subject.strategy.fans_out:
            subject.ctx.executor()  # started now: a pool's start-up is never inside a timed call
        # a compiled point compiles in its first call: never in a timed one
        calls = max(subject.allocation.warmups, 1 if verify or subject.ctx.compiled is not None else 0)
        warm_s = 0.0
        if calls:
            call = subject.prepare(r)
            for _ in range(calls):
                took = time.perf_counter()
                result = call()
                synchronize(subject.ctx.backend)  # queued CUDA work is the call's too
                took = time.perf_counter() - took
                warm_s += took
            if subject.allocation.warmups and subject.ctx.compiled is None:  # a warm call: its seconds set the block's calls
                self._recount(subject, took)
            if verify:
                self._judge(subject, result, r)
        # the floor's warm-ups, before a timed block, are spent from the budget; a call made only to
        # verify (a subject no round timed) or to compile is one-off work
        warm_s = warm_s if subject.allocation.warmups and subject.ctx.compiled is None and not verify else 0.0
        line.warmed = True
        self.warm_s += warm_s
        self.first_s += time.perf_counter() - began - warm_s

    def _block(self, subject: Subject, rid: str, r: int, phase: Phase) -> None:
        line = self.lines[id(subject)]
        if not line.warmed:
            self._first(subject, r, verify=False)
        call = subject.prepare(r)
        m, result = measure(call, warmup=0, repeats=subject.allocation.calls, backend=subject.ctx.backend,
                            cores=self.cores, min_time_s=BLOCK_S, min_samples=subject.allocation.calls,
                            on_call=lambda what: phase.item(f"{subject.name} on {subject.group}, {what}"))
        self._recount(subject, m.median_s)
        line.calls += len(m.samples_s)
        line.new.append(Round(round=rid, seconds=m.median_s))
        if m.conditions is not None and condition_reasons(m.conditions):
            line.flagged.add(rid)
        if tuple(subject.ids(r)) not in subject.checks:  # a one-off, like the first calls
            began = time.perf_counter()
            self._judge(subject, result, r)
            self.first_s += time.perf_counter() - began

    @staticmethod
    def _recount(subject: Subject, call_s: float) -> None:
        """The next blocks' calls from a call's measured seconds, not the plan's estimate."""
        a = subject.allocation
        subject.allocation = a.model_copy(update={"calls": calls_for(call_s, a.repeats)})

    def _judge(self, subject: Subject, result: object, r: int) -> None:
        """The verdict on round r's matrices: the cache's, else judged now and kept."""
        ids = tuple(subject.ids(r))
        verdict = self.lookup(subject, ids)
        if verdict is None:
            verdict = subject.judge(result, r)
            self.keep(subject, ids, verdict)
        subject.checks[ids] = verdict

    def _verified(self, subject: Subject) -> None:
        """A subject no round timed this run (its rounds all pooled) still needs a verdict: from
        the cache, else from one untimed call."""
        if subject.checks:
            return
        ids = tuple(subject.ids(0))
        if (hit := self.lookup(subject, ids)) is not None:
            subject.checks[ids] = hit
            return
        self._guarded(subject, lambda: self._first(subject, 0, verify=True))
