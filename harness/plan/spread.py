"""How a full analysis is split into tasks on workers (a process pool's, a Dask cluster's): into
at least TASKS_PER_THREAD tasks per worker thread, so that every thread has work until the end and
a lost worker costs a few tasks, each shape group's share of the tasks following its share of the
estimated work; never a chunk larger than the memory budget allows."""

from __future__ import annotations

import math

TASKS_PER_THREAD = 3  # 2-4 per thread: all busy to the end, without tasks so small their overhead shows


def spread(batches: dict[str, int], sizes: dict[str, int], seconds: dict[str, float], threads: int) -> dict[str, int]:
    """Batch sizes per group (`batches`: the largest the memory allows) for `threads` worker
    threads, from the groups' sizes and estimated seconds per matrix."""
    work = {g: seconds.get(g, 0.0) * n for g, n in sizes.items()}
    total = sum(work.values())
    if total <= 0:  # no estimate: by count
        work, total = {g: float(n) for g, n in sizes.items()}, float(sum(sizes.values()))
    tasks = TASKS_PER_THREAD * threads
    return {g: max(1, min(batches[g], math.ceil(n / max(1, round(tasks * work[g] / total)))))
            for g, n in sizes.items()}


def task_count(batches: dict[str, int], sizes: dict[str, int]) -> int:
    """How many chunks the groups make at those batch sizes."""
    return sum(math.ceil(n / batches[g]) for g, n in sizes.items())


def position_tasks(positions: int, threads: int) -> int:
    """How many position ranges a PCA's Grams are split into."""
    return max(1, min(positions, TASKS_PER_THREAD * threads))
