"""The fits of a sweep over its points' measurements (bench.scaling): for every analysis, strategy
and axis (the other axis held at each of its values), a power law with an interval on its exponent,
the complexity class (of those whose exponent is in that interval) that fits best, the same power law over the
cost model's own estimates, a finding where the two disagree beyond the interval; the crossover of every two
strategies' fits, wherever it lies (one near the swept range's end came and went between two runs of one sweep:
walk 12); and whether the planner's pick was the fastest measured at each point."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from itertools import combinations
from typing import Any, NamedTuple

from harness.base.units import plural
from harness.bench.scaling import (COMPLEXITY_CLASSES, class_fits, classes_within, crossover, log_variance, power_law,
                                   rms_intervals)
from harness.plan.sweep import SweepPoint
from harness.record.sweep_record import (AxisLimit, PointRecord, PointTiming, ScalingFit, SweepCrossover, SweepRecord,
                                         axis_name)

NEAR = 2.0  # a crossing at most this factor beyond the swept range is drawn on its chart
MAX_CLASS_RMS = 0.25  # a class whose curve misses the points by more (log RMS, about relative) is not named


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
            fit.finding = (f"{growth(fit)}, outside its interval: the cost model "
                           f"says {exponent_text(model.exponent)}")  # as fit_sentence says it
        fits.append(fit)
    return fits


def exponent_text(x: float) -> str:
    """An exponent as every view writes it, two decimals: `1.80`, `-0.01` (not `-0.0071` in one
    place and `-0.01` in another)."""
    text = f"{x:.2f}"
    return "0.00" if text == "-0.00" else text  # walk 15: `rank^-0.00`


def exponent_interval(low: float, high: float) -> str:
    """`1.40 to 2.20`: an exponent's interval; "to", never "-", since an end may be negative."""
    return f"{exponent_text(low)} to {exponent_text(high)}" if math.isfinite(high - low) else "no interval: two points"


FITS, STRADDLES, APART, NONE = "fits", "straddles", "not told apart", "none"  # fits.csv's class_verdict


def class_rms(fit: ScalingFit, complexity: str) -> float:
    """A class's RMS: within the exponent's interval or close to the points (the best's in a sweep before them)."""
    rms = fit.within.get(complexity, fit.close.get(complexity))
    return rms if rms is not None else fit.rms if fit.rms is not None else math.nan


def class_rms_interval(fit: ScalingFit, complexity: str) -> tuple[float, float]:
    """A class's RMS interval (bench.scaling.rms_intervals), or its RMS alone in a sweep from before them."""
    rms = class_rms(fit, complexity)
    return fit.rms_interval.get(complexity, (rms, rms))


def by_growth(classes: Iterable[str]) -> list[str]:
    """Classes slowest-growing first: one order whichever fits better, which two runs of one sweep swap (`closest
    classes rank^2 (RMS 29%), rank log rank (RMS 51%)`, then `rank log rank (RMS 36%), rank^2 (RMS 39%)`: walk 17)."""
    order = list(COMPLEXITY_CLASSES)
    return sorted(classes, key=order.index)


def near_classes(fit: ScalingFit) -> list[str]:
    """The classes within the exponent's interval whose RMS interval reaches under MAX_CLASS_RMS (by_growth)."""
    within = fit.within or ({fit.complexity: fit.rms} if fit.complexity is not None and fit.rms is not None else {})
    return by_growth(c for c in within if class_rms_interval(fit, c)[0] <= MAX_CLASS_RMS)


def straddling(fit: ScalingFit) -> list[str]:
    """Every class whose RMS interval reaches under MAX_CLASS_RMS, its exponent in the interval or not (by_growth):
    the classes a fit that none lies wholly under names. Its exponent's interval is no surer than the RMS: a class
    at its edge (rank log rank's 0.24 beside -0.18 to 0.28, then -0.22 to 0.19) came and went (walk 17). Near_classes
    in a sweep from before them."""
    return by_growth(fit.close) if fit.close else near_classes(fit)


def over_classes(fit: ScalingFit) -> list[str]:
    """The classes in the exponent's interval whose RMS interval lies wholly over MAX_CLASS_RMS (by_growth): a fit
    that straddles names them too, as lying over it, so a class both runs' exponent intervals hold is named in
    both (walk 22: `closest classes rank log rank (RMS 36%, 5-55%), rank^2 (...)`, then `closest class rank^2`
    alone, rank log rank's RMS interval over the bound in that run and said nowhere)."""
    return by_growth(c for c in fit.within if class_rms_interval(fit, c)[0] > MAX_CLASS_RMS)


def named_classes(fit: ScalingFit) -> list[str]:
    """The classes the text names (class_verdict): near_classes, straddling where it straddles, none where none fits."""
    verdict = class_verdict(fit)
    return [] if verdict == NONE else straddling(fit) if verdict == STRADDLES else near_classes(fit)


