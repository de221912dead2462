"""Which analyses a run will take whole from the result cache, known before it starts: their
answers and features are read, not computed, and the run's ETA counts neither them nor the loading
and features the plan spread over the run (walk 14: a second main run read `ETA ~0:00:46` at its
start and ended 29 s later; its 13 s of planned loading, features and imports never happened)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.data.workload import Workload, chunks
from harness.plan.model import Step
from harness.store.cache import ResultCache
from harness.store.keys import Keys


def cached_steps(steps: list[Step], workload: Workload, cache: ResultCache | None, keys: Keys,
                 analysis: Callable[[Step], dict[str, Any]], memory_budget: int | None) -> frozenset[str]:
    """The steps whose every chunk and features entry the cache holds, a PCA its own entry and its
    arrays (`analysis`: a step's resolved `[[analysis]]` table, in its keys; `memory_budget`: the
    plan's, in a PCA's)."""
    if cache is None:
        return frozenset()

    def held(s: Step) -> bool:
        if s.op == "pca":
            key = keys.step(s, "pca", analysis=analysis(s), budget=memory_budget)
            return cache.path(key).exists() and cache.path(keys.arrays(key)).exists()
        return all(cache.path(keys.chunk(s, [ref.id for ref in chunk])).exists()
                   for group in workload.groups() for chunk in chunks(group.refs, s.batch_sizes[group.label])) and (
            not s.features or cache.path(keys.step(s, "features", analysis=analysis(s))).exists())

    return frozenset(s.analysis for s in steps if held(s))
