"""Which candidate an analysis runs, and the sentence that says why."""

from __future__ import annotations

import math

from harness.base.units import format_seconds
from harness.data.workload import Workload
from harness.machine.wisdom import BUSY, MODELLED
from harness.plan.calibration import MODEL_ERROR, scaled_text, times
from harness.plan.model import Candidate
from harness.plan.variants import needs_measurement
from harness.strategies.registry import STRATEGIES

MEASURED_TIE = 1.25  # measured estimates closer than this are one speed to a busy machine's timings
# What a measured estimate without a spread of its own (fewer than wisdom.MIN_SPREAD runs) is taken
# to be uncertain by, for two together: a walk-through's smoke svd_topk measured torch at 54-59 µs
# and gram_eigh at 62-64 µs (1.1-1.2x apart), one key's five busy runs spread 1.33x (torch, 115-151
# ms), and the pick flipped between consecutive runs; 1.5x is past that spread
HOLD = 1.5
WHOLE = "est. of the whole analysis"  # what the reason's first figure is, and the others after it


def pca_note(workload: Workload) -> str:
    """Why the workload's form decides the PCA strategy, for the plan's reason."""
    if workload.has_factors:
        return "LoRA factors: factored_gram takes the Gram from B.T B and A A.T, no dense delta"
    return "dense deltas: dual_gram streams each (layer, module) once into a float64 Gram"


def _measured(c: Candidate, full: bool = False) -> str:
    """Where an estimate comes from, for the plan's reason: this machine's measurements (while
    busy), the model scaled by them (`full`: saying by what, as the reason's first figure does), or
    the model."""
    measured = sum(not b.startswith(MODELLED) for b in c.basis.values())
    busy = " while busy" if any(b.startswith(BUSY) for b in c.basis.values()) else ""
    if measured == len(c.basis):
        return f", measured{busy}"
    scaled = "" if c.scale is None else f", scaled {scaled_text(c.scale)} by this machine's measurements" if full \
        else f" {scaled_text(c.scale)}"
    return f", partly measured{busy}, the rest modelled{scaled}" if measured else f", modelled{scaled}"


def _wholly_measured(c: Candidate) -> bool:
    return bool(c.basis) and not any(b.startswith(MODELLED) for b in c.basis.values())


def _fastest(candidates: list[Candidate]) -> Candidate:
    """The least estimate; equal ones by label, so the same inputs always give the same pick."""
    return min(candidates, key=lambda c: (c.estimate_s or 0.0, c.label))


def _pick(exact: list[Candidate], margin: float) -> tuple[Candidate, Candidate | None, Candidate | None]:
    """The fastest, unless its estimate is (partly) modelled and a measured one is within the
    model's error on this machine of it (`margin`, plan.calibration.model_error): a measured
    strategy does not lose on a margin the model cannot tell. Measured ones within MEASURED_TIE
    of the fastest are a tie, broken by the model's order, as a first run on no measurements picks:
    a smoke run's second plan took torch at 56 µs over the first's gram_eigh at 63 µs, intervals
    overlapping, and compare had no pick to pair. Returns the pick, the faster modelled one it was
    preferred to, and the faster measured one it tied with, if any."""
    fastest = _fastest(exact)
    if _wholly_measured(fastest):
        tied = [c for c in exact if _wholly_measured(c) and c.model_s
                and (c.estimate_s or 0.0) <= (fastest.estimate_s or 0.0) * MEASURED_TIE]
        if not fastest.model_s or len(tied) < 2:
            return fastest, None, None
        first = min(tied, key=lambda c: (sum(c.model_s.values()), c.label))
        return first, None, (None if first is fastest else fastest)
    near = [c for c in exact if _wholly_measured(c) and (c.estimate_s or 0.0) <= (fastest.estimate_s or 0.0) * margin]
    return (_fastest(near), fastest, None) if near else (fastest, None, None)


def _uncertainty(c: Candidate) -> float:
    """The factor a measured estimate may be off by either way: half its runs' spread (in log
    terms), or half of HOLD where it has none."""
    return math.sqrt(c.spread if c.spread is not None else HOLD)


def _clear(previous: Candidate, c: Candidate, margin: float) -> float:
    """By how much `c` must beat the previous pick to replace it: the two estimates' uncertainty
    together, at least a tie (MEASURED_TIE); a (partly) modelled one the model's error (`margin`)."""
    if not _wholly_measured(c):
        return margin
    return max(MEASURED_TIE, _uncertainty(previous) * _uncertainty(c))


def _kept(exact: list[Candidate], previous: str | None, margin: float) -> tuple[Candidate, Candidate | None] | None:
    """The previous pick (the label in the wisdom), when it is still eligible, measured, and no
    candidate beats it clearly (_clear), with the fastest of those it was kept over; else None."""
    kept = next((c for c in exact if c.label == previous and _wholly_measured(c)), None)
    if kept is None:
        return None
    faster = [c for c in exact if (c.estimate_s or 0.0) < (kept.estimate_s or 0.0)]
    if any((c.estimate_s or 0.0) * _clear(kept, c, margin) < (kept.estimate_s or 0.0) for c in faster):
        return None
    return kept, (_fastest(faster) if faster else None)


