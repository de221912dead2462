"""The ETA's arithmetic, apart from the display that shows it (base.progress): how much of a
phase is left at the pace its finished units ran against the plan, and when that figure is only a
floor."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import NamedTuple

PLANNED_CAP = 0.9  # of a unit its planned time alone may fill: the rest only its end does
# How much an ETA trusts the run's pace against the plan: its finished units' seconds count against
# their planned seconds as if this share of the whole plan had gone as planned (one slow first unit
# doubled the ETA of a 3-analysis run, which then ended sooner), and the pace stays within PACE_RANGE.
PACE_PRIOR = 0.25
PACE_RANGE = (0.5, 3.0)


def planned(seconds: float, clock: Callable[[], float] = time.perf_counter) -> Callable[[], float]:
    """The share of `seconds` (the plan's) spent since now, for Phase.within: at most PLANNED_CAP,
    so a unit slower than planned never shows done before it is."""
    start = clock()
    return lambda: min(PLANNED_CAP, (clock() - start) / seconds) if seconds > 0 else 0.0


class Eta(NamedTuple):
    """Seconds left, and whether the unit under way has run past its plan at the run's pace: then
    its end is unknown and the figure a floor, rounded down (`ETA >0:00:31`); under a second,
    `ETA overdue` (`ETA ~0:00:01` held for 10 s while an analysis ran 20 s past its plan; walk 10: `ETA ?`, which
    took the figure away at the end, where it is most wanted). `own`: a row's own pace, no plan's
    (a round's), bare (`ETA 0:00:10`), as README says."""

    seconds: float
    over: bool = False
    own: bool = False

    def text(self) -> str:
        if self.own:
            return f"ETA {timedelta(seconds=round(self.seconds))}"
        if not self.over:
            return f"ETA ~{timedelta(seconds=round(self.seconds))}"
        if self.seconds < 1:  # a floor of nothing says nothing (walk 11: `ETA >0:00:00` for 3 s)
            return "ETA overdue"  # within the 12 columns the display gives it
        return f"ETA >{timedelta(seconds=int(self.seconds))}"


def eta_s(elapsed_s: float, done: float, units_s: Sequence[float], estimate_s: float, finished_s: float,
          planned_share: float = 0.0, held: float = 0.0, stalled: bool = False) -> Eta:
    """Seconds left of a phase of planned units (`units_s`, the plan's seconds of each, its
    estimate_s spread over them in proportion), `done` of them under way (whole ones finished, the
    fraction the share of the next one's), the last finished at `finished_s`: what the plan leaves,
    at the pace the finished units ran against their plan (PACE_PRIOR). Where the unit under way
    runs slower than that pace (its seconds against its share done), the evidence raises it: its
    rest at its own pace (as much prior as the run's), the units after it at the run's pace
    counting it. Both move with the
    clock, so the ETA rises smoothly (it fell to ~0:00:01 for 10 s while a unit overran). Past its
    plan (`over`) the figure is a floor: its rest and the units after it at the run's pace, never
    its own (a resumed run read `ETA >0:00:40` with 14 s left: one-off work ahead of its rounds), and past
    what it counted for its work before `held`, or with its held work `stalled` past its count, the same
    (a phase that overran its count stood still at `~`: walk 21), the held work in the floor. Within its
    plan a unit is as far along as the further of its work counted and its planned time spent
    (`planned_share`): its first rounds, slow with their first calls, counted little and alone read
    as a run 4x slower (walk-through 8: `ETA ~0:01:44` at 12 s of a 27 s run); never below its work not
    begun (`held` of the unit, at the run's pace: walk 18's `ETA ~0:00:00` while geometry's workers started)."""
    scale = estimate_s / sum(units_s) if sum(units_s) > 0 else 0.0
    whole = min(int(done), len(units_s))
    if whole >= len(units_s):
        return Eta(0.0)
    planned_done = sum(units_s[:whole]) * scale
    prior = PACE_PRIOR * estimate_s
    pace = _paced(finished_s + prior, planned_done + prior)
    unit, share, ran = units_s[whole] * scale, min(max(done - whole, 0.0), 1.0), max(0.0, elapsed_s - finished_s)
    planned_share, held = min(planned_share, 1.0), min(max(held, 0.0), 1.0)
    # within its plan as far along as its work or its planned time says; past it, its work alone
    # (the planned share stops at its cap there and says nothing more)
    share = max(share, planned_share) if ran <= pace * unit else share or planned_share
    own = rest = pace
    # past its plan, or past what it counted for its work before the held (walk 21: its workers'
    # start took 8 s against 1.5 counted while `~0:00:05` stood still)
    over = ran > pace * unit * (1.0 - held) or (stalled and held > 0)
    if not over and share > 0 and ran > pace * unit * share:  # slower than the run's pace: its rounds say how much
        own = max(pace, _paced(ran + PACE_PRIOR * unit * pace, unit * share + PACE_PRIOR * unit))
        rest = max(pace, _paced(elapsed_s + prior, planned_done + unit * share + prior))
    left = max(own * unit * (1.0 - share), pace * unit * held)
    left += rest * sum(units_s[whole + 1:]) * scale
    return Eta(max(0.0, left), over=over)


def _paced(spent_s: float, planned_s: float) -> float:
    """Seconds spent per planned second, within PACE_RANGE (1 with nothing planned yet)."""
    return min(max(spent_s / planned_s if planned_s > 0 else 1.0, PACE_RANGE[0]), PACE_RANGE[1])
