"""How many threads a kernel that splits its own work may use here."""

from __future__ import annotations

import os

from threadpoolctl import threadpool_info


def kernel_threads() -> int:
    """Threads for one kernel: BLAS's own limit here (set by threadpoolctl in a worker), or the
    CPUs this process may run on."""
    blas = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]
    return max(1, min(blas) if blas else len(os.sched_getaffinity(0)))
