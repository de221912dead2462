"""The rounds of one analysis: the baseline and every point whose speedup still wants rounds, each timed in
PROCESSES worker processes of its own (slots: bench.worker), each building its inputs afresh, on every shape
group, the others quiescent (bench.quiet). The process is the unit of replication (bench.statistics): slot k's
rounds have the unit id "<run>.<k>", and a point's slot k pairs with the baseline's slot k. A round's blocks go
slot by slot (a ratio's two sides close in time), the slots and the points within each in an order shuffled from
the run id and round number (Google Benchmark's random interleaving), so that drift and load favour no point.
Rounds earlier runs measured count from the start; whether a point wants more is bench.series.settlement. The
rounds a stopped run timed of the analysis it was timing, which a resume takes back (run.interrupted), are this
run's: the first round and the floor are behind it.

The first round always times the baseline and the chosen strategy in slot 0: even a busy machine answers every
analysis; their other slots are the floor (on a quiet machine, whatever the budget). Pooled rounds wildly off
what this run measured of the same point are set aside after each round (run.items.plausible); a point whose
speedup stood on them (its earlier rounds now pair with none of the baseline's) is timed anew in slot 0 of the
next round, beside the baseline, whatever the budget. Further blocks and rounds start only as the budget allows
(bench.budget.Budget); a round's conditions are kept with it (busy or quiet), never a reason to throw it away. A
fast point's first calls are untimed warm-ups; every answer on a matrix a round visits for the first time is
verified against the float64 references. A point that raises is recorded as failed and leaves the rounds; a
point whose worker dies or stops answering (bench.worker's deadline) is lost: it leaves the rounds keeping those
it timed, and is no verification failure. The others go on."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from harness.base.progress import Display, Doing
from harness.base.units import now
from harness.bench.budget import BLOCK_S, MIN_ROUNDS, PROCESSES, Budget, Pace, calls_for
from harness.bench.conditions import Conditions, Snapshot, between, snapshot
from harness.bench.noise import condition_reasons
from harness.bench.quiet import descendants, settle
from harness.bench.threads import pinned
from harness.bench.series import (Line, Round, round_id, run_of, settlement, speedup, unit_id, unit_of,
                                  within_half_width)
from harness.bench.worker import ONE_OFF_S, Request, TimingWorker, Work, WorkerDied, answer_deadline
from harness.data.workload import DataError
from harness.record.verification import Verification
from harness.run.items import Timeline, busy_of, disagreeing, line_of
from harness.run.subjects import Subject
from harness.run.warming import rewarm, warmups_before

WITHIN_SHARE = 0.5  # a run's own rounds narrow its part of an interval to this share of the target, no further
Check = Callable[[Subject, tuple[str, ...]], Verification | None]
Keep = Callable[[Subject, tuple[str, ...], Verification], None]
Slot = tuple[str, int]  # a point's worker process: (its label, its slot)


def failure_reason(exc: BaseException) -> str:
    """One line for the record and the run table: the exception's type and first line."""
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return line if len(line) <= 200 else line[:199] + "…"


