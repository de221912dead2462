"""Fanning one step's tasks out: in this process in order (reading ahead where the plan says so),
over a local process pool, or over the run's Dask cluster; each outcome comes with how many times
its task was started, so the record says which chunks were lost with their worker."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, CancelledError, Executor, Future, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from harness.base.executors import LazyExecutor
from harness.base.progress import Phase
from harness.base.units import format_seconds
from harness.compute.chunks import ChunkOutcome, ChunkTask
from harness.record.run_record import ChunkPlacement
from harness.run.dask_session import DaskSession

MAX_ATTEMPTS = 3  # a task lost with its worker this many times ends the step
CHECK_S = 1.0  # how often a wait on the cluster with nothing done looks at the cluster
Outcomes = Iterator[tuple[int, ChunkOutcome, int]]  # (task index, outcome, attempts), as they complete


def in_order(tasks: Sequence[Any], run_task: Callable[..., ChunkOutcome], phase: Phase, executor: LazyExecutor,
             ahead: Callable[..., Iterator[ChunkOutcome]] | None = None) -> Outcomes:
    """Here, in order, through `ahead` (which reads the next task's inputs while this one
    computes) where given; fan-out strategies get `executor`."""
    local = ahead(tasks, executor) if ahead is not None else (run_task(t, executor) for t in tasks)
    for i in range(len(tasks)):
        phase.item(f"chunk {i + 1} of {len(tasks)}")
        yield i, next(local), 1


def _lost(i: int, attempts: int, exc: BaseException) -> RuntimeError:
    return RuntimeError(f"task {i + 1} was lost with its worker {attempts} times (a worker's memory limit, "
                        f"or a crash in a library?): {exc}")


def on_pool(tasks: Sequence[Any], run_task: Callable[..., ChunkOutcome], phase: Phase, pool: LazyExecutor,
            workers: int) -> Outcomes:
    """Over a process pool; a task lost with its worker (a killed process breaks the whole pool)
    goes to a new pool, up to MAX_ATTEMPTS times."""
    attempts = dict.fromkeys(range(len(tasks)), 1)
    pending: dict[Future[ChunkOutcome], tuple[int, Executor]] = {}

    def submit(i: int) -> None:
        executor = pool()
        pending[executor.submit(run_task, tasks[i])] = (i, executor)

    for i in range(len(tasks)):
        submit(i)
    while pending:
        phase.item(f"{len(pending)} tasks on {workers} workers")
        done, _ = wait(pending, return_when=FIRST_COMPLETED)
        for future in done:
            i, executor = pending.pop(future)
            try:
                outcome = future.result()
            except BrokenProcessPool as exc:
                if attempts[i] >= MAX_ATTEMPTS:
                    raise _lost(i, attempts[i], exc) from exc
                attempts[i] += 1
                pool.replace_broken(executor)
                submit(i)
                continue
            yield i, outcome, attempts[i]


def on_cluster(tasks: Sequence[Any], run_task: Callable[..., ChunkOutcome], phase: Phase, session: DaskSession,
               analysis: str, device: str) -> Outcomes:
    """Over the Dask cluster. The scheduler runs again, unasked, what a lost worker held; the
    session counts those attempts from its events. A task the scheduler gives up on (KilledWorker)
    is submitted again while it has attempts left. Every wait is bounded: between waits the
    session says what it lost and whether it can go on (harness.run.dask_session)."""
    from distributed import KilledWorker

    session()
    homes = [f"{t.refs[0].id}+{len(t.refs)}" if isinstance(t, ChunkTask) else None for t in tasks]
    pending = {session.submit(run_task, task, device, (analysis, i), homes[i]): i for i, task in enumerate(tasks)}
    while pending:
        phase.item(f"{len(pending)} of {len(tasks)} tasks on the cluster")
        done, _ = wait(pending, timeout=CHECK_S, return_when=FIRST_COMPLETED)
        session.check(stalled=not done)
        for future in done:
            i = pending.pop(future)
            try:
                outcome = future.result()
            except CancelledError:  # the scheduler went: its client cancels every future
                session.check()
                raise session.lost_scheduler() from None
            except RuntimeError as exc:
                if "deserialization of the task graph" in str(exc):  # distributed's words for it
                    raise session.cannot_unpickle() from None
                raise
            except KilledWorker as exc:
                if (attempts := session.attempts((analysis, i))) >= MAX_ATTEMPTS:
                    raise _lost(i, attempts, exc) from exc
                pending[session.submit(run_task, tasks[i], device, (analysis, i), homes[i])] = i
                continue
            if (home := homes[i]) is not None:
                session.ran(home, outcome.worker)
            yield i, outcome, session.attempts((analysis, i))
    session.check()


def spread_line(analysis: str, placements: Sequence[ChunkPlacement]) -> str:
    """How an analysis' tasks were spread: per worker, how many and their seconds there."""
    by_worker: dict[str, list[float]] = {}
    for p in placements:
        by_worker.setdefault(p.worker, []).append(p.seconds)
    spread = ", ".join(f"{worker} {len(s)} ({format_seconds(sum(s))})" for worker, s in sorted(by_worker.items()))
    again = sum(p.attempts > 1 for p in placements)
    workers = f"{len(by_worker)} worker" + ("s" if len(by_worker) != 1 else "")
    return (f"{analysis}: {len(placements)} tasks on {workers}: {spread}"
            + (f"; {again} run again after losing their worker" if again else ""))
