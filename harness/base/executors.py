"""Executors with the concurrent.futures interface: what the runner fans chunks out over, and
what CPU fan-out strategies are handed. Nobody downstream knows which one it got."""

from __future__ import annotations

import importlib
import importlib.util
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from contextlib import AbstractContextManager, ExitStack
from types import TracebackType
from typing import Any

from harness.base.processes import die_with, main_kept_out
from harness.base.progress import Display


START_TIMEOUT_S = 300.0  # every worker has started by then, or the pool is broken


def _init_worker(parent: int, parent_path: list[str], threads: int, preload: tuple[str, ...], started: Any) -> None:
    """Give the worker the parent's import path and `threads` BLAS/OpenMP threads (one for
    per-matrix fan-out), then wait at the `started` barrier for the other workers: the pool is
    handed out when all of them can take work, so no first timed call waits for a start.

    With spawn, a worker starts a fresh interpreter: without the parent's sys.path it cannot
    import `harness` when the parent ran from a source checkout. torch is not imported here (a
    second or more per worker, for numpy work): OMP_NUM_THREADS sets its pool if a task
    imports it later.

    Ctrl-C reaches the whole process group: the run answers it with one line and shuts the
    pool down, so workers ignore SIGINT rather than each printing a KeyboardInterrupt traceback.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with(parent)  # a run killed with SIGKILL must not leave its workers behind
    for entry in reversed(parent_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    os.environ["OMP_NUM_THREADS"] = str(threads)  # as Dask workers get it: the same bits
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads)
    for module in preload:  # what tasks run: imported at start, not in a timed call
        importlib.import_module(module)

    started.wait(START_TIMEOUT_S)


def _ready() -> bool:
    return True


def process_pool(workers: int, threads: int = 1, preload: tuple[str, ...] = ()) -> Executor:
    """A spawn-based pool, started now so its start-up is never inside a timed region; each
    worker imports the modules named in `preload` (the tasks it will run) before it takes work.

    Spawn rather than fork: forking a process that already runs OpenMP or torch threads can
    deadlock the child.
    """
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_init_worker,
        initargs=(os.getpid(), list(sys.path), threads, tuple(preload), context.Barrier(workers)),
    )
    # with spawn, each submit that finds no idle worker starts one: `workers` submits start all
    with main_kept_out():
        futures = [pool.submit(_ready) for _ in range(workers)]
    for future in futures:
        future.result()
    return pool


class SerialExecutor(Executor):
    """Runs each call at once in this process: what a chunk task running on a worker hands a
    fan-out strategy, so workers never start pools of their own."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # delivered through the future, as a real executor does
            future.set_exception(exc)
        return future


def dashboard_line(client: Any) -> str:
    """Where a LocalCluster's dashboard is: on a random port, so the user learns it only from us.
    A client without one gives "", None or a KeyError; without bokeh the page only asks for it."""
    try:
        link = client.dashboard_link
    except Exception:  # noqa: BLE001  (any failure to find it means: no dashboard to show)
        link = None
    if not link:
        return "dask dashboard: not available (pip install bokeh)"
    if importlib.util.find_spec("bokeh") is None:
        return f"dask dashboard: {link} (empty without bokeh: pip install bokeh)"
    return f"dask dashboard: {link}"


class LazyExecutor:
    """A run's one executor, started on first use (shown as a phase of `display`, if any) and
    closed with the run: a run that never fans out never starts workers."""

    def __init__(
        self, start: Callable[[], AbstractContextManager[Executor]], label: str, display: Display | None = None,
    ) -> None:
        self._start, self._display, self._label = start, display, label
        self._stack = ExitStack()
        self._executor: Executor | None = None

    def __call__(self) -> Executor:
        if self._executor is None:
            if self._display is None:
                self._executor = self._stack.enter_context(self._start())
            else:
                with self._display.phase(self._label) as phase:
                    self._executor = self._stack.enter_context(self._start())
                    phase.advance()
        return self._executor

    def replace_broken(self, broken: Executor) -> None:
        """A process pool whose worker died refuses all work; the next call starts a new one."""
        if self._executor is broken:
            broken.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def close(self) -> None:
        self._stack.close()
        self._executor = None

    def __enter__(self) -> LazyExecutor:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
