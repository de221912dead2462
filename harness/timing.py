"""Measuring: warm-up, repeats, median and IQR, raw samples kept, the device synchronised.

Measuring, recording (results.py) and presenting (report/) stay separate, as in
torch.utils.benchmark.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar, cast

import numpy as np
from pydantic import BaseModel
from threadpoolctl import threadpool_info

from harness.linalg.device import Backend, synchronize, torch_module

T = TypeVar("T")


class Measurement(BaseModel):
    samples_s: list[float]
    median_s: float
    iqr_s: float
    warmup: int
    threads: dict[str, int]


def thread_counts() -> dict[str, int]:
    """Threads each pool would use now, so numpy, scipy and torch are compared fairly."""
    counts = {f"{p['internal_api']}:{p['prefix']}": p["num_threads"] for p in threadpool_info()}
    torch = torch_module()
    if torch is not None:
        counts["torch"] = torch.get_num_threads()
    return counts


MIN_TIME_S = 0.2  # fast calls repeat until this much is sampled, so the median is stable
MAX_REPEATS = 200


def measure(
    fn: Callable[[], T], *, warmup: int, repeats: int, backend: Backend
) -> tuple[Measurement, T]:
    """Time `fn` after `warmup` untimed calls: at least `repeats` times, and for fast calls until
    MIN_TIME_S of samples (at most MAX_REPEATS), as torch.utils.benchmark's blocked_autorange
    does. Returns the last result too."""
    result: T | None = None
    for _ in range(warmup):
        result = fn()
    synchronize(backend)
    samples = []
    while len(samples) < repeats or (sum(samples) < MIN_TIME_S and len(samples) < MAX_REPEATS):
        start = time.perf_counter()
        result = fn()
        synchronize(backend)
        samples.append(time.perf_counter() - start)
    q1, median, q3 = np.percentile(samples, [25, 50, 75])
    measurement = Measurement(
        samples_s=samples,
        median_s=float(median),
        iqr_s=float(q3 - q1),
        warmup=warmup,
        threads=thread_counts(),
    )
    return measurement, cast(T, result)  # repeats >= 1, so fn ran at least once
