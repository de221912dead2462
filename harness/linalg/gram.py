"""Streaming Gram matrices of a few very long vectors (n << d), in one pass over column blocks.

Task-geometry PCA compares n fine-tuned adapters, each flattened to a vector of d parameters
(the reference case: 18 adapters x 352M parameters, 25 GB of float32 in a memmap). The d x d
covariance cannot be formed; dual PCA needs only the n x n Gram matrix ``G = X @ X.T``. The
published approach computed ``G[i, j]`` one pair at a time, re-reading every vector n times
(:func:`gram_pairwise`, kept as the benchmark baseline). Here ``G`` is the sum of the Gram
matrices of column blocks, ``G = sum_b X[:, b] @ X[:, b].T``, so the data is read once, in
blocks sized to a memory budget; each slice's product is computed in the stored precision
(float32 for float32 data) and accumulated in float64 (see :func:`accumulate_gram`). Blocks of a
file are read by a thread into a ring of reused buffers while the previous block is multiplied
(:mod:`harness.linalg.prefetch`); on CUDA from pinned buffers, each copy beside the previous
block's product (:mod:`harness.linalg.device_feed`).

All functions are pure functions of arrays; backends are ``"numpy"`` or torch on ``"cpu"`` /
``"cuda"`` (see :mod:`harness.linalg.device`).
"""

from __future__ import annotations

import mmap
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import numpy as np

from harness.linalg.device import Backend, to_numpy
from harness.linalg.compiled import load_kernel
from harness.linalg.device_feed import DeviceFeed
from harness.linalg.gram_blocks import SUM_COLUMNS, _check_block, _symmetrize, block_columns, iter_column_blocks
from harness.linalg.gram_torch import _accumulate_torch
from harness.linalg.parallel import kernel_threads
from harness.linalg.prefetch import Ring, prefetched, slot_bytes
from harness.linalg.spans import SpanReader

__all__ = [
    "STORED_DTYPES",
    "StoredDeltas",
    "accumulate_delta_gram",
    "accumulate_gram",
    "center_gram",
    "cosine_from_gram",
    "gram_from_array",
    "gram_pairwise",
]


def accumulate_gram(
    blocks: Iterable[np.ndarray],
    *,
    backend: Backend = "numpy",
    compiled: bool = True,
    ring: Ring | None = None,
    feed: DeviceFeed | None = None,
) -> np.ndarray:
    """Gram matrix ``G = sum_b X_b @ X_b.T`` of column blocks, accumulated in float64.

    On the CPU, float32 blocks whose rows are contiguous go through the compiled kernel of
    :mod:`harness.linalg.gram_kernel` when numba is installed (the ``fast`` extra): about 2x
    the fastest BLAS route for n ~ 20 rows. Otherwise each block is cut into slices of at most
    ``SUM_COLUMNS`` columns; a slice's product is computed in the block's own precision
    (float32 for float32 and narrower floats, float64 otherwise) and added into a float64 ``G``.
    Float32 products matter for speed: with n ~ 20 rows the product is far from BLAS peak, and a
    float64 cast costs a copy and halves the SIMD width. Precision for float32 data: each
    float32 partial sum covers at most ``SUM_COLUMNS`` columns (the kernel: 1024), so an entry's
    error is about ``sqrt(SUM_COLUMNS) * 2**-24 ~ 8e-6`` of ``|x_i| |x_j|`` at worst in practice
    (random-order roundoff; observed ~1e-8), and the float64 accumulation across slices and
    blocks adds nothing at that level whatever d is. Float64 data keeps float64 products (exact
    to about ``1e-16 * sqrt(d)``).

    Parameters
    ----------
    blocks : iterable of ndarray of shape (n, c_b)
        Column blocks of the n x d data matrix, in any order; same n, any widths, any real
        dtype. A generator is consumed once. Blocks may be strided views (of a memmap): the
        kernel and torch on the CPU read them in place, numpy copies one slice at a time.
    backend : {"numpy", "cpu", "cuda"}
        ``"numpy"`` uses numpy (BLAS syrk on each contiguous slice); ``"cpu"`` / ``"cuda"`` use
        torch (on the CPU, MKL's batched product of the slices, the fastest BLAS route measured
        for n = 18 on 2 cores, see benchmarks/gram_memmap.py).
    compiled : bool, default True
        Use the compiled kernel where it applies (not on ``"cuda"``); False forces the backend's
        own route, for comparisons.
    ring : Ring, optional
        On ``"cuda"``, the pinned ring that pageable blocks are staged through; a caller that
        computes many Grams passes one ring for all of them. Default: a ring per call.
    feed : DeviceFeed, optional
        On ``"cuda"``, the side stream that copies blocks to the device, likewise shared.
        Default: a feed per call.

    Returns
    -------
    G : ndarray of shape (n, n), float64, exactly symmetric.
    """
    if backend not in ("numpy", "cpu", "cuda"):
        raise ValueError(f"unknown backend {backend!r}; expected 'numpy', 'cpu' or 'cuda'")
    blocks = iter(blocks)
    if compiled and backend != "cuda" and (kernel := load_kernel("gram_kernel")) is not None:
        first = next(blocks, None)
        blocks = chain([] if first is None else [first], blocks)
        if isinstance(first, np.ndarray) and kernel.usable(first):
            return _accumulate_numpy(blocks, kernel)
    if backend == "numpy":
        return _accumulate_numpy(blocks)
    return _accumulate_torch(blocks, backend, ring, feed)


