"""The float64 references: exact from LoRA factors, proven equal to dense LAPACK here (never at
run time), computed once per run and kept in the result cache."""

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.compute.verify import Operator
from harness.compute.references import References, checked, exact_gram, exact_values, operator
from harness.linalg.prefetch import Ring
from harness.store.keys import Keys
from harness.store.cache import ResultCache
from harness.data.layout import AdapterLayout
from harness.data.synthetic import SyntheticData, SyntheticSource
from harness.data.workload import Workload
from harness.machine.info import probe
from harness.strategies.base import OpResult
from harness.compute.verify import verify


def lora() -> Workload:
    config = SyntheticData(adapters=3, layers=2, modules={"up": (60, 24), "down": (24, 60)}, rank=5)
    return Workload.from_source(SyntheticSource(config, seed=3))


def test_factored_values_equal_dense_lapack() -> None:
    w = lora()
    for group in w.groups():
        dense = w.source.load_dense(group.refs, np.dtype(np.float64))
        S_lapack = np.linalg.svd(dense, compute_uv=False)
        S = exact_values(w.source, group.refs)
        assert S.shape == S_lapack.shape == (len(group), 24)
        assert np.max(np.abs(S - S_lapack)) <= 1e-13 * S_lapack[:, 0].max()
        assert np.all(S[:, 5:] == 0.0)  # the rank-5 delta's exact zeros


