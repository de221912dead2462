"""gram_svdvals and gram_svd against float64 LAPACK on matrices with known spectra, both
orientations, within the stated bound; and the spectrum where that bound is all they reach."""

from __future__ import annotations

import numpy as np
import pytest

from harness.compute.verify import Operator, verify
from harness.linalg.gram_svd import VECTOR_FLOOR, error_bound, gram_svd, gram_svdvals
from harness.strategies.base import OpResult
from tests.conftest import known_spectrum

SHAPES = [(120, 40), (40, 120)]  # tall and wide: the Gram is of the smaller side either way
SPECTRA = {
    "flat": lambda p: np.ones(p),
    "geometric": lambda p: np.logspace(0, -3, p),
    "clustered": lambda p: np.repeat([3.0, 1.0, 1e-2, 1e-4], p // 4),
}


def stack(shape: tuple[int, int], s: np.ndarray, dtype: type[np.floating], count: int = 2) -> np.ndarray:
    return np.stack([known_spectrum(*shape, s, seed=i) for i in range(count)]).astype(dtype)


def lapack(X: np.ndarray) -> np.ndarray:
    return np.linalg.svd(X.astype(np.float64), compute_uv=False)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("spectrum", sorted(SPECTRA))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_within_the_bound_of_sigma_1(shape, spectrum, dtype) -> None:
    X = stack(shape, SPECTRA[spectrum](min(shape)), dtype)
    S, ref = gram_svdvals(X), lapack(X)
    assert S.shape == ref.shape and S.dtype == dtype
    output = float(np.finfo(dtype).eps)  # the values' own rounding to X's dtype
    assert np.max(np.abs(S - ref) / ref[:, :1]) <= error_bound(shape) + output


def test_the_bound_is_the_square_root_of_the_grams_rounding() -> None:
    assert 1e-6 < error_bound((3072, 768)) < 3e-6  # the target shape: ~2.2e-6 of sigma_1
    assert error_bound((768, 3072)) == error_bound((3072, 768))
    assert error_bound((40, 120)) < error_bound((400, 1200))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_top_k_triplets_have_small_residuals(shape, dtype) -> None:
    k = 5
    X = stack(shape, SPECTRA["geometric"](min(shape)), dtype)
    S, U, Vh = gram_svd(X, k)
    assert S.shape == (2, k) and U.shape == (2, shape[0], k) and Vh.shape == (2, k, shape[1])
    W = Operator(dense=X.astype(np.float64))
    check = verify("gram_eigh", OpResult(S=S, U=U, Vh=Vh), W, lapack(X), tolerance=1e-5)
    assert check.passed, check


def test_top_k_below_the_vector_floor_falls_back_to_lapack() -> None:
    s = np.r_[np.ones(3), np.full(37, VECTOR_FLOOR / 10)]  # sigma_5 far below the floor
    X = stack((120, 40), s, np.float64)
    S, U, Vh = gram_svd(X, 5)
    check = verify("gram_eigh", OpResult(S=S, U=U, Vh=Vh), Operator(dense=X), lapack(X), tolerance=1e-12)
    assert check.passed, check


def test_k_out_of_range() -> None:
    with pytest.raises(ValueError, match="k=41"):
        gram_svd(np.zeros((1, 120, 40)), 41)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_graded_spectrum_fails_verification_honestly(shape) -> None:
    """Down to 1e-12 sigma_1, the tail's eigenvalues drown in the Gram's rounding (u sigma_1^2):
    those values lose all relative accuracy, and a float64 tolerance tighter than the bound sees it,
    where LAPACK on the same matrices passes."""
    s = np.logspace(0, -12, min(shape))
    X = stack(shape, s, np.float64)
    ref = lapack(X)
    S = gram_svdvals(X)
    tail = ref[:, -1]
    assert np.all(np.abs(S[:, -1] - tail) >= 0.5 * tail)  # no relative accuracy left at all
    tight = 1e-10
    assert error_bound(shape) > tight
    failed = verify("gram_eigh", OpResult(S=S), None, ref, tight)
    assert not failed.passed and failed.values_error > tight
    assert failed.values_error <= error_bound(shape)  # still within the stated bound of sigma_1
    assert verify("numpy", OpResult(S=np.linalg.svd(X, compute_uv=False)), None, ref, tight).passed


def test_cuda_matches_numpy() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    X = stack((120, 40), SPECTRA["geometric"](40), np.float32)
    np.testing.assert_allclose(gram_svdvals(X, backend="cuda"), gram_svdvals(X), rtol=0, atol=1e-6)
    for a, b in zip(gram_svd(X, 4, backend="cuda"), gram_svd(X, 4)):
        assert a.shape == b.shape
