"""A run whose analyses the result cache holds whole (walk 14: a second main run read `ETA ~0:00:46`
at its start and ended 29 s later): the ETA counts neither their computing nor the loading and
features the plan spread over the run (run.cached, run.eta.work_left)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.run.cached import cached_steps
from harness.plan.model import limited
from harness.run.eta import work_left


def _step(name: str, estimate_s: float, op: str = "svdvals", features: tuple[str, ...] = ("stable_rank",)
          ) -> SimpleNamespace:
    timed = [SimpleNamespace(estimate_s=1.0, role="baseline", allocations=[SimpleNamespace(rounds=1)])]
    return SimpleNamespace(analysis=name, op=op, estimate_s=estimate_s, timed=timed, features=features,
                           batch_sizes={"g": 2})


def test_cached_analyses_leave_their_computing_and_their_share_of_loading_features_and_workers_out() -> None:
    steps = [_step("spectrum", 3.0), _step("top3", 5.0)]
    overheads = {"loading": 2.0, "features": 1.5, "worker start": 0.5, "torch import": 1.5}
    idle = sum(s.estimate_s for s in steps) + sum(overheads.values())
    plan = SimpleNamespace(steps=steps, overheads=overheads, timings_s=limited(steps, None), busy_s=lambda s: 2.0 * s)
    plan.estimate_s = plan.busy_s(idle + sum(1.0 + 0.12 * 3 for _s in steps))
    units, estimate = work_left(plan, set(), None)  # type: ignore[arg-type]
    cold_units, cold = units, estimate
    assert cold == pytest.approx(plan.estimate_s - 2.0 * 1.5)  # torch imported for the picks before the display
    units, estimate = work_left(plan, set(), None, cached=frozenset({"spectrum"}))  # type: ignore[arg-type]
    assert units[0] == pytest.approx(cold_units[0] - 2.0 * 3.0) and units[1] == pytest.approx(cold_units[1])
    assert estimate == pytest.approx(cold - 2.0 * 3.0 - 2.0 * (4.0 / 2))  # its computing, half of the rest
    _units, estimate = work_left(plan, set(), None, cached=frozenset({"spectrum", "top3"}))  # type: ignore[arg-type]
    assert estimate == pytest.approx(cold - 2.0 * 8.0 - 2.0 * 4.0)  # loading, features, workers: none


def test_an_analysis_is_cached_when_every_chunk_and_its_features_are(tmp_path: Path) -> None:
    refs = [SimpleNamespace(id=f"m{i}") for i in range(5)]  # chunks of 2: m0 m1, m2 m3, m4
    workload = SimpleNamespace(groups=lambda: [SimpleNamespace(label="g", refs=refs)])
    keys = SimpleNamespace(chunk=lambda s, ids: f"{s.analysis}-{'-'.join(ids)}",
                           arrays=lambda key: f"{key}-arrays",
                           step=lambda s, entry, **settings: f"{s.analysis}-{entry}-{settings['analysis']['op']}")
    cache = SimpleNamespace(path=lambda key: tmp_path / key)

    def held(*keys: str) -> None:
        for key in keys:
            (tmp_path / key).touch()

    steps = [_step("spectrum", 1.0), _step("top3", 1.0), _step("plain", 1.0, features=()),
             _step("geometry", 1.0, op="pca", features=()), _step("pca2", 1.0, op="pca", features=())]
    analysis: Any = lambda s: {"op": s.op}  # noqa: E731
    held("spectrum-m0-m1", "spectrum-m2-m3", "spectrum-m4", "spectrum-features-svdvals")
    held("top3-m0-m1", "top3-m2-m3", "top3-features-svdvals")  # a chunk missing
    held("plain-m0-m1", "plain-m2-m3", "plain-m4")  # no features to hold
    held("geometry-pca-pca", "geometry-pca-pca-arrays")  # a PCA: its own entry and its arrays
    held("pca2-m0-m1", "pca2-m2-m3", "pca2-m4", "pca2-pca-pca")  # chunks are not a PCA's; its arrays missing
    assert cached_steps(steps, workload, cache, keys, analysis, None) == {  # type: ignore[arg-type]
        "spectrum", "plain", "geometry"}
    assert cached_steps(steps, workload, None, keys, analysis, None) == frozenset()  # type: ignore[arg-type]
