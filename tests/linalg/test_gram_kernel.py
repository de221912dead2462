"""The compiled float32 Gram kernel: exact on representable data for every tile remainder and
width, in place on views and read-only memmaps, split over threads, and refusing what it
cannot read in place."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

pytest.importorskip("numba")

from harness.linalg import gram_kernel  # noqa: E402
from harness.linalg.gram import accumulate_gram  # noqa: E402


def representable(n: int, d: int, seed: int = 0) -> np.ndarray:
    """m / 32 with |m| < 32: every float32 sum of up to 2**14 products is exact, so the kernel
    has one right answer."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-31, 32, size=(n, d)) / 32).astype(np.float32)


def exact(X: np.ndarray) -> np.ndarray:
    X64 = X.astype(np.float64)
    return X64 @ X64.T


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 18, 38])
@pytest.mark.parametrize("d", [1, 1023, 1025, 3000])
def test_every_tile_remainder_and_piece_width_is_exact(n: int, d: int) -> None:
    X = representable(n, d)
    G = np.zeros((n, n))
    gram_kernel.add_gram(G, X, threads=1)
    lower = np.tril(G)
    np.testing.assert_array_equal(lower + np.tril(lower, -1).T, exact(X))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_columns_split_over_threads_sum_to_the_same_gram(threads: int) -> None:
    X = representable(7, 3 * gram_kernel.MIN_THREAD_COLUMNS + 17)
    G = np.zeros((7, 7))
    gram_kernel.add_gram(G, X, threads=threads)
    np.testing.assert_array_equal(G, exact(X))  # add_gram mirrors the lower triangle


def test_column_block_of_a_read_only_memmap_is_read_in_place(tmp_path: Path) -> None:
    X = representable(5, 4000)
    np.save(tmp_path / "X.npy", X)
    ro = np.load(tmp_path / "X.npy", mmap_mode="r")
    block = ro[:, 333:2999]
    assert gram_kernel.usable(block)
    G = np.zeros((5, 5))
    gram_kernel.add_gram(G, block, threads=2)
    np.testing.assert_array_equal(G, exact(np.array(block)))


def test_what_it_cannot_read_in_place_goes_to_blas() -> None:
    X = representable(4, 100)
    assert not gram_kernel.usable(X.astype(np.float64))
    assert not gram_kernel.usable(X[:, ::2])
    assert not gram_kernel.usable(X[::-1])
    assert not gram_kernel.usable(np.asfortranarray(X))
    assert not gram_kernel.usable(X[0])
    mixed = [X[:, :50], X[:, 50:].astype(np.float64)]  # the float64 block goes through numpy
    np.testing.assert_array_equal(accumulate_gram(mixed), exact(X))


def test_random_float32_data_within_the_precision_model() -> None:
    X = np.random.default_rng(1).standard_normal((18, 200_000)).astype(np.float32) + 0.5
    G = accumulate_gram([X])
    ref = exact(X)
    norms = np.sqrt(np.diag(ref))
    # sqrt(PIECE_COLUMNS) * 2**-24 ~ 2e-6 of |x_i| |x_j| at worst
    assert np.max(np.abs(G - ref) / np.outer(norms, norms)) < 2e-6


def test_threads_follow_a_workers_blas_limit() -> None:
    from harness.linalg.parallel import kernel_threads

    with threadpool_limits(limits=1):
        assert kernel_threads() == 1
    assert kernel_threads() >= 1


def as_bf16(X: np.ndarray) -> np.ndarray:
    """The bfloat16 bits of float32 values that bfloat16 holds exactly (m / 32 does)."""
    bits = X.view(np.uint32)
    assert not (bits & 0xFFFF).any()
    return (bits >> 16).astype(np.uint16)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 18])
@pytest.mark.parametrize("d", [1, 1023, 1025, 3000])
@pytest.mark.parametrize(("rows", "base"), [("bf16", "bf16"), ("f32", "f32"), ("bf16", "f32"), ("f32", "bf16")])
def test_stored_deltas_are_widened_subtracted_and_multiplied_exactly(n: int, d: int, rows: str, base: str) -> None:
    """Every tile remainder, piece width and pairing of stored dtypes: deltas of m / 32 values
    are exact in float32, so the Gram has one right answer."""
    X, below = representable(n, d, seed=1), representable(1, d, seed=2)[0]
    stored_rows, stored_base = (as_bf16(X) if rows == "bf16" else X), (as_bf16(below) if base == "bf16" else below)
    G = np.zeros((n, n))
    assert gram_kernel.add_delta_gram(G, stored_rows, stored_base, threads=2)
    np.testing.assert_array_equal(G, exact(X - below))


@pytest.mark.parametrize("stored", ["bf16", "f32"])
@pytest.mark.parametrize("where", ["row", "base"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_nan_or_inf_delta_is_reported_and_adds_nothing(stored: str, where: str, bad: float) -> None:
    """The check survives the Gram's fast-math (with nnan, LLVM may fold it away), in any thread."""
    d = 3 * gram_kernel.MIN_THREAD_COLUMNS
    X, below = representable(5, d), representable(1, d, seed=2)[0]
    (X[3] if where == "row" else below)[d - 7] = bad
    as_stored = as_bf16 if stored == "bf16" else np.ascontiguousarray
    G = np.ones((5, 5))
    assert not gram_kernel.add_delta_gram(G, as_stored(X), as_stored(below), threads=2)
    np.testing.assert_array_equal(G, np.ones((5, 5)))
