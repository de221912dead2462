"""The fits of a sweep over its points' measurements (bench.scaling): for every analysis, strategy
and axis (the other axis held at each of its values), a power law with an interval on its exponent,
the complexity class (of those whose exponent is in that interval) that fits best, the same power law over the
cost model's own estimates, a finding where the two disagree beyond the interval; the crossover of every two
strategies' fits, wherever it lies (one near the swept range's end came and went between two runs of one sweep:
walk 12); and whether the planner's pick was the fastest measured at each point."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from itertools import combinations
from typing import Any, NamedTuple

from harness.base.units import plural
from harness.bench.scaling import (class_fits, classes_within, crossover, log_variance, power_law,
                                   rms_intervals)
from harness.plan.sweep import SweepPoint
from harness.record.sweep_classes import MAX_CLASS_RMS, class_verdict
from harness.record.sweep_record import (AxisLimit, PointRecord, PointTiming, ScalingFit, SweepCrossover, SweepRecord,
                                         axis_name)

NEAR = 2.0  # a crossing at most this factor beyond the swept range is drawn on its chart


def size_of(value: Any) -> float:
    """The size a swept value stands for in a fit: a number itself, a shape its larger side."""
    return float(max(value)) if isinstance(value, list) else float(value)


def slices(record: SweepRecord) -> Iterator[tuple[str, dict[str, Any], list[PointRecord]]]:
    """Each axis with the other held at one value: the points along it, in sweep order."""
    for axis in record.axes:
        others = [key for key in record.axes if key != axis]
        groups: dict[str, list[PointRecord]] = {}
        for p in record.points:
            groups.setdefault(json.dumps([p.values[o] for o in others]), []).append(p)
        for points in groups.values():
            if len({size_of(p.values[axis]) for p in points}) >= 2:
                yield axis, {o: points[0].values[o] for o in others}, points


def _series(points: list[PointRecord], axis: str) -> dict[tuple[str, str], list[tuple[float, PointTiming]]]:
    found: dict[tuple[str, str], list[tuple[float, PointTiming]]] = {}
    for p in points:
        for t in p.timings:
            if t.seconds > 0 and math.isfinite(t.seconds):
                found.setdefault((t.analysis, t.strategy), []).append((size_of(p.values[axis]), t))
    return found


def fit_slice(axis: str, fixed: dict[str, Any], points: list[PointRecord]) -> list[ScalingFit]:
    fits = []
    for (analysis, strategy), series in _series(points, axis).items():
        sizes = [n for n, _ in series]
        if len(set(sizes)) < 2:
            continue
        seconds = [t.seconds for _, t in series]
        variances = [log_variance(t.seconds, t.low, t.high) for _, t in series]
        power = power_law(sizes, seconds, variances)
        within = classes_within(sizes, seconds, variances, power)
        best = within[0] if within else None
        every = class_fits(sizes, seconds, variances)
        intervals = rms_intervals(sizes, seconds, variances, every)
        # the cost model's exponent wherever it gave every point a figure (model_s is its own, whatever the
        # plan's basis: the wisdom's 28.3 ms at rank 16 beside the model's 56.4 ms made a fixed-shape SVD's
        # cost read rank^0.2, walk-through 4; leaving such fits out dropped the clause from a second run)
        modelled = [t.model_s for _, t in series if t.model_s is not None and t.model_s > 0]
        model = power_law(sizes, modelled) if len(modelled) == len(series) else None
        fit = ScalingFit(analysis=analysis, strategy=strategy, axis=axis, fixed=fixed, sizes=sizes, power=power,
                         complexity=best.name if best else None, rms=best.rms if best else None, model=model,
                         within={c.name: c.rms for c in within}, rms_interval=intervals,
                         close={c.name: c.rms for c in every if intervals[c.name][0] <= MAX_CLASS_RMS})
        fit.class_verdict = class_verdict(fit)  # sweep.json carries the text's decision, as fits.csv does
        if model is not None and not power.covers(model.exponent):
            fit.finding = finding_text(fit, model.exponent)
        fits.append(fit)
    return fits


def finding_text(fit: ScalingFit, model: float) -> str:
    """`spectrum, factored: cost grows as rank^1.51 (1.23 to 1.80), outside its interval: the cost model says 2.10,
    0.30 above the interval`: how far outside, from the ends as written (so the sentence adds up), and where that is
    under the interval's half-width, that a re-run may not repeat it (walk 23: a finding at 0.30 past the edge, then
    `rank^1.69 (1.01 to 2.38), its cost model says 2.10` in a second run, read as a contradiction). The finding is
    this run's interval's word alone: a re-run's exponent lands anywhere in that interval, and its own interval
    reaches about as far again."""
    low, high, said = (float(exponent_text(x)) for x in (fit.power.low, fit.power.high, model))
    side, edge = ("above", high) if model > fit.power.high else ("below", low)
    past = abs(said - edge)
    distance = exponent_text(past) if past >= 0.005 else "under 0.01"
    near = (" (under its half-width past the edge: a re-run may not repeat it)" if past < (high - low) / 2 else "")
    return f"{growth(fit)}, outside its interval: the cost model says {exponent_text(model)}, {distance} {side} the interval{near}"


def exponent_text(x: float) -> str:
    """An exponent as every view writes it, two decimals: `1.80`, `-0.01` (not `-0.0071` in one
    place and `-0.01` in another)."""
    text = f"{x:.2f}"
    return "0.00" if text == "-0.00" else text  # walk 15: `rank^-0.00`


def exponent_interval(low: float, high: float) -> str:
    """`1.40 to 2.20`: an exponent's interval; "to", never "-", since an end may be negative."""
    return f"{exponent_text(low)} to {exponent_text(high)}" if math.isfinite(high - low) else "no interval: two points"