def test_factored_operator_applies_the_dense_matrix() -> None:
    w = lora()
    refs = w.groups()[0].refs
    dense = w.source.load_dense(refs, np.dtype(np.float64))
    V = np.random.default_rng(0).standard_normal((len(refs), 24, 3))
    U = np.random.default_rng(1).standard_normal((len(refs), 60, 3))
    W = operator(w.source, refs)
    assert W.factors is not None and W.dense is None  # never formed
    np.testing.assert_allclose(W.matmat(V), dense @ V, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(W.rmatmat(U), np.swapaxes(dense, 1, 2) @ U, rtol=1e-13, atol=1e-13)


def test_factored_gram_equals_dense_gram() -> None:
    w = lora()
    position = AdapterLayout.from_workload(w).positions[1]
    X = w.source.load_dense(position.refs, np.dtype(np.float64)).reshape(len(position.refs), -1)
    G = X @ X.T
    assert np.max(np.abs(exact_gram(w.source, position, Ring.within(1 << 20)) - G)) <= 1e-13 * np.abs(G).max()


def test_dense_sources_use_lapack(dense_workload: Workload) -> None:
    refs = dense_workload.groups()[0].refs
    dense = dense_workload.source.load_dense(refs, np.dtype(np.float64))
    np.testing.assert_array_equal(exact_values(dense_workload.source, refs), np.linalg.svd(dense, compute_uv=False))
    assert operator(dense_workload.source, refs).dense is not None


def test_computed_once_per_run_and_then_read_from_the_cache(tmp_path: Path) -> None:
    w = lora()
    group = w.groups()[0]
    keys = Keys("float32", 3, w.fingerprint(), probe())
    refs = References(w.source, ResultCache(tmp_path), keys)
    first = refs.values(group.refs[:2])
    refs.values(group.refs[:3])  # shared: only the new matrix is computed
    assert refs.computed == 3 and refs.cached == 0
    layout = AdapterLayout.from_workload(w).head(1)
    refs.grams(layout)
    refs.grams(layout)
    assert refs.computed == 4
    again = References(w.source, ResultCache(tmp_path), keys)  # the next run
    np.testing.assert_array_equal(again.values(group.refs[:2]), first)
    again.grams(layout)
    assert again.computed == 0 and again.cached == 3


def test_lora_references_never_form_a_dense_matrix(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    w = lora()
    monkeypatch.setattr(type(w.source), "load_dense", lambda *a: (_ for _ in ()).throw(AssertionError("dense")))
    refs = w.groups()[1].refs
    References(w.source).values(refs)
    References(w.source).grams(AdapterLayout.from_workload(w).head(2))
    operator(w.source, refs).matmat(np.ones((len(refs), 60, 2)))


def _recording(monkeypatch: pytest.MonkeyPatch, source: object, method: str) -> list[int]:
    """The number of matrices of every call of source.<method>."""
    sizes: list[int] = []
    inner = getattr(source, method)

    def record(refs: Any, dtype: np.dtype) -> Any:
        sizes.append(len(refs))
        return inner(refs, dtype)

    monkeypatch.setattr(source, method, record)
    return sizes


def test_a_check_holds_one_dense_matrix_at_a_time_and_judges_as_verify(
    dense_workload: Workload, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`checked` gives verify()'s verdict on the whole stack, while the references and the
    vectors' check load one dense float64 matrix at a time (LoRA factors come whole)."""
    refs = dense_workload.groups()[0].refs
    W = dense_workload.source.load_dense(refs, np.dtype(np.float64))
    U, S, Vh = np.linalg.svd(W.astype(np.float32))
    result = OpResult(S[:, :3], U[:, :, :3], Vh[:, :3])
    want = verify("x", result, Operator(dense=W), np.linalg.svd(W, compute_uv=False), 1e-5)
    sizes = _recording(monkeypatch, dense_workload.source, "load_dense")
    got = checked("x", result, dense_workload.source, refs, References(dense_workload.source), 1e-5)
    assert len(refs) == 4 and sizes == [1] * 8  # each matrix for its values, then for its vectors
    assert got == want and got.passed and got.vectors_error is not None
    w = lora()
    group = w.groups()[0]
    Wl = w.source.load_dense(group.refs, np.dtype(np.float64))
    U, S, Vh = np.linalg.svd(Wl)
    factor_loads = _recording(monkeypatch, w.source, "load_factors")
    assert checked("x", OpResult(S[:, :3], U[:, :, :3], Vh[:, :3]), w.source, group.refs, References(w.source), 1e-9).passed
    assert factor_loads == [len(group.refs)] * 2


def test_lokr_values_come_from_the_factors_never_the_dense_delta() -> None:
    """Issue 32: a LoKr delta of two 400 KB files is 25600 x 25600; its float64 reference formed
    it (10.2 GB resident under a 256 MiB budget). The Kronecker factors' SVDs give it exactly."""
    from types import SimpleNamespace

    from harness.compute.references import exact_values
    from harness.data.workload import KronFactors, MatrixRef

    rng = np.random.default_rng(3)
    W1, W2 = rng.standard_normal((1, 6, 4)), rng.standard_normal((1, 5, 7))

    def dense(*args: object) -> None:
        raise AssertionError("the dense delta was formed")

    source = SimpleNamespace(has_factors=False, load_dense=dense,
                             load_kron=lambda refs, dtype: KronFactors(W1=W1, W2=W2, scale=np.array([0.5])))
    ref = MatrixRef(id="a/m", adapter="a", layer=None, module="m", shape=(30, 28), kron=(6, 4, 5, 7), locator={})
    values = exact_values(source, [ref])  # type: ignore[arg-type]
    np.testing.assert_allclose(values[0], np.linalg.svd(0.5 * np.kron(W1[0], W2[0]), compute_uv=False), atol=1e-12)


def test_lokr_vectors_and_grams_come_from_the_factors_never_the_dense_delta() -> None:
    """The vectors' residuals apply kron(W1, W2) and its transpose through the factors, and a
    PCA position's float64 Gram is <A, C><B, D> per pair: no dense LoKr delta either way."""
    from types import SimpleNamespace

    from harness.compute.references import exact_gram, operator
    from harness.data.layout import Position
    from harness.data.workload import KronFactors, MatrixRef

    rng = np.random.default_rng(4)
    W1, W2, scale = rng.standard_normal((3, 6, 4)), rng.standard_normal((3, 5, 7)), np.array([0.5, -1.0, 2.0])

    def dense(*args: object) -> None:
        raise AssertionError("the dense delta was formed")

    source = SimpleNamespace(has_factors=False, load_dense=dense, dense_blocks=dense,
                             load_kron=lambda refs, dtype: KronFactors(W1=W1, W2=W2, scale=scale))
    refs = [MatrixRef(id=f"a{i}/m", adapter=f"a{i}", layer=None, module="m", shape=(30, 28), kron=(6, 4, 5, 7),
                      locator={}) for i in range(3)]
    full = np.stack([s * np.kron(a, b) for s, a, b in zip(scale, W1, W2)])
    W = operator(source, refs)  # type: ignore[arg-type]
    V, U = rng.standard_normal((3, 28, 2)), rng.standard_normal((3, 30, 2))
    np.testing.assert_allclose(W.matmat(V), full @ V, atol=1e-12)
    np.testing.assert_allclose(W.rmatmat(U), np.swapaxes(full, 1, 2) @ U, atol=1e-12)
    position = Position(layer=None, module="m", shape=(30, 28), rank=None, refs=tuple(refs))
    flat = full.reshape(3, -1)
    np.testing.assert_allclose(exact_gram(source, position, None), flat @ flat.T, rtol=1e-12)  # type: ignore[arg-type]
