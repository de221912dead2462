"""The run's work still to do, for its ETA (base.eta.eta_s): each analysis' seconds left (a
resumed run's kept analyses and kept rounds behind it), and the share of the one under way its
timed blocks say is done."""

from __future__ import annotations

from collections.abc import Callable

from harness.bench.budget import Budget
from harness.plan.model import Limit, Plan, Step, allowed, least
from harness.plan.overheads import points_one_off_s, timing_one_off_s
from harness.run.interrupted import Interrupted
from harness.run.rounds import Rounds
from harness.strategies.cost import TIMING_WORKER_S

AFTER_BLOCKS = 0.5  # of an analysis' one-off benchmark work, the share after its last block (verifying)
Timing = tuple[Rounds, int]  # the open analysis' rounds, and the blocks it took back from a stopped run
Done = tuple[float, int]  # a finished analysis: the plan's seconds of the blocks it timed, the points that timed


def limit_of(budget: Budget, slowdown: float) -> Limit:
    """What the phase may still spend (the budget's left_s, its overrun allowance in), in the plan's
    seconds of an idle machine (the limit counts the clock's; `slowdown`: plan.model.Plan's), and
    whether the machine was quiet when the rounds last looked (Budget.seen; before: the plan's idle
    machine). On a busy 2-core machine the plan counted every planned round at twice its seconds
    while the limit cut them: the ETA at 5.9 s read `~0:00:52` with 37 s left (walk 13)."""
    quiet = budget.quiet if budget.quiet is not None else slowdown <= 1.0
    return max(budget.left_s, 0.0) / slowdown, quiet


def worker_s(one_off_s: float, workers: int, slowdown: float) -> float:
    """A timing worker's one-off seconds (started, its answers verified) on an idle machine, as the
    plan counts them: what this run's workers took each so far (bench.budget.Budget's `one_off_s`
    over its `workers`, on this machine as busy as the plan found it), the plan's constant before
    any started. A first run's workers took 0.34 s each against the plan's 0.24 at that load, and
    its ETA near the end was 12 s short (walk 12)."""
    return one_off_s / workers / slowdown if workers > 0 else TIMING_WORKER_S


def timing_left_s(step: Step, kept: bool, stopped: Interrupted | None,
                  one_worker_s: float = TIMING_WORKER_S, limit: Limit | None = None) -> float:
    """Its timing seconds this run still times (what the `limit` allows of its plan: allowed), its
    one-off work with them (starting its workers, verifying: plan.overheads.timing_one_off_s,
    `one_worker_s` each: worker_s): none where it takes the analysis over (`kept`), less the share
    of its blocks the stopped run kept of the one it stopped in (run.interrupted); a resumed run's
    ETA counted both as work to do, ran far under its plan, then read `ETA >0:00:40` with 14 s left."""
    if kept:
        return 0.0
    timing, planned = allowed(step, limit)
    done = sum(len(k.rounds) for k in stopped.subjects) if stopped and stopped.analysis == step.analysis else 0
    return timing * (1.0 - min(done, planned) / planned if planned else 1.0) + timing_one_off_s(step, one_worker_s)


def as_timed(rounds: Rounds) -> Done:
    """What an analysis' rounds timed in this run, in the plan's seconds (a block its allocation's
    estimate over its planned blocks), and the points that timed. A busy first run's limit cut top3
    to 2 of its points, 6 s of a planned 19: counted as planned, the run's pace read 0.74 and the
    last analysis' ETA ran short (walk 12)."""
    seconds, points = 0.0, 0
    for subjects in rounds.subjects.values():
        new = [sum(r.run == rounds.run_id for r in rounds.lines[id(s)].new) for s in subjects]
        seconds += sum(k * s.allocation.estimate_s / (rounds.processes * s.allocation.rounds)
                       for k, s in zip(new, subjects) if s.allocation.rounds)
        points += any(new)
    return seconds, points


def work_left(plan: Plan, kept: set[str], stopped: Interrupted | None, one_worker_s: float = TIMING_WORKER_S,
              finished: dict[str, Done] | None = None, limit: Limit | None = None,
              cached: frozenset[str] = frozenset()) -> tuple[list[float], float]:
    """The run's units for its ETA (base.eta.eta_s): each analysis' seconds still to do, and
    the plan's estimate less what the stopped run this one resumes did and more what its workers
    take beyond the plan's (`one_worker_s`: worker_s). Each unit holds its own one-off benchmark
    work, which the plan's overheads hold for the whole run (spread over every unit, the last
    analysis' `starting workers` read `ETA ~0:00:01` with 7 s left); the finished ones' too, so
    that the run's pace over them is that of the rest of their work; those this run finished
    (`finished`: as_timed) by what they timed, not by what the plan gave them; those to come by
    what the `limit` leaves each in turn (allowed: floors are timed as they come); those the cache
    holds whole (`cached`: run.cached) without their computing, nor their share of the loading and
    features the plan counts for the run. Its rounds as the plan's limit left them (Plan.timings_s)
    give way to these: at the start the estimate is the plan's whole run less the torch import
    (_before), which the plan's line and README say (walk 20: the plan read 60.9 s, the ETA ~29)."""
    done, room = finished or {}, limit
    units = []
    for s in plan.steps:
        if s.analysis in done:
            left = done[s.analysis][0] + points_one_off_s(done[s.analysis][1], one_worker_s)
        else:
            left = timing_left_s(s, s.analysis in kept, stopped, one_worker_s, room)
            if room is not None and s.analysis not in kept:
                room = (max(room[0] - allowed(s, room)[0], 0.0), room[1])
        units.append(plan.busy_s((0.0 if s.analysis in cached else s.estimate_s) + left))
    full = sum(plan.busy_s(s.estimate_s + t + timing_one_off_s(s)) for s, t in zip(plan.steps, plan.timings_s))
    return units, max(plan.estimate_s - full - plan.busy_s(_before(plan, cached)) + sum(units), 0.0)