def class_verdict(fit: ScalingFit) -> str:
    """FITS: one class near the points (near_classes), its whole RMS interval under MAX_CLASS_RMS; APART: two
    or more near, one of them wholly under it, or two points; STRADDLES: some near, none wholly under (a noisy
    RMS near the bound: `no class fits` at 25.3%, then `class constant` at 23.1%, for one sweep run twice:
    walk 16); NONE: none near, or none within the exponent's interval. What the text says and fits.csv
    carries (it named `1` where the text said `no class fits`: walk 16)."""
    if fit.complexity is None or fit.rms is None:
        return NONE
    if not math.isfinite(fit.power.high - fit.power.low):
        return APART
    near = near_classes(fit)
    if any(class_rms_interval(fit, c)[1] <= MAX_CLASS_RMS for c in near):
        return FITS if len(near) == 1 else APART
    return STRADDLES if straddling(fit) else NONE


def percent(x: float) -> str:
    """`23%`; `25.3%`, `25.04%` where fewer digits would read as the bound itself (`no class fits within 25%
    (RMS 25%)`: walk 16)."""
    for digits in range(3):
        text = f"{x:.{digits}%}"
        if x == MAX_CLASS_RMS or float(text[:-1]) != MAX_CLASS_RMS * 100:
            return text
    return f"{x:.3%}"


def rms_text(fit: ScalingFit, complexity: str, joint: str = ", ") -> str:
    """`RMS 41%, 33-52%` (`joint` ", "), `RMS 25% (18-33%)` (joint " ("): a class's RMS and its interval;
    the RMS alone where a sweep from before them kept none."""
    rms, (low, high) = class_rms(fit, complexity), class_rms_interval(fit, complexity)
    if low == high:
        return f"RMS {percent(rms)}"
    return f"RMS {percent(rms)}{joint}{percent(low).rstrip('%')}-{percent(high)}" + (")" if "(" in joint else "")


def class_text(fit: ScalingFit) -> str:
    """`class rank^2 (RMS 4%, 3-6%)`: the class in the swept key's name, its `1` `constant` (`class n^2`
    on a rank axis made the reader translate), named as a fit only where its RMS's interval lies under
    MAX_CLASS_RMS, as the closest where it straddles it, and as none where it lies over (class_verdict);
    where two or more are near the points, that they are not told apart, each with its RMS (one named by
    its RMS read `rank log rank` in one run and `rank^2` in the next, both RMS 36%: walk 13)."""
    if fit.complexity is None or fit.rms is None:
        return "no class within its interval"
    if not math.isfinite(fit.power.high - fit.power.low):
        return "classes not told apart: two points"
    verdict, near = class_verdict(fit), named_classes(fit)
    if verdict == NONE:  # before naming several: walk 15 read `no class fits within 25% (RMS 35%)`, then
        # `classes not told apart: rank^2 (RMS 37%), rank log rank (RMS 59%)` for the same sweep
        return f"no class fits within {MAX_CLASS_RMS:.0%} ({rms_text(fit, next(iter(fit.within), fit.complexity))})"
    listed = ", ".join(f"{_class_name(c, fit.axis)} ({rms_text(fit, c)})" for c in near)
    if verdict == APART:
        return f"classes not told apart: {listed}"
    name = _class_name(near[0], fit.axis)
    if verdict != STRADDLES:
        return f"class {name} ({rms_text(fit, near[0])})"
    above = over_classes(fit)
    over = ", ".join(f"{_class_name(c, fit.axis)} ({rms_text(fit, c)})" for c in above)
    over = f", {over}, within the exponent interval, {'lie' if len(above) > 1 else 'lies'} over it" if above else ""
    if len(near) > 1:
        return f"closest classes {listed} straddle the {MAX_CLASS_RMS:.0%} bound{over}"
    return f"closest class {name}, {rms_text(fit, near[0], ' (')} straddles the {MAX_CLASS_RMS:.0%} bound{over}"


def _class_name(complexity: str, axis: str) -> str:
    return "constant" if complexity == "1" else re.sub(r"\bn\b", axis_name(axis), complexity)


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


class PlannerPick(NamedTuple):
    """At one point, for one analysis: the plan's pick beside the fastest strategy measured."""

    values: dict[str, Any]
    analysis: str
    chosen: str
    fastest: str
    ratio: float  # the pick's seconds over the fastest's
    overlap: bool  # their intervals overlap: this measurement does not tell them apart
    tied: tuple[str, ...] = ()  # the others the measurement does not tell from the fastest (point_picks)

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
        tied = tuple(t.strategy for t in timed.values() if t is not fastest and _tied(fastest, t))
        picks.append(PlannerPick(p.values, analysis, chosen.strategy, fastest.strategy,
                                 chosen.seconds / fastest.seconds, chosen.low <= fastest.high, tied))
    return picks


def _tied(fastest: PointTiming, other: PointTiming) -> bool:
    """Whether the point's measurement leaves `other` as fast as `fastest`: by their paired interval where
    one is the baseline (the basis a crossover's clause gives: walk 19 read `factored … yes` in the picks
    table beside `not at data.rank=128: factored 2.74x (0.0600-125) over numpy …, too wide to tell`),
    else by their own intervals."""
    for timing, base in ((fastest, other), (other, fastest)):
        if base.baseline and timing.paired is not None:
            return timing.paired[0] <= 1.0 <= timing.paired[1]
    return other.low <= fastest.high


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
