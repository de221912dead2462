"""The benchmark phase's progress: one counter of its seconds against its limit, and the run's
work still to do by analysis (a resumed run's kept analyses and kept rounds are behind it), with
the share of an analysis its timed blocks say is done."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement

from harness.base.progress import Phrases
from harness.base.units import plural
from harness.bench.budget import PROCESSES, Budget
from harness.plan.model import Plan, Step
from harness.plan.overheads import timing_one_off_s
from harness.run.interrupted import Interrupted
from harness.run.rounds import Rounds

AFTER_BLOCKS = 0.5  # of an analysis' one-off benchmark work, the share after its last block (verifying)
Timing = tuple[Rounds, int]  # the open analysis' rounds, and the blocks it took back from a stopped run


def clock_text(analysis: str, live_s: float, limit_s: float, limit: str) -> Phrases:
    """`top3: 8.2/11.9 s floor`; past it `top3: 14.8 > 11.9 s floor` (one unit for both, as the
    count's): one counter of the benchmark's seconds, named as the run's Benchmark line names its
    limit (the budget, or the floor when that is more). Short enough for the 32 columns a
    100-column display leaves it with its word ("geometry: timed 19.9 s, over" said over what only
    at 160), up to `svd_topk: 105.9 > 13.9 s budget`."""
    if live_s > limit_s:
        return Phrases((f"{analysis}: {live_s:.1f} > {limit_s:.1f} s", limit))
    return Phrases((f"{analysis}: {live_s:.1f}/{limit_s:.1f} s", limit))


def stopped_text(analysis: str, timed: Sequence[int], count: int, planned: int, processes: int, limit_s: float,
                 limit: str) -> str:
    """`top3: rounds: 6 of the 15 planned (2 of 5 in each of 3 processes); the 4.0 s floor stopped
    the rest`: a log's last round line read as a full count (`round 2: 24/24`) with no word that the
    budget ended the rounds. Counted as the table's rounds column counts, a round in each process
    (`rounds: 1` sat beside the table's `3+9`); `1 to 3 by strategy` where a round cut short left
    some strategies fewer or none (`timed`: this run's rounds of each point), as their rows show;
    `1 of the 3 planned` where a round cut in its first process left each strategy one (walk 10 read
    `rounds: 3` for 8 of 24 blocks)."""
    said = f"the {limit_s:.1f} s {limit}"
    workers = plural(processes, 'process', 'processes')
    each = f"{count} of {planned} in each of {workers}"
    some = [t for t in timed if t > 0]
    lo, hi = min(some, default=0), max(some, default=0)
    if lo < hi or len(some) < len(timed) or (some and hi < count * processes):
        counted = f"{lo} to {hi} by strategy, of" if lo < hi else f"{lo} of"
        untimed = len(timed) - len(some)
        none = f", {plural(untimed, 'strategy', 'strategies')} not timed" if untimed else ""
        return (f"{analysis}: rounds: {counted} the {planned * processes} planned ({planned} planned in each of "
                f"{workers}){none}; {said} stopped the rest")
    if count < planned:
        return (f"{analysis}: rounds: {count * processes} of the {planned * processes} planned ({each}); "
                f"{said} stopped the rest")
    return (f"{analysis}: rounds: {count * processes} ({planned * processes} planned, {each}); "
            f"{said} ran out before every speedup settled")


def own_rounds(rounds: Rounds) -> list[int]:
    """This run's rounds of each point still timing, on its least-timed group: what its row counts."""
    return [min(len(rounds.lines[id(s)].new) for s in subjects) for label, subjects in rounds.subjects.items()
            if subjects and label not in rounds.failures and label not in rounds.lost]


@dataclass(frozen=True)
class BenchClockLabel:
    """The run's progress item, read at every redraw: the benchmark's clock moves as each block
    is timed, not only when the next analysis starts; while one-off work holds it still, the
    work's name (`spectrum: starting workers`; walk 9: `0.0/3.0 s budget` stood for 6 s)."""

    analysis: str
    budget: Budget
    limit_s: float
    limit: str = "budget"  # what limit_s is: "budget", or "floor" when the floor is more

    def phrases(self) -> Phrases:
        if doing := self.budget.doing:
            return Phrases((f"{self.analysis}: {doing}",))
        return clock_text(self.analysis, self.budget.live_s, self.limit_s, self.limit)

    def __str__(self) -> str:
        return str(self.phrases())

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.phrases().__rich_console__(console, options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return self.phrases().__rich_measure__(console, options)


def planned_blocks(step: Step) -> int:
    """The blocks its plan times: each point's rounds on each group in each process."""
    return PROCESSES * sum(a.rounds for t in step.timed for a in t.allocations)


def timing_left_s(step: Step, kept: bool, stopped: Interrupted | None) -> float:
    """Its planned timing seconds this run still times, its one-off work with them (starting its
    workers, verifying: plan.overheads.timing_one_off_s): none where it takes the analysis over
    (`kept`), less the share of its planned blocks the stopped run kept of the one it stopped in
    (run.interrupted); a resumed run's ETA counted both as work to do, ran far under its plan,
    then read `ETA >0:00:40` with 14 s left."""
    if kept:
        return 0.0
    timing, planned = sum(t.estimate_s for t in step.timed), planned_blocks(step)
    done = sum(len(k.rounds) for k in stopped.subjects) if stopped and stopped.analysis == step.analysis else 0
    return timing * (1.0 - min(done, planned) / planned if planned else 1.0) + timing_one_off_s(step)


def work_left(plan: Plan, kept: set[str], stopped: Interrupted | None) -> tuple[list[float], float]:
    """The run's units for its ETA (base.progress.eta_s): each analysis' seconds still to do, and
    the plan's estimate less what the stopped run this one resumes did. Each unit holds its own
    one-off benchmark work, which the plan's overheads hold for the whole run (spread over every
    unit, the last analysis' `starting workers` read `ETA ~0:00:01` with 7 s left)."""
    units = [plan.busy_s(s.estimate_s + timing_left_s(s, s.analysis in kept, stopped)) for s in plan.steps]
    full = sum(plan.busy_s(s.estimate_s + timing_left_s(s, False, None)) for s in plan.steps)
    return units, max(plan.estimate_s - full + sum(units), 0.0)


def blocks(rounds: Rounds) -> int:
    """Blocks its points have timed, this run's and those taken back from a stopped run."""
    return sum(len(line.new) for line in rounds.lines.values())


def counted_share(step: Step, left_s: float, timing: Callable[[], Timing | None]) -> Callable[[], float]:
    """The share of the step's work left its timed blocks say is done, for the run's ETA
    (base.progress.Phase.within's `counted`): 0 until they start, then its full analysis and the
    blocks timed since against the planned still to time (at most all: a fast run may time more),
    a block at a time (by rounds, one planned round counted nothing until it ended), with its
    one-off work (starting workers) but for AFTER_BLOCKS of it, what follows its last block
    (verifying the untimed points' answers), counted once its timing ends: the share never
    reached its end before the rounds did (walk 10: `~0:00:01` with 7 s left). Held then (its
    features follow), so that it never falls back. `left_s`: timing_left_s."""
    whole = step.estimate_s + left_s
    part = left_s / whole if whole > 0 else 0.0
    after = AFTER_BLOCKS * timing_one_off_s(step) / whole if whole > 0 and left_s > 0 else 0.0
    seen, opened = [0.0], [False]

    def share() -> float:
        now = timing()
        if now is not None and now[0].analysis == step.analysis:
            rounds, kept = now
            todo = planned_blocks(step) - kept
            timed = min(1.0, (blocks(rounds) - kept) / todo) if todo > 0 else 1.0
            opened[0] = True
            seen[0] = max(seen[0], 1.0 - part + (part - after) * timed)
        elif opened[0]:  # its timing ended, the one-off work after its blocks with it
            seen[0] = 1.0
        return seen[0]
    return share
