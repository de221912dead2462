"""Each timed point in a long-lived process of its own (pyperf's model): what a user's process
doing only that work would be, not a harness process that ran other libraries' calls just before.

Strategies with different thread runtimes share no process while timed: numpy's OpenBLAS threads,
still spinning after a call, slowed torch's next svdvals of a 3072x768 matrix from 77 ms to
124-175 ms in one process, and the process-wide cure (OMP_WAIT_POLICY=PASSIVE) slowed torch
itself to 181-201 ms. Here each point's worker builds its own inputs, imports and warms once,
then times blocks of calls on request; between blocks it waits blocked on its pipe, and the
parent lets the others settle (bench.quiet) before the next block starts.

Workers are forked from a forkserver that imported the modules every worker needs once (~1 s),
so a worker starts in milliseconds instead of ~0.6 s of imports each; the forkserver is started
from the user's environment, untouched. A point with an environment of its own (an OpenBLAS
thread timeout, a wait policy: read once, when a library loads) is spawned afresh with it.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import signal
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Protocol

from threadpoolctl import threadpool_limits

from harness.bench.measure import Block, measure
from harness.bench.quiet import descendants, settle
from harness.bench.threads import pinned
from harness.linalg.device import Backend

CLOSE_S = 5.0  # a worker asked to exit gets this long before it is terminated
ORPHAN_CHECK_S = 1.0  # how often a worker looks whether the process that started it is still alive


class Target(Protocol):
    """What a worker times, built in the worker from a Work."""

    backend: Backend

    def warm(self) -> None:
        """Import and compile what the first call would, before any timed call."""

    def prepare(self, part: int, r: int) -> Callable[[], object]:
        """Load round r's inputs of part (shape group) `part`, untimed, and return the call a block times."""

    def notes(self) -> dict[str, Any]:
        """What the parent should know after a block (a compiled point's compile log)."""

    def close(self) -> None:
        """Stop what it started (a process pool)."""


class Work(Protocol):
    """A picklable recipe of a Target: the parent sends it, the worker builds it."""

    @property
    def label(self) -> str: ...

    def build(self) -> Target: ...


@dataclass(frozen=True)
class Request:
    part: int  # the shape group
    r: int  # the round whose matrices the block visits
    warmups: int  # untimed calls first
    calls: int  # timed calls at least
    min_time_s: float  # a fast call repeats until this much is timed
    keep: bool  # send the last call's result back, to be judged
    warm_time_s: float = 0.0  # untimed calls first until this much has passed (at least one)


@dataclass(frozen=True)
class Reply:
    block: Block
    result: object | None
    notes: dict[str, Any]


class WorkerDied(RuntimeError):
    """The worker process ended without answering (killed, out of memory, a crash in C)."""


def start_forkserver(preload: list[str]) -> Callable[[], None]:
    """Start the forkserver that timing workers fork from, with `preload` imported; returns what
    waits until it is ready (a no-op child forked and joined), so that its imports can overlap the
    parent's own and are never inside an analysis. The forkserver is this process's for good: a
    later call's `preload` changes nothing."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(preload)
    probe = ctx.Process(target=os.getpid, name="harness forkserver probe")
    probe.start()
    return probe.join


def _die_with(parent: int) -> None:
    """Exit once the process that started this worker is gone, however it went (SIGKILL included)."""
    while os.getppid() == parent:
        time.sleep(ORPHAN_CHECK_S)
    os._exit(1)


def _serve(conn: Connection, work: Work, threads: int) -> None:
    """The worker's loop: build and warm the target, then answer requests until told to stop or
    the parent is gone. Ctrl-C reaches the whole process group; the parent answers it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_die_with, args=(os.getppid(),), name="die-with-the-run", daemon=True).start()
    try:
        target = work.build()
        try:
            target.warm()  # imports first: the thread limits reach only the libraries loaded
            with pinned(threads):
                conn.send(("ready", target.notes()))
                _answer(conn, target)
        finally:
            target.close()
    except Exception as exc:
        _send_error(conn, exc)
    except BaseException:  # SIGTERM, SystemExit: nothing to say, the parent is going
        return


