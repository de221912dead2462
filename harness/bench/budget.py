"""Sharing the benchmark budget in rounds.

A round of one analysis times the baseline and each of its compared strategies on every shape
group in each of PROCESSES worker processes (slots), one block each: a block is one call, or for a
call shorter than BLOCK_S as many calls as fill it (their mean is the block's seconds: what such
calls cost a user). Processes are a run's replicates, runs the speedups' (bench.statistics), so the
budget buys processes and rounds, not calls.

The floor is the least benchmarking that answers every compared strategy with an interval: in each
of its PROCESSES slots, its untimed warm-up calls (fast calls, baselines, a PCA's positions) and
MIN_ROUNDS rounds. A run spends
max(budget, floor); what the budget leaves above the floor goes to extra rounds, each analysis a
share in proportion to what its rounds cost, so every analysis gets about as many rounds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pydantic import BaseModel

from harness.base.units import format_seconds, plural

# The floor's rounds of each point: one. Rounds of one run share its state (within a run the main
# job's rounds spread by 0.004-0.06 in log, between runs its speedups by 0.05-0.25), so a second
# round of the same run says little a second run would not say better; one round already has an
# interval (bench.statistics), and the budget buys more where the run's own spread is wide.
MIN_ROUNDS = 1
# Worker processes (slots) each point is timed in, every run: numpy's SVD of one 3072x768 delta had
# medians of 278-441 ms across six fresh processes and agreed within +-5% inside each, so a
# process's mean over one block is a sample of what varies and a second block in it adds little.
PROCESSES = 3
SPREAD_ROUNDS = 2  # the fewest rounds of one run that show its own spread
MAX_ROUNDS = 30  # planned at most: beyond, the interval narrows by less than a tenth per round
BLOCK_S = 0.02  # a round's block of a fast call: calls until this much is sampled
# A call this long gets no untimed warm-up (the strategy's imports and compilation are warmed
# apart): its first round's answer is the one verified. What a first call costs more (allocator,
# page faults) is small against it, and a warm-up would double the floor of the slow baselines;
# torch's svdvals of a 3072x768 matrix took 162 ms in its first round and 152-176 ms later.
# Not so a baseline, whose every round enters every ratio of its analysis: numpy's first call on
# each shape of the main job took 321 and 420 ms, 174-223 ms in the next six rounds, and that one
# round widened all three spectrum intervals to +-22-27% over 7 rounds. Nor a PCA's position,
# whose first call allocates the streaming buffers: dual_gram took 690 ms in the first round of
# each run, 173-217 ms in the next 17. Baselines and positions are always warmed up.
SLOW_CALL_S = 0.05
# A strategy whose call on the whole sample is estimated under this takes the whole sample in each
# round's call: matrices an iterative solver finds harder (ARPACK took 15 ms on one delta of the
# main job and 30 ms on the next) then average out inside the call instead of swinging the round.
WHOLE_SAMPLE_S = 0.2
# A call under MEDIAN_CALL_S is timed at least MEDIAN_CALLS times in each block (their mean is the
# block's): one call of scipy's svds (60-90 ms on the main job's sample) swung 3x from round to
# round (log spread 0.33); three a block took it to 0.07, which resolves in a few rounds.
MEDIAN_CALL_S = 0.1
MEDIAN_CALLS = 3
# the phase may pass its limit by this share of it, the last analysis' floor as much as the first's
OVERRUN = 0.10
PACE_FLOOR = 0.5  # a phase running faster than planned plans no more than twice the rounds
# What a block costs beyond its calls: forming its round's matrices, reading /proc before and after
# (pyperf's conditions), the progress display. 7-38 ms a block on the main job (median ~15 ms); left
# out, the floor of its 18 blocks a round came out 0.6-0.9 s short, and the last analysis lost its
# second round to the analyses before it.
BLOCK_OVERHEAD_S = 0.015
POSITIONS = "positions"  # the one "group" of a pca step: its (layer, module) positions
ItemKey = tuple[str, str, str]  # one item of the phase: (analysis, strategy, shape group)


class Allocation(BaseModel):
    """What one compared strategy gets on one shape group (or on the PCA's positions)."""

    group: str
    per_matrix_s: float  # estimated seconds of one matrix (one position for pca)
    matrices: int  # timed in each round's call (a fan-out strategy: one per worker)
    warmup: int  # untimed calls before its first round, for a fast call
    calls: int = 1  # timed calls in a round's block at least
    repeats: int = 1  # the spec's least calls a block: `calls` is calls_for(the call's seconds, repeats)
    rounds: int = MIN_ROUNDS  # planned within the budget; the phase stops earlier once its speedup is resolved
    sample: int  # matrices the rounds rotate through
    baseline: bool = False  # the analysis' baseline: warmed up however slow its call

    @property
    def call_s(self) -> float:
        return self.per_matrix_s * self.matrices

    @property
    def block_s(self) -> float:
        """Seconds of its block in one round: `calls` calls, fast ones repeated to fill BLOCK_S,
        and the block's own overhead."""
        return max(self.call_s * self.calls, BLOCK_S) + BLOCK_OVERHEAD_S

    @property
    def warmups(self) -> int:
        """Untimed calls before its first round: none for a slow call, but for a baseline's or
        a PCA position's."""
        slow = self.call_s >= SLOW_CALL_S and not self.baseline and self.group != POSITIONS
        return 0 if slow else self.warmup

    @property
    def first_s(self) -> float:
        """Seconds of its untimed calls."""
        return self.call_s * self.warmups

    @property
    def estimate_s(self) -> float:
        """Its planned rounds in each of PROCESSES processes, with each one's warm-ups."""
        return PROCESSES * (self.first_s + self.rounds * self.block_s)


def calls_for(call_s: float, repeats: int) -> int:
    """Timed calls in a block: `repeats`, and at least MEDIAN_CALLS for a call under MEDIAN_CALL_S
    (planned from the estimate; the rounds correct it once a call is timed: the model put torch's
    svdvals of a 3072x768 matrix under 100 ms on a first run, it took 160-210 ms, and three calls
    a block cost each spectrum round 0.7 s more)."""
    return max(repeats, MEDIAN_CALLS if call_s < MEDIAN_CALL_S else 1)


def floors(items: dict[ItemKey, Allocation]) -> dict[str, tuple[float, float]]:
    """Per analysis: its floor (its items' warm-ups and MIN_ROUNDS rounds in each of PROCESSES
    processes) and one round's seconds (a block of each item in each process)."""
    out: dict[str, tuple[float, float]] = {}
    for (analysis, _strategy, _group), a in items.items():
        floor, round_s = out.get(analysis, (0.0, 0.0))
        out[analysis] = (floor + PROCESSES * (a.first_s + MIN_ROUNDS * a.block_s), round_s + PROCESSES * a.block_s)
    return out


def floor_s(items: dict[ItemKey, Allocation]) -> float:
    """The least benchmarking that answers every item with an interval."""
    return sum(floor for floor, _round_s in floors(items).values())


def allocate(items: dict[ItemKey, Allocation], budget_s: float) -> dict[ItemKey, Allocation]:
    """MIN_ROUNDS for every analysis, and the budget above the floor as extra rounds, shared as
    the phase shares it (Budget.extra_s): every analysis gets about as many extra rounds (the
    cheap ones no more: a round's baseline serves every strategy of it, and intervals narrow with
    rounds, not seconds)."""
    per_analysis = floors(items)
    budget = Budget(budget_s, budget_s, {a: f for a, (f, _r) in per_analysis.items()},
                    {a: r for a, (_f, r) in per_analysis.items()})
    extra = {a: int(budget.extra_s(a) / r) if r else 0 for a, (_f, r) in per_analysis.items()}
    return {key: a.model_copy(update={"rounds": min(MIN_ROUNDS + extra[key[0]], MAX_ROUNDS)})
            for key, a in items.items()}


def rounds_note(allocations: list[Allocation]) -> str:
    """What the plan gives one strategy in words: "3 rounds planned in each of 3 processes, 1 matrix a
    call (est. 0.1 s): ~0.3 s of its timing a round" (a round: its block of each shape group in each
    process; "in each of", as the run's stderr counts them: walk 16 read "1 round in 3 processes" as
    one round spread over three).
    A call under BLOCK_S is repeated to fill its block, so every fast strategy's round costs about
    the same: the note says so, and gives the call's estimate, the figure the run's table checks."""
    if not allocations:
        return ""
    a = max(allocations, key=lambda x: x.block_s)
    unit = ("position", "positions") if a.group == POSITIONS else ("matrix", "matrices")
    per = f"{plural(a.matrices, *unit)} a call (est. {format_seconds(a.call_s)})"
    filled = f", repeated to fill {format_seconds(BLOCK_S)} blocks" if a.call_s * a.calls < BLOCK_S else ""
    return (f"{plural(a.rounds, 'round')} planned in each of {PROCESSES} processes, {per}{filled}: "
            f"~{format_seconds(PROCESSES * sum(x.block_s for x in allocations))} of its timing a round")


def estimate_parts(allocations: list[Allocation]) -> str:
    """What a strategy's timing estimate adds up: "1.12 s warm-up + 2 rounds × 1.26 s" (walk 18 read
    `2.32 s` beside "~1.20 s of its timing a round" as neither one round nor the rounds planned: the
    untimed warm-up calls in each process were the rest). "" without allocations."""
    if not allocations:
        return ""
    warm_s = PROCESSES * sum(a.first_s for a in allocations)
    counts = {a.rounds for a in allocations}
    rounds = (f"{plural(counts.pop(), 'round')} × {format_seconds(PROCESSES * sum(a.block_s for a in allocations))}"
              if len(counts) == 1 else f"{format_seconds(PROCESSES * sum(a.rounds * a.block_s for a in allocations))} of rounds")
    return f"{format_seconds(warm_s)} warm-up + {rounds}" if warm_s else rounds


@dataclass
class Pace:
    """How much longer than planned the phase's blocks ran so far (1 before any): a block not yet
    timed is estimated at that pace. Under two busy processes the main job's spectrum rounds took
    2-2.5x their plan."""

    planned_s: float = 0.0
    took_s: float = 0.0

    @property
    def factor(self) -> float:
        return max(self.took_s / self.planned_s, PACE_FLOOR) if self.planned_s > 0 else 1.0


@dataclass
class Budget:
    """The phase's one clock and its one formula. The phase may spend at most `limit_s`
    (max(budget, floor)) and OVERRUN beyond it; each analysis its floor (MIN_ROUNDS rounds and
    their warm-ups) and a share of what the budget leaves above every floor still to come, in
    proportion to what one of its rounds costs (Budget.extra_s, which the plan's `allocate` uses
    too). Time spent `outside` the budget (starting workers, imports, verifying answers) is
    one-off work, counted apart. The clock is read here and nowhere else."""

    budget_s: float
    limit_s: float
    floors: dict[str, float]  # analysis -> the floor it still needs (0 when pooled rounds cover it), until it ran
    weights: dict[str, float]  # analysis -> seconds of one of its rounds
    spent_s: float = 0.0  # the analyses done: their warm-ups and rounds
    one_off_s: float = 0.0
    workers: int = 0  # timing workers started (`outside`): one_off_s per worker is what each costs this run
    quiet: bool | None = None  # whether the machine was quiet when the rounds last looked (seen; None: not yet)
    _began: float | None = None
    _outside_s: float = 0.0
    _share_s: float = 0.0
    _outside_began: float = 0.0  # when the open `outside` block began
    # the open `outside` blocks' names, innermost last: one inside another is counted once
    _doing: list[str] = field(default_factory=list)

    @staticmethod
    def clock() -> float:
        return time.perf_counter()

    def extra_s(self, analysis: str) -> float:
        """Seconds of rounds beyond its floor this analysis may spend: its share, by the cost of a
        round, of what the budget leaves once what was spent and every pending floor are counted."""
        spare = self.budget_s - self.spent_s - sum(self.floors.values())
        total = sum(self.weights.values())
        return max(spare, 0.0) * (self.weights.get(analysis, 0.0) / total if total else 0.0)

    def open(self, analysis: str, kept_s: float = 0.0) -> None:
        """The analysis' share, less `kept_s`: what its rounds a resumed run keeps took in the stopped run."""
        self._share_s = max(self.floors.get(analysis, 0.0) + self.extra_s(analysis) - kept_s, 0.0)
        self._began, self._outside_s = self.clock(), 0.0

    def _inside_s(self, now: float) -> float:
        """Seconds of the open `outside` block since the open analysis began (0 when none is open)."""
        if not self._doing or self._began is None:
            return 0.0
        return now - max(self._outside_began, self._began)

    @property
    def elapsed_s(self) -> float:
        """The open analysis' warm-ups and rounds so far: it holds still during one-off work (the
        progress counter grew through a worker's start, then fell back by it when that ended)."""
        if self._began is None:
            return 0.0
        now = self.clock()
        return now - self._began - self._outside_s - self._inside_s(now)

    @property
    def one_off_live_s(self) -> float:
        """One-off seconds so far, the open `outside` block's included: the run's ETA watches an
        analysis' workers start against what it counted for them (run.eta.Held)."""
        return self.one_off_s + (self.clock() - self._outside_began if self._doing else 0.0)

    @property
    def live_s(self) -> float:
        """Spent so far, the open analysis included: what a progress display shows."""
        return self.spent_s + self.elapsed_s

    @property
    def left_s(self) -> float:
        """What the whole phase may still spend, its overrun allowance included."""
        return self.limit_s * (1 + OVERRUN) - self.live_s

    def seen(self, quiet: bool) -> bool:
        """Keep whether the machine was quiet when the rounds last looked, and return it: past the
        limit it says what the rest of the phase still times (run.eta.least)."""
        self.quiet = quiet
        return quiet

    def fits(self, seconds: float, floor: bool, quiet: bool) -> bool:
        """Whether work of `seconds` may start now: a floor's on a quiet machine always (the plan
        may have underestimated it; every speedup gets its interval), else within what the phase
        has left; beyond the floor, within the analysis' share too."""
        if floor:
            return quiet or seconds <= self.left_s
        return self.elapsed_s + seconds <= self._share_s and seconds <= self.left_s

    @property
    def doing(self) -> str:
        """The one-off work under way, as its innermost named `outside` block names it ("" when
        none): while it runs the clock holds still, and a display says what runs instead."""
        return next((what for what in reversed(self._doing) if what), "")

    @contextmanager
    def outside(self, what: str = "", workers: int = 0) -> Iterator[None]:
        """One-off work (`what` it is, for `doing`; `workers` it starts): its seconds are not the budget's."""
        began = self.clock()
        if not self._doing:
            self._outside_began = began
        self._doing.append(what)
        try:
            yield
        finally:
            if len(self._doing) == 1:  # the outermost: its seconds counted once
                end = self.clock()
                self._outside_s += self._inside_s(end)
                self.one_off_s += end - began
            self._doing.pop()
            self.workers += workers

    def close(self, analysis: str) -> None:
        self.spent_s += self.elapsed_s
        self._began = None
        self.floors.pop(analysis, None)
        self.weights.pop(analysis, None)
