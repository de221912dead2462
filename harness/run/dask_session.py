"""A run's Dask cluster while it runs: joined (or a LocalCluster started) before the first analysis,
its workers checked and warmed; each task sent where it may run (the usable workers; the GPU
workers for CUDA work, asking for a "GPU" resource where they declare one); and every worker the
scheduler loses while it holds the run's tasks counted against those tasks, printed and recorded.
A lost scheduler, or no worker left to run on, ends the run in one ClusterError line."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from contextlib import ExitStack
from datetime import datetime, timezone
from types import TracebackType
from typing import Any

from harness.base.executors import dashboard_line
from harness.base.processes import main_kept_out
from harness.base.progress import Display
from harness.data.memo import forget_worker_memo
from harness.data.workload import Source
from harness.compute.worker import warm_worker
from harness.machine.cluster import LOCAL_CLUSTER, ClusterInfo, LostWorker
from harness.plan.model import Plan
from harness.run.cluster import (ANSWER_TIMEOUT_S, CONNECT_TIMEOUT_S, WORKERS_TIMEOUT_S, ClusterError, connect, quiet,
                                 require_distributed, survey, where)

Tag = tuple[str, int]  # (analysis, task index): what a Dask key was submitted for


class DaskSession:
    """Started by calling it (as harness.base.executors.LazyExecutor is), closed with the run."""

    def __init__(self, plan: Plan, display: Display) -> None:
        self._plan, self._display = plan, display
        self._stack = ExitStack()
        self._client: Any = None
        self.info: ClusterInfo | None = None  # as the run found it on joining
        self.lost: list[LostWorker] = []  # workers lost while the run was on the cluster
        self._lock = threading.Lock()
        self._tags: dict[str, Tag] = {}  # Dask key -> what it computes
        self._lost_with: dict[Tag, int] = {}  # how many times a task's worker was lost under it
        self._held: dict[str, Any] = {}  # Dask futures not yet done: dropping one would cancel it
        self._news: list[LostWorker] = []  # lost workers not yet printed
        self._analysis = ""
        self._device = "cpu"  # of the tasks out: which workers may run them
        self._homes: dict[str, str] = {}  # the worker each task's matrices last loaded on
        self._alone_since: float | None = None  # since when no worker may run the tasks out

    @property
    def scheduler(self) -> str:
        return self._plan.dask_address or LOCAL_CLUSTER

    def __call__(self) -> DaskSession:
        if self._client is None:
            self._start()
        return self

    def _start(self) -> None:
        label = (f"joining the dask scheduler at {self._plan.dask_address}" if self._plan.dask_address
                 else f"starting a LocalCluster of {self._plan.workers} workers")
        with self._display.phase(label) as phase, quiet():
            if self._plan.dask_address is not None:
                self._client = connect(self._plan.dask_address)
            else:
                self._client = self._local_client()
            self._stack.callback(self._close)  # before the LocalCluster, if any, closes
            self.info = survey(self._client, self.scheduler)
            self._client.subscribe_topic("all", self._event)
            phase.advance()
        self._display.note(self.info.describe())
        if self._plan.dask_address is None:  # a joined scheduler's is in its line, where it has one
            self._display.note(dashboard_line(self._client))
        for worker in self.info.workers:
            self._display.note(f"dask worker {worker.describe()}")

    def _local_client(self) -> Any:
        require_distributed()
        from distributed import Client, LocalCluster

        with main_kept_out():  # its workers never run the user's script again
            cluster = self._stack.enter_context(LocalCluster(
                n_workers=self._plan.workers, threads_per_worker=1, processes=True,
                dashboard_address=":0",  # any free port: never collide with a cluster already here
                env={"OMP_NUM_THREADS": str(self._plan.threads_per_worker)},
            ))
        return Client(cluster, set_as_default=False)

    def warm(self, loads: list[tuple[str, str]], source: Source) -> None:
        """What a local run warms before its first analysis, on every worker that will compute."""
        assert self.info is not None
        devices = {backend for _, backend in loads} | {"cpu"}
        workers = sorted({w.address for d in devices for w in self.info.serving("cuda" if d == "cuda" else "cpu")})
        with quiet():
            self._client.run(warm_worker, loads, source, workers=workers, callback_timeout=ANSWER_TIMEOUT_S)

    def submit(self, fn: Callable[..., Any], task: Any, device: str, tag: Tag, home: str | None = None) -> Future[Any]:
        """`fn(task)` on a worker that may run `device` work; its outcome as a concurrent future.
        A task whose `home` (the matrices it loads) ran before goes, where it may, to the worker
        that ran it: that worker's memo holds its factors (harness.data.memo)."""
        assert self.info is not None
        key = f"{tag[0]}-{tag[1]}-{uuid.uuid4().hex[:12]}"
        on = "cuda" if device == "cuda" else "cpu"
        resources = {"GPU": 1} if on == "cuda" and self.info.gpu_resource() else None
        workers, strict = self.info.restriction(on), True
        if workers is None and home is not None and home in self._homes:
            workers, strict = [self._homes[home]], False  # a preference: any worker if that one is gone
        with self._lock:
            self._tags[key] = tag
            self._analysis, self._device = tag[0], on
        future: Future[Any] = Future()
        remote = self._client.submit(fn, task, key=key, pure=False, workers=workers,
                                     allow_other_workers=not strict, resources=resources)
        self._held[key] = remote
        remote.add_done_callback(lambda done: self._deliver(done, future))
        return future

    def _deliver(self, remote: Any, future: Future[Any]) -> None:
        """Runs in distributed's callback thread: the outcome into the concurrent future."""
        self._held.pop(remote.key, None)
        try:
            if remote.status == "cancelled":
                raise CancelledError(f"task {remote.key} was cancelled")
            future.set_result(remote.result())
        except BaseException as exc:  # delivered through the future, as an executor does
            future.set_exception(exc)

    def ran(self, home: str, worker: str) -> None:
        """The task loading `home` ran on `worker`: later tasks loading the same go there."""
        self._homes[home] = worker

    def attempts(self, tag: Tag) -> int:
        """How many times the task was started: once, and again for each worker lost under it."""
        with self._lock:
            return 1 + self._lost_with.get(tag, 0)

    def _event(self, event: tuple[float, dict[str, Any]]) -> None:
        """The scheduler's "all" topic, in the client's thread: a removed worker's tasks of ours
        (running, queued on it, or done there but not yet fetched) will run again."""
        at, message = event
        if message.get("action") != "remove-worker":
            return
        keys = set(message.get("processing-tasks") or ()) | set(message.get("lost-computed-tasks") or ())
        with self._lock:
            ours = [self._tags[k] for k in keys if k in self._tags]
            if message.get("expected") and not ours:
                return  # retired politely, holding nothing of ours
            for tag in ours:
                self._lost_with[tag] = self._lost_with.get(tag, 0) + 1
            lost = LostWorker(address=str(message.get("worker", "?")), analysis=self._analysis, tasks=len(ours),
                              at=datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="seconds"))
            self.lost.append(lost)
            self._news.append(lost)

    def check(self, stalled: bool = False) -> None:
        """Between waits: print the workers lost since the last check; ClusterError when the
        scheduler is gone, or, asked after a wait that brought nothing (`stalled`: the scheduler
        is asked, a round trip), when no worker that may run the tasks was left for
        WORKERS_TIMEOUT_S."""
        with self._lock:
            news, self._news = self._news, []
        for lost in news:
            self._display.note(f"lost dask worker {lost.address} during {lost.analysis}: {lost.tasks} of its "
                               "tasks run again on other workers")
        if self._client.status != "running":
            raise self.lost_scheduler()
        if not stalled:
            return
        assert self.info is not None
        allowed = self.info.restriction(self._device)
        present = [a for a in self._client.scheduler_info(n_workers=-1)["workers"] if allowed is None or a in allowed]
        if present:
            self._alone_since = None
            return
        if self._alone_since is None:
            self._alone_since = time.monotonic()
            self._display.note(f"no dask worker left to run {self._analysis}'s tasks: waiting up to "
                               f"{WORKERS_TIMEOUT_S:.0f} s" + ("" if allowed is None else " (only the workers checked "
                                                                "at the start may run them)"))
        elif time.monotonic() - self._alone_since > WORKERS_TIMEOUT_S:
            raise ClusterError(f"{where(self.scheduler)}: no dask worker left to run {self._analysis}'s tasks for "
                               f"{WORKERS_TIMEOUT_S:.0f} s; the chunks done are in the result cache: start workers "
                               "and run again to resume")

    def lost_scheduler(self) -> ClusterError:
        return ClusterError(f"{where(self.scheduler)}: lost the dask scheduler during {self._analysis}; the chunks "
                            "done are in the result cache: start it again and run again to resume")

    def cannot_unpickle(self) -> ClusterError:
        return ClusterError(f"{where(self.scheduler)}: the dask scheduler cannot unpickle {self._analysis}'s tasks: "
                            "it runs other harness code than this client (it loaded it before an update?); "
                            "restart it")

    def _close(self) -> None:
        """Cancel what is still out, drop the workers' factor memos (a user's workers outlive the
        run), and leave."""
        with quiet():
            for remote in list(self._held.values()):
                remote.cancel()
            if self._client.status == "running" and self.info is not None:
                try:
                    self._client.run(forget_worker_memo, workers=[w.address for w in self.info.usable],
                                     on_error="ignore", callback_timeout=CONNECT_TIMEOUT_S)
                except (OSError, TimeoutError):
                    pass  # gone meanwhile: nothing left to free
            self._client.close(timeout=CONNECT_TIMEOUT_S)

    def close(self) -> None:
        self._stack.close()
        self._client = None

    def __enter__(self) -> DaskSession:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
