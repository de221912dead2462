"""Dual PCA from the Gram matrix against the SVD of the explicitly centred data."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pytest

from harness.linalg.device import cuda_available, torch_module
from harness.linalg.gram import gram_from_array
from harness.linalg.gram_blocks import iter_column_blocks
from harness.linalg.pca import DualPCA, dual_pca, principal_axes

BACKENDS = [
    pytest.param("numpy"),
    pytest.param(
        "cpu", marks=pytest.mark.skipif(torch_module() is None, reason="torch not installed")
    ),
    pytest.param("cuda", marks=pytest.mark.skipif(not cuda_available(), reason="no CUDA")),
]


def axes_of(blocks: Iterable[np.ndarray], pca: DualPCA, backend: str = "numpy") -> np.ndarray:
    """The streamed pieces put together: the (components, d) axes."""
    return np.concatenate(list(principal_axes(blocks, pca, backend=backend)), axis=1)


def data(n: int, d: int = 1000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # distinct scales per sample, plus a shared offset that centring must remove
    return rng.standard_normal((n, d)) * np.linspace(1, 3, n)[:, None] + rng.standard_normal(d)


def reference(X: np.ndarray):
    """scikit-learn's PCA conventions, by hand from the SVD of the centred data."""
    n = X.shape[0]
    Xc = X - X.mean(axis=0)
    U, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    return {
        "eigenvalues": s**2 / max(n - 1, 1),
        "ratio": s**2 / np.sum(s**2) if np.sum(s**2) > 0 else np.zeros_like(s),
        "scores": U * s,
        "axes": Vt,
        "Xc": Xc,
    }


def align(A: np.ndarray, B: np.ndarray, axis: int) -> np.ndarray:
    """B with each column (axis=0) or row (axis=1) flipped to agree in sign with A."""
    signs = np.sign(np.sum(A * B, axis=axis, keepdims=True))
    signs[signs == 0] = 1
    return B * signs


@pytest.mark.parametrize("n", [2, 3, 6])
@pytest.mark.parametrize("components", ["rank", "one"])
def test_matches_svd_of_centred_data(n: int, components: str) -> None:
    X = data(n)
    ref = reference(X)
    k = n - 1 if components == "rank" else 1  # centred rank is n - 1
    pca = dual_pca(X @ X.T, k)
    assert isinstance(pca, DualPCA)
    assert pca.eigenvalues.shape == pca.explained_variance_ratio.shape == (k,)
    assert pca.scores.shape == (n, k)
    np.testing.assert_allclose(pca.eigenvalues, ref["eigenvalues"][:k], rtol=1e-10)
    np.testing.assert_allclose(pca.explained_variance_ratio, ref["ratio"][:k], rtol=1e-10)
    np.testing.assert_allclose(pca.singular_values**2 / (n - 1), pca.eigenvalues, rtol=1e-12)
    scale = np.abs(ref["scores"]).max()
    np.testing.assert_allclose(
        pca.scores, align(pca.scores, ref["scores"][:, :k], axis=0), atol=1e-9 * scale
    )
    if k == n - 1:
        np.testing.assert_allclose(pca.explained_variance_ratio.sum(), 1.0, rtol=1e-12)
    else:
        assert pca.explained_variance_ratio.sum() < 1.0


