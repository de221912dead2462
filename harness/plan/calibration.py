"""Modelled estimates on the footing of measured ones: the cost model's figure for a point this
machine has not measured, scaled by how this machine's measurements compare with the model where
it has both (busy measurements included, as the planner uses them). Unscaled, `auto` compared an
idle model's 128 us with a busy machine's measured 485 us, picked the unmeasured strategy, which
then took 42x its estimate, and the pick flipped from run to run (a walk-through). One factor does
not mend the model's error per strategy (10-40x on some small-matrix kernels, where per-call
overheads dominate): `model_error` is how far apart the measured/modelled ratios lie, the margin a
modelled estimate must beat a measured one by (plan.choice)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import NamedTuple

from harness.machine.wisdom import MODELLED
from harness.plan.model import Candidate
from harness.plan.variants import needs_measurement

MIN_FAMILY = 3  # measured points a backend needs for a factor of its own (a median robust to one outlier)
MODEL_ERROR = 1.5  # how far a modelled estimate is known to miss, scaled or not, at least: a smaller margin is a tie
AGREES = 0.05  # a factor within this of 1 is the model agreeing with the machine: estimates left as modelled
SCALED = "the cost model's estimate scaled by this machine's measured/modelled ratio (busy measurements included)"
MACHINE = "*"  # the factors' key for the machine-wide one


def _ratios(candidates: Iterable[Candidate]) -> dict[str, list[float]]:
    """Measured over modelled seconds at every point this machine measured, by backend; each
    (point, group) once, however many analyses list it. Narrow precisions and compiled kernels
    are left out: the model is of the eager float32/float64 kernels."""
    seen: dict[tuple[str, str, str], tuple[str, float]] = {}
    for c in candidates:
        if needs_measurement(c):
            continue
        for group, basis in c.basis.items():
            model = c.model_s.get(group)
            if not basis.startswith(MODELLED) and model:
                seen[(c.point.label, c.device or "", group)] = (c.device or "", c.per_matrix_s[group] / model)
    by: dict[str, list[float]] = {}
    for device, ratio in seen.values():
        by.setdefault(device, []).append(ratio)
        by.setdefault(MACHINE, []).append(ratio)
    return by


def _median(ratios: list[float]) -> float:
    """A geometric median: one busy outlier moves it no further than its neighbour."""
    return math.exp(statistics.median(math.log(r) for r in ratios))


def factors(candidates: Iterable[Candidate]) -> dict[str, float]:
    """By backend, what to scale a modelled estimate by: the median of its own measured/modelled
    ratios where it has MIN_FAMILY of them, else the machine's ({MACHINE: ...}); {} where nothing
    was measured."""
    by = _ratios(candidates)
    return {device: _median(ratios) for device, ratios in by.items() if device == MACHINE or len(ratios) >= MIN_FAMILY}


def model_error(candidates: Iterable[Candidate]) -> float:
    """How far the model has missed on this machine: the largest measured/modelled ratio over the
    smallest (a scaled estimate can be off by that much either way), at least MODEL_ERROR; MODEL_ERROR
    where nothing was measured. In a walk-through the modelled dual_gram, picked at 3.7x below the
    busy measured factored_gram, then took 10x what factored_gram had."""
    ratios = _ratios(candidates).get(MACHINE)
    return max(MODEL_ERROR, max(ratios) / min(ratios)) if ratios else MODEL_ERROR


class Calibration(NamedTuple):
    """This machine's footing for modelled estimates, taken over every analysis' candidates at once."""

    factors: dict[str, float]  # by backend (MACHINE: the machine's), what a modelled estimate is scaled by
    error: float  # model_error: the margin a modelled estimate must beat a measured one by


def calibration(candidates: list[Candidate]) -> Calibration:
    return Calibration(factors(candidates), model_error(candidates))


def calibrated(c: Candidate, sizes: dict[str, int], scale: dict[str, float]) -> Candidate:
    """`c` with its modelled groups scaled by its backend's factor (else the machine's), its
    estimate recomputed from `sizes` (matrices per group; pca: positions)."""
    factor = scale.get(c.device or "", scale.get(MACHINE))
    modelled = {g for g, b in c.basis.items() if b.startswith(MODELLED)}
    if factor is None or abs(factor - 1) <= AGREES or not modelled or c.estimate_s is None:
        return c
    per = {g: s * factor if g in modelled else s for g, s in c.per_matrix_s.items()}
    basis = {g: b.replace(MODELLED, f"{MODELLED} {scaled_text(factor)}", 1) if g in modelled else b
             for g, b in c.basis.items()}
    return c.model_copy(update={"per_matrix_s": per, "basis": basis, "scale": factor,
                                "estimate_s": sum(per[g] * sizes[g] for g in per)})


def times(factor: float) -> str:
    """`2.4`, `25`, `420`: a factor in two figures, or whole."""
    return f"{factor:{'.2g' if factor < 100 else '.0f'}}"


def scaled_text(factor: float) -> str:
    """`x2.4`, as `modelled x2.4` says a scaled estimate (SCALED says what it means)."""
    return f"x{times(factor)}"


def scaled_note(scales: Iterable[float | None]) -> str | None:
    """`modelled x4: scaled by ...`, once for every factor among `scales`; None where none is."""
    shown = sorted({scaled_text(s) for s in scales if s is not None})
    return f"modelled {', '.join(shown)}: {SCALED}" if shown else None