def growth(fit: ScalingFit) -> str:
    """`spectrum, factored: cost grows as rank^1.90 (1.70 to 2.10)` (at data.adapters=4 on a grid)."""
    p = fit.power
    where = "".join(f" at {key}={json.dumps(value)}" for key, value in fit.fixed.items())
    interval = f" ({exponent_interval(p.low, p.high)})"
    return f"{fit.analysis}, {fit.strategy}: cost grows as {axis_name(fit.axis)}^{exponent_text(p.exponent)}{interval}{where}"


def slice_limit(axis: str, points: list[PointRecord]) -> AxisLimit | None:
    """The largest value `axis` can take at every point of a slice."""
    return min((p.limits[axis] for p in points if axis in p.limits), key=lambda limit: limit.size, default=None)


def crossings(fits: list[ScalingFit], limits: dict[tuple[str, str], AxisLimit | None]) -> list[SweepCrossover]:
    """Every two strategies of one analysis and slice whose fits meet, wherever (parallel fits never
    do), with the slice's limit (`limits` by axis and held values) its interval is clipped to."""
    found = []
    for a, b in combinations(fits, 2):
        if (a.analysis, a.axis, a.fixed) != (b.analysis, b.axis, b.fixed):
            continue
        met = crossover(a.power, b.power)
        lo, hi = min(a.sizes + b.sizes), max(a.sizes + b.sizes)
        if met is None:
            continue
        above, below = (a, b) if met.a_faster_above else (b, a)
        found.append(SweepCrossover(analysis=a.analysis, axis=a.axis, fixed=a.fixed, a=above.strategy,
                                    b=below.strategy, crossing=met, inside=lo <= met.size <= hi,
                                    limit=limits.get((a.axis, json.dumps(a.fixed))), swept=(lo, hi)))
    return found


class Tie(NamedTuple):
    """A strategy a point's measurement does not tell from its fastest, with the figure that says so: the fastest's
    speed over it and that ratio's 95% interval, from their paired rounds where one is the baseline (else their
    own intervals overlap, the Points table's two)."""

    strategy: str
    ratio: float | None  # the other's seconds over the fastest's: the paired rounds' where `paired`
    interval: tuple[float, float] | None  # the paired rounds' interval of that ratio; None: by their own intervals

    @property
    def paired(self) -> bool:
        return self.interval is not None