# What the compiled kernel widens in cache: bfloat16 bits (uint16) and float32.
STORED_DTYPES = (np.dtype("<u2"), np.dtype("<f4"))


@dataclass(frozen=True)
class StoredDeltas:
    """A block of deltas as files store them: `rows` (n, c) of fine-tuned values and their
    `base` (c,), each C-contiguous of a STORED_DTYPES dtype, not yet widened or subtracted.
    Handed over this way, a cold bf16 stream is copied once, at half the bytes, and each piece
    is widened, subtracted and multiplied while in cache (:func:`accumulate_delta_gram`)."""

    rows: np.ndarray
    base: np.ndarray

    def refuse(self) -> NoReturn:
        """Raise for a delta that is NaN or Inf; a source's blocks say which file holds it."""
        raise ValueError("a delta of the block is NaN or Inf")


def accumulate_delta_gram(blocks: Iterable[StoredDeltas]) -> np.ndarray:
    """The Gram of the deltas ``widen(rows) - widen(base)`` of stored blocks, accumulated in
    float64 by the compiled kernel: the same deltas (each rounded once to float32) and the same
    sums as :func:`accumulate_gram` of the dense blocks, without writing them to memory.

    Needs numba (the ``fast`` extra). A delta that is NaN or Inf raises through its block's
    :meth:`StoredDeltas.refuse`."""
    kernel = load_kernel("gram_kernel")
    if kernel is None:
        raise RuntimeError("a Gram of stored deltas needs the compiled kernel (numba, the `fast` extra)")
    G: np.ndarray | None = None
    n: int | None = None
    threads = kernel_threads()
    for block in blocks:
        n = _check_block(block.rows, n)
        if G is None:
            G = np.zeros((n, n), dtype=np.float64)
        if not kernel.add_delta_gram(G, block.rows, block.base, threads):
            block.refuse()
    if G is None:
        raise ValueError("no blocks given; cannot infer n")
    return _symmetrize(G)


def _product_dtype(dtype: np.dtype) -> np.dtype:
    """float32 for float32 and narrower floats (exact cast), float64 for everything else."""
    if np.issubdtype(dtype, np.floating) and dtype.itemsize <= 4:
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def _add_numpy(G: np.ndarray, block: np.ndarray) -> None:
    dtype = _product_dtype(block.dtype)
    for start in range(0, block.shape[1], SUM_COLUMNS):
        # a C-contiguous chunk makes ``A @ A.T`` one syrk (half the flops of a gemm)
        Xc = np.ascontiguousarray(block[:, start : start + SUM_COLUMNS], dtype=dtype)
        G += Xc @ Xc.T


def _accumulate_numpy(blocks: Iterable[np.ndarray], kernel: ModuleType | None = None) -> np.ndarray:
    """numpy's route; with `kernel`, the compiled kernel for every block it reads in place (and
    numpy's route for any other, e.g. a float64 one)."""
    G: np.ndarray | None = None
    n: int | None = None
    threads = kernel_threads() if kernel is not None else 1
    for block in blocks:
        n = _check_block(block, n)
        block = to_numpy(block)
        if G is None:
            G = np.zeros((n, n), dtype=np.float64)
        if kernel is not None and kernel.usable(block):
            kernel.add_gram(G, block, threads)
        else:
            _add_numpy(G, block)
    if G is None:
        raise ValueError("no blocks given; cannot infer n")
    return _symmetrize(G)


def gram_from_array(
    X: np.ndarray | np.memmap, *, memory_budget: int, backend: Backend = "numpy"
) -> np.ndarray:
    """Gram matrix ``X @ X.T`` of an n x d array or memmap in one pass over column blocks.

    No full copy of X is made: column blocks are read in turn and accumulated by
    :func:`accumulate_gram`. A whole C-ordered memmap is read by a thread with preadv, n row
    spans per block, into a ring of reused buffers under ``memory_budget`` (pinned on CUDA),
    so reading overlaps the products; any other array is cut into views of
    :func:`block_columns` columns.

    Parameters
    ----------
    X : ndarray or memmap of shape (n, d), any real dtype
    memory_budget : int
        Bytes allowed for one block and its float64 copy.
    backend : {"numpy", "cpu", "cuda"}

    Returns
    -------
    G : ndarray of shape (n, n), float64.
    """
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n, d), got shape {X.shape}")
    n, d = X.shape
    if d == 0:
        return np.zeros((n, n), dtype=np.float64)
    if isinstance(X, np.memmap) and (path := _mapped_file(X)) is not None:
        return accumulate_gram(_file_blocks(X, path, memory_budget, backend == "cuda"), backend=backend)
    columns = block_columns(n, d, X.dtype.itemsize, memory_budget)
    return accumulate_gram(iter_column_blocks(X, columns), backend=backend)


