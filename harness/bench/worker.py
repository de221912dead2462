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

A run's workers and their forkserver belong to a WorkerPool, which ends them all when it closes
(SIGTERM, then SIGKILL: a stopped process keeps SIGTERM pending). Every reply is waited for with
a deadline, and a worker that misses it or dies is WorkerDied: the point keeps what it measured.
"""

from __future__ import annotations

import atexit
import multiprocessing
import multiprocessing.forkserver
import os
import signal
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Protocol

from threadpoolctl import threadpool_limits

from harness.base.processes import die_with, end, gone, main_kept_out
from harness.bench.environment import check_fits, environment
from harness.bench.measure import Block, measure
from harness.bench.quiet import descendants, settle
from harness.bench.threads import pinned
from harness.linalg.device import Backend

CLOSE_S = 5.0  # a worker asked to exit gets this long before it is terminated
TERM_S = 1.0  # a terminated worker (or forkserver) gets this long before it is killed
# A reply is waited for at most ANSWER_FLOOR_S + ANSWER_FACTOR x the seconds expected of it + the
# phase's limit: generous, so that a slow, busy machine never trips it, yet a worker stopped
# (SIGSTOP) or stuck in a kernel ends its point rather than the run. One-off work (building the
# inputs, importing, compiling) gets ONE_OFF_S.
ANSWER_FLOOR_S = 120.0
ANSWER_FACTOR = 50.0
ANSWER_MOST_S = 86400.0  # a wild estimate (an infinite one) waits a day, not an overflow
ONE_OFF_S = 900.0


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


def _forkserver_pid() -> int | None:
    """The forkserver's pid, where multiprocessing keeps it (it has no public accessor)."""
    server: Any = multiprocessing.forkserver._forkserver
    return server._forkserver_pid


def start_forkserver(preload: list[str]) -> Callable[[], None]:
    """Start the forkserver that timing workers fork from, with `preload` imported; returns what
    waits until it is ready (a no-op child forked and joined), so that its imports are never inside
    an analysis. The forkserver is this process's until it exits: a later call's `preload` changes
    nothing. One that dies while starting (killed, out of memory) is started again, once."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(preload)
    for attempt in (1, 2):
        probe = ctx.Process(target=os.getpid, name="harness forkserver probe")
        try:
            with main_kept_out():
                probe.start()
            break
        except (EOFError, OSError) as exc:
            if attempt == 2:
                raise WorkerDied(f"the timing workers' forkserver ended while starting ({exc or type(exc).__name__})") from None
            if (pid := _forkserver_pid()) is not None:
                gone(pid, TERM_S)  # multiprocessing starts a new one once it sees the old one dead

    def wait() -> None:
        probe.join(ONE_OFF_S)
        if probe.exitcode is None:
            if probe.pid is not None:
                end(probe.pid, TERM_S)
            raise WorkerDied(f"the timing workers' forkserver did not start within {ONE_OFF_S:.0f} s")

    return wait


def stop_forkserver() -> None:
    """End the forkserver (its workers ended first): asked by closing its pipe, then SIGTERM,
    SIGKILL; each wait bounded, so that a stopped forkserver never holds the run's exit."""
    server: Any = multiprocessing.forkserver._forkserver  # no public stop
    with server._lock:
        pid = server._forkserver_pid
        if pid is None:
            return
        os.close(server._forkserver_alive_fd)  # it ends once no process holds this pipe open
        if not gone(pid, TERM_S):
            end(pid, TERM_S)
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        address = server._forkserver_address
        if address and not address.startswith("\0") and os.path.exists(address):
            os.unlink(address)
        server._forkserver_pid = server._forkserver_alive_fd = server._forkserver_address = None


def answer_deadline(expected_s: float, limit_s: float = 0.0) -> float:
    """Seconds a block expected to take `expected_s` is waited for, in a phase limited to `limit_s`."""
    wait = ANSWER_FLOOR_S + ANSWER_FACTOR * expected_s + limit_s
    return min(ANSWER_MOST_S, wait) if wait == wait else ANSWER_MOST_S  # NaN: the most


def _serve(conn: Connection, work: Work, threads: int, run: int) -> None:
    """The worker's loop: build and warm the target, then answer requests until told to stop or
    the run is gone. Ctrl-C reaches the whole process group; the run answers it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _leave)
    die_with(run)
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


def _leave(signum: int, frame: object) -> None:
    """SIGTERM (the run ended it mid-block) unwinds the worker: its target closes what it started
    and multiprocessing's exit unlinks their semaphores. Killed outright, a process pool's nine
    were left to the resource tracker, which warned of them on the user's terminal after Ctrl-C."""
    raise SystemExit(128 + signum)


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


