"""What strategies compute with during a run: the executor that fans work out (one per run,
started on first use) and the ExecContext built from the plan, alike for the runner, the
calibration and the asv cases."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor

import numpy as np

from harness.base.executors import LazyExecutor, process_pool
from harness.base.progress import Display
from harness.compute import chunks
from harness.data.workload import Source
from harness.plan.model import Plan, Step
from harness.run.dask_session import DaskSession
from harness.strategies.base import ExecContext
from harness.strategies.registry import STRATEGIES

PRELOAD = (chunks.__name__,)  # what a worker's tasks run, imported when it starts


def run_executor(plan: Plan, display: Display) -> LazyExecutor | DaskSession:
    """Where the plan's full analyses fan out: its Dask cluster (a scheduler, or a LocalCluster)
    or a local process pool."""
    if plan.executor == "dask":
        return DaskSession(plan, display)
    return local_executor(plan.workers, display, plan.threads_per_worker)


def timing_executor(plan: Plan, run: LazyExecutor | DaskSession, display: Display) -> LazyExecutor:
    """What strategies timed (or run) in this process fan out over: the run's own process pool,
    or, when the run's is a Dask cluster, a local pool of its own. Timings are taken on this
    machine, never through a cluster, so their numbers and their host agree."""
    return run if isinstance(run, LazyExecutor) else local_executor(plan.workers, display, plan.threads_per_worker)


def local_executor(workers: int, display: Display | None = None, threads: int = 1) -> LazyExecutor:
    """A local process pool of `threads` BLAS threads per worker, started on first use."""
    return LazyExecutor(lambda: process_pool(workers, threads, PRELOAD), f"starting {workers} local workers", display)


def exec_context(plan: Plan, device: str, seed: int, executor: Callable[[], Executor]) -> ExecContext:
    """What a strategy computes with on `device`; the runner and benchmarks/ build it alike."""
    return ExecContext(
        dtype=np.dtype(plan.dtype),
        backend=device,  # type: ignore[arg-type]
        workers=plan.workers,
        seed=seed,
        executor=executor,
    )


def warm_chosen(steps: list[Step], executor: LazyExecutor | DaskSession, source: Source, display: Display) -> None:
    """Import (and compile) what the chosen strategies' first calls would, before any full
    analysis, where they compute, saying what: the answer's wall time is then its own work's."""
    loads = {(s.strategy, s.device): STRATEGIES[s.strategy].imports(s.device) for s in steps}  # type: ignore[arg-type]
    if isinstance(executor, DaskSession):  # the workers compute: they import, not this process
        with display.phase("importing the tasks' code on the dask workers") as phase:
            phase.item(", ".join(f"{name} on {device}" for name, device in loads))
            executor.warm(list(loads), source)
        return
    if not any(loads.values()):
        return
    with display.phase("importing for the picks", len(loads)) as phase:  # whole at 100 columns (walk 11)
        for (name, device), modules in loads.items():
            phase.item(f"{name}: {', '.join(modules) or 'nothing'}")
            STRATEGIES[name].warm(device, source)  # type: ignore[arg-type]
            phase.advance()
