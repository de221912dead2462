"""Factors.dense: the deltas s_i B_i A_i, in the factors' dtype or stored in another."""

from __future__ import annotations

import numpy as np
import pytest

from harness.data.workload import Factors


@pytest.mark.parametrize("dtype", [None, np.float32, np.float64])
def test_dense_is_every_scaled_product(dtype: type[np.floating] | None) -> None:
    rng = np.random.default_rng(0)
    B, A = rng.standard_normal((4, 9, 3)), rng.standard_normal((4, 3, 7))
    scale = np.array([0.5, -2.0, 1.0, 3.0])
    W = Factors(B=B, A=A, scale=scale).dense(None if dtype is None else np.dtype(dtype))
    want = np.einsum("kmr,krn->kmn", B, A) * scale[:, None, None]
    assert W.shape == (4, 9, 7) and W.dtype == (np.float64 if dtype is None else dtype)
    np.testing.assert_allclose(W, want, rtol=1e-6 if dtype is np.float32 else 1e-13)
