"""Sharing the benchmark budget: how many matrices, warm-ups and repeats each compared
strategy gets per shape group, planned from cost estimates and re-fitted while the phase runs.

Every (analysis, strategy, group) item wants `sample` matrices, `warmup` untimed calls and
`repeats` timed ones. The budget is shared max-min fairly (water-filling: cheap items get all
they want, what they leave goes to the rest). An item that does not fit gives up matrices
first, then warm-up, then repeats, down to one timed call on the fewest matrices it can be
measured on: no compared strategy is ever dropped, so a tight budget is overrun rather than
a strategy left untimed. While the phase runs, each item's allowance is its planned share of
what is left, and its cost estimate is corrected by how far off the estimates of the items
already measured were.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel

from harness.bench.measure import MIN_TIME_S
from harness.base.units import format_seconds


FLOOR = 0.25  # every item may take this share of an even split of the budget, spent or not
# A call estimated under FAST_CALL_S gets its warm-up and MIN_FAST_SAMPLES samples whatever the
# budget: they cost ~0.1 s at most, and one unwarmed sample of a 1 ms call was a 36 ms hiccup here
FAST_CALL_S = 0.02
MIN_FAST_SAMPLES = 5
POSITIONS = "positions"  # the one "group" of a pca step: its (layer, module) positions
ItemKey = tuple[str, str, str]  # one item of the phase: (analysis, strategy, shape group)


class Allocation(BaseModel):
    """What one compared strategy gets on one shape group (or on the PCA's positions)."""

    group: str
    per_matrix_s: float  # estimated seconds of one matrix (one position for pca)
    matrices: int
    warmup: int
    repeats: int
    min_time_s: float  # fast calls repeat until this much is sampled
    max_matrices: int  # what it would get with budget to spare
    min_matrices: int  # the fewest it can be timed on

    def want(self, warmup: int, repeats: int, correction: float = 1.0) -> Want:
        """What it wants, its per-matrix estimate scaled by `correction`."""
        return Want(self.group, self.per_matrix_s * correction, self.max_matrices, self.min_matrices,
                    warmup, repeats)

    @property
    def call_s(self) -> float:
        return self.per_matrix_s * self.matrices

    @property
    def min_samples(self) -> int:
        """Samples to take even past the allowance."""
        return MIN_FAST_SAMPLES if self.call_s < FAST_CALL_S else 1

    @property
    def estimate_s(self) -> float:
        return cost(self.per_matrix_s, self.matrices, self.warmup, self.repeats, self.min_time_s)


@dataclass(frozen=True)
class Want:
    """What an item gets when the budget allows, and the fewest matrices it can be timed on
    (a fan-out strategy needs one matrix per worker, or it measures one worker)."""

    group: str
    per_matrix_s: float
    matrices: int
    min_matrices: int
    warmup: int
    repeats: int


def cost(per_matrix_s: float, matrices: int, warmup: int, repeats: int, min_time_s: float) -> float:
    call = per_matrix_s * matrices
    return call * warmup + max(call * repeats, min_time_s if call < min_time_s else 0.0)


def fit(want: Want, share_s: float) -> Allocation:
    """The best allocation of `want` within `share_s`: matrices are cut first, then warm-up, then
    repeats; at least one timed call on `min_matrices` when nothing fits (a fast call keeps its
    warm-up and repeats)."""
    min_time = min(MIN_TIME_S, max(share_s, 0.0) / 2)

    def alloc(n: int, w: int, r: int) -> Allocation:
        return Allocation(group=want.group, per_matrix_s=want.per_matrix_s, matrices=n, warmup=w,
                          repeats=r, min_time_s=min_time, max_matrices=want.matrices,
                          min_matrices=want.min_matrices)

    for r in range(want.repeats, 0, -1):
        for w in range(want.warmup, -1, -1):
            lo, hi = want.min_matrices, want.matrices
            if cost(want.per_matrix_s, lo, w, r, min_time) > share_s:
                continue
            while lo < hi:  # the most matrices that fit: cost grows with n
                mid = (lo + hi + 1) // 2
                if cost(want.per_matrix_s, mid, w, r, min_time) <= share_s:
                    lo = mid
                else:
                    hi = mid - 1
            return alloc(lo, w, r)
    if want.per_matrix_s * want.min_matrices < FAST_CALL_S:
        return alloc(want.min_matrices, want.warmup, want.repeats)
    return alloc(want.min_matrices, 0, 1)


def allocate(wants: dict[ItemKey, Want], budget_s: float) -> dict[ItemKey, Allocation]:
    """Water-filling: in order of what they want, each item gets at most an equal share of what
    the items before it left."""
    def full(w: Want) -> float:
        return cost(w.per_matrix_s, w.matrices, w.warmup, w.repeats, MIN_TIME_S)

    order = sorted(wants, key=lambda key: full(wants[key]))
    remaining, out = budget_s, {}
    for i, key in enumerate(order):
        out[key] = fit(wants[key], remaining / (len(order) - i))
        remaining -= out[key].estimate_s
    return out


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _cuts(a: Allocation, w: Want, per_group: str) -> list[str]:
    cut = []
    if a.matrices < w.matrices:
        unit = ("position", "positions") if a.group == POSITIONS else ("matrix", "matrices")
        cut.append(_count(a.matrices, *unit) + per_group)
    if a.warmup < w.warmup:
        cut.append("no warm-up" if a.warmup == 0 else _count(a.warmup, "warm-up", "warm-ups"))
    if a.repeats < w.repeats:
        cut.append(_count(a.repeats, "repeat", "repeats"))
    return cut


def cut_note(allocations: list[Allocation], wants: list[Want]) -> str | None:
    """What the budget cut, and why, in words: "1 matrix per group, 2 repeats: one call costs
    ~0.3 s"; None when nothing was cut."""
    cut = {a.group: _cuts(a, w, "") for a, w in zip(allocations, wants)}
    cut_calls = [a.call_s for a in allocations if cut[a.group]]
    if not cut_calls:
        return None
    if len(allocations) == 1:
        what = ", ".join(cut[allocations[0].group])
    elif len({tuple(c) for c in cut.values()}) == 1:
        what = ", ".join(_cuts(allocations[0], wants[0], " per group"))
    else:
        what = "; ".join(f"{group}: {', '.join(c)}" for group, c in cut.items() if c)
    return f"{what}: one call costs ~{format_seconds(max(cut_calls))}"


@dataclass
class BudgetClock:
    """The budget while the phase runs: what is left, each remaining item's planned share, and
    how far off the estimates were (measured / estimated seconds, per strategy)."""

    budget_s: float
    planned: dict[ItemKey, float]  # planned seconds of the items not yet done
    spent_s: float = 0.0
    ratios: dict[str, list[float]] = field(default_factory=dict)
    items: int = field(init=False)

    def __post_init__(self) -> None:
        self.items = len(self.planned)

    def allowance(self, key: ItemKey) -> float:
        """Its planned share of what is left; at least FLOOR of an even share of the budget, so
        an overrun leaves cheap items their repeats and bounds the total overrun."""
        left = max(self.budget_s - self.spent_s, 0.0)
        total = sum(self.planned.values())
        share = left * self.planned.get(key, 0.0) / total if total > 0 else left
        return max(share, FLOOR * self.budget_s / max(self.items, 1))

    def correction(self, strategy: str) -> float:
        """Measured over estimated seconds: this strategy's own when it has been measured,
        else the median of all, else 1."""
        own = self.ratios.get(strategy)
        every = [r for rs in self.ratios.values() for r in rs]
        chosen = own or every
        return float(np.median(chosen)) if chosen else 1.0

    def done(self, key: ItemKey, strategy: str, seconds: float, ratio: float | None) -> None:
        self.spent_s += seconds
        self.planned.pop(key, None)
        if ratio is not None and math.isfinite(ratio) and ratio > 0:
            self.ratios.setdefault(strategy, []).append(ratio)