def test_scores_are_projections_on_axes() -> None:
    X = data(6)
    pca = dual_pca(X @ X.T, 5)
    axes = axes_of(iter_column_blocks(X, 7), pca)
    Xc = X - X.mean(axis=0)
    np.testing.assert_allclose(Xc @ axes.T, pca.scores, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("columns", [7, 1000])
def test_principal_axes_match_vt(backend: str, columns: int) -> None:
    n = 6
    X = data(n)
    ref = reference(X)
    G = gram_from_array(X, memory_budget=columns * n * 16, backend=backend)
    pca = dual_pca(G, n - 1)
    axes = axes_of(iter_column_blocks(X, columns), pca, backend=backend)
    assert axes.shape == (n - 1, 1000)
    np.testing.assert_allclose(axes, align(axes, ref["axes"][: n - 1], axis=1), atol=1e-9)
    np.testing.assert_allclose(axes @ axes.T, np.eye(n - 1), atol=1e-10)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("backend", BACKENDS)
def test_principal_axes_from_read_only_memmap(tmp_path, backend: str) -> None:
    X = data(6)
    path = tmp_path / "X.npy"
    np.save(path, X.astype(np.float32))
    ro = np.load(path, mmap_mode="r")
    pca = dual_pca(gram_from_array(ro, memory_budget=1 << 20, backend=backend), 3)
    axes = axes_of([ro], pca, backend=backend)  # one full-width read-only block
    np.testing.assert_allclose(axes, axes_of([np.array(ro)], pca), atol=1e-10)


def test_principal_axes_stream_one_piece_per_block_in_the_blocks_order() -> None:
    n, d = 6, 1000
    X = data(n, d)
    pca = dual_pca(X @ X.T, 3)
    blocks = list(iter_column_blocks(X, 300))[::-1]
    pieces = list(principal_axes(blocks, pca))
    assert [p.shape for p in pieces] == [(3, 100), (3, 300), (3, 300), (3, 300)]
    np.testing.assert_allclose(np.concatenate(pieces[::-1], axis=1), axes_of([X], pca), atol=1e-12)
    with pytest.raises(ValueError, match=r"shape \(6, c\)"):
        list(principal_axes([X[:5]], pca))


def test_components_beyond_rank_have_zero_variance() -> None:
    n = 6
    X = data(n)
    pca = dual_pca(X @ X.T, n)  # centred rank is n - 1
    assert pca.eigenvalues[-1] == 0 and pca.explained_variance_ratio[-1] == 0
    np.testing.assert_array_equal(pca.scores[:, -1], 0)
    axes = axes_of(iter_column_blocks(X, 100), pca)
    np.testing.assert_array_equal(axes[-1], 0)
    assert not np.isnan(axes).any()

    low_rank = np.outer(np.arange(1.0, n + 1), data(1)[0])  # rank 1, centred rank 1
    pca = dual_pca(low_rank @ low_rank.T, 4)
    np.testing.assert_array_equal(pca.eigenvalues[1:], 0)
    np.testing.assert_allclose(pca.explained_variance_ratio, [1, 0, 0, 0], atol=1e-12)


def test_single_sample_has_zero_variance() -> None:
    X = data(1)
    pca = dual_pca(X @ X.T, 1)
    for array in (pca.eigenvalues, pca.explained_variance_ratio, pca.singular_values, pca.scores):
        assert not np.isnan(array).any()
        np.testing.assert_array_equal(array, 0)
    assert pca.scores.shape == (1, 1)
    axes = axes_of([X], pca)
    np.testing.assert_array_equal(axes, 0)


def test_two_samples() -> None:
    X = data(2)
    ref = reference(X)
    pca = dual_pca(X @ X.T, 2)
    half_distance = np.linalg.norm(X[0] - X[1]) / 2
    np.testing.assert_allclose(np.abs(pca.scores[:, 0]), half_distance, rtol=1e-12)
    np.testing.assert_allclose(pca.eigenvalues, [ref["eigenvalues"][0], 0], rtol=1e-10)
    np.testing.assert_allclose(pca.explained_variance_ratio, [1, 0], atol=1e-12)
    assert pca.scores[0, 0] > 0  # tie of |values|: the first entry is made positive


def test_uncentred_matches_svd_of_raw_data() -> None:
    X = data(5)
    _, s, Vt = np.linalg.svd(X, full_matrices=False)
    pca = dual_pca(X @ X.T, 5, center=False)
    np.testing.assert_allclose(pca.singular_values, s, rtol=1e-10)
    np.testing.assert_allclose(pca.eigenvalues, s**2 / 4, rtol=1e-10)
    axes = axes_of(iter_column_blocks(X, 7), pca)
    np.testing.assert_allclose(axes, align(axes, Vt, axis=1), atol=1e-9)


def test_sign_convention_is_deterministic() -> None:
    X = data(6)
    pca = dual_pca(X @ X.T, 5)
    pivot = np.argmax(np.abs(pca.scores), axis=0)
    assert np.all(pca.scores[pivot, np.arange(5)] > 0)
    flipped = dual_pca((-X) @ (-X).T, 5)  # same Gram up to the last bit (threaded BLAS), same signs
    np.testing.assert_allclose(
        pca.scores, flipped.scores, rtol=1e-10, atol=1e-12 * np.abs(pca.scores).max()
    )
    cols = np.arange(5)
    np.testing.assert_array_equal(
        np.sign(flipped.scores[pivot, cols]), np.sign(pca.scores[pivot, cols])
    )


def test_invalid_components_and_gram() -> None:
    G = np.eye(3)
    with pytest.raises(ValueError, match="components"):
        dual_pca(G, 4)
    with pytest.raises(ValueError, match="components"):
        dual_pca(G, 0)
    with pytest.raises(ValueError, match="square"):
        dual_pca(np.ones((2, 3)), 1)
    with pytest.raises(ValueError, match="NaN"):
        dual_pca(np.full((2, 2), np.nan), 1)


def test_result_is_read_only() -> None:
    pca = dual_pca(np.eye(3) * 2.0, 2)
    with pytest.raises(ValueError):
        pca.scores[0, 0] = 1.0
