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

:func:`add_delta_gram` takes a block of deltas still as stored (bfloat16 bits or float32, and
their base) and makes each piece's float32 deltas in a scratch that stays in cache just before
its tiles: a streamed bf16 block is then read from memory once at 2 bytes a value, not written
widened (4) and read back (4). :func:`add_piece_delta_gram` does the same for one piece on the
calling thread, for harness.linalg.piece_gram, whose threads each read and multiply their own pieces.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit, types
from numba.extending import overload

from harness.linalg.delta_kernel import f32_from_bits

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


@njit(fastmath=True, inline="always")
def _piece(x, n, rs, c0, c1, G):  # type: ignore[no-untyped-def]
    """G += the Gram of columns [c0, c1) of the n rows, lower triangle (diagonal tiles also
    write a few entries above it, which the callers ignore)."""
    m = n - n % 3
    for i in range(0, m, 3):
        for j in range(0, i + 1, 3):
            _tile(x, rs, i, j, c0, c1, G)
    for i in range(m, n):
        for j in range(i + 1):
            G[i, j] += _dot(x, rs, i, j, c0, c1)


@njit(nogil=True, fastmath=True, cache=True)
def _lower_gram(x, n, rs, start, stop, piece, G):  # type: ignore[no-untyped-def]
    """G += the Gram of columns [start, stop), lower triangle, a piece at a time."""
    for c0 in range(start, stop, piece):
        _piece(x, n, rs, c0, min(stop, c0 + piece), G)


def _widened(x):  # type: ignore[no-untyped-def]
    """A stored value as float32: bfloat16 bits (uint16) or float32 (numba's overload below)."""
    raise NotImplementedError  # only compiled


@overload(_widened, inline="always")
def _widened_impl(x):  # type: ignore[no-untyped-def]
    if x == types.uint16:
        return lambda x: f32_from_bits(np.uint32(x) << np.uint32(16))
    if x == types.float32:
        return lambda x: x
    return None


@njit(fastmath={"reassoc"})
def _deltas(rows, rs, base, n, c0, w, scratch, piece):  # type: ignore[no-untyped-def]
    """Rows i < n of `scratch` (`piece` apart) = widen(rows) - widen(base) over columns
    [c0, c0 + w); False when one is NaN or Inf. Compiled apart, without nnan/ninf (LLVM keeps
    each instruction's flags when it inlines): with them it may fold the check's d * 0 to 0.
    The base is widened again for each row, not once into the scratch: a loop that reads its
    scratch and writes it too ran 1.3x (float32) and 2.7x (bf16) slower, in cache on 1 core."""
    check = np.float32(0.0)
    below = base[c0 : c0 + w]
    for r in range(n):
        src, dst = rows[r * rs + c0 : r * rs + c0 + w], scratch[r * piece : r * piece + w]
        for k in range(w):
            d = _widened(src[k]) - _widened(below[k])
            dst[k] = d
            check += d * np.float32(0.0)
    return check == 0


@njit(nogil=True, fastmath=True, cache=True)
def _lower_delta_gram(rows, rs, base, n, start, stop, piece, scratch, G):  # type: ignore[no-untyped-def]
    """G += the Gram of ``widen(rows) - widen(base)`` over columns [start, stop), lower
    triangle: each piece's deltas are made in `scratch` (n * piece float32, in L1/L2)
    and multiplied there. False when a delta is NaN or Inf."""
    finite = True
    for c0 in range(start, stop, piece):
        w = min(stop, c0 + piece) - c0
        if not _deltas(rows, rs, base, n, c0, w, scratch, piece):
            finite = False
        _piece(scratch, n, piece, 0, w, G)
    return finite


def usable(block: np.ndarray) -> bool:
    """float32, 2-D, each row contiguous and rows in increasing memory: read in place."""
    if block.ndim != 2 or block.dtype != np.float32:
        return False
    rows, columns = block.shape
    return (columns <= 1 or block.strides[1] == 4) and (rows <= 1 or (block.strides[0] > 0 and block.strides[0] % 4 == 0))