def _mapped_file(X: np.ndarray) -> str | None:
    """The file of a whole, C-ordered np.memmap (np.load(mmap_mode=...) or np.memmap), whose
    rows lie at ``X.offset + i * row bytes``; None for anything else (a slice of one included)."""
    if isinstance(X, np.memmap) and isinstance(X.base, mmap.mmap) and X.flags.c_contiguous and X.filename:
        return str(X.filename)
    return None


def _file_blocks(X: np.memmap, path: str, memory_budget: int, pinned: bool) -> Iterator[np.ndarray]:
    """Column blocks of a mapped file read with preadv by a reader thread into a ring of reused
    buffers under `memory_budget` (pinned for CUDA), n row spans per block, instead of
    page faults in the kernel: the next block is read while this one is multiplied."""
    n, d = X.shape
    itemsize = X.dtype.itemsize
    columns = max(1, min(d, slot_bytes(memory_budget) // (n * itemsize)))
    ring = Ring(n * columns * itemsize, pinned)
    reader = SpanReader()

    def fill(start: int, slot: np.ndarray) -> np.ndarray:
        c = min(columns, d - start)
        block = slot[: n * c * itemsize].view(X.dtype).reshape(n, c)
        for i in range(n):
            reader.read_into(Path(path), X.offset + (i * d + start) * itemsize, block[i])
        return block

    try:
        yield from prefetched(range(0, d, columns), fill, ring.slots)
    finally:
        reader.close()


def gram_pairwise(X: np.ndarray | np.memmap) -> np.ndarray:
    """The baseline: ``G[i, j]`` as a float64 dot of rows i and j, one pair at a time.

    This is the published loop, kept only as the benchmark baseline: every pair re-reads both
    rows from X (from disk for a memmap), so the data is read about n times over.

    Parameters
    ----------
    X : ndarray or memmap of shape (n, d)

    Returns
    -------
    G : ndarray of shape (n, n), float64.
    """
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n, d), got shape {X.shape}")
    n = X.shape[0]
    G = np.zeros((n, n), dtype=np.float64)
    for i in range(n):
        for j in range(i, n):
            xi = np.asarray(X[i], dtype=np.float64)
            xj = np.asarray(X[j], dtype=np.float64)
            G[i, j] = G[j, i] = float(np.dot(xi, xj))
    return G


def _check_square(G: np.ndarray) -> np.ndarray:
    G = np.asarray(G, dtype=np.float64)
    if G.ndim != 2 or G.shape[0] != G.shape[1]:
        raise ValueError(f"G must be a square (n, n) matrix, got shape {G.shape}")
    return G


def center_gram(G: np.ndarray) -> np.ndarray:
    """Gram matrix of the mean-centred vectors: ``Gc = H @ G @ H``, ``H = I - 1 1^T / n``.

    Computed as ``G - row_means - col_means + grand_mean`` (the expansion of H G H), which is
    exact algebra in O(n^2) and never needs the data. ``Gc[i, j] = <x_i - m, x_j - m>`` with
    ``m`` the mean vector.

    Parameters
    ----------
    G : ndarray of shape (n, n), the uncentred Gram matrix.

    Returns
    -------
    Gc : ndarray of shape (n, n), float64, symmetric; ``Gc @ 1 = 0`` up to roundoff.
    """
    G = _check_square(G)
    if G.shape[0] == 0:
        return G.copy()
    col_means = G.mean(axis=0, keepdims=True)
    row_means = G.mean(axis=1, keepdims=True)
    return _symmetrize(G - col_means - row_means + G.mean())


def cosine_from_gram(G: np.ndarray) -> np.ndarray:
    """Cosine similarity of the (uncentred) vectors: ``G[i, j] / (|x_i| |x_j|)``.

    A zero vector has no direction: its row and column are 0 (not NaN), its diagonal entry
    included. Every other diagonal entry is exactly 1, and values are clipped to [-1, 1]
    against roundoff.

    Parameters
    ----------
    G : ndarray of shape (n, n), the uncentred Gram matrix.

    Returns
    -------
    C : ndarray of shape (n, n), float64.
    """
    G = _check_square(G)
    norms = np.sqrt(np.clip(np.diag(G), 0.0, None))
    nonzero = norms > 0
    denom = np.outer(norms, norms)
    C = np.zeros_like(G)
    both = np.outer(nonzero, nonzero)
    C[both] = G[both] / denom[both]
    np.clip(C, -1.0, 1.0, out=C)
    C[np.diag_indices_from(C)] = nonzero.astype(np.float64)
    return C
