"""verify() must pass exact answers and catch wrong values, wrong vectors and NaN."""

import numpy as np

from harness.strategies.base import OpResult
from harness.compute.verify import Operator
from harness.compute.verify import verify
from tests.conftest import known_spectrum


def exact(W: np.ndarray, k: int) -> OpResult:
    U, S, Vh = np.linalg.svd(W, full_matrices=False)
    return OpResult(S=S[:, :k], U=U[:, :, :k], Vh=Vh[:, :k])


W = np.stack([known_spectrum(20, 10, np.array([4.0, 2, 2, 1, 0.5, 0.1, 0, 0, 0, 0]), seed=1)])
S_REF = np.linalg.svd(W, compute_uv=False)
OP = Operator(dense=W)


def test_exact_passes_even_with_flipped_signs_and_repeated_values() -> None:
    r = exact(W, 4)
    r.U[:, :, 0] *= -1
    r.Vh[:, 0] *= -1
    # rotate inside the repeated singular value 2 (columns 1, 2): any basis of it is right
    c, s = np.cos(0.3), np.sin(0.3)
    R = np.array([[c, -s], [s, c]])
    r.U[0, :, 1:3] = r.U[0, :, 1:3] @ R
    r.Vh[0, 1:3] = R.T @ r.Vh[0, 1:3]
    v = verify("x", r, OP, S_REF, 1e-12)
    assert v.passed and v.vectors_error is not None and v.vectors_error < 1e-12


def test_wrong_values_fail() -> None:
    r = OpResult(S=S_REF * (1 + 1e-3))
    v = verify("x", r, OP, S_REF, 1e-4)
    assert not v.passed and abs(v.values_error - 1e-3) < 1e-12


def test_wrong_vectors_fail() -> None:
    r = exact(W, 3)
    r.U[0, :, [0, 1]] = r.U[0, :, [1, 0]]  # swapped vectors, right values
    assert not verify("x", r, OP, S_REF, 1e-4).passed


def test_nan_fails() -> None:
    r = OpResult(S=np.full_like(S_REF, np.nan))
    assert not verify("x", r, OP, S_REF, 1.0).passed


def test_vectors_need_the_matrices() -> None:
    import pytest

    with pytest.raises(ValueError, match="needs the matrices"):
        verify("x", exact(W, 2), None, S_REF, 1e-4)
