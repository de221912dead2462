"""Gram strategies for op pca, and the PCA from them, against numpy SVD of the centred data."""

from __future__ import annotations

import numpy as np
import pytest

from harness.data.layout import AdapterLayout
from harness.data.synthetic import SyntheticData, SyntheticSource
from harness.data.workload import DataError, MatrixRef, Workload
from harness.linalg.pca import dual_pca
from harness.compute.pca import scoped_grams
from harness.strategies.base import ExecContext
from harness.strategies.registry import STRATEGIES

NAMES = ["dual_gram", "factored_gram", "gram_pairwise"]


def ctx(dtype: type = np.float64) -> ExecContext:
    return ExecContext(dtype=np.dtype(dtype), backend="numpy", workers=1, seed=0, executor=lambda: None)  # type: ignore[arg-type, return-value]


def workload(adapters: int, form: str = "lora") -> Workload:
    config = SyntheticData(form=form, adapters=adapters, layers=2, modules={"up": (12, 8), "down": (8, 12)}, rank=3)
    return Workload.from_source(SyntheticSource(config, seed=3))


def data_matrix(w: Workload, layout: AdapterLayout) -> np.ndarray:
    """Adapters' vectors built explicitly: every delta flattened, in position order."""
    return np.stack([
        np.concatenate([w.source.load_dense([p.refs[i]], np.dtype(np.float64)).ravel() for p in layout.positions])
        for i in range(layout.n)
    ])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("adapters", [1, 2, 5])
def test_gram_and_pca_match_svd_of_centred_data(name: str, adapters: int) -> None:
    w = workload(adapters)
    layout = AdapterLayout.from_workload(w)
    X = data_matrix(w, layout)
    G = scoped_grams(STRATEGIES[name].grams(w.source, layout, ctx(), 2**20), layout, "global")["global"]  # type: ignore[attr-defined]
    np.testing.assert_allclose(G, X @ X.T, rtol=1e-10, atol=1e-12 * np.abs(X @ X.T).max())
    k = adapters
    pca = dual_pca(G, k)
    Xc = X - X.mean(axis=0)
    U, s, _ = np.linalg.svd(Xc, full_matrices=False)
    w_ref = s[:k] ** 2 / max(adapters - 1, 1)
    np.testing.assert_allclose(pca.eigenvalues, w_ref, atol=1e-10 * max(w_ref.max(), 1e-300))
    total = (s**2).sum()
    ratio = s[:k] ** 2 / total if total > 0 else np.zeros(k)
    np.testing.assert_allclose(pca.explained_variance_ratio, ratio, atol=1e-10)
    live = s[:k] > 1e-8 * max(s.max(), 1e-300)  # scores of zero-variance components are zero
    for j in np.flatnonzero(live):
        ref = U[:, j] * s[j]
        sign = np.sign(ref @ pca.scores[:, j])
        np.testing.assert_allclose(pca.scores[:, j], sign * ref, atol=1e-9 * s[0])
    if adapters == 1:
        assert np.all(pca.eigenvalues == 0) and np.all(pca.scores == 0)


def test_factored_gram_equals_dense_gram_per_position() -> None:
    w = workload(4)
    layout = AdapterLayout.from_workload(w)
    dense = STRATEGIES["dual_gram"].grams(w.source, layout, ctx(), 2**20)  # type: ignore[attr-defined]
    factored = STRATEGIES["factored_gram"].grams(w.source, layout, ctx(), 2**20)  # type: ignore[attr-defined]
    assert dense.shape == (len(layout.positions), 4, 4)
    np.testing.assert_allclose(factored, dense, rtol=1e-10, atol=1e-13 * np.abs(dense).max())


def test_dual_gram_blocks_under_a_tiny_budget_and_float32() -> None:
    w = workload(3, form="dense")
    layout = AdapterLayout.from_workload(w)
    exact = STRATEGIES["dual_gram"].grams(w.source, layout, ctx(), 2**20)  # type: ignore[attr-defined]
    small = STRATEGIES["dual_gram"].grams(w.source, layout, ctx(np.float32), 0)  # type: ignore[attr-defined]
    np.testing.assert_allclose(small, exact, rtol=1e-5, atol=1e-6 * np.abs(exact).max())


def test_per_layer_scope_is_one_gram_per_position() -> None:
    w = workload(3)
    layout = AdapterLayout.from_workload(w)
    grams = scoped_grams(STRATEGIES["factored_gram"].grams(w.source, layout, ctx(), 2**20), layout, "per_layer")  # type: ignore[attr-defined]
    assert list(grams) == ["layer0/up", "layer0/down", "layer1/up", "layer1/down"]
    p = layout.positions[2]
    Xp = w.source.load_dense(p.refs, np.dtype(np.float64)).reshape(3, -1)
    np.testing.assert_allclose(grams["layer1/up"], Xp @ Xp.T, rtol=1e-10)


def test_layout_rejects_adapters_with_different_matrices() -> None:
    w = workload(2)
    w.refs = [r for r in w.refs if not (r.adapter == "adapter1" and r.module == "down")]
    with pytest.raises(DataError, match="adapter 'adapter1' has different matrices"):
        AdapterLayout.from_workload(w)
    w2 = workload(2)
    bad = w2.refs[-1]
    w2.refs[-1] = MatrixRef(**{**bad.model_dump(), "shape": (5, 5)})
    with pytest.raises(DataError, match="has shape"):
        AdapterLayout.from_workload(w2)


def test_factored_gram_float32_factors_within_float32_model() -> None:
    """float32 factors: float32 cross-Grams, float64 products and sums (frobenius_gram)."""
    w = workload(5)
    layout = AdapterLayout.from_workload(w)
    exact = STRATEGIES["factored_gram"].grams(w.source, layout, ctx(), 2**20)  # type: ignore[attr-defined]
    single = STRATEGIES["factored_gram"].grams(w.source, layout, ctx(np.float32), 2**20)  # type: ignore[attr-defined]
    f32 = [w.source.load_factors(p.refs, np.dtype(np.float32)) for p in layout.positions]
    assert all(f.B.dtype == np.float32 for f in f32)
    norms = np.sqrt(np.einsum("pii->pi", exact))
    assert np.all(np.abs(single - exact) <= 1e-5 * norms[:, :, None] * norms[:, None, :])
