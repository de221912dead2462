"""The point `auto` last picked for a problem on this machine, kept in its wisdom: the planner
keeps it unless another candidate is clearly faster (plan.choice), so two strategies a busy
machine cannot tell apart do not take turns from run to run (a walk-through's svd_topk went
gram_eigh -> torch -> gram_eigh over consecutive plain runs of one spec)."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

KEPT = 256  # problems whose pick is kept at most, the latest: a sweep's every point is one


class Pick(BaseModel):
    key: str  # the problem (plan.compiler.pick_key); never the threads, which the load moves
    label: str  # the point picked: its strategy and variant, as the plan labels it


def replaced(picks: list[Pick], newer: Iterable[Pick]) -> list[Pick]:
    """`picks` with each of `newer` in place of the one of its key, the latest KEPT."""
    by = {p.key: p for p in picks}
    for p in newer:
        by.pop(p.key, None)
        by[p.key] = p
    return list(by.values())[-KEPT:]