class PlannerPick(NamedTuple):
    """At one point, for one analysis: the plan's pick beside the fastest strategy measured."""

    values: dict[str, Any]
    analysis: str
    chosen: str
    fastest: str
    ratio: float  # the pick's seconds over the fastest's
    overlap: bool  # their intervals overlap: this measurement does not tell them apart
    ties: tuple[Tie, ...] = ()  # the others the measurement does not tell from the fastest (point_picks)

    @property
    def tied(self) -> tuple[str, ...]:
        """The strategies the point does not tell from its fastest, by name."""
        return tuple(tie.strategy for tie in self.ties)

    @property
    def agrees(self) -> bool:
        """The pick's estimate is the fastest: a pick 2x slower is not right for overlapping intervals."""
        return self.chosen == self.fastest

    @property
    def factor(self) -> str:
        """`2.0x`, `17x`: how much slower than the fastest the pick measured."""
        return f"{self.ratio:.1f}x" if self.ratio < 10 else f"{self.ratio:,.0f}x"

    @property
    def slower(self) -> str:
        """`2.0x slower than factored (intervals overlap)`."""
        return f"{self.factor} slower than {self.fastest}" + (" (intervals overlap)" if self.overlap else "")


def point_picks(p: PointRecord) -> list[PlannerPick]:
    """The point's pick for every analysis whose pick was timed there."""
    picks = []
    for analysis in dict.fromkeys(t.analysis for t in p.timings):
        timed = {t.strategy: t for t in p.timings if t.analysis == analysis}
        chosen = timed.get(p.chosen.get(analysis, ""))
        if chosen is None:
            continue
        fastest = min(timed.values(), key=lambda t: t.seconds)
        ties = tuple(tie for t in timed.values() if t is not fastest and (tie := _tie(fastest, t)) is not None)
        picks.append(PlannerPick(p.values, analysis, chosen.strategy, fastest.strategy,
                                 chosen.seconds / fastest.seconds, chosen.low <= fastest.high, ties))
    return picks


def _tie(fastest: PointTiming, other: PointTiming) -> Tie | None:
    """`other` as a Tie where the point's measurement leaves it as fast as `fastest`, else None: by their paired
    interval where one is the baseline (the basis a crossover's clause gives: walk 19 read `factored … yes` in the
    picks table beside `not at data.rank=128: factored 2.74x (0.0600-125) over numpy …, too wide to tell`), else by
    their own intervals. The paired figure is turned to the fastest's speed over the other's whichever is the
    baseline (a timing's `paired` is the baseline's seconds over its own)."""
    for timing, base, flip in ((fastest, other, False), (other, fastest, True)):
        if base.baseline and timing.paired is not None:
            low, high = timing.paired
            if not low <= 1.0 <= high:
                return None
            speedup = timing.speedup
            if flip:
                low, high = 1 / high if high > 0 else math.inf, 1 / low if low > 0 else math.inf
                speedup = 1 / speedup if speedup else None
            return Tie(other.strategy, speedup, (low, high))
    return Tie(other.strategy, other.seconds / fastest.seconds, None) if other.low <= fastest.high else None


def planner_picks(record: SweepRecord) -> list[PlannerPick]:
    """Every point's pick for every analysis whose pick was timed there, in sweep order."""
    return [pick for p in record.points for pick in point_picks(p)]


SHOWN_MISSES = 3  # points where the pick was not the fastest, named in a planner line


def named_misses(picks: list[PlannerPick]) -> list[PlannerPick]:
    """The misses the planner lines name, each analysis' first SHOWN_MISSES: the picks table only
    marks these (the finding was said three times, in the point's line, the planner line and the
    table: walk 14), and gives the factor of the rest."""
    named = []
    for analysis in dict.fromkeys(pick.analysis for pick in picks):
        named += [pick for pick in picks if pick.analysis == analysis and not pick.agrees][:SHOWN_MISSES]
    return named


def planner_lines(record: SweepRecord) -> list[str]:
    """Per analysis: at how many points the plan's pick measured fastest, and each point (the
    first SHOWN_MISSES) where it did not, by how much."""
    lines = []
    picks = planner_picks(record)
    named = named_misses(picks)
    for analysis in dict.fromkeys(pick.analysis for pick in picks):
        mine = [pick for pick in picks if pick.analysis == analysis]
        misses = sum(not pick.agrees for pick in mine)
        said = [f"; at {SweepPoint(values=m.values).label} the pick ({m.chosen}) measured {m.slower}"
                for m in named if m.analysis == analysis]
        more = f"; {plural(misses - len(said), 'more point')} (the picks table)" if misses > len(said) else ""
        lines.append(f"{analysis}: the plan's pick was the fastest measured at {len(mine) - misses} of "
                     f"{plural(len(mine), 'point')}{_untold(mine)}{''.join(said)}{more}")
    return lines


