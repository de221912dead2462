"""Streaming Gram kernels against direct numpy computation, through the compiled kernel (when
numba is installed) and through each backend's BLAS route."""

from __future__ import annotations

import numpy as np
import pytest

from harness.linalg import gram as gram_module
from harness.linalg.device import cuda_available, torch_module
from harness.linalg.gram import (
    accumulate_gram,
    center_gram,
    cosine_from_gram,
    gram_from_array,
    gram_pairwise,
)
from harness.linalg.gram_blocks import SUM_COLUMNS, block_columns, iter_column_blocks
from tests.conftest import kernel_route

TORCH_BACKENDS = [
    pytest.param(
        "cpu", marks=pytest.mark.skipif(torch_module() is None, reason="torch not installed")
    ),
    pytest.param("cuda", marks=pytest.mark.skipif(not cuda_available(), reason="no CUDA")),
]
BACKENDS = [pytest.param("numpy"), *TORCH_BACKENDS]


@pytest.fixture(autouse=True, params=["compiled", "blas"])
def route(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs twice: float32 blocks through the compiled kernel, and without it."""
    return kernel_route(request.param, monkeypatch, gram_module, "gram_kernel")


def data(n: int = 6, d: int = 1000, seed: int = 0, dtype=np.float64) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # an offset so centring matters
    return (rng.standard_normal((n, d)) + rng.standard_normal(d)).astype(dtype)


def representable(n: int, d: int, seed: int = 0) -> np.ndarray:
    """float32 values m / 32 with |m| < 32: a product is a multiple of 2**-10 below 1, so a sum
    of SUM_COLUMNS = 2**14 of them is exact in float32 (< 2**24 units) and every sum of d of
    them is exact in float64: a Gram with float32 slices and float64 accumulation across them
    has one right answer."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-31, 32, size=(n, d)) / 32).astype(np.float32)


FLOAT32_RTOL = 1e-5  # accumulate_gram's float32 model: ~sqrt(SUM_COLUMNS) * 2**-24 = 8e-6


def assert_gram_close(G: np.ndarray, exact: np.ndarray, rtol: float) -> None:
    """|G - exact| <= rtol * |x_i| |x_j|: the scale roundoff is relative to, entry by entry."""
    norms = np.sqrt(np.diag(exact))
    assert np.all(np.abs(G - exact) <= rtol * np.outer(norms, norms) + 1e-300), np.abs(G - exact).max()


def budget_for(columns: int, n: int, itemsize: int) -> int:
    return columns * n * (itemsize + 8)


# --- block_columns ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 6, 18])
@pytest.mark.parametrize("itemsize", [2, 4, 8])
@pytest.mark.parametrize("budget", [0, 100, 10_000, 1 << 20, 1 << 34])
def test_block_columns_respects_budget(n: int, itemsize: int, budget: int) -> None:
    d = 100_000
    c = block_columns(n, d, itemsize, budget)
    assert 1 <= c <= d
    cost = n * (itemsize + 8)
    if c > 1:
        assert c * cost <= budget
    if c < d:
        assert (c + 1) * cost > budget  # as wide as the budget allows


def test_block_columns_edges() -> None:
    assert block_columns(6, 1000, 4, budget_for(7, 6, 4)) == 7
    assert block_columns(6, 1000, 4, budget_for(7, 6, 4) - 1) == 6
    assert block_columns(6, 10, 4, 1 << 30) == 10  # never wider than d
    assert block_columns(6, 0, 4, 1 << 30) == 1
    with pytest.raises(ValueError):
        block_columns(0, 10, 4, 100)
    with pytest.raises(ValueError):
        block_columns(2, 10, 4, -1)


def test_iter_column_blocks_covers_columns() -> None:
    X = data(3, 100)
    blocks = list(iter_column_blocks(X, 7))
    assert [b.shape[1] for b in blocks] == [7] * 14 + [2]
    np.testing.assert_array_equal(np.concatenate(blocks, axis=1), X)


# --- accumulate_gram / gram_from_array ---------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("columns", [1, 7, 333, 1000, 5000])
def test_gram_from_array_matches_direct(backend: str, columns: int) -> None:
    X = data()
    G = gram_from_array(X, memory_budget=budget_for(columns, 6, 8), backend=backend)
    assert G.dtype == np.float64 and G.shape == (6, 6)
    np.testing.assert_allclose(G, X @ X.T, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(G, G.T)


@pytest.mark.parametrize("backend", BACKENDS)
def test_accumulate_uneven_mixed_blocks(backend: str) -> None:
    X = data(5, 1000)
    cuts = [0, 3, 10, 10, 400, 999, 1000]  # includes an empty block and a 1-column block
    dtypes = [np.float32, np.float64, np.float16, np.float64, np.float32, np.float64]
    spans = list(zip(cuts[:-1], cuts[1:], dtypes, strict=True))
    Xq = np.concatenate([X[:, a:b].astype(t) for a, b, t in spans], axis=1)
    blocks = (X[:, a:b].astype(t) for a, b, t in spans)  # a generator
    G = accumulate_gram(blocks, backend=backend)
    Xq64 = Xq.astype(np.float64)
    assert_gram_close(G, Xq64 @ Xq64.T, FLOAT32_RTOL)  # float32 / float16 blocks: float32 products


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("columns", [7, 1000, 1 << 18])
def test_float32_input_accumulates_in_float64(backend: str, columns: int) -> None:
    X32 = representable(4, 1 << 18)
    X64 = X32.astype(np.float64)
    exact = X64 @ X64.T  # exact: all partial sums are representable
    G = gram_from_array(X32, memory_budget=budget_for(columns, 4, 4), backend=backend)
    assert G.dtype == np.float64
    np.testing.assert_array_equal(G, exact)


def test_float32_accumulation_would_not_be_exact() -> None:
    """Guard that the case above can tell float64 from float32 accumulation across slices."""
    X32 = representable(4, 1 << 18)
    X64 = X32.astype(np.float64)
    assert not np.array_equal((X32 @ X32.T).astype(np.float64), X64 @ X64.T)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [6, 20])  # 20 > TOP_ROWS: the torch path's mirrored block
def test_float32_precision_model(backend: str, n: int) -> None:
    """Random float32 data with an offset (large, nearly parallel vectors), several slices."""
    X32 = data(n, 5 * SUM_COLUMNS + 123, seed=1, dtype=np.float32) + np.float32(3.0)
    X64 = X32.astype(np.float64)
    G = gram_from_array(X32, memory_budget=1 << 30, backend=backend)
    assert_gram_close(G, X64 @ X64.T, FLOAT32_RTOL)


@pytest.mark.filterwarnings("error")  # e.g. torch's warning on a read-only array
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("columns", [7, 1000])
def test_memmap_input(tmp_path, backend: str, dtype, columns: int) -> None:
    X = data(6, 1000, dtype=dtype)
    path = tmp_path / "adapters.bin"
    mm = np.memmap(path, dtype=dtype, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    del mm
    ro = np.memmap(path, dtype=dtype, mode="r", shape=X.shape)
    itemsize = np.dtype(dtype).itemsize
    G = gram_from_array(ro, memory_budget=budget_for(columns, 6, itemsize), backend=backend)
    X64 = X.astype(np.float64)
    rtol = 1e-12 if dtype == np.float64 else FLOAT32_RTOL
    assert_gram_close(G, X64 @ X64.T, rtol)
    assert_gram_close(G, gram_pairwise(ro), rtol)


@pytest.mark.parametrize("n", [1, 2, 6])
def test_gram_pairwise_equals_streamed(n: int) -> None:
    X = data(n, 1000, dtype=np.float32)
    assert_gram_close(gram_from_array(X, memory_budget=1 << 16), gram_pairwise(X), FLOAT32_RTOL)


@pytest.mark.parametrize("backend", TORCH_BACKENDS)
def test_torch_backend_equals_numpy(backend: str) -> None:
    X = data(6, 1000, dtype=np.float32)
    budget = budget_for(64, 6, 4)
    G = gram_from_array(X, memory_budget=budget, backend=backend)
    assert_gram_close(G, gram_from_array(X, memory_budget=budget, backend="numpy"), FLOAT32_RTOL)
    X64 = X.astype(np.float64)
    G64 = gram_from_array(X64, memory_budget=budget_for(64, 6, 8), backend=backend)
    np.testing.assert_allclose(G64, X64 @ X64.T, rtol=1e-13, atol=1e-10)


def test_accumulate_rejects_bad_blocks() -> None:
    with pytest.raises(ValueError, match="no blocks"):
        accumulate_gram([])
    with pytest.raises(ValueError, match="disagree"):
        accumulate_gram([np.ones((3, 2)), np.ones((4, 2))])
    with pytest.raises(ValueError, match="2-D"):
        accumulate_gram([np.ones(3)])
    with pytest.raises(ValueError, match="backend"):
        accumulate_gram([np.ones((3, 2))], backend="tpu")  # type: ignore[arg-type]


# --- center_gram / cosine_from_gram ----------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 6])
def test_center_gram_matches_centred_data(n: int) -> None:
    X = data(n, 1000)
    Xc = X - X.mean(axis=0)
    Gc = center_gram(X @ X.T)
    np.testing.assert_allclose(Gc, Xc @ Xc.T, rtol=1e-10, atol=1e-8)
    H = np.eye(n) - np.ones((n, n)) / n
    np.testing.assert_allclose(Gc, H @ (X @ X.T) @ H, rtol=1e-10, atol=1e-8)
    np.testing.assert_allclose(Gc.sum(axis=1), 0, atol=1e-8)


def test_cosine_from_gram_with_zero_row() -> None:
    X = data(5, 1000)
    X[2] = 0.0
    C = cosine_from_gram(X @ X.T)
    norms = np.linalg.norm(X, axis=1)
    expected = np.zeros((5, 5))
    for i in range(5):
        for j in range(5):
            if norms[i] > 0 and norms[j] > 0:
                expected[i, j] = X[i] @ X[j] / (norms[i] * norms[j])
    assert not np.isnan(C).any()
    np.testing.assert_allclose(C, expected, atol=1e-12)
    np.testing.assert_array_equal(np.diag(C), [1, 1, 0, 1, 1])
    assert np.all(C[2] == 0) and np.all(C[:, 2] == 0)


def test_cosine_from_gram_parallel_and_opposite() -> None:
    x = np.arange(1.0, 6.0)
    X = np.stack([x, 3 * x, -x])
    C = cosine_from_gram(X @ X.T)
    np.testing.assert_allclose(C, [[1, 1, -1], [1, 1, -1], [-1, -1, 1]], atol=1e-15)
    assert np.abs(C).max() <= 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_npy_memmap_is_read_by_the_ring_at_its_offset(tmp_path, backend: str) -> None:
    """np.load(mmap_mode="r"): data after the .npy header, read with preadv in several blocks;
    a slice of a memmap, or an array, is not a file the ring can read by offset."""
    X = data(5, 3001, dtype=np.float32)
    np.save(tmp_path / "X.npy", X)
    mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    assert mm.offset > 0 and gram_module._mapped_file(mm) == str(tmp_path / "X.npy")
    assert gram_module._mapped_file(mm[1:]) is None and gram_module._mapped_file(X) is None
    blocks = list(gram_module._file_blocks(mm, str(tmp_path / "X.npy"), 3 * 5 * 400 * 4, pinned=False))
    assert len(blocks) == 8  # 400 columns per slot of a 3-slot ring
    X64 = X.astype(np.float64)
    assert_gram_close(gram_from_array(mm, memory_budget=3 * 5 * 400 * 4, backend=backend), X64 @ X64.T, FLOAT32_RTOL)
