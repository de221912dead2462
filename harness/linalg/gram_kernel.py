"""A compiled float32 Gram kernel for a few very long rows (n ~ 10-50, d ~ 1e8), with numba.

BLAS is built for large products. For the n x n Gram of n ~ 20 rows its packing copies dominate:
on 2 Zen 4 cores MKL's batched sgemm ran at 8.8 GB/s and OpenBLAS's ssyrk at 2.4-7 GB/s, below
a page-cache read of the same data (12-22 GB/s). This kernel computes only the lower triangle, in
3 x 3 tiles of rows (9 accumulators, 6 loads per 9 multiply-adds, vectorised by LLVM) over column
pieces of PIECE_COLUMNS that stay in L1: 17.6 GB/s for 18 rows and 12.7 GB/s for 38 on the same
machine (benchmarks/gram_memmap.py). Sums run in float32 within a piece and in float64 across
pieces, so an entry's error stays near ``sqrt(PIECE_COLUMNS) * 2**-24 ~ 2e-6`` of
``|x_i| |x_j|`` at worst whatever d is (observed 4e-8). The kernel releases the GIL; columns are
split over threads, as many as BLAS may use here (a worker's thread limit holds).

Rows are addressed in a flat view of the block's memory (row stride in elements), so a column
block of a C-ordered memmap is used in place: numba does not vectorise a strided 2-D view.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit
from threadpoolctl import threadpool_info

PIECE_COLUMNS = 1024
MIN_THREAD_COLUMNS = 1 << 16  # fewer columns per thread cost more in start-up than they save


@njit(fastmath=True, inline="always")
def _tile(x, rs, i, j, c0, c1, G):  # type: ignore[no-untyped-def]
    """G[i:i+3, j:j+3] += float32 sums over columns [c0, c1) of rows i.. and j.. ."""
    a00 = a01 = a02 = a10 = a11 = a12 = a20 = a21 = a22 = np.float32(0.0)
    r0, r1, r2 = x[i * rs + c0 : i * rs + c1], x[(i + 1) * rs + c0 : (i + 1) * rs + c1], x[(i + 2) * rs + c0 : (i + 2) * rs + c1]
    s0, s1, s2 = x[j * rs + c0 : j * rs + c1], x[(j + 1) * rs + c0 : (j + 1) * rs + c1], x[(j + 2) * rs + c0 : (j + 2) * rs + c1]
    for k in range(c1 - c0):
        x0, x1, x2, y0, y1, y2 = r0[k], r1[k], r2[k], s0[k], s1[k], s2[k]
        a00 += x0 * y0
        a01 += x0 * y1
        a02 += x0 * y2
        a10 += x1 * y0
        a11 += x1 * y1
        a12 += x1 * y2
        a20 += x2 * y0
        a21 += x2 * y1
        a22 += x2 * y2
    G[i, j] += a00
    G[i, j + 1] += a01
    G[i, j + 2] += a02
    G[i + 1, j] += a10
    G[i + 1, j + 1] += a11
    G[i + 1, j + 2] += a12
    G[i + 2, j] += a20
    G[i + 2, j + 1] += a21
    G[i + 2, j + 2] += a22


@njit(fastmath=True, inline="always")
def _dot(x, rs, i, j, c0, c1):  # type: ignore[no-untyped-def]
    a, b = x[i * rs + c0 : i * rs + c1], x[j * rs + c0 : j * rs + c1]
    acc = np.float32(0.0)
    for k in range(c1 - c0):
        acc += a[k] * b[k]
    return acc


@njit(nogil=True, fastmath=True, cache=True)
def _lower_gram(x, n, rs, start, stop, piece, G):  # type: ignore[no-untyped-def]
    """G += the Gram of columns [start, stop), lower triangle (diagonal tiles also write a few
    entries above it, which the caller ignores)."""
    m = n - n % 3
    for c0 in range(start, stop, piece):
        c1 = min(stop, c0 + piece)
        for i in range(0, m, 3):
            for j in range(0, i + 1, 3):
                _tile(x, rs, i, j, c0, c1, G)
        for i in range(m, n):
            for j in range(i + 1):
                G[i, j] += _dot(x, rs, i, j, c0, c1)


def usable(block: np.ndarray) -> bool:
    """float32, 2-D, each row contiguous and rows in increasing memory: read in place."""
    if block.ndim != 2 or block.dtype != np.float32:
        return False
    rows, columns = block.shape
    return (columns <= 1 or block.strides[1] == 4) and (rows <= 1 or (block.strides[0] > 0 and block.strides[0] % 4 == 0))


def kernel_threads() -> int:
    """Threads for one Gram: BLAS's own limit here (set by threadpoolctl in a worker), or the
    CPUs this process may run on."""
    blas = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]
    return max(1, min(blas) if blas else len(os.sched_getaffinity(0)))


def add_gram(G: np.ndarray, block: np.ndarray, threads: int) -> None:
    """G (n x n float64) += block @ block.T for a :func:`usable` n x c block, in place."""
    n, c = block.shape
    if c == 0 or n == 0:
        return
    rs = block.strides[0] // 4 if n > 1 else c
    flat = np.lib.stride_tricks.as_strided(block, shape=((n - 1) * rs + c,), strides=(4,), writeable=False)
    threads = max(1, min(threads, c // MIN_THREAD_COLUMNS))
    cuts = np.linspace(0, c, threads + 1).astype(np.int64)
    parts = np.zeros((threads, n, n))
    if threads == 1:
        _lower_gram(flat, n, rs, 0, c, PIECE_COLUMNS, parts[0])
    else:
        with ThreadPoolExecutor(threads) as pool:
            for _ in pool.map(lambda t: _lower_gram(flat, n, rs, cuts[t], cuts[t + 1], PIECE_COLUMNS, parts[t]),
                              range(threads)):
                pass
    lower = np.tril(parts.sum(axis=0))
    G += lower + np.tril(lower, -1).T
