"""Which candidate an analysis runs, and the sentence that says why."""

from __future__ import annotations

from harness.base.units import format_seconds
from harness.data.workload import Workload
from harness.machine.wisdom import BUSY, MODELLED
from harness.plan.model import Candidate
from harness.plan.variants import needs_measurement
from harness.strategies.registry import STRATEGIES


def pca_note(workload: Workload) -> str:
    """Why the workload's form decides the PCA strategy, for the plan's reason."""
    if workload.has_factors:
        return "LoRA factors: factored_gram takes the Gram from B.T B and A A.T, no dense delta"
    return "dense deltas: dual_gram streams each (layer, module) once into a float64 Gram"


def _measured(c: Candidate) -> str:
    """A mark on estimates from this machine's measurements, for the plan's reason."""
    measured = sum(not b.startswith(MODELLED) for b in c.basis.values())
    busy = " while busy" if any(b.startswith(BUSY) for b in c.basis.values()) else ""
    return "" if not measured else f", measured{busy}" if measured == len(c.basis) else f", partly measured{busy}"


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


def _auto(candidates: list[Candidate], tolerance: float) -> tuple[Candidate, str]:
    exact = [c for c in candidates if _eligible(c)]
    if not exact:
        why: dict[str, list[str]] = {}  # one reason once, with every candidate it rules out
        for c in candidates:
            why.setdefault(str(c.reason or _unproven(c)), []).append(c.label)
        raise LookupError("; ".join(f"{reason} ({', '.join(labels)})" for reason, labels in why.items()))
    best = min(exact, key=lambda c: c.estimate_s or 0.0)
    notes = []
    for c in sorted(candidates, key=lambda c: (c.estimate_s is None, c.estimate_s or 0.0)):
        if c is best:
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
    what = "strategy" if not best.variant else "(strategy, precision)"
    met = f"; measured error {best.error:.1e} within tolerance {tolerance:g}" if best.error is not None and best.variant else ""
    reason = f"auto: fastest exact {what} (est. {format_seconds(best.estimate_s)}{_measured(best)}{met})"
    return best, reason + ("; " + "; ".join(notes) if notes else "")


def choose(named: str, candidates: list[Candidate], op: str, workload: Workload,
           tolerance: float = 1.0) -> tuple[Candidate, str]:
    """The candidate `named` in the spec ("auto": the fastest exact one, at the fastest precision
    whose error meets `tolerance`) and why; ValueError with the problem when none can run. A
    named strategy runs at its fastest precision whose error is known to meet the tolerance."""
    if named == "auto":
        try:
            chosen, reason = _auto(candidates, tolerance)
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
        reason = f"named in the spec{at} (est. {format_seconds(chosen.estimate_s)})"
    return chosen, f"{reason}; {pca_note(workload)}" if op == "pca" else reason
