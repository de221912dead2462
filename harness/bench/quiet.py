"""Waiting until the harness's other processes are quiescent before a block is timed.

A BLAS or OpenMP pool keeps its threads spinning for a while after its last call (OpenBLAS
2^28 cycles, ~0.1 s here; libgomp its spin count): a timing worker that starts while another
worker's threads still spin shares the cores with them. No process-wide setting stops the
spinning (OMP_WAIT_POLICY=PASSIVE made torch's svdvals 2.4x slower); the phase waits instead,
reading every thread's state from /proc/<pid>/task/<tid>/stat until none of the others is running
or runnable. Measured on the main job: ~0.1 s after a numpy block, a few ms after a torch one. Off
Linux there is nothing to read and nothing is waited for.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

PROC = Path("/proc")
STEP_S = 0.004  # between two readings
QUIET_READINGS = 2  # in a row, STEP_S apart: a thread that only woke for a moment is not spinning
# Waited at most: OpenBLAS's pool spins ~0.1 s after its last call (0.10-0.13 s measured before the
# main job's blocks), libgomp's less; under load a thread that only woke can stay runnable for a
# while behind other processes', and that is not a pool spinning.
MOST_S = 0.25


def _running(pid: int, skip: int | None = None) -> int:
    """Threads of `pid` (but `skip`) that are running or waiting for a core (state R): a thread
    spinning in a pool's wait loop is, even while another process has its core; one asleep in a
    futex is not."""
    count = 0
    try:
        tids = os.listdir(PROC / str(pid) / "task")
    except OSError:
        return 0
    for tid in tids:
        if skip is not None and int(tid) == skip:
            continue
        try:
            stat = (PROC / str(pid) / "task" / tid / "stat").read_text()
        except OSError:
            continue
        count += stat.rpartition(")")[2].split()[0] == "R"
    return count


def running(pids: Iterable[int]) -> int:
    """Threads of `pids` running or runnable now (this process's calling thread, the one reading,
    left out)."""
    me, caller = os.getpid(), threading.get_native_id()
    return sum(_running(pid, caller if pid == me else None) for pid in pids)


def descendants(root: int) -> list[int]:
    """`root`'s live descendants (a timing worker's process pool), from /proc's parent links."""
    children: dict[int, list[int]] = {}
    try:
        entries = [e for e in os.listdir(PROC) if e.isdigit()]
    except OSError:
        return []
    for entry in entries:
        try:
            stat = (PROC / entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rpartition(")")[2].split()[1])
        children.setdefault(parent, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def settle(pids: Iterable[int], most_s: float = MOST_S) -> float | None:
    """Wait until no thread of `pids` is running or runnable in QUIET_READINGS readings in a row;
    the seconds waited (0 with nothing to read: no pids, no /proc), or None when they were still
    busy after `most_s`. The threads' state, not their CPU time: on a busy machine a spinning
    thread can get no CPU for a while, but it stays runnable."""
    pids = list(pids)
    if not pids or not (PROC / str(os.getpid()) / "task").is_dir():
        return 0.0
    start, quiet = time.perf_counter(), 0
    while True:
        quiet = quiet + 1 if running(pids) == 0 else 0
        waited = time.perf_counter() - start
        if quiet >= QUIET_READINGS:
            return waited
        if waited > most_s:
            return None
        time.sleep(STEP_S)