@dataclass
class Rounds:
    analysis: str
    run_id: str
    subjects: dict[str, list[Subject]]  # point label -> one subject per group, in the plan's order
    works: dict[str, Work]  # point label -> what its worker builds
    envs: dict[str, dict[str, str]]  # point label -> its own environment variables
    baseline: str | None
    chosen: str | None  # the point that computed the analysis: timed in the first round, whatever the load
    lines: dict[int, Timeline]  # id(subject) -> its timeline
    target: float  # the speedups' interval half-width aimed at
    spreads: dict[str, float | None]  # point label -> the between-run spread its pair has shown
    budget: Budget
    pace: Pace
    display: Display
    cores: int
    threads: int
    lookup: Check
    keep: Keep
    since: Snapshot  # when the phase began: whether the machine is quiet is judged since
    failures: dict[str, str] = field(default_factory=dict)  # point label -> what it raised
    lost: dict[str, str] = field(default_factory=dict)  # point label -> how its worker was lost (died, stopped answering)
    untimed: list[str] = field(default_factory=list)  # points a busy machine's limit left without a round
    notes: dict[str, dict[str, object]] = field(default_factory=dict)  # point label -> its worker's notes
    set_aside: list[str] = field(default_factory=list)  # pooled rounds discarded, and why, one line each
    count: int = 0  # rounds this run timed
    stopped: bool = False  # the budget ended the rounds (between two, or one midway) while a point wanted more
    conditions: Conditions | None = None
    workers: dict[Slot, TimingWorker] = field(default_factory=dict)
    called: set[Slot] = field(default_factory=set)  # workers that have made a call
    spawn: Callable[[Work, int, dict[str, str] | None], TimingWorker] = TimingWorker  # how a point's worker starts
    deadline_s: float = 0.0  # the phase's limit: added to every block's deadline (bench.worker.answer_deadline)
    processes: int = PROCESSES  # worker processes (slots) of each point
    saved: Callable[[], None] = lambda: None  # after each round: its rounds kept for a resume (run.interrupted)

    def line(self, label: str) -> Line:
        return line_of(self.subjects[label], self.lines)

    def _out(self, label: str) -> bool:
        """The point left the rounds: it raised, or its worker was lost."""
        return label in self.failures or label in self.lost

    def _pairs(self, label: str) -> bool:
        return not (self.baseline is None or self._out(self.baseline) or label == self.baseline)

    @property
    def _runs(self) -> set[str]:
        """This run, and the stopped run it resumes where it kept that run's rounds (run.interrupted)."""
        return {self.run_id} | {r.run for line in self.lines.values() for r in line.new}

    @property
    def _first(self) -> bool:
        """No round of the analysis timed yet, by this run or by the stopped run it resumes."""
        return self.count == 0 and all(r.run == self.run_id for line in self.lines.values() for r in line.new)

    def _paired(self, label: str, slot: int) -> int:
        """Rounds of this run's slot that timed the point (and the baseline, when there is one)."""
        units = {unit_id(run, slot) for run in self._runs}
        own = [r for r in self.line(label) if unit_of(r) in units]
        if not self._pairs(label):
            return len(own)
        assert self.baseline is not None  # _pairs
        base = self.line(self.baseline)
        return sum(r in base for r in own)

    def _wants(self, label: str, slot: int) -> bool:
        """Whether the point wants a round in this slot: none when it is settled before this run
        timed it (bench.series.settlement, pooled rounds); else its floor (MIN_ROUNDS in each
        slot), then rounds until it settles or the rounds inside this run's processes spread
        within WITHIN_SHARE of the target (more of them cannot narrow the rest of its interval):
        the budget says how many it gets."""
        if self._out(label) or (label in self.untimed and not self._unpaired(label)):
            return False
        mine = sum(run_of(r) in self._runs for r in self.line(label))
        if not self._pairs(label):  # nothing to pair with: its own rounds, none when earlier runs timed it
            return self._paired(label, slot) < MIN_ROUNDS and mine == len(self.line(label))
        assert self.baseline is not None  # _pairs
        base, own = self.line(self.baseline), self.line(label)
        busy = busy_of(self.subjects[self.baseline] + self.subjects[label], self.lines)
        settled = settlement(speedup(base, own, spread=self.spreads.get(label), busy=busy), self.target).settled
        if self._paired(label, slot) < MIN_ROUNDS:
            return not (settled and mine == 0)
        return not settled and within_half_width(base, own, self.run_id) > WITHIN_SHARE * self.target

    def _cut_before(self, label: str) -> bool:
        """The last earlier run that timed the baseline did not time this point (a busy machine's
        limit cut it): this run times it once whatever the limit. Ordered first alone, it was cut
        run after run (the main job's top-3 torch points, three runs; smoke's dual_gram, timed once
        and then held at its one reused round six runs by later runs' limits: walk-through 7)."""
        if self.baseline is None or label == self.baseline:
            return False
        earlier = [r for s in self.subjects[self.baseline] for r in self.lines[id(s)].pooled if r.run not in self._runs]
        if not self.line(label):
            return bool(earlier)
        last = max((r for r in earlier if r.when), key=lambda r: r.when or "", default=None)
        return last is not None and not any(run_of(r) == last.run for r in self.line(label))

    def _unpaired(self, label: str) -> bool:
        """The point has earlier rounds, none of them paired with the baseline's: its or the
        baseline's pooled rounds were set aside (here, or by the phase against the plan), and the
        speedup that stood on them is gone until it is timed beside the baseline again."""
        if not self._pairs(label) or self._out(label):
            return False
        assert self.baseline is not None  # _pairs
        own, base = self.line(label), self.line(self.baseline)
        return bool(own) and not any(r in base for r in own)

    def _mandatory(self, label: str, slot: int) -> bool:
        """Timed whatever the budget, in slot 0: in the first round the baseline, the chosen point
        and a point an earlier run cut; in any round a point left unpaired (_unpaired), and the
        baseline beside it (a pair is one round id)."""
        if slot != 0:
            return False
        if self._first and (label in (self.baseline, self.chosen) or self._cut_before(label)):
            return True
        return self._unpaired(label) or (label == self.baseline and any(map(self._unpaired, self.subjects)))

    def _blocks(self) -> list[Slot]:
        """The blocks of the next round, slot by slot in a shuffled order of slots (slot 0 first in
        the first round); in each slot the baseline's block, then the others shuffled. In the first
        round those with the fewest rounds behind them (this run's and pooled) come first, the chosen
        point and those an earlier run cut first among equals: a busy machine's limit cuts the
        best-measured ones, higher slots first, and the rotation reaches every point."""
        others = [s for s in self.subjects if s != self.baseline and not self._out(s)]
        todo = [(s, k) for s in others for k in range(self.processes) if self._wants(s, k)]
        if self.baseline is not None and self.baseline in self.subjects and not self._out(self.baseline):
            slots = {k for _s, k in todo} if others else {k for k in range(self.processes)
                                                          if self._wants(self.baseline, k)}
            todo += [(self.baseline, k) for k in sorted(slots)]
        rng = random.Random(f"{self.run_id}#{self.analysis}#{self.count}")
        order = list(range(self.processes))
        rng.shuffle(order)
        if self._first:
            order.remove(0)
            order.insert(0, 0)
        shuffled = {b: rng.random() for b in sorted(todo)}
        rounds, first = {s: len(self.line(s)) for s in self.subjects}, self._first

        def rank(block: Slot) -> tuple[float, ...]:
            label, k = block
            ahead = label == self.baseline or self._mandatory(label, k) or (first and label == self.chosen)
            behind = rounds[label] if first else 0
            return (order.index(k), label != self.baseline, behind, not ahead, shuffled[block])

        return sorted(todo, key=rank)

    def run(self) -> None:
        """Rounds until every speedup is resolved or the budget is spent; then a verdict for every subject."""
        before = snapshot()
        try:
            while blocks := self._blocks():
                if (not self._first and not any(self._mandatory(*b) for b in blocks)
                        and not self.budget.fits(self._estimate(blocks), self._floor(blocks), self.budget.seen(self._quiet()))):
                    self.stopped = True
                    break
                self._start(blocks)
                self._round(blocks)
                self._set_aside_wild()
                self.saved()
            self.conditions = between(before, snapshot(), self.cores)
            for label in self.subjects:
                if not self._out(label):
                    for subject in self.subjects[label]:
                        self._verified(subject)
        finally:
            for worker in self.workers.values():
                worker.close()

    def _set_aside_wild(self) -> None:
        """Pooled rounds wildly off what this run measured of the same point are discarded, with a
        note: a planted or corrupted pool, or rounds of another load, must not outvote the run's own
        measurement. Done after each round, so that the points they leave unpaired are timed anew."""
        for group in self.subjects.values():
            for s in group:
                line = self.lines[id(s)]
                if line.pooled and (why := disagreeing(line.pooled, line.new, s.allocation.matrices)):
                    self.set_aside.append(f"{self.analysis}: pooled rounds of {s.name} on {s.group} discarded: {why}")
                    line.aside, line.pooled = [r.round for r in line.pooled], []

    def _floor(self, blocks: list[Slot]) -> bool:
        return any(self._paired(s, k) < MIN_ROUNDS for s, k in blocks)

    def _quiet(self) -> bool:
        """Nothing else took the machine since the phase began (bench.noise.condition_reasons):
        a floor round that runs past the limit is then the plan's misestimate, not a busy machine's."""
        return not condition_reasons(between(self.since, snapshot(), self.cores))

    def _start(self, blocks: list[Slot]) -> None:
        """The workers of `blocks` not yet started, all at once, then each ready: one-off work."""
        fresh = [b for b in dict.fromkeys(blocks) if b not in self.workers and not self._out(b[0])]
        with self.budget.outside("starting workers", len(fresh)):
            for block in fresh:
                self._guarded(block[0], partial(self._spawn, block))
            for block in fresh:
                if block in self.workers and not self._out(block[0]):
                    self._guarded(block[0], self.workers[block].wait_ready)

    def _spawn(self, block: Slot) -> None:
        self.workers[block] = self.spawn(self.works[block[0]], self.threads, self.envs.get(block[0]))

    def _planned(self, subject: Subject, slot: int) -> float:
        a = subject.allocation
        return a.block_s + (0.0 if slot in self.lines[id(subject)].warmed else a.first_s)

    def _block_s(self, subject: Subject, slot: int = 0) -> float:
        """Seconds its next block should take: as its last one this run did, else as planned (its
        warm-ups included) at the phase's pace."""
        line = self.lines[id(subject)]
        if line.new:
            return line.new[-1].seconds * subject.allocation.calls
        return self._planned(subject, slot) * self.pace.factor

    def _estimate(self, blocks: list[Slot]) -> float:
        return sum(self._block_s(subject, k) for s, k in blocks for subject in self.subjects[s])

    def _round(self, blocks: list[Slot]) -> None:
        """One round: each block on every group of its point, in order; in the first round, the
        blocks beyond the mandatory ones (slot 0 of the baseline, the chosen point and those an
        earlier run cut) only while the budget allows. Every slot visits the same matrices. A round
        the budget cut says so in its line (a log's `round 1: 6/24` read as a run stopped short)."""
        floor, quiet = self._floor(blocks), self.budget.seen(self._quiet())
        r = max(len(self.lines[id(x)].rounds) for s, _k in blocks for x in self.subjects[s])
        before, timed, total, cut = snapshot(), [], sum(len(self.subjects[s]) for s, _k in blocks), False
        with self.display.phase(f"{self.analysis}: round {self.count + 1}", total) as phase:
            for label, k in blocks:
                rid, mandatory = round_id(unit_id(self.run_id, k), self.analysis, self.count), self._mandatory(label, k)
                where = (f"in process {k + 1}",) if self.processes > 1 else ()
                for subject in self.subjects[label]:
                    if self._out(label):
                        break
                    if not (mandatory or self.budget.fits(self._block_s(subject, k), floor, quiet)):
                        cut = True
                        break
                    phase.item(Doing(lambda: self.budget.doing, (label, f"on {subject.group}", *where)))
                    self._guarded(label, lambda: timed.append(self._block(subject, k, rid, r)))  # noqa: B023 - run now
                    phase.advance()
            if cut:
                self.stopped = True
                phase.summary = f"the limit left {total - phase.done} untimed"  # the budget, or the floor (walk 24)
        timed_now = {s for s in self.subjects if any(self.lines[id(x)].new for x in self.subjects[s])}
        self.untimed = [s for s in self.untimed if s not in timed_now] + [
            s for s in dict.fromkeys(s for s, _k in blocks) if not self._out(s) and s not in self.untimed
            and s not in timed_now]
        busy = condition_reasons(between(before, snapshot(), self.cores))
        for round_ in timed:
            round_.busy = busy
        self.count += 1

    def _guarded(self, label: str, work: Callable[[], object]) -> None:
        try:
            work()
        except (MemoryError, DataError):
            raise  # the machine or the input files are in trouble, not one strategy
        except WorkerDied as exc:  # not the strategy's answer: what it timed is kept
            self.lost[label] = str(exc)
            self._close(label)
        except Exception as exc:  # one strategy failing must not cost the others
            self.failures[label] = failure_reason(exc)
            self._close(label)

    def _close(self, label: str) -> None:
        """A point that left the rounds: its workers, every slot's, are ended."""
        for (name, _k), worker in self.workers.items():
            if name == label:
                worker.close()

    def _settle(self, worker: TimingWorker) -> None:
        """Until this process and every other worker are quiescent: their spinning pools would
        share the cores with the block."""
        mine = set(worker.pids())
        settle([os.getpid(), *(p for p in descendants(os.getpid()) if p not in mine)])

    def _block(self, subject: Subject, slot: int, rid: str, r: int) -> Round:
        label, line = subject.name, self.lines[id(subject)]
        worker = self.workers[label, slot]
        ids = tuple(subject.ids(r))
        if slot not in line.warmed and subject.timed.compiled:  # compiling is one-off work, never in a timed call
            with self.budget.outside("compiling"):
                self.notes[label] = worker.block(Request(part=subject.part, r=r, warmups=1, calls=1, min_time_s=0.0,
                                                         keep=False), ONE_OFF_S + self.deadline_s).notes
        planned, began = self._planned(subject, slot), self.budget.clock()
        self._settle(worker)
        a = subject.allocation
        warmups = warmups_before(slot in line.warmed, line.first_call, a.warmups, (label, slot) in self.called)
        # its first call measured like the others (FIRST_CALL_SAME): no re-warming before it either
        call_s = line.new[-1].seconds if line.new else a.call_s
        rewarm_s = 0.0 if slot not in line.warmed and not warmups else rewarm(call_s, a.baseline, subject.fans_out)
        self.called.add((label, slot))
        reply = worker.block(Request(part=subject.part, r=r, warmups=warmups, calls=a.calls, min_time_s=BLOCK_S,
                                     keep=ids not in subject.checks, warm_time_s=rewarm_s),
                             answer_deadline(self._block_s(subject, slot), self.deadline_s))
        self.pace.planned_s += planned
        self.pace.took_s += self.budget.clock() - began
        line.warmed.add(slot)
        self.notes[label] = reply.notes
        block = reply.block
        if block.warmups == 1 and line.first_call is None:  # one untimed call: the process's first
            line.first_call = block.warm_s / block.seconds
        subject.allocation = a.model_copy(update={"calls": calls_for(block.seconds, a.repeats)})
        line.calls += len(block.calls_s)
        line.threads = block.threads
        round_ = Round(round=rid, seconds=block.seconds, when=now())
        line.new.append(round_)
        if reply.result is not None:
            with self.budget.outside("verifying answers"):
                self._judge(subject, reply.result, r)
        return round_

    def _judge(self, subject: Subject, result: object, r: int) -> None:
        """The verdict on round r's matrices: the cache's, else judged now and kept; on one thread,
        so that this process's pools are not left spinning beside the next block (a judged block
        was followed by 0.12 s of waiting for them to go quiet)."""
        ids = tuple(subject.ids(r))
        verdict = self.lookup(subject, ids)
        if verdict is None:
            with pinned(1):
                verdict = subject.judge(result, r)
            self.keep(subject, ids, verdict)
        subject.checks[ids] = verdict

    def _verified(self, subject: Subject) -> None:
        """A subject no round timed this run (its rounds all pooled, or none) still needs a
        verdict: from the cache, else from one call in its worker (one-off work)."""
        if subject.checks:
            return
        ids = tuple(subject.ids(0))
        if (hit := self.lookup(subject, ids)) is not None:
            subject.checks[ids] = hit
            return
        label = subject.name

        def verify() -> None:
            self._start([(label, 0)])
            if self._out(label):
                return
            reply = self.workers[label, 0].block(Request(part=subject.part, r=0, warmups=0, calls=1, min_time_s=0.0,
                                                      keep=True), answer_deadline(self._block_s(subject), self.deadline_s))
            self.notes[label] = reply.notes
            self._judge(subject, reply.result, 0)

        with self.budget.outside("verifying answers"):
            self._guarded(label, verify)
