"""What strategies compute with during a run: the executor that fans work out (one per run,
started on first use) and the ExecContext built from the plan, alike for the runner, the
calibration and the asv cases."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from contextlib import AbstractContextManager

import numpy as np

from harness.base.executors import LazyExecutor, dask_executor, process_pool
from harness.base.progress import Display
from harness.compute import chunks
from harness.plan.model import Plan
from harness.strategies.base import ExecContext

PRELOAD = (chunks.__name__,)  # what a worker's tasks run, imported when it starts


def run_executor(plan: Plan, display: Display) -> LazyExecutor:
    """The plan's executor: Dask (a scheduler, or a LocalCluster) or a local process pool."""
    def start() -> AbstractContextManager[Executor]:
        if plan.executor == "dask":
            return dask_executor(plan.dask_address, plan.workers, plan.threads_per_worker, on_link=display.note)
        return process_pool(plan.workers, plan.threads_per_worker, PRELOAD)

    return LazyExecutor(start, f"starting {plan.workers} {plan.executor} workers", display)


def local_executor(workers: int, display: Display | None = None) -> LazyExecutor:
    """A local process pool of one BLAS thread per worker, for per-matrix fan-out outside a run."""
    return LazyExecutor(lambda: process_pool(workers, 1, PRELOAD), f"starting {workers} local workers", display)


def exec_context(plan: Plan, device: str, seed: int, executor: Callable[[], Executor]) -> ExecContext:
    """What a strategy computes with on `device`; the runner and benchmarks/ build it alike."""
    return ExecContext(
        dtype=np.dtype(plan.dtype),
        backend=device,  # type: ignore[arg-type]
        workers=plan.workers,
        seed=seed,
        executor=executor,
    )
