"""Tasks a worker runs on its own: one shape-group chunk of a full analysis, or the Grams of a
range of (layer, module) positions for a PCA (summed by the client).

The task carries the source's description (paths, keys, synthetic seed), never the matrices: a
worker loads its chunk itself, so a cluster does not ship gigabytes through the scheduler.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from harness.data.layout import AdapterLayout
from harness.data.workload import MatrixRef, Source
from harness.executors import SerialExecutor
from harness.strategies.base import ExecContext, OpRequest, Strategy
from harness.strategies.gram import GramStrategy
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
    keep_vectors: bool = False  # return U too (top-k bases, kept for pairwise features)


@dataclass(frozen=True)
class GramTask:
    source: Source
    layout: AdapterLayout  # the adapters, and the positions this task covers
    strategy: str
    dtype: str
    device: str
    seed: int
    threads: int | None
    memory_budget: int


@dataclass(frozen=True)
class ChunkOutcome:
    result: np.ndarray  # a chunk's S, (len(refs), q); or a GramTask's (positions, n, n); float64
    worker: str
    started: float  # time.time() on the worker
    seconds: float  # load and compute, on the worker
    vectors: np.ndarray | None = None  # a chunk's U, (len(refs), m, k), when the task kept them


def worker_name() -> str:
    """The Dask worker's address, else host and process id. A Dask worker has imported
    distributed already; importing it just to ask would cost a local run ~0.3-1.8 s."""
    distributed = sys.modules.get("distributed")
    if distributed is not None:
        try:
            return str(distributed.get_worker().address)
        except ValueError:  # distributed is loaded, but this is not one of its workers
            pass
    return f"{socket.gethostname()}:{os.getpid()}"


def _context(task: ChunkTask | GramTask, executor: Callable[[], Executor]) -> ExecContext:
    return ExecContext(
        dtype=np.dtype(task.dtype),
        backend=task.device,  # type: ignore[arg-type]
        workers=1,
        seed=task.seed,
        executor=executor,
    )


def run_chunk(task: ChunkTask, executor: Callable[[], Executor] = SerialExecutor) -> ChunkOutcome:
    """Load and compute one chunk. On a worker, a fan-out strategy gets a SerialExecutor: workers
    never start pools of their own."""
    started, start = time.time(), time.perf_counter()
    strategy = STRATEGIES[task.strategy]
    assert isinstance(strategy, Strategy)
    ctx = _context(task, executor)
    with threadpool_limits(limits=task.threads):
        data = strategy.load(task.source, task.refs, ctx.dtype)
        result = strategy.compute(task.op, data, ctx)
    return ChunkOutcome(result=result.S.astype(np.float64), worker=worker_name(), started=started,
                        seconds=time.perf_counter() - start, vectors=result.U if task.keep_vectors else None)


def run_gram_task(task: GramTask, executor: Callable[[], Executor] = SerialExecutor) -> ChunkOutcome:
    """The Grams of the task's positions, loaded and accumulated on the worker."""
    started, start = time.time(), time.perf_counter()
    strategy = STRATEGIES[task.strategy]
    assert isinstance(strategy, GramStrategy)
    with threadpool_limits(limits=task.threads):
        grams = strategy.grams(task.source, task.layout, _context(task, executor), task.memory_budget)
    return ChunkOutcome(result=grams, worker=worker_name(), started=started, seconds=time.perf_counter() - start)
