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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from harness.data.layout import AdapterLayout
from harness.data.workload import MatrixRef, Source
from harness.base.executors import SerialExecutor
from harness.linalg.prefetch import prefetched
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
    precision: str = ""  # the arithmetic (harness.linalg.precision); "" is dtype's own


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
    precision: str = ""


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
        precision=task.precision,
    )


def load_chunk(task: ChunkTask) -> Any:
    """The chunk's inputs as its strategy computes from them."""
    strategy = STRATEGIES[task.strategy]
    assert isinstance(strategy, Strategy)
    return strategy.load(task.source, task.refs, np.dtype(task.dtype))


def _computed(task: ChunkTask, executor: Callable[[], Executor], inputs: Callable[[], Any]) -> ChunkOutcome:
    """The chunk computed from `inputs()` (a load, or a wait for one), timed with it."""
    started, start = time.time(), time.perf_counter()
    strategy = STRATEGIES[task.strategy]
    assert isinstance(strategy, Strategy)
    with threadpool_limits(limits=task.threads):
        result = strategy.compute(task.op, inputs(), _context(task, executor))
    return ChunkOutcome(result=result.S.astype(np.float64), worker=worker_name(), started=started,
                        seconds=time.perf_counter() - start, vectors=result.U if task.keep_vectors else None)


def run_chunk(task: ChunkTask, executor: Callable[[], Executor] = SerialExecutor) -> ChunkOutcome:
    """Load and compute one chunk. On a worker, a fan-out strategy gets a SerialExecutor: workers
    never start pools of their own."""
    return _computed(task, executor, lambda: load_chunk(task))


def run_chunks_ahead(tasks: Sequence[ChunkTask], executor: Callable[[], Executor]) -> Iterator[ChunkOutcome]:
    """Each task's outcome, in order, computed here while a reader thread loads the next task's
    inputs (harness.linalg.prefetch): loading and computing overlap instead of alternating. For
    sources whose loads do no BLAS work (:attr:`Source.reads_ahead`): BLAS thread pools are
    process-wide, and a loader's product beside the compute's made both spin (a float64
    reference took 5x as long beside the span readers). Memory: two chunks' inputs at once,
    which the plan's batches leave room for."""
    # two slots: one chunk's inputs being computed, the next one's loaded; each load allocates
    # its own arrays, so the slots are tokens that only bound how far ahead the reader goes
    loaded = prefetched(tasks, lambda task, _slot: load_chunk(task), [np.empty(0), np.empty(0)])
    try:
        for task in tasks:
            yield _computed(task, executor, lambda: next(loaded))
    finally:
        loaded.close()  # stops and joins the reader when the run stops early


def run_gram_task(task: GramTask, executor: Callable[[], Executor] = SerialExecutor) -> ChunkOutcome:
    """The Grams of the task's positions, loaded and accumulated on the worker."""
    started, start = time.time(), time.perf_counter()
    strategy = STRATEGIES[task.strategy]
    assert isinstance(strategy, GramStrategy)
    with threadpool_limits(limits=task.threads):
        grams = strategy.grams(task.source, task.layout, _context(task, executor), task.memory_budget)
    return ChunkOutcome(result=grams, worker=worker_name(), started=started, seconds=time.perf_counter() - start)
