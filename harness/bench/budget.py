"""Sharing the benchmark budget in rounds.

A round of one analysis times the baseline and each of its compared strategies on every shape
group, back to back, one block each: a block is one call, or for a call shorter than BLOCK_S as
many calls as fill it (their median is the block's seconds). Rounds are the replicates of the
speedups' intervals (bench.statistics), so the budget buys rounds, not calls.

The floor is the least benchmarking that answers every compared strategy with an interval: its
untimed warm-up calls (fast calls only) and MIN_ROUNDS rounds. A run spends
max(budget, floor); what the budget leaves above the floor goes to extra rounds, each analysis a
share in proportion to what its rounds cost, so every analysis gets about as many rounds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pydantic import BaseModel

from harness.base.units import format_seconds

MIN_ROUNDS = 2  # the fewest rounds that give an interval at all
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
# A call under MEDIAN_CALL_S is timed at least MEDIAN_CALLS times in each block and the block is
# their median: one call of scipy's svds (60-90 ms on the main job's sample) swung 3x from round to
# round (log spread 0.33); the median of three took it to 0.07, which resolves in a few rounds.
MEDIAN_CALL_S = 0.1
MEDIAN_CALLS = 3
# the phase may pass its limit by this share of it, the last analysis' floor as much as the first's
OVERRUN = 0.10
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
        return self.first_s + self.rounds * self.block_s


def calls_for(call_s: float, repeats: int) -> int:
    """Timed calls in a block: `repeats`, and at least MEDIAN_CALLS for a call under MEDIAN_CALL_S
    (planned from the estimate; the rounds correct it once a call is timed: the model put torch's
    svdvals of a 3072x768 matrix under 100 ms on a first run, it took 160-210 ms, and three calls
    a block cost each spectrum round 0.7 s more)."""
    return max(repeats, MEDIAN_CALLS if call_s < MEDIAN_CALL_S else 1)


def floors(items: dict[ItemKey, Allocation]) -> dict[str, tuple[float, float]]:
    """Per analysis: its floor (its items' warm-ups and MIN_ROUNDS rounds) and one round's seconds."""
    out: dict[str, tuple[float, float]] = {}
    for (analysis, _strategy, _group), a in items.items():
        floor, round_s = out.get(analysis, (0.0, 0.0))
        out[analysis] = (floor + a.first_s + MIN_ROUNDS * a.block_s, round_s + a.block_s)
    return out


def floor_s(items: dict[ItemKey, Allocation]) -> float:
    """The least benchmarking that answers every item with an interval."""
    return sum(floor for floor, _round_s in floors(items).values())


def allocate(items: dict[ItemKey, Allocation], budget_s: float) -> dict[ItemKey, Allocation]:
    """MIN_ROUNDS for every analysis, and the budget above the floor as extra rounds, shared so
    that each analysis gets the same number of extra rounds (the cheap ones no more: a round's
    baseline serves every strategy of it, and intervals narrow with rounds, not seconds)."""
    per_analysis = floors(items)
    rounds_s = sum(round_s for _floor, round_s in per_analysis.values())
    spare = max(budget_s - sum(floor for floor, _round_s in per_analysis.values()), 0.0)
    rounds = min(MIN_ROUNDS + (int(spare / rounds_s) if rounds_s else 0), MAX_ROUNDS)
    return {key: a.model_copy(update={"rounds": rounds}) for key, a in items.items()}


def rounds_note(allocations: list[Allocation]) -> str:
    """What the plan gives an item in words: "3 rounds, 1 matrix per round: ~0.3 s a round"."""
    if not allocations:
        return ""
    a = max(allocations, key=lambda x: x.block_s)
    unit = ("position", "positions") if a.group == POSITIONS else ("matrix", "matrices")
    per = f"{a.matrices} {unit[0] if a.matrices == 1 else unit[1]} a call"
    return f"{a.rounds} rounds, {per}: ~{format_seconds(sum(x.block_s for x in allocations))} a round"


def resolving_shares(needs: dict[str, list[int]], round_s: dict[str, float], spare_s: float) -> dict[str, float]:
    """Seconds of extra rounds per analysis that resolve the most speedups within `spare_s`:
    `needs` holds, per analysis, the extra rounds each unresolved speedup still needs (from the
    spread of its pooled rounds, bench.statistics.rounds_to_resolve); rounds go first where a
    speedup resolves for the fewest seconds. A top-3 round of the main job costs 0.9 s and one
    or two more resolved its speedups; a spectrum round 1.4 s, and five more might. Empty
    when no speedup resolves within `spare_s`."""
    extra = dict.fromkeys(needs, 0)
    left = spare_s
    while True:
        best: tuple[float, str, int] | None = None
        for analysis, rounds in needs.items():
            pending = sorted(n for n in rounds if n > extra[analysis])
            if not pending:
                continue
            step = pending[0] - extra[analysis]
            cost = step * round_s[analysis]
            per = cost / pending.count(pending[0])
            if cost <= left and (best is None or per < best[0]):
                best = (per, analysis, step)
        if best is None:
            break
        _per, analysis, step = best
        extra[analysis] += step
        left -= step * round_s[analysis]
    return {analysis: n * round_s[analysis] for analysis, n in extra.items() if n}


@dataclass
class Limit:
    """The phase's one clock: what it may spend at most (max(budget, floor)), what the budget
    allows beyond the floors, what it has spent, and what each analysis still needs for its floor,
    so an early analysis never spends a later one's. The floor's rounds may take the whole limit;
    rounds beyond it only the budget: a floor the plan overestimated (on a first run, from the
    model) is not a licence to spend its estimate."""

    limit_s: float
    budget_s: float
    floors: dict[str, float]  # analysis -> the floor it still needs (0 when pooled rounds cover it), until it has run
    weights: dict[str, float]  # analysis -> seconds of one of its rounds
    spent_s: float = 0.0
    since: float | None = None  # when the analysis under way began (time.perf_counter)

    @property
    def live_s(self) -> float:
        """Spent so far, the analysis under way included: what a progress display shows."""
        return self.spent_s + (time.perf_counter() - self.since if self.since is not None else 0.0)

    def begin(self) -> None:
        self.since = time.perf_counter()

    def extra(self, analysis: str) -> float:
        """Seconds of rounds beyond its floor this analysis may spend: a share, in proportion to
        the cost of a round, of what the budget leaves once what was spent and the floors of it
        and of the analyses still to run are counted; nothing when they take the budget."""
        pending = [a for a in self.weights if a != analysis]
        spare = self.budget_s - self.spent_s - self.floors.get(analysis, 0.0) - sum(self.floors.get(a, 0.0)
                                                                                  for a in pending)
        weight = self.weights.get(analysis, 0.0)
        share = weight / (weight + sum(self.weights[a] for a in pending) or 1.0)
        return max(spare, 0.0) * share

    def done(self, analysis: str, seconds: float) -> None:
        self.spent_s += seconds
        self.since = None
        self.floors.pop(analysis, None)
        self.weights.pop(analysis, None)
