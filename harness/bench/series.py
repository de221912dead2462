"""Rounds and the speedups they make, as value objects that own their statistics.

A Round is one strategy's seconds of one call in one round; its id names the run that timed it
(a unique id per run, never a timestamp: two runs started in the same second had shared ids, and
one's strategy was paired with the other's baseline), the analysis and the round. A Line is one
strategy's workload total per round id. A Speedup pairs a strategy's line with its baseline's by
round id and carries its interval, the run as the unit of replication (bench.statistics).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from pydantic import BaseModel

from harness.bench.budget import SPREAD_ROUNDS
from harness.bench.statistics import DEFAULT_SPREAD, MIN_SPREAD, run_interval, run_spread


Line = dict[str, float]  # round id -> a strategy's workload total in that round
# The between-run spread a run measured entirely under load stands for: busy runs of the main job
# put one speedup at 1,358x-1,800x on two spinning processes, and at 1,460x-35,700x where numpy's
# two BLAS threads lost their cores (one 3072 x 768 svdvals took 9.9 s against 0.3 s).
BUSY_SPREAD = 0.35


def round_id(run: str, analysis: str, n: int) -> str:
    return f"{run}#{analysis}#{n}"


def run_of(round_id: str) -> str:
    """The run that timed a round (the id's first part)."""
    return round_id.split("#", 1)[0]


class Round(BaseModel):
    """One round's seconds of one call (of an allocation's matrices, or one PCA position)."""

    round: str  # "<run>#<analysis>#<n>": the same id on every item timed in that round
    seconds: float
    busy: list[str] = []  # why the machine was not quiet around it (bench.noise.condition_reasons)

    @property
    def run(self) -> str:
        return run_of(self.round)


def workload_totals(groups: Iterable[tuple[Sequence[str], Sequence[float], int, int]]) -> Line:
    """Round id -> the workload total that round measured, for the rounds that timed every group,
    in the first group's order. A group is (round ids, seconds of one call, the matrices a call
    takes, the group's matrices): each call's seconds per matrix scaled to the group's size."""
    per_group = [{r: s / sampled * total for r, s in zip(ids, seconds)} for ids, seconds, sampled, total in groups]
    common = set.intersection(*(set(p) for p in per_group)) if per_group else set()
    order = list(per_group[0]) if per_group else []
    return {r: sum(p[r] for p in per_group) for r in order if r in common}


def by_run(logs: dict[str, float]) -> list[list[float]]:
    """Values keyed by round id, grouped by the run that timed them, in first-seen order."""
    runs: dict[str, list[float]] = {}
    for rid, value in logs.items():
        runs.setdefault(run_of(rid), []).append(value)
    return list(runs.values())


def log_ratios(base: Line, own: Line, rounds: Iterable[str] | None = None) -> dict[str, float]:
    """log(baseline / strategy) of every round both timed (of `rounds`, when given)."""
    wanted = own if rounds is None else [r for r in rounds if r in own]
    return {r: math.log(base[r] / own[r]) for r in wanted if r in base}


def pair_spread(base: Line, own: Line) -> float | None:
    """The between-run log sd a pair of lines has shown (three runs on), for the single-run floor."""
    return run_spread(by_run(log_ratios(base, own)))


class Speedup(BaseModel):
    """A strategy's speedup over its baseline: the geometric mean of the paired ratios and its
    95% interval, the rounds and runs behind it, and how many of them were pooled or busy."""

    estimate: float
    low: float
    high: float
    rounds: int
    runs: int
    pooled: int = 0  # rounds earlier runs measured
    busy: int = 0  # rounds measured while the machine was busy (used only when quiet ones were too few)
    spread: float = DEFAULT_SPREAD  # the between-run log sd applied when all rounds are one run's

    @property
    def half_width(self) -> float:
        """The larger relative distance from the estimate to an end of the interval."""
        return max(self.high / self.estimate - 1.0, 1.0 - self.low / self.estimate)

    def resolved(self, target: float) -> bool:
        return math.isfinite(self.half_width) and self.half_width <= target

    def unresolved_reason(self, target: float) -> str | None:
        """Why the speedup is not resolved to `target`, in words; None when it is."""
        if self.resolved(target):
            return None
        where = f"{self.rounds} round{'s' if self.rounds != 1 else ''} of {self.runs} run{'s' if self.runs != 1 else ''}"
        if not math.isfinite(self.half_width):
            return f"{where}: no interval"
        floor = f" (one run: at least the machine's ±{100 * self.spread:.0f}% between runs)" if self.runs == 1 else ""
        return f"interval ±{100 * self.half_width:.0f}% over {where}{floor}, wider than the ±{100 * target:.0f}% asked for"


def speedup(base: Line, own: Line, *, spread: float | None = None, pooled: set[str] = frozenset(),  # type: ignore[assignment]
            busy: set[str] = frozenset()) -> Speedup | None:  # type: ignore[assignment]
    """The baseline's line over a strategy's, paired by round; None when no round timed both.
    Rounds measured under load are left out while the quiet ones give SPREAD_ROUNDS pairs (a busy
    minute measures another machine); with fewer, all are used and counted as busy."""
    paired = [r for r in own if r in base]
    if not paired:
        return None
    quiet = [r for r in paired if r not in busy]
    used = quiet if len(quiet) >= SPREAD_ROUNDS else paired
    logs = log_ratios(base, own, used)
    applied = max(spread, MIN_SPREAD) if spread is not None else DEFAULT_SPREAD
    if used and all(r in busy for r in used):  # one busy run says little of the next: load varies
        applied = max(applied, BUSY_SPREAD)
    interval = run_interval(by_run(logs), applied)
    return Speedup(estimate=interval.estimate, low=interval.low, high=interval.high, rounds=interval.n,
                   runs=interval.runs, pooled=sum(r in pooled for r in used), busy=sum(r in busy for r in used),
                   spread=applied)


def within_half_width(base: Line, own: Line, run: str) -> float:
    """The half-width of one run's own rounds' interval (no between-run term): more rounds of that
    run narrow only this part of a speedup's interval."""
    logs = [v for r, v in log_ratios(base, own).items() if run_of(r) == run]
    if len(logs) < SPREAD_ROUNDS:
        return math.inf
    interval = run_interval([logs], 0.0)
    return max(interval.high / interval.estimate - 1.0, 1.0 - interval.low / interval.estimate)

