"""Child processes that end with the run, whatever ends it: the timing workers (harness.bench.worker)
and the process pools (harness.base.executors) share what watches the run, what ends a child, and
what lets a child start from a script piped to `python -`."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

ORPHAN_CHECK_S = 1.0  # how often a child looks whether its run is still alive
STEP_S = 0.01  # between two looks whether a process ended
KILL_S = 5.0  # a SIGKILLed process is gone by then (it only has to be scheduled once)


def alive(pid: int) -> bool:
    """Whether `pid` runs (or is stopped): a zombie, dead but not yet reaped, is not. Off Linux,
    whether a signal could reach it."""
    try:
        stat = open(f"/proc/{pid}/stat").read()  # noqa: SIM115  (one read, closed by refcounting)
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def _watch(pid: int) -> None:
    while alive(pid):
        time.sleep(ORPHAN_CHECK_S)
    os._exit(1)


def die_with(pid: int) -> None:
    """Exit this process once `pid` (the run) is gone, however it went (SIGKILL included): a run
    killed with SIGKILL left its workers alive (two still held memory 34 minutes later). The run's
    pid, not the parent's: a timing worker's parent is the forkserver, which may die first. A
    thread rather than prctl's PR_SET_PDEATHSIG, which watches the parent *thread* (Linux only)."""
    threading.Thread(target=_watch, args=(pid,), name="die-with-the-run", daemon=True).start()


def gone(pid: int, within_s: float) -> bool:
    """Whether `pid` ended within `within_s` seconds (it is looked at every STEP_S)."""
    end = time.monotonic() + within_s
    while alive(pid):
        if time.monotonic() >= end:
            return False
        time.sleep(STEP_S)
    return True


def end(pid: int, grace_s: float) -> None:
    """SIGTERM, then SIGKILL when it has not ended within `grace_s`: a stopped process (SIGSTOP)
    keeps SIGTERM pending forever. Each wait is bounded."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, KILL_S)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        if gone(pid, wait_s):
            return


@contextmanager
def main_kept_out() -> Iterator[None]:
    """While children start, they are told of no main module, so none runs the user's script again:
    what they run is importable and needs nothing from it. A script that calls harness.api.run
    without `if __name__ == "__main__":` then runs once (each worker ran it again, and failed on the
    folder its parent was writing), and a main read from stdin (`python - < script.py`), no file a
    child could run, starts them too."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    kept = {name: vars(main)[name] for name in ("__file__", "__spec__") if name in vars(main)}
    vars(main).pop("__file__", None)  # spawn's preparation runs a main found by its file ...
    main.__spec__ = None  # ... or by its module's name (`python -m package.script`)
    try:
        yield
    finally:
        vars(main).pop("__spec__", None)
        for name, value in kept.items():
            setattr(main, name, value)
