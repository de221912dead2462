"""Explicit thread counts for in-process timing: BLAS and OpenMP pools (threadpoolctl) and
torch's intra-op pool, set alike for every strategy compared and restored afterwards.

torch is only touched when it is already imported: pinning must not pay for its import.
"""

from __future__ import annotations

import functools
import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import threadpool_info, threadpool_limits

from harness.base.units import format_seconds
from harness.bench.conditions import sample_conditions

PROBE_S = 0.15  # how long the plan watches the machine before choosing threads
TORCH_VARIABLES = ("OMP_NUM_THREADS",)  # what torch reads when it is imported


@functools.cache
def default_threads(cores: int) -> tuple[int, str]:
    """The cores other processes leave free right now, at least 1, and why; watched once per
    process (0.15 s), not for every plan a process compiles (asv compiles one per case).

    On a busy machine a BLAS call on every core waits for the busiest one: one 3072 x 768 SVD
    took 3.3 s on 1 thread and 36-40 s on 2 beside other work (torch: 2.0 against 26.8 s)."""
    c = sample_conditions(PROBE_S, cores)
    busy = round((c.others_cpu or 0.0) * cores)
    if busy == 0:
        return cores, f"the machine's {cores} cores"
    threads = max(1, cores - busy)
    # the moment named, and how short it was: the rounds' share beside it (`58-68%`) read as a second
    # answer to one question (walk 23)
    return threads, (f"{threads} of {cores} cores: other processes took {100 * (c.others_cpu or 0):.0f}% "
                     f"of the CPUs in the {format_seconds(PROBE_S)} look when the plan was made")


def loaded_threads(cores: int, load: float | None) -> int:
    """The cores the minute's load average leaves free, at least 1: a floor under the plan's slowdown
    where the probe (default_threads) caught a quiet moment of a busy machine (walk 15: a run planned
    idle at load ~5 on 2 cores, and its ETA ran short). One process of the load is taken as this
    run's own, or a run's just before it, which the minute's average still holds."""
    return cores if load is None else max(1, cores - math.floor(max(load - 1.0, 0.0)))


def thread_counts() -> dict[str, int]:
    """Threads each pool would use now, keyed `api:prefix` (and `torch`)."""
    counts = {f"{p['internal_api']}:{p['prefix']}": p["num_threads"] for p in threadpool_info()}
    if (torch := sys.modules.get("torch")) is not None:
        counts["torch"] = torch.get_num_threads()
    return counts


@contextmanager
def pinned(threads: int) -> Iterator[None]:
    """Every BLAS/OpenMP pool and torch use `threads` threads inside the block; a torch first
    imported inside it takes them from the environment."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    saved = {name: os.environ.get(name) for name in TORCH_VARIABLES}
    with threadpool_limits(limits=threads):
        if torch is not None:
            torch.set_num_threads(threads)
        else:
            os.environ.update(dict.fromkeys(TORCH_VARIABLES, str(threads)))
        try:
            yield
        finally:
            if torch is not None and before is not None:
                torch.set_num_threads(before)
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
