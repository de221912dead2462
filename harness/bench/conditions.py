"""What else the machine was doing while a measurement ran, read from /proc as pyperf does.

The load average lags by a minute, so the direct signals are the CPU time other processes took
during the measurement (all CPU time minus this process's and its children's, from /proc/stat
and /proc/<pid>/stat) and the time the hypervisor stole. Off Linux every field is None.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from harness.base.numbers import Count, NonNegative, Share, Tally

PROC = Path("/proc")
GOVERNOR = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
MIN_SPAN_JIFFIES = 20  # below this (0.1 s of 2 CPUs) shares are clock-tick quantisation


class Conditions(BaseModel):
    """The machine around one measurement: before, after, and over the interval."""

    cores: Count
    load_before: NonNegative | None = None  # 1-minute load average
    load_after: NonNegative | None = None
    running_before: Tally | None = None  # runnable tasks, this one included (procs_running)
    running_after: Tally | None = None
    others_cpu: Share | None = None  # share of all CPUs' time taken by other processes, 0..1
    steal: Share | None = None  # share of CPU time the hypervisor gave to other guests, 0..1
    governor: str | None = None  # cpufreq scaling governor, where readable


@dataclass(frozen=True)
class Snapshot:
    load: float | None
    running: int | None
    cpu_total: int | None  # jiffies of all CPUs, every state
    cpu_busy: int | None  # jiffies not idle, not iowait, not stolen
    cpu_steal: int | None
    own: int | None  # jiffies of this process and its descendants


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _stat_fields(text: str) -> list[str]:
    """The fields of a /proc/<pid>/stat line after the command name (which may hold spaces)."""
    return text.rpartition(")")[2].split()


def own_jiffies() -> int | None:
    """CPU time of this process and every descendant, live or reaped (pool, timing and Dask workers)."""
    me = os.getpid()
    children: dict[int, list[int]] = {}
    times: dict[int, int] = {}
    try:
        pids = [int(p.name) for p in PROC.iterdir() if p.name.isdigit()]
    except OSError:
        return None
    for pid in pids:
        text = _read(PROC / str(pid) / "stat")
        if text is None:
            continue  # gone since the listing
        fields = _stat_fields(text)
        children.setdefault(int(fields[1]), []).append(pid)
        # utime + stime, and cutime + cstime: the children it reaped (a timing worker that has ended
        # is reaped by the forkserver, and its CPU time must stay this run's, not "other processes'")
        times[pid] = int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
    if me not in times:
        return None
    total, todo = 0, [me]
    while todo:
        pid = todo.pop()
        total += times.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


def load_average() -> float | None:
    """The 1-minute load average: runnable processes over the last minute, this one included."""
    text = _read(PROC / "loadavg")
    return float(text.split()[0]) if text else None


def snapshot() -> Snapshot:
    stat = _read(PROC / "stat")
    load = load_average()
    running = total = busy = steal = None
    if stat:
        for line in stat.splitlines():
            if line.startswith("cpu "):
                values = [int(v) for v in line.split()[1:]]
                # user nice system idle iowait irq softirq steal [guest guest_nice: inside user]
                total = sum(values[:8])
                steal = values[7] if len(values) > 7 else 0
                busy = total - values[3] - (values[4] if len(values) > 4 else 0) - steal
            elif line.startswith("procs_running"):
                running = int(line.split()[1])
    return Snapshot(load, running, total, busy, steal, own_jiffies())


def governor() -> str | None:
    text = _read(GOVERNOR)
    return text.strip() if text else None


def between(before: Snapshot, after: Snapshot, cores: int) -> Conditions:
    """The conditions of the interval from `before` to `after`."""
    others = steal = None
    if before.cpu_total is not None and after.cpu_total is not None:
        span = after.cpu_total - before.cpu_total
        if span >= MIN_SPAN_JIFFIES:
            steal = min(1.0, max(0.0, (after.cpu_steal - before.cpu_steal) / span))  # type: ignore[operator]
            if before.own is not None and after.own is not None:
                busy = after.cpu_busy - before.cpu_busy  # type: ignore[operator]
                others = min(1.0, max(0.0, (busy - (after.own - before.own)) / span))
    return Conditions(
        cores=cores,
        load_before=before.load,
        load_after=after.load,
        running_before=before.running,
        running_after=after.running,
        others_cpu=others,
        steal=steal,
        governor=governor(),
    )


def sample_conditions(seconds: float, cores: int) -> Conditions:
    """The conditions of the next `seconds`, this process idle: what `harness system` shows."""
    before = snapshot()
    time.sleep(seconds)
    return between(before, snapshot(), cores)
