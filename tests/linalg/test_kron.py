"""kron_svd against the dense float64 SVD of the Kronecker product it never forms."""

from __future__ import annotations

import numpy as np
import pytest

from harness.linalg.kron import kron_svd


@pytest.mark.parametrize(("s1", "s2"), [((4, 2), (5, 7)), ((3, 3), (2, 6)), ((1, 4), (6, 1))])
@pytest.mark.parametrize("k", [None, 1, 3])
def test_values_and_vectors_match_the_dense_svd(s1: tuple[int, int], s2: tuple[int, int], k: int | None) -> None:
    rng = np.random.default_rng(0)
    W1, W2 = rng.standard_normal((3, *s1)), rng.standard_normal((3, *s2))
    scale = np.array([0.5, -2.0, 1.0])
    q = min(s1) * min(s2)
    k = None if k is None else min(k, q)
    S, U, Vh = kron_svd(W1, W2, scale, k=k)
    S_only, _, _ = kron_svd(W1, W2, scale, compute_uv=False, k=k)
    np.testing.assert_allclose(S_only, S, rtol=1e-13)
    width = q if k is None else k
    assert S.shape == (3, width) and U.shape == (3, s1[0] * s2[0], width) and Vh.shape == (3, width, s1[1] * s2[1])
    for i in range(3):
        D = scale[i] * np.kron(W1[i], W2[i])
        S_ref = np.linalg.svd(D, compute_uv=False)
        np.testing.assert_allclose(S[i], S_ref[:width], rtol=0, atol=1e-13 * S_ref[0])
        assert np.all(S_ref[q:] <= 1e-13 * S_ref[0])  # the rest of the spectrum is exactly zero
        np.testing.assert_allclose(U[i].T @ U[i], np.eye(width), atol=1e-13)
        np.testing.assert_allclose(Vh[i] @ Vh[i].T, np.eye(width), atol=1e-13)
        if k is None:  # the triplets rebuild the product
            np.testing.assert_allclose((U[i] * S[i]) @ Vh[i], D, atol=1e-13 * S_ref[0])


def test_k_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="k=5"):
        kron_svd(np.ones((1, 2, 2)), np.ones((1, 1, 2)), np.ones(1), k=5)
