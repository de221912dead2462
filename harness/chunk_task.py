"""One shape-group chunk of a full analysis as a task a worker runs on its own.

The task carries the source's description (paths, keys, synthetic seed), never the matrices: a
worker loads its chunk itself, so a cluster does not ship gigabytes through the scheduler.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from harness.data.workload import MatrixRef, Source
from harness.executors import SerialExecutor
from harness.strategies.base import ExecContext, OpRequest
from harness.strategies.registry import STRATEGIES


@dataclass(frozen=True)
class ChunkTask:
    source: Source
    refs: tuple[MatrixRef, ...]
    strategy: str
    op: OpRequest
    dtype: str
    device: str
    seed: int
    threads: int | None  # BLAS threads on the worker; None leaves them as they are


@dataclass(frozen=True)
class ChunkOutcome:
    S: np.ndarray  # (len(refs), q) float64
    worker: str
    started: float  # time.time() on the worker
    seconds: float  # load and compute, on the worker


def worker_name() -> str:
    """The Dask worker's address, else host and process id."""
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):  # not inside a Dask worker
        return f"{socket.gethostname()}:{os.getpid()}"


def run_chunk(task: ChunkTask, executor: Callable[[], Executor] = SerialExecutor) -> ChunkOutcome:
    """Load and compute one chunk. On a worker, a fan-out strategy gets a SerialExecutor: workers
    never start pools of their own."""
    started, start = time.time(), time.perf_counter()
    strategy = STRATEGIES[task.strategy]
    ctx = ExecContext(
        dtype=np.dtype(task.dtype),
        backend=task.device,  # type: ignore[arg-type]
        workers=1,
        seed=task.seed,
        executor=executor,
    )
    with threadpool_limits(limits=task.threads):
        data = strategy.load(task.source, task.refs, ctx.dtype)
        S = strategy.compute(task.op, data, ctx).S.astype(np.float64)
    return ChunkOutcome(S=S, worker=worker_name(), started=started, seconds=time.perf_counter() - start)