def _before(plan: Plan, cached: frozenset[str]) -> float:
    """The plan's overheads the run's display never sees: importing torch for the picks (run.context.warm_chosen
    warms them before it opens), and the cached analyses' share of loading, features and starting
    the run's workers (a cached second main run spent 2 s of its 29 outside its benchmark)."""
    read = sum(plan.overheads.get(k, 0.0) for k in ("loading", "features", "worker start"))
    return plan.overheads.get("torch import", 0.0) + (read * len(cached) / len(plan.steps) if cached else 0.0)


def blocks(rounds: Rounds) -> int:
    """Blocks its points have timed, this run's and those taken back from a stopped run."""
    return sum(len(line.new) for line in rounds.lines.values())


class Held:
    """The share of the step's work no time alone counts done, for the run's ETA (base.eta.eta_s's
    `held`, called): its timing (`left_s`: timing_left_s, its one-off work in) until its first block is
    timed, then none (its blocks count it: counted_share). Smoke on a busy machine read `geometry:
    starting workers … ETA ~0:00:00`: its planned seconds spent while its workers started, all its
    rounds ahead (walk 18). Its workers' start (the one-off seconds `one_off` says this analysis spent,
    against `unit_s`, the unit's seconds as the run's ETA plans them) leaves it as it goes, up to what
    was counted for it (the one-off work before its blocks: AFTER_BLOCKS), and no further: past that
    count it is `stalled` (eta_s's floor). Walk 21: `geometry: starting workers` took 8 s against
    1.5 counted, and the run's row stood at `ETA ~0:00:05` for 6 s."""

    def __init__(self, step: Step, left_s: float, timing: Callable[[], Timing | None],
                 one_worker_s: float = TIMING_WORKER_S, unit_s: float = 0.0,
                 one_off: Callable[[], float] | None = None) -> None:
        whole = step.estimate_s + left_s
        self.step, self.timing, self.unit_s, self.one_off = step, timing, unit_s, one_off
        self.part, self.started = (left_s / whole if whole > 0 else 0.0), False
        watched = one_off is not None and unit_s > 0 and self.part > 0
        self.before = (1.0 - AFTER_BLOCKS) * timing_one_off_s(step, one_worker_s) / whole if watched else 0.0
        self.since = one_off() if one_off is not None and watched else None

    def _spent(self) -> float:
        """The unit's share its one-off work has taken so far (none where it is not watched)."""
        if self.one_off is None or self.since is None:
            return 0.0
        return max(self.one_off() - self.since, 0.0) / self.unit_s

    def _open(self) -> bool:
        now = self.timing()
        self.started = self.started or (now is not None and now[0].analysis == self.step.analysis
                                        and blocks(now[0]) > now[1])
        return not self.started

    def __call__(self) -> float:
        return self.part - min(self._spent(), self.before) if self._open() else 0.0

    def stalled(self) -> bool:
        """Its one-off work before its blocks has run past what was counted for it."""
        return self.since is not None and self._open() and self._spent() > self.before


def counted_share(step: Step, left_s: float, timing: Callable[[], Timing | None],
                  one_worker_s: float = TIMING_WORKER_S, limit: Callable[[], Limit] | None = None
                  ) -> Callable[[], float]:
    """The share of the step's work left its timed blocks say is done, for the run's ETA
    (base.progress.Phase.within's `counted`): 0 until they start, then its full analysis and the
    blocks timed since against those still to time (at most all: a fast run may time more), those
    the `limit` allowed it at its start (allowed), and once the phase is past it only those it
    times whatever the limit (least): a block at a time (by rounds, one planned round counted
    nothing until it ended), with its one-off work (starting workers) but for AFTER_BLOCKS of it,
    what follows its last block (verifying the untimed points' answers), counted once its timing
    ends: the share never reached its end before the rounds did (walk 10: `~0:00:01` with 7 s
    left). Held then (its features follow), so that it never falls back. `left_s`: timing_left_s,
    of `one_worker_s` a worker."""
    whole = step.estimate_s + left_s
    part = left_s / whole if whole > 0 else 0.0
    after = AFTER_BLOCKS * timing_one_off_s(step, one_worker_s) / whole if whole > 0 and left_s > 0 else 0.0
    seen, opened, planned = [0.0], [False], allowed(step, limit() if limit else None)[1]

    def share() -> float:
        now = timing()
        if now is not None and now[0].analysis == step.analysis:
            rounds, kept = now
            done, todo = blocks(rounds) - kept, planned - kept
            if limit is not None and (past := limit())[0] <= 0:  # past the limit: what it times whatever it
                todo = min(todo, max(least(step, past[1])[1] - kept, done))
            timed = min(1.0, done / todo) if todo > 0 else 1.0
            opened[0] = True
            seen[0] = max(seen[0], 1.0 - part + (part - after) * timed)
        elif opened[0]:  # its timing ended, the one-off work after its blocks with it
            seen[0] = 1.0
        return seen[0]
    return share
