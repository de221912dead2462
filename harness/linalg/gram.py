"""Streaming Gram matrices of a few very long vectors (n << d), in one pass over column blocks.

Task-geometry PCA compares n fine-tuned adapters, each flattened to a vector of d parameters
(the reference case: 18 adapters x 352M parameters, 25 GB of float32 in a memmap). The d x d
covariance cannot be formed; dual PCA needs only the n x n Gram matrix ``G = X @ X.T``. The
published approach computed ``G[i, j]`` one pair at a time, re-reading every vector n times
(:func:`gram_pairwise`, kept as the benchmark baseline). Here ``G`` is the sum of the Gram
matrices of column blocks, ``G = sum_b X[:, b] @ X[:, b].T``, so the data is read once, in
blocks sized to a memory budget, and accumulated in float64 whatever the storage dtype.

All functions are pure functions of arrays; backends are ``"numpy"`` or torch on ``"cpu"`` /
``"cuda"`` (see :mod:`harness.linalg.device`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from harness.linalg.device import Backend, as_backend, to_numpy, torch_missing_reason, torch_module

__all__ = [
    "accumulate_gram",
    "block_columns",
    "center_gram",
    "cosine_from_gram",
    "gram_from_array",
    "gram_pairwise",
    "iter_column_blocks",
]

_FLOAT64_ITEMSIZE = 8


def block_columns(n: int, d: int, itemsize: int, memory_budget: int) -> int:
    """Columns per block so that one n x c block and its float64 copy fit ``memory_budget``.

    A block costs ``n * c * (itemsize + 8)`` bytes: the block as stored (``itemsize`` bytes per
    value) plus the float64 copy its product is computed in. The result is clipped to ``[1, d]``
    (at least 1 even when a single column exceeds the budget, so progress is always possible).

    Parameters
    ----------
    n : int
        Rows (vectors) of the data matrix, >= 1.
    d : int
        Columns (vector length) of the data matrix, >= 0.
    itemsize : int
        Bytes per stored value (4 for float32).
    memory_budget : int
        Bytes allowed for one block's working memory.

    Returns
    -------
    int
        Columns per block, ``1 <= c <= max(d, 1)``.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if d < 0:
        raise ValueError(f"d must be >= 0, got {d}")
    if itemsize < 1:
        raise ValueError(f"itemsize must be >= 1, got {itemsize}")
    if memory_budget < 0:
        raise ValueError(f"memory_budget must be >= 0, got {memory_budget}")
    per_column = n * (itemsize + _FLOAT64_ITEMSIZE)
    return int(max(1, min(memory_budget // per_column, max(d, 1))))


def iter_column_blocks(X: np.ndarray | np.memmap, columns: int) -> Iterator[np.ndarray]:
    """Consecutive column blocks ``X[:, j:j + columns]`` of an n x d array, as views.

    Views of a memmap read nothing until used, so a block is read from disk only when its
    product is computed. The last block is narrower when ``columns`` does not divide d.

    Parameters
    ----------
    X : ndarray or memmap of shape (n, d)
    columns : int
        Columns per block, >= 1.

    Yields
    ------
    ndarray of shape (n, c_b), c_b <= columns
    """
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n, d), got shape {X.shape}")
    if columns < 1:
        raise ValueError(f"columns must be >= 1, got {columns}")
    d = X.shape[1]
    for start in range(0, d, columns):
        yield X[:, start : start + columns]


def _check_block(block: Any, n: int | None) -> int:
    shape = tuple(block.shape)
    if len(shape) != 2:
        raise ValueError(f"every block must be 2-D (n, c), got shape {shape}")
    if n is not None and shape[0] != n:
        raise ValueError(f"blocks disagree on n: {shape[0]} rows after {n}")
    dtype = getattr(block, "dtype", None)
    if isinstance(dtype, np.dtype) and np.issubdtype(dtype, np.complexfloating):
        raise TypeError(f"blocks must be real, got dtype {dtype}")
    return shape[0]


def accumulate_gram(blocks: Iterable[np.ndarray], *, backend: Backend = "numpy") -> np.ndarray:
    """Gram matrix ``G = sum_b X_b @ X_b.T`` of column blocks, accumulated in float64.

    Each block product is computed in float64 (the block is cast first, on the backend's
    device for torch), and the accumulation across blocks stays float64. With d ~ 1e8 terms per
    entry, float32 accumulation would lose most of its digits; float64 keeps G exact to about
    ``d * 1e-16`` relative, which is what the eigengaps of dual PCA need.

    Parameters
    ----------
    blocks : iterable of ndarray of shape (n, c_b)
        Column blocks of the n x d data matrix, in any order; same n, any widths, any real
        dtype. A generator is consumed once.
    backend : {"numpy", "cpu", "cuda"}
        ``"numpy"`` uses numpy (BLAS syrk for ``A @ A.T``); ``"cpu"`` / ``"cuda"`` use torch,
        copying each block to the device in its stored dtype and casting there.

    Returns
    -------
    G : ndarray of shape (n, n), float64, exactly symmetric.
    """
    if backend == "numpy":
        return _accumulate_numpy(blocks)
    if backend in ("cpu", "cuda"):
        return _accumulate_torch(blocks, backend)
    raise ValueError(f"unknown backend {backend!r}; expected 'numpy', 'cpu' or 'cuda'")


def _accumulate_numpy(blocks: Iterable[np.ndarray]) -> np.ndarray:
    G: np.ndarray | None = None
    n: int | None = None
    for block in blocks:
        n = _check_block(block, n)
        Xb = np.ascontiguousarray(to_numpy(block), dtype=np.float64)
        if G is None:
            G = np.zeros((n, n), dtype=np.float64)
        G += Xb @ Xb.T
        del Xb  # else the next block's copy is made while this one lives: twice the budget
    if G is None:
        raise ValueError("no blocks given; cannot infer n")
    return _symmetrize(G)


def _accumulate_torch(blocks: Iterable[np.ndarray], backend: Backend) -> np.ndarray:
    torch = torch_module()
    if torch is None:
        raise RuntimeError(f"backend {backend!r} needs torch, but {torch_missing_reason()}")
    G = None
    n: int | None = None
    for block in blocks:
        n = _check_block(block, n)
        Xb = _float64_tensor(block, backend)
        if G is None:
            G = torch.zeros((n, n), dtype=torch.float64, device=Xb.device)
        G.addmm_(Xb, Xb.T)
    if G is None:
        raise ValueError("no blocks given; cannot infer n")
    return _symmetrize(to_numpy(G))


def _float64_tensor(block: Any, backend: Backend) -> Any:
    """The block as a float64 torch tensor on `backend`, moved in its stored dtype, cast there.

    A read-only array (a memmap opened with mode="r") is copied first, in its own dtype:
    torch.from_numpy warns on non-writable arrays. The copy stays within block_columns' budget
    (stored copy + float64 copy).
    """
    torch = torch_module()
    assert torch is not None
    if isinstance(block, np.ndarray) and not block.flags.writeable:
        block = np.array(block, order="C")
    return as_backend(block, backend).to(torch.float64)


def _symmetrize(G: np.ndarray) -> np.ndarray:
    """(G + G.T) / 2: exact symmetry, so downstream eigh sees one matrix whichever half it reads."""
    return (G + G.T) * 0.5


def gram_from_array(
    X: np.ndarray | np.memmap, *, memory_budget: int, backend: Backend = "numpy"
) -> np.ndarray:
    """Gram matrix ``X @ X.T`` of an n x d array or memmap in one pass over column blocks.

    No full copy of X is made: blocks of :func:`block_columns` columns (sized to
    ``memory_budget``) are read in turn and accumulated by :func:`accumulate_gram`. For a
    C-ordered memmap each block reads n contiguous runs, one per row.

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
    columns = block_columns(n, d, X.dtype.itemsize, memory_budget)
    if d == 0:
        return np.zeros((n, n), dtype=np.float64)
    return accumulate_gram(iter_column_blocks(X, columns), backend=backend)


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