_LIVE: weakref.WeakSet[TimingWorker] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """Workers left open (a run stopped between two blocks, or in one) are ended, then the
    forkserver, before multiprocessing's own exit handler joins every child, which would otherwise
    wait for a stopped one forever."""
    for worker in list(_LIVE):
        worker.close()
    stop_forkserver()


class TimingWorker:
    """The run's handle on one point's worker process."""

    def __init__(self, work: Work, threads: int, env: dict[str, str] | None = None) -> None:
        # forked from the forkserver, never from this process: an OpenMP pool this process has used
        # does not survive a fork (a worker forked from the test suite hung in torch's SVD)
        if env:
            check_fits(env)
        ctx = multiprocessing.get_context("spawn") if env else multiprocessing.get_context("forkserver")
        self.label = work.label
        self.env = dict(env or {})
        self._conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, work, threads, os.getpid()),
                                   name=f"harness timing {work.label}")
        self.notes: dict[str, Any] = {}
        self.ready = False
        self.lost = False  # it died or stopped answering: ended, never asked again
        self._asked = False  # a request is out, unanswered
        try:
            with environment(env), main_kept_out():
                self.process.start()
        except (EOFError, OSError) as exc:  # its forkserver died under it
            self.lost = True
            self._conn.close()
            raise WorkerDied(f"worker died: its timing process could not start ({exc or type(exc).__name__})") from None
        finally:
            child.close()
        _LIVE.add(self)

    def _receive(self, deadline_s: float) -> Any:
        self._asked = True
        try:
            if not self._conn.poll(deadline_s):
                self.lost = True
                raise WorkerDied(f"worker stopped answering: no reply within {deadline_s:.0f} s")
            kind, payload = self._conn.recv()
        except (EOFError, OSError):
            raise self._died() from None
        self._asked = False
        if kind == "error":
            raise payload
        return payload

    def _died(self) -> WorkerDied:
        self.lost = True
        self.process.join(TERM_S)
        code = self.process.exitcode
        return WorkerDied("worker died" + (f" (exit code {code})" if code is not None else ""))

    def wait_ready(self, deadline_s: float = ONE_OFF_S) -> None:
        """Until the worker has built its inputs and warmed its imports; raises what it raised."""
        if not self.ready:
            self.notes = self._receive(deadline_s)
            self.ready = True

    def block(self, request: Request, deadline_s: float = ONE_OFF_S) -> Reply:
        """One block, its reply waited for at most `deadline_s` (WorkerDied past it)."""
        self.wait_ready()
        try:
            self._conn.send(request)
        except OSError:  # BrokenPipeError: it died while idle
            raise self._died() from None
        reply: Reply = self._receive(deadline_s)
        self.notes = reply.notes
        return reply

    def pids(self) -> list[int]:
        """The worker and its descendants (a process pool it started)."""
        pid = self.process.pid
        return [] if pid is None else [pid, *descendants(pid)]

    def close(self) -> None:
        """Asked to exit when idle; ended (SIGTERM, then SIGKILL) when it does not within CLOSE_S,
        at once when it is lost or in a block. Its own pid, not multiprocessing's view: a worker
        whose forkserver died reads as exited while it still runs."""
        _LIVE.discard(self)
        pid = self.process.pid
        if pid is not None and not self._conn.closed:  # once: a pid signalled later may be another's
            polite = not (self.lost or self._asked)
            if polite:
                try:
                    self._conn.send(None)
                except OSError:
                    polite = False
            if not (polite and gone(pid, CLOSE_S)):
                end(pid, TERM_S)
            self.process.join(TERM_S)  # reaped: no zombie left
        self._conn.close()


class WorkerPool:
    """A run's timing workers and the forkserver they fork from: started when first needed (never
    on construction), ready before the first worker starts, every worker ended when it closes."""

    def __init__(self, preload: Callable[[], list[str]]) -> None:
        self._preload = preload
        self._wait: Callable[[], None] | None = None
        self._ready = False
        self._workers: list[TimingWorker] = []

    def begin(self) -> None:
        """Start the forkserver's imports, to be waited for (ready) later."""
        if self._wait is None:
            self._wait = start_forkserver(self._preload())

    def ready(self) -> None:
        """Until the forkserver has imported what the workers need."""
        self.begin()
        if not self._ready:
            assert self._wait is not None
            self._wait()
            self._ready = True

    def spawn(self, work: Work, threads: int, env: dict[str, str] | None = None) -> TimingWorker:
        """A point's worker (WorkerDied when it cannot start)."""
        self.ready()
        worker = TimingWorker(work, threads, env)
        self._workers.append(worker)
        return worker

    def close(self) -> None:
        for worker in self._workers:
            worker.close()
        self._workers.clear()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
