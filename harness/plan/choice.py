"""Which candidate an analysis runs, and the sentence that says why."""

from __future__ import annotations

from harness.base.units import format_seconds
from harness.data.workload import Workload
from harness.machine.wisdom import MODELLED
from harness.plan.model import Candidate
from harness.strategies.registry import STRATEGIES


def pca_note(workload: Workload) -> str:
    """Why the workload's form decides the PCA strategy, for the plan's reason."""
    if workload.has_factors:
        return "LoRA factors: factored_gram takes the Gram from B.T B and A A.T, no dense delta"
    return "dense deltas: dual_gram streams each (layer, module) once into a float64 Gram"


def _measured(c: Candidate) -> str:
    """A mark on estimates from this machine's measurements, for the plan's reason."""
    measured = sum(b != MODELLED for b in c.basis.values())
    return "" if not measured else ", measured" if measured == len(c.basis) else ", partly measured"


def _auto(candidates: list[Candidate]) -> tuple[Candidate, str]:
    exact = [c for c in candidates if c.available and not STRATEGIES[c.strategy].approximate]
    if not exact:
        raise LookupError("; ".join(f"{c.strategy}: {c.reason}" for c in candidates))
    best = min(exact, key=lambda c: c.estimate_s or 0.0)
    notes = []
    for c in sorted(candidates, key=lambda c: (c.estimate_s is None, c.estimate_s or 0.0)):
        if c is best:
            continue
        if not c.available:
            notes.append(f"{c.strategy} not possible: {c.reason}")
        elif STRATEGIES[c.strategy].approximate:
            notes.append(f"{c.strategy} left out: randomized, so its accuracy depends on the "
                         "spectrum's decay (name it to use it)")
        else:
            notes.append(f"{c.strategy} est. {format_seconds(c.estimate_s)}{_measured(c)}")
    reason = f"auto: fastest exact strategy (est. {format_seconds(best.estimate_s)}{_measured(best)})"
    return best, reason + ("; " + "; ".join(notes) if notes else "")



def choose(named: str, candidates: list[Candidate], op: str, workload: Workload) -> tuple[Candidate, str]:
    """The candidate `named` in the spec ("auto": the fastest exact one) and why; ValueError
    with the problem when none can run."""
    if named == "auto":
        try:
            chosen, reason = _auto(candidates)
        except LookupError as exc:
            raise ValueError(f"no strategy can run {op} here: {exc}") from None
    else:
        chosen = next(c for c in candidates if c.strategy == named)
        if not chosen.available:
            raise ValueError(f"{chosen.strategy} cannot run: {chosen.reason}")
        reason = f"named in the spec (est. {format_seconds(chosen.estimate_s)})"
    return chosen, f"{reason}; {pca_note(workload)}" if op == "pca" else reason
