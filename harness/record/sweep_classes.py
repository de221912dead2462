"""A sweep fit's class words: which complexity classes the text names for a fit (within the exponent's interval,
near the points, straddling the RMS bound or over it), the verdict fits.csv carries, and the words themselves.
Apart from the fits (sweep_fits) since two runs' class words were the defect of walks 13, 15, 16, 17 and 22."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from harness.bench.scaling import COMPLEXITY_CLASSES
from harness.record.sweep_record import ScalingFit, axis_name

MAX_CLASS_RMS = 0.25  # a class whose curve misses the points by more (log RMS, about relative) is not named

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
