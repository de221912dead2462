"""What a timing worker builds (run.subjects): its inputs from the source, its own context and pool,
warmed before any timed call; the same matrices for every point of a round."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import pytest

from harness.base.executors import SerialExecutor
from harness.data.workload import Workload
from harness.run import subjects as subjecting
from harness.run.subjects import Context, MatrixWork, rotating, sample_refs
from harness.strategies.base import OpRequest
from harness.strategies.registry import STRATEGIES


def work(workload: Workload, strategy: str) -> MatrixWork:
    group = workload.groups()[0]
    sample = sample_refs(group, 2)
    return MatrixWork(strategy, strategy, OpRequest("svdvals"), ((sample, 2, 2),), workload.source,
                      Context(backend="numpy", precision="float32", compiled=False, workers=2,
                              threads_per_worker=1, seed=0))


def test_a_fan_out_points_pool_starts_when_warmed_before_any_timed_call(
        lora_workload: Workload, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[int] = []

    @contextmanager
    def pool(workers: int, threads: int = 1, preload: tuple[str, ...] = ()) -> Any:
        started.append(workers)
        yield SerialExecutor()

    monkeypatch.setattr(subjecting, "process_pool", pool)
    target = work(lora_workload, "process_pool").build()
    warmed: list[str] = []
    monkeypatch.setattr(type(STRATEGIES["process_pool"]), "warm", lambda self, backend, source=None: warmed.append(backend))
    target.warm()
    assert started == [2] and warmed == ["numpy"]
    call = target.prepare(0, 0)
    assert call().S.shape[0] == 2 and started == [2]  # the timed call starts nothing
    target.close()


def test_every_round_visits_the_same_matrices_for_every_point(lora_workload: Workload) -> None:
    numpy, factored = work(lora_workload, "numpy").build(), work(lora_workload, "factored").build()
    a, b = numpy.prepare(0, 1)(), factored.prepare(0, 1)()
    assert a.S.shape == b.S.shape and abs(a.S - b.S).max() <= 1e-3 * abs(a.S).max()
    assert rotating([0, 1, 2], 2, 1) == [2, 0]