def _untold(picks: list[PlannerPick]) -> str:
    """` (told apart at 4; at data.rank=256 not told apart from numpy)`: of the points where the pick measured
    fastest, those whose measurement does not tell it from another (the first SHOWN_MISSES named), as the picks
    table marks them (walk 22: `fastest measured at 5 of 5 points` beside `yes, not told apart from numpy`)."""
    fastest = [pick for pick in picks if pick.agrees]
    tied = [pick for pick in fastest if pick.tied]
    if not tied:
        return ""
    named = [f"at {SweepPoint(values=p.values).label} not told apart from {', '.join(p.tied)}" for p in tied[:SHOWN_MISSES]]
    more = f", {len(tied) - SHOWN_MISSES} more (the picks table)" if len(tied) > SHOWN_MISSES else ""
    return f" (told apart at {len(fastest) - len(tied)}; {', '.join(named)}{more})"


class Unborne(NamedTuple):
    """A point that does not bear a crossover's fits out, with the two timings its order stood on."""

    label: str  # the point by its swept value: `data.rank=256`
    a: PointTiming  # the crossover's strategy that is cheaper above the crossing
    b: PointTiming
    reverse: bool  # they measured the other way than the fits order them (else: not told apart)


class Told(NamedTuple):
    """A crossover's points, and at how many their own measurements tell its two strategies apart
    the way the fits order them there (`shown`) or the other way (`reverse`)."""

    shown: int
    reverse: int
    points: int
    others: tuple[Unborne, ...] = ()  # the points that do not bear the fits out


def _order(a: PointTiming, b: PointTiming) -> int:
    """1: a measured faster than b, -1: slower, 0: not told apart; by the point's paired rounds where
    one of the two is its analysis' baseline (its run's verdict said so), else by their two intervals."""
    if a.baseline and b.paired is not None:
        low, high = b.paired  # the baseline's seconds over b's
        return -1 if low > 1 else 1 if high < 1 else 0
    if b.baseline and a.paired is not None:
        low, high = a.paired
        return 1 if low > 1 else -1 if high < 1 else 0
    return 1 if a.high < b.low else -1 if b.high < a.low else 0


def told_apart(record: SweepRecord, c: SweepCrossover) -> Told:
    """Whether the crossover's points bear out its fits (`factored is cheaper than numpy over the swept
    rank 16-256` beside the rank-256 point's `not significantly faster or slower: 2.36x (0.777-7.18)`,
    two sources that nothing told apart: walk 14)."""
    orders, others = [], []
    for p in record.points:
        timed = {t.strategy: t for t in p.timings if t.analysis == c.analysis}
        if c.a in timed and c.b in timed and all(p.values.get(k) == v for k, v in c.fixed.items()):
            fits = 1 if size_of(p.values[c.axis]) > c.crossing.size else -1  # a is the cheaper above
            orders.append(_order(timed[c.a], timed[c.b]) * fits)
            if orders[-1] != 1:
                others.append(Unborne(SweepPoint(values={c.axis: p.values[c.axis]}).label, timed[c.a], timed[c.b],
                                      orders[-1] == -1))
    return Told(orders.count(1), orders.count(-1), len(orders), tuple(others))


def fit_sweep(record: SweepRecord) -> SweepRecord:
    """The record with its fits, crossovers and planner lines computed from its points."""
    fits: list[ScalingFit] = []
    limits: dict[tuple[str, str], AxisLimit | None] = {}
    for axis, fixed, points in slices(record):
        fits += fit_slice(axis, fixed, points)
        limits[(axis, json.dumps(fixed))] = slice_limit(axis, points)
    return record.model_copy(update={"fits": fits, "crossovers": crossings(fits, limits), "planner": planner_lines(record)})