def _unproven(c: Candidate) -> str | None:
    """Why `auto` leaves out a point it could run: a narrow precision whose error, or a compiled
    kernel whose speed, this machine has not measured yet (the benchmark phase measures both)."""
    if not needs_measurement(c):
        return None
    if c.compiled:
        return "compiled kernels are timed beside the eager ones, and only the eager ones run the full analysis"
    if c.error is None:
        return f"no error measured at {c.precision} on this machine yet (this run's benchmark measures it)"
    return None


def _eligible(c: Candidate) -> bool:
    return c.available and not STRATEGIES[c.strategy].approximate and _unproven(c) is None


def _passed_over(best: Candidate, passed: Candidate, margin: float) -> str:
    """Why the measured `best` runs instead of the faster modelled `passed`, in plain words."""
    error = f"the model's {MODEL_ERROR:g}x" if margin <= MODEL_ERROR else \
        f"the model's error: it has been off by up to {times(margin)}x on this machine"
    return (f"{best.label} (measured) over {passed.label} (est. {format_seconds(passed.estimate_s)}"
            f"{_measured(passed)}): within {error}")


def _others(candidates: list[Candidate], shown: list[Candidate]) -> list[str]:
    """A note on each candidate the reason has not named yet, fastest first: why it is not the pick."""
    notes = []
    for c in sorted(candidates, key=lambda c: (c.estimate_s is None, c.estimate_s or 0.0)):
        if any(c is s for s in shown):
            continue
        if not c.available:
            notes.append(f"{c.label} not possible: {c.reason}")
        elif STRATEGIES[c.strategy].approximate:
            notes.append(f"{c.label} left out: randomized, so its accuracy depends on the "
                         "spectrum's decay (name it to use it)")
        elif (unproven := _unproven(c)) is not None:
            notes.append(f"{c.label} not chosen: {unproven}")
        else:
            notes.append(f"{c.label} est. {format_seconds(c.estimate_s)}{_measured(c)}")
    return notes


def _auto(candidates: list[Candidate], tolerance: float, margin: float,
          previous: str | None) -> tuple[Candidate, str]:
    exact = [c for c in candidates if _eligible(c)]
    if not exact:
        why: dict[str, list[str]] = {}  # one reason once, with every candidate it rules out
        for c in candidates:
            why.setdefault(str(c.reason or _unproven(c)), []).append(c.label)
        raise LookupError("; ".join(f"{reason} ({', '.join(labels)})" for reason, labels in why.items()))
    kept = _kept(exact, previous, margin)
    best, passed, tied = (kept[0], None, None) if kept is not None else _pick(exact, margin)
    over = None if kept is None else kept[1]
    notes = [] if passed is None else [_passed_over(best, passed, margin)]
    if tied is not None:
        notes.append(f"{best.label} and {tied.label} (est. {format_seconds(tied.estimate_s)}) measured within "
                     f"{MEASURED_TIE:g}x of each other: the cost model's order breaks the tie, as on a first run, "
                     "so the pick holds from run to run")
    notes += _others(candidates, [c for c in (best, passed, tied, over) if c is not None])
    what = "strategy" if not best.variant else "(strategy, precision)"
    met = f"; measured error {best.error:.1e} within tolerance {tolerance:g}" if best.error is not None and best.variant else ""
    figure = f"{WHOLE} {format_seconds(best.estimate_s)}{_measured(best, True)}{met}"
    if over is not None:
        within = "their spread" if _wholly_measured(over) else "the model's error"
        reason = (f"auto: kept {best.label}, the previous pick ({figure}): {over.label}'s estimate "
                  f"({format_seconds(over.estimate_s)}{_measured(over)}) is within {within} "
                  f"({times(_clear(best, over, margin))}x)")
    else:
        fastest = "fastest measured" if passed is not None else "tied fastest" if tied is not None else "fastest"
        reason = f"auto: {fastest} exact {what} ({figure})"
    return best, reason + ("; " + "; ".join(notes) if notes else "")


def choose(named: str, candidates: list[Candidate], op: str, workload: Workload, tolerance: float = 1.0,
           margin: float = MODEL_ERROR, previous: str | None = None) -> tuple[Candidate, str]:
    """The candidate `named` in the spec ("auto": the fastest exact one, at the fastest precision
    whose error meets `tolerance`, a measured one unless a modelled one beats it by more than
    `margin`; the `previous` pick, a label, unless one beats it clearly) and why; ValueError with
    the problem when none can run. A named strategy runs at its fastest precision whose error is
    known to meet the tolerance."""
    if named == "auto":
        try:
            chosen, reason = _auto(candidates, tolerance, margin, previous)
        except LookupError as exc:
            raise ValueError(f"no strategy can run {op} here: {exc}") from None
    else:
        mine = [c for c in candidates if c.strategy == named]
        ready = [c for c in mine if c.available and _unproven(c) is None]
        if not ready:
            raise ValueError(f"{named} cannot run: " + "; ".join(
                (f"{c.variant.lstrip('@')}: " if c.variant else "") + str(c.reason or _unproven(c)) for c in mine))
        chosen = min(ready, key=lambda c: c.estimate_s or 0.0)
        at = f" at {chosen.precision}" if chosen.variant else ""
        reason = f"named in the spec{at} ({WHOLE} {format_seconds(chosen.estimate_s)})"
    return chosen, f"{reason}; {pca_note(workload)}" if op == "pca" else reason
