"""Column blocks of an n x d matrix, the unit a streaming Gram is read and summed in: how wide
a block fits a memory budget, the blocks of an array as views, and the checks and final
symmetrisation every accumulation route of harness.linalg.gram shares."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

_FLOAT64_ITEMSIZE = 8
# Columns per float32 partial sum before it is added in float64: the precision bound (see
# accumulate_gram), and the numpy path's contiguous copy (n * SUM_COLUMNS values). Measured
# with 18 rows on 2 cores, 4K-16K columns are the fast widths for both OpenBLAS and MKL.
SUM_COLUMNS = 1 << 14


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


def _symmetrize(G: np.ndarray) -> np.ndarray:
    """(G + G.T) / 2: exact symmetry, so downstream eigh sees one matrix whichever half it reads."""
    return (G + G.T) * 0.5