def _in_threads(G: np.ndarray, c: int, threads: int, part: Callable[[int, int, np.ndarray], object]) -> None:
    """G += the lower Grams `part(start, stop, G_t)` adds over column ranges split across
    threads (each into its own G_t), mirrored to the whole matrix."""
    n = G.shape[0]
    threads = max(1, min(threads, c // MIN_THREAD_COLUMNS))
    cuts = np.linspace(0, c, threads + 1).astype(np.int64).tolist()
    parts = np.zeros((threads, n, n))
    if threads == 1:
        part(0, c, parts[0])
    else:
        with ThreadPoolExecutor(threads) as pool:
            for _ in pool.map(lambda t: part(cuts[t], cuts[t + 1], parts[t]), range(threads)):
                pass
    G += full_from_lower(parts.sum(axis=0))


def full_from_lower(G: np.ndarray) -> np.ndarray:
    """The symmetric matrix whose lower triangle is G's (the tiles' few entries above it dropped)."""
    lower = np.tril(G)
    return lower + np.tril(lower, -1).T


def _flat(block: np.ndarray) -> tuple[np.ndarray, int]:
    """The rows of an n x c block as one flat view of its memory, and the row stride in values."""
    n, c = block.shape
    rs = block.strides[0] // block.itemsize if n > 1 else c
    return np.lib.stride_tricks.as_strided(block, shape=((n - 1) * rs + c,), strides=(block.itemsize,),
                                           writeable=False), rs


def add_gram(G: np.ndarray, block: np.ndarray, threads: int) -> None:
    """G (n x n float64) += block @ block.T for a :func:`usable` n x c block, in place."""
    n, c = block.shape
    if c == 0 or n == 0:
        return
    flat, rs = _flat(block)
    _in_threads(G, c, threads, lambda start, stop, part: _lower_gram(flat, n, rs, start, stop, PIECE_COLUMNS, part))


def add_delta_gram(G: np.ndarray, rows: np.ndarray, base: np.ndarray, threads: int) -> bool:
    """G (n x n float64) += D @ D.T for the deltas ``D = widen(rows) - widen(base)`` of an n x c
    block of stored values (C-contiguous rows, bfloat16 bits or float32) and its base (c values),
    each piece widened and subtracted in cache just before it is multiplied (a cold bf16 PCA of
    13.4 GB on 2 cores: 7.4 user core-seconds, 10.4-13.0 widened first). The deltas are
    delta_kernel's, rounded once to float32, and the sums add_gram's. False, G unchanged, when
    a delta is NaN or Inf."""
    n, c = rows.shape
    if c == 0 or n == 0:
        return True
    flat, rs = _flat(rows)
    finite: list[bool] = []
    into = np.zeros_like(G)

    def part(start: int, stop: int, G_t: np.ndarray) -> None:
        scratch = piece_scratch(n)  # this thread's own
        finite.append(_lower_delta_gram(flat, rs, base, n, start, stop, PIECE_COLUMNS, scratch, G_t))

    _in_threads(into, c, threads, part)
    if not all(finite):
        return False
    G += into
    return True


def piece_scratch(n: int) -> np.ndarray:
    """A thread's scratch for :func:`add_delta_gram`'s pieces of n rows: one piece's deltas."""
    return np.empty(n * PIECE_COLUMNS, np.float32)


def add_piece_delta_gram(G: np.ndarray, rows: np.ndarray, base: np.ndarray, scratch: np.ndarray) -> bool:
    """G (n x n float64) += the lower triangle of D @ D.T, ``D = widen(rows) - widen(base)``, on
    this thread only, for a caller that spreads pieces over threads itself
    (harness.linalg.piece_gram): the deltas and sums of :func:`add_delta_gram`. `rows` is a
    C-contiguous n x c block (bfloat16 bits or float32), `scratch` from :func:`piece_scratch`.
    False when a delta is NaN or Inf (G then holds a partial sum)."""
    n, c = rows.shape
    if c == 0 or n == 0:
        return True
    return bool(_lower_delta_gram(rows.reshape(-1), c, base, n, 0, c, PIECE_COLUMNS, scratch, G))