def _answer(conn: Connection, target: Target) -> None:
    """Requests until told to stop or the parent is gone."""
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if request is None:
            return
        try:
            # inputs are loaded on one thread: a GEMM forming the deltas on every core left this
            # process's own pool spinning for ~0.1 s into the timed calls (256 x 256 torch svdvals
            # took 2x as long); anything still running is waited for, as in a user's steady state
            with threadpool_limits(limits=1):
                call = target.prepare(request.part, request.r)
            me = os.getpid()
            settle([me, *descendants(me)])
            block, result = measure(call, warmup=max(request.warmups, 1 if request.warm_time_s else 0),
                                    repeats=request.calls, backend=target.backend, min_time_s=request.min_time_s,
                                    min_samples=request.calls, warm_time_s=request.warm_time_s)
            conn.send(("ok", Reply(block, result if request.keep else None, target.notes())))
        except Exception as exc:  # one failed block: said to the parent, which decides
            _send_error(conn, exc)


def _send_error(conn: Connection, exc: Exception) -> None:
    try:
        conn.send(("error", exc))
    except Exception:  # not picklable: its type and message
        try:
            conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
        except (OSError, EOFError):
            pass


ARG_STRLEN = 32 * 4096  # Linux's MAX_ARG_STRLEN: the longest one string (NAME=value) exec takes
SPAWN_SLACK = 4096  # bytes for the interpreter's command line and its pointers


class CannotStart(RuntimeError):
    """A point's worker cannot start: its environment is more than exec takes."""


def _check_fits(env: dict[str, str]) -> None:
    """Raises CannotStart when os.environ with `env` on top is more than exec takes (E2BIG).
    multiprocessing never sees exec fail: it hands the dead child its pickled work down a pipe
    nobody reads, and a run with 600 KB of variables (`ulimit -s 1024`) waited there for good."""
    strings = [f"{name}={value}".encode(errors="surrogateescape") for name, value in {**os.environ, **env}.items()]
    total = sum(len(s) + 1 + 8 for s in strings) + SPAWN_SLACK  # each string, its NUL and its pointer
    longest = max((len(s) + 1 for s in strings), default=0)
    limit = os.sysconf("SC_ARG_MAX") if hasattr(os, "sysconf") else total
    if longest > ARG_STRLEN:
        raise CannotStart(f"cannot start its worker: a variable of its environment is {longest:,} bytes, more than "
                          f"the {ARG_STRLEN:,} a process starts with")
    if total > limit:
        raise CannotStart(f"cannot start its worker: its environment (yours with {len(env)} more) is {total:,} "
                          f"bytes, more than the {limit:,} this system starts a process with (`ulimit -s` sets it)")


@contextmanager
def _environment(env: dict[str, str] | None) -> Iterator[None]:
    """os.environ with `env` on top while a spawned child starts (it copies it at exec)."""
    if not env:
        yield
        return
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


_LIVE: weakref.WeakSet[TimingWorker] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """Workers left open (a run stopped between two blocks) are closed before multiprocessing's
    own exit handler joins every child, which would otherwise wait for them forever."""
    for worker in list(_LIVE):
        worker.close()


class TimingWorker:
    """The parent's handle on one point's worker process."""

    def __init__(self, work: Work, threads: int, env: dict[str, str] | None = None) -> None:
        # forked from the forkserver, never from this process: an OpenMP pool this process has used
        # does not survive a fork (a worker forked from the test suite hung in torch's SVD)
        if env:
            _check_fits(env)
        ctx = multiprocessing.get_context("spawn") if env else multiprocessing.get_context("forkserver")
        self.label = work.label
        self.env = dict(env or {})
        self._conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, work, threads), name=f"harness timing {work.label}")
        with _environment(env):
            self.process.start()
        child.close()
        self.notes: dict[str, Any] = {}
        self.ready = False
        _LIVE.add(self)

    def _receive(self) -> Any:
        try:
            kind, payload = self._conn.recv()
        except (EOFError, OSError):
            self.process.join(CLOSE_S)
            raise WorkerDied(f"its timing process ended without answering (exit code {self.process.exitcode})") from None
        if kind == "error":
            raise payload
        return payload

    def wait_ready(self) -> None:
        """Until the worker has built its inputs and warmed its imports; raises what it raised."""
        if not self.ready:
            self.notes = self._receive()
            self.ready = True

    def block(self, request: Request) -> Reply:
        self.wait_ready()
        self._conn.send(request)
        reply: Reply = self._receive()
        self.notes = reply.notes
        return reply

    def pids(self) -> list[int]:
        """The worker and its descendants (a process pool it started)."""
        pid = self.process.pid
        return [] if pid is None else [pid, *descendants(pid)]

    def close(self) -> None:
        _LIVE.discard(self)
        if self.process.pid is None or self.process.exitcode is not None:
            self._conn.close()
            return
        try:
            self._conn.send(None)
        except (OSError, ValueError):
            pass
        self.process.join(CLOSE_S)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(CLOSE_S)
        self._conn.close()
