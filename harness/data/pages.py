"""Where the synthetic source places the factors it draws: in small pages of a mapping of their own.

numpy asks the kernel for huge pages for a large array, and where the kernel compacts memory to
make them on a fault (`defrag` = madvise, a common default), a fresh 261 MB array took 0.54-0.58 s
to touch when they had to be made and 30 ms when they were free, against 0.10-0.12 s in 4 KiB pages
every time; the main job's spectrum analysis, which draws 523 MB of factors, took 0.65-1.00 s
against 0.56-0.64 s in alternating runs, and the factored kernels read small-page factors no
slower (a position's Gram: 12.8-13.1 ms either way). Deltas formed for a timed dense strategy keep
numpy's placement: in small pages dual_gram took 402-497 ms a position against 202-399 ms, and
a harness that slows a baseline down inflates every speedup over it.
"""

from __future__ import annotations

import math
import mmap

import numpy as np


def small_pages(shape: tuple[int, ...], dtype: np.dtype | type = np.float32) -> np.ndarray:
    """A new zeroed array of `shape` in 4 KiB pages (an empty one for an empty shape)."""
    dtype = np.dtype(dtype)
    size = math.prod(shape) * dtype.itemsize
    return np.frombuffer(mmap.mmap(-1, size), dtype=dtype).reshape(shape) if size else np.empty(shape, dtype)
