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
    with threadpool_limits(limits=1):
        assert gram_kernel.kernel_threads() == 1
    assert gram_kernel.kernel_threads() >= 1
