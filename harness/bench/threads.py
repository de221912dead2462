"""Explicit thread counts for in-process timing: BLAS and OpenMP pools (threadpoolctl) and
torch's intra-op pool, set alike for every strategy compared and restored afterwards.

torch is only touched when it is already imported: pinning must not pay for its import.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import threadpool_info, threadpool_limits


def thread_counts() -> dict[str, int]:
    """Threads each pool would use now, keyed `api:prefix` (and `torch`)."""
    counts = {f"{p['internal_api']}:{p['prefix']}": p["num_threads"] for p in threadpool_info()}
    if (torch := sys.modules.get("torch")) is not None:
        counts["torch"] = torch.get_num_threads()
    return counts


@contextmanager
def pinned(threads: int) -> Iterator[None]:
    """Every BLAS/OpenMP pool and torch use `threads` threads inside the block."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    with threadpool_limits(limits=threads):
        if torch is not None:
            torch.set_num_threads(threads)
        try:
            yield
        finally:
            if torch is not None and before is not None:
                torch.set_num_threads(before)
