"""Executors with the concurrent.futures interface that CPU fan-out strategies are handed."""

from __future__ import annotations

import multiprocessing
import sys
from concurrent.futures import Executor, ProcessPoolExecutor


def _init_worker(parent_path: list[str]) -> None:
    """Give the worker the parent's import path and one BLAS/OpenMP thread.

    With spawn, a worker starts a fresh interpreter: without the parent's sys.path it cannot
    import `harness` when the parent ran from a source checkout.
    """
    for entry in reversed(parent_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1)
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)


def _ready() -> bool:
    return True


def process_pool(workers: int) -> Executor:
    """A spawn-based pool, started now so its start-up is never inside a timed region.

    Spawn rather than fork: forking a process that already runs OpenMP or torch threads can
    deadlock the child.
    """
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_init_worker,
        initargs=(list(sys.path),),
    )
    for future in [pool.submit(_ready) for _ in range(workers)]:
        future.result()
    return pool
