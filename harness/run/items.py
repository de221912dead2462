"""What a timed point's rounds are pooled under (an Item), its rounds pooled and new (a Timeline),
and whether pooled rounds are plausible beside what this machine expects or measures: the pool is
data from elsewhere."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.base.units import format_seconds, plural
from harness.bench.budget import Allocation
from harness.bench.series import Line, Round, workload_totals
from harness.data.layout import AdapterLayout
from harness.data.workload import ShapeGroup
from harness.machine.measurements import Item
from harness.machine.wisdom import width
from harness.plan.candidates import position_shape
from harness.plan.model import Plan, Step, Timed
from harness.run.subjects import Subject
from harness.store.keys import TIMING_PACKAGES, source_digest
from harness.strategies.registry import STRATEGIES

# Pooled rounds further than this from what the plan expects of a call are not this machine's
# (a model estimate can be 10x off; a planted 1,000x speedup is not)...
WILD_PLAN = 30.0
# ...or further than this from what the run itself measured (a busy minute slows a call 2-3x).
WILD_RUN = 4.0
# Seconds below this compare as this: a model knows nothing of a tiny call's fixed overheads (a
# 12 x 8 svdvals: modelled at 1 us, measured at 30 us), and a planted figure matters on big calls.
OVERHEAD_S = 1e-3


def placed(plan: Plan, step: Step, timed: Timed, a: Allocation, groups: dict[str, ShapeGroup],
           layout: Callable[[], AdapterLayout]) -> tuple[Item, int]:
    """What an allocation's rounds are pooled under, and the matrices (a PCA's positions) of its
    group in the workload (`layout` is asked for only by a PCA: other workloads may have none)."""
    bench = plan.bench
    assert bench is not None
    if step.op == "pca":
        positions = layout()
        shape, rank, per_call, total = position_shape(positions), layout_rank(positions), 1, len(positions.positions)
    else:
        g = groups[a.group]
        shape, rank, per_call, total = g.shape, g.rank, a.matrices, len(g)
    item = Item(code=source_digest(TIMING_PACKAGES), **timed.point._asdict(), op=step.op, k=step.k, shape=shape,
                rank=rank, dtype=plan.dtype, device=timed.device, threads=bench.threads,
                width=width(STRATEGIES[timed.strategy].fans_out, plan.workers, per_call))
    return item, total


def layout_rank(layout: AdapterLayout) -> int | None:
    """A PCA's rank as its pooled rounds are keyed: its positions' mean LoRA rank, rounded (None
    for dense deltas). A position's shape says nothing of it, yet factored_gram's cost grows as
    rank^2 and dual_gram's forming of each delta as rank: rounds timed at one rank are not another's."""
    ranks = [p.rank for p in layout.positions if p.rank is not None]
    return round(sum(ranks) / len(ranks)) if ranks else None


def plausible(pooled: Sequence[Round], expected_s: float, wild: float, what: str, matrices: int) -> str | None:
    """Why pooled rounds are not to be believed beside `expected_s` seconds a call of `matrices`
    matrices (`what` says whose figure that is), or None: their median more than `wild` times off
    it either way. Said per matrix, the table's unit: `14.6 ms a call` of 4 matrices matched no row."""
    if not pooled or not expected_s > 0:
        return None
    median = float(np.median([r.seconds for r in pooled]))
    a, b = max(median, OVERHEAD_S), max(expected_s, OVERHEAD_S)
    if max(a / b, b / a) <= wild:  # judged above the call overhead: a few µs apart is no sign
        return None
    each = max(matrices, 1)
    # said between the two figures it prints (walk 10: `2.10 ms ... 4x off the 125 µs`, floored)
    return (f"{plural(len(pooled), 'round')} at {format_seconds(median / each)} a matrix, "
            f"{max(median / expected_s, expected_s / median):,.0f}x off the {format_seconds(expected_s / each)} {what}")


def disagreeing(pooled: Sequence[Round], new: Sequence[Round], matrices: int) -> str | None:
    """Why a point's pooled rounds are not to be believed beside the rounds this run timed of it
    (WILD_RUN off their median), or None: also None before this run timed it, and while its own
    rounds are WILD_RUN apart themselves (walk 11: 6 pooled rounds of two runs that agreed were
    set aside beside 2 of this run's 14x apart, and the verdict rested on those 2). Not
    bench.noise's dispersion verdict: that marks a time `unstable` from 1.5x apart, where own
    rounds still judge a pool WILD_RUN off; only own rounds further apart than the tolerance they
    would judge by cannot tell a wild pool from their own spread."""
    seconds = [r.seconds for r in new]
    if not seconds or max(seconds) > WILD_RUN * min(seconds):
        return None
    return plausible(pooled, float(np.median(seconds)), WILD_RUN, "this run's own rounds measured", matrices)


@dataclass
class Timeline:
    """One subject's rounds: earlier runs' (pooled) first, then this run's."""

    pooled: list[Round]
    new: list[Round] = field(default_factory=list)
    aside: list[str] = field(default_factory=list)  # the ids of pooled rounds this run discarded
    calls: int = 0
    warmed: set[int] = field(default_factory=set)  # the slots whose worker has run its warm-ups
    first_call: float | None = None  # a process's untimed first call over its block's mean, where measured
    threads: dict[str, int] = field(default_factory=dict)  # the thread pools its worker timed with

    @property
    def rounds(self) -> list[Round]:
        return self.pooled + self.new


def line_of(subjects: list[Subject], lines: dict[int, Timeline]) -> Line:
    """Round id -> a point's workload total (its subjects are its groups), over the rounds that
    timed every group."""
    return workload_totals(([r.round for r in lines[id(s)].rounds], [r.seconds for r in lines[id(s)].rounds],
                            s.allocation.matrices, s.total) for s in subjects)


def busy_of(subjects: list[Subject], lines: dict[int, Timeline]) -> set[str]:
    """The ids of the rounds of these subjects timed while the machine was busy."""
    return {r.round for s in subjects for r in lines[id(s)].rounds if r.busy}
