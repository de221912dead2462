"""Batched dense kernels against float64 LAPACK on matrices with known spectra."""

import numpy as np
import pytest

from harness.linalg import dense
from harness.linalg.device import torch_module
from tests.conftest import known_spectrum

NEEDS_TORCH = pytest.mark.skipif(torch_module() is None, reason="torch is not installed")
BACKENDS = ["numpy", pytest.param("cpu", marks=NEEDS_TORCH)]


def stack(shape: tuple[int, int], spectra: list[np.ndarray]) -> np.ndarray:
    return np.stack([known_spectrum(*shape, s, seed=i) for i, s in enumerate(spectra)])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", [(30, 20), (20, 30)])
@pytest.mark.parametrize("condition", [1.0, 1e6])
def test_svdvals_and_svd(backend: str, shape: tuple[int, int], condition: float) -> None:
    p = min(shape)
    spectra = [np.logspace(0, -np.log10(condition), p) * (i + 1) for i in range(3)]
    X = stack(shape, spectra)
    S = dense.svdvals(X, backend=backend)
    np.testing.assert_allclose(S, np.stack(spectra), rtol=0, atol=1e-12 * 3)
    S2, U, Vh = dense.svd(X, backend=backend)
    np.testing.assert_allclose(U * S2[:, None, :] @ Vh, X, atol=1e-12)
    S3, U3, Vh3 = dense.svd(X, k=2, backend=backend)
    assert U3.shape == (3, shape[0], 2) and Vh3.shape == (3, 2, shape[1])
    np.testing.assert_allclose(S3, S2[:, :2])


def test_svd_lowrank_is_exact_on_low_rank_matrices() -> None:
    pytest.importorskip("torch")
    s = np.array([5.0, 3.0, 2.0, 1.0])
    X = stack((60, 40), [s, s * 2])
    S, U, Vh = dense.svd_lowrank(X, 2, oversample=2, niter=2, seed=0)
    np.testing.assert_allclose(S, np.stack([s[:2], 2 * s[:2]]), rtol=1e-10)
    again = dense.svd_lowrank(X, 2, oversample=2, niter=2, seed=0)
    np.testing.assert_array_equal(again[1], U)  # seeded: reproducible


def test_svd_lowrank_needs_torch() -> None:
    with pytest.raises(RuntimeError, match="needs torch"):
        dense.svd_lowrank(np.zeros((1, 4, 4)), 1, backend="numpy")
