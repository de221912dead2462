"""harness.linalg.factored against float64 LAPACK on the dense deltas."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from harness.linalg.device import Backend
from harness.linalg.factored import (
    core_svd_driver,
    factored_svd,
    factored_svdvals,
    frobenius_inner,
    frobenius_norms,
    gram_route,
    pad_spectrum,
)

Case = tuple[np.ndarray, np.ndarray, np.ndarray]  # B (k, m, r), A (k, r, n), scale (k,)
BATCH = 3
# max|s - s_ref| / s_ref[0] and the like; observed errors sit one to two orders below.
TOL = {np.float32: 1e-5, np.float64: 1e-10}
EPS = {np.float32: float(np.finfo(np.float32).eps), np.float64: float(np.finfo(np.float64).eps)}


def _random(m: int, n: int, r: int, scale: float | list[float] = 2.0, seed: int = 0) -> Case:
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((BATCH, m, r))
    A = rng.standard_normal((BATCH, r, n)) / np.sqrt(n)
    return B, A, np.broadcast_to(np.asarray(scale, dtype=np.float64), (BATCH,)).copy()


def _ill_conditioned(m: int = 60, n: int = 40, r: int = 8) -> Case:
    """B = Q diag(logspace(0, -6)) R: condition number 1e6."""
    rng = np.random.default_rng(1)
    Q = np.linalg.qr(rng.standard_normal((BATCH, m, r)))[0]
    R = np.linalg.qr(rng.standard_normal((BATCH, r, r)))[0]
    B = Q * np.logspace(0, -6, r) @ R
    A = rng.standard_normal((BATCH, r, n))
    return B, A, np.full(BATCH, 0.5)


def _rank_deficient(m: int = 60, n: int = 40, r: int = 8, true_rank: int = 3) -> Case:
    """r = 8 but B has rank 3, so singular values 4..8 of the delta are round-off."""
    rng = np.random.default_rng(2)
    B = rng.standard_normal((BATCH, m, true_rank)) @ rng.standard_normal((BATCH, true_rank, r))
    A = rng.standard_normal((BATCH, r, n))
    return B, A, np.ones(BATCH)


CASES: dict[str, Callable[[], Case]] = {
    "random": lambda: _random(60, 40, 8),
    "rslora_scale": lambda: _random(60, 40, 8, scale=16 / np.sqrt(8)),
    "negative_scale": lambda: _random(60, 40, 8, scale=[-2.0, 0.5, -1.0]),
    "wide": lambda: _random(40, 60, 8),
    "rank_1": lambda: _random(60, 40, 1),
    "r_eq_min_mn": lambda: _random(60, 40, 40),
    "r_gt_n": lambda: _random(60, 40, 50),
    "r_gt_m": lambda: _random(30, 45, 36),
    "ill_conditioned": _ill_conditioned,
    "rank_deficient": _rank_deficient,
}
DTYPES = [np.float32, np.float64]


@pytest.fixture(params=list(CASES), ids=list(CASES))
def case(request: pytest.FixtureRequest) -> Case:
    return CASES[request.param]()


@pytest.fixture(params=DTYPES, ids=["float32", "float64"])
def dtype(request: pytest.FixtureRequest) -> type[np.floating]:
    return request.param


def _cast(case: Case, dtype: type[np.floating]) -> Case:
    B, A, scale = case
    return B.astype(dtype), A.astype(dtype), scale.astype(dtype)


def _dense(B: np.ndarray, A: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The float64 deltas of the factors as given (float32 factors are exact in float64)."""
    return scale.astype(np.float64)[:, None, None] * (B.astype(np.float64) @ A.astype(np.float64))


def _rel_err(S: np.ndarray, S_ref: np.ndarray) -> float:
    return float(np.max(np.abs(S - S_ref) / S_ref[:, :1]))


def test_singular_values_match_lapack(case: Case, dtype: type[np.floating]) -> None:
    B, A, scale = _cast(case, dtype)
    m, n, r = B.shape[1], A.shape[2], B.shape[2]
    S_ref = np.linalg.svd(_dense(B, A, scale), compute_uv=False)
    S = factored_svdvals(B, A, scale)
    assert S.shape == (BATCH, min(m, n, r)) and S.dtype == dtype
    assert np.all(S >= 0) and np.all(np.diff(S, axis=1) <= 0)
    assert _rel_err(pad_spectrum(S, min(m, n)), S_ref) < TOL[dtype]


def test_vectors_orthonormal_reconstruct_and_span_reference(
    case: Case, dtype: type[np.floating]
) -> None:
    B, A, scale = _cast(case, dtype)
    dense = _dense(B, A, scale)
    U_ref, S_ref, _ = np.linalg.svd(dense, full_matrices=False)
    S, U, Vh = factored_svd(B, A, scale)
    assert U is not None and Vh is not None
    q = S.shape[1]
    assert U.shape == (BATCH, B.shape[1], q) and Vh.shape == (BATCH, q, A.shape[2])
    assert U.dtype == Vh.dtype == dtype
    eye = np.eye(q)
    assert np.abs(U.swapaxes(1, 2) @ U - eye).max() < TOL[dtype]
    assert np.abs(Vh @ Vh.swapaxes(1, 2) - eye).max() < TOL[dtype]
    recon = (U.astype(np.float64) * S[:, None, :]) @ Vh.astype(np.float64)
    err = np.linalg.norm(recon - dense, axis=(1, 2)) / np.linalg.norm(dense, axis=(1, 2))
    assert err.max() < TOL[dtype]
    # Top-k subspaces are defined only across a gap; perturbation theory bounds the projector
    # error by ~ eps * s_0 / gap, so compare wherever the gap makes that meaningful.
    for i in range(BATCH):
        for k in range(1, q + 1):
            below = S_ref[i, k] if k < S_ref.shape[1] else 0.0  # dense spectrum, zeros beyond
            gap = (S_ref[i, k - 1] - below) / S_ref[i, 0]
            if gap < 1e-3:
                continue
            P = U[i, :, :k].astype(np.float64) @ U[i, :, :k].T
            P_ref = U_ref[i, :, :k] @ U_ref[i, :, :k].T
            assert np.linalg.norm(P - P_ref, 2) < 100 * EPS[dtype] / gap


def test_k_truncation(dtype: type[np.floating]) -> None:
    B, A, scale = _cast(CASES["random"](), dtype)
    S, U, Vh = factored_svd(B, A, scale)
    assert U is not None and Vh is not None
    S3, U3, Vh3 = factored_svd(B, A, scale, k=3)
    assert S3.shape == (BATCH, 3) and U3 is not None and Vh3 is not None
    assert U3.shape == (BATCH, 60, 3) and Vh3.shape == (BATCH, 3, 40)
    np.testing.assert_allclose(S3, S[:, :3], rtol=TOL[dtype])
    top3 = U[..., :3] * S[:, None, :3] @ Vh[:, :3]
    np.testing.assert_allclose(U3 * S3[:, None, :] @ Vh3, top3, atol=TOL[dtype] * S.max())
    S3_only = factored_svd(B, A, scale, k=3, compute_uv=False)[0]
    np.testing.assert_allclose(S3_only, S[:, :3], rtol=TOL[dtype])


@pytest.mark.parametrize("k", [0, 9])
def test_k_out_of_range_raises(k: int) -> None:
    with pytest.raises(ValueError, match="k="):
        factored_svd(*CASES["random"](), k=k)


def test_compute_uv_false_returns_values_only(case: Case) -> None:
    S, U, Vh = factored_svd(*case, compute_uv=False)
    assert U is None and Vh is None
    np.testing.assert_allclose(S, factored_svd(*case)[0], rtol=0, atol=1e-12 * S[:, 0].max())


def test_pad_spectrum() -> None:
    S = np.array([[3.0, 2.0], [1.0, 0.5]])
    padded = pad_spectrum(S, 5)
    assert padded.shape == (2, 5) and padded.dtype == S.dtype
    assert np.array_equal(padded[:, :2], S) and np.all(padded[:, 2:] == 0)
    assert np.array_equal(pad_spectrum(S, 2), S)
    with pytest.raises(ValueError):
        pad_spectrum(S, 1)


def test_torch_backend_matches_numpy(case: Case, dtype: type[np.floating]) -> None:
    torch = pytest.importorskip("torch")
    B, A, scale = _cast(case, dtype)
    S, U, Vh = factored_svd(B, A, scale)
    tensors = [torch.from_numpy(x) for x in (B, A, scale)]
    for inputs in (tensors, (B, A, scale)):  # tensors and arrays alike
        S_t, U_t, Vh_t = factored_svd(*inputs, backend="cpu")
        assert isinstance(S_t, np.ndarray) and S_t.dtype == dtype
        assert U is not None and Vh is not None and U_t is not None and Vh_t is not None
        assert _rel_err(S_t, S) < TOL[dtype]
        # vectors agree up to sign (or rotation within repeated values): compare the products
        atol = TOL[dtype] * float(S[:, 0].max())
        np.testing.assert_allclose(U_t * S_t[:, None, :] @ Vh_t, U * S[:, None, :] @ Vh, atol=atol)
        assert _rel_err(factored_svdvals(*inputs, backend="cpu"), S) < TOL[dtype]
    S_np_from_tensors = factored_svdvals(*tensors, backend="numpy")
    assert _rel_err(S_np_from_tensors, S) < TOL[dtype]


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_frobenius_inner_and_norms_match_dense(backend: Backend, dtype: type[np.floating]) -> None:
    if backend != "numpy":
        pytest.importorskip("torch")
    B1, A1, s1 = _cast(_random(60, 40, 8, scale=[1.5, -0.5, 2.0], seed=3), dtype)
    B2, A2, s2 = _cast(_random(60, 40, 3, scale=-1.0, seed=4), dtype)
    B2, A2, s2 = B2[:2], A2[:2], s2[:2]  # k1 = 3, k2 = 2, r1 = 8, r2 = 3
    D1, D2 = _dense(B1, A1, s1), _dense(B2, A2, s2)
    G_ref = np.array([[np.vdot(a, b) for b in D2] for a in D1])
    G = frobenius_inner(B1, A1, s1, B2, A2, s2, backend=backend)
    assert G.shape == (3, 2) and G.dtype == np.float64
    # float64 accumulation: exact to float64 round-off even for float32 factors
    norms_ref = np.linalg.norm(D1, axis=(1, 2))
    bound = 1e-12 * norms_ref[:, None] * np.linalg.norm(D2, axis=(1, 2))[None, :]
    assert np.all(np.abs(G - G_ref) < bound)
    N = frobenius_norms(B1, A1, s1, backend=backend)
    assert N.shape == (3,) and N.dtype == np.float64
    np.testing.assert_allclose(N, norms_ref, rtol=1e-12)
    G_self = frobenius_inner(B1, A1, s1, B1, A1, s1, backend=backend)
    np.testing.assert_allclose(np.sqrt(np.diag(G_self)), N, rtol=1e-12)


@pytest.mark.parametrize("ranks", [(4, 16, 32), (16, 8)], ids=["4-16-32", "16-8"])
def test_mixed_ranks_of_one_shape_match_lapack(ranks: tuple[int, ...]) -> None:
    """PEFT's rank_pattern: one shape, several ranks, each (shape, rank) group one batched call
    (more deltas than a Gram piece, so the batch is split over threads), values and top-3
    triplets within 1e-6 of sigma_1 of float64 LAPACK on the dense deltas."""
    for seed, r in enumerate(ranks):
        rng = np.random.default_rng(seed)
        B = (rng.standard_normal((20, 300, r)) * 0.7 ** np.arange(r)).astype(np.float32)
        A = (rng.standard_normal((20, r, 120)) / np.sqrt(120)).astype(np.float32)
        scale = np.linspace(-2.0, 2.0, 20).astype(np.float32)
        dense = _dense(B, A, scale)
        S_ref = np.linalg.svd(dense, compute_uv=False)
        assert _rel_err(pad_spectrum(factored_svdvals(B, A, scale), 120), S_ref) < 1e-6
        S, U, Vh = factored_svd(B, A, scale, k=3)
        assert U is not None and Vh is not None
        assert _rel_err(S, S_ref[:, :3]) < 1e-6
        top3 = (U.astype(np.float64) * S[:, None, :]) @ Vh
        U_ref, S_full, Vh_ref = np.linalg.svd(dense, full_matrices=False)
        ref3 = U_ref[..., :3] * S_full[:, None, :3] @ Vh_ref[:, :3]
        assert np.abs(top3 - ref3).max() < 1e-5 * S_full[:, 0].max()


def test_graded_factors_keep_values_within_sqrt_eps64_of_sigma_1() -> None:
    """The Gram route squares the factors' conditioning, but in float64: a delta graded from 1
    to 1e-12 keeps every value within sqrt(eps64) ~ 1.5e-8 of sigma_1, and its k-th vector,
    below VECTOR_FLOOR, comes from the QR route (orthonormal still)."""
    rng = np.random.default_rng(7)
    r = 12
    Q = np.linalg.qr(rng.standard_normal((BATCH, 200, r)))[0]
    B = (Q * np.logspace(0, -12, r)).astype(np.float32)
    A = np.linalg.qr(rng.standard_normal((BATCH, 150, r)))[0].swapaxes(1, 2).astype(np.float32)
    scale = np.ones(BATCH, dtype=np.float32)
    S_ref = np.linalg.svd(_dense(B, A, scale), compute_uv=False)
    assert _rel_err(pad_spectrum(factored_svdvals(B, A, scale), 150), S_ref) < 2e-8
    S, U, Vh = factored_svd(B, A, scale)
    assert U is not None and Vh is not None
    assert np.abs(U.swapaxes(1, 2) @ U - np.eye(r)).max() < TOL[np.float32]


def test_cuda_cores_go_through_batched_jacobi_up_to_32() -> None:
    assert core_svd_driver("cuda", 16) == "gesvdj"
    assert core_svd_driver("cuda", 32) == "gesvdj"
    assert core_svd_driver("cuda", 33) is None
    assert core_svd_driver("cpu", 16) is None and core_svd_driver("numpy", 16) is None


def test_route_follows_the_factors_precision() -> None:
    assert gram_route(np.float32) and gram_route(np.float16)
    assert not gram_route(np.float64)
    torch = pytest.importorskip("torch")
    assert gram_route(torch.float32) and not gram_route(torch.float64)


@pytest.mark.parametrize("k, m, n, scratch", [(1, 37, 11, 1024), (9, 50, 70, 2048), (17, 64, 16, 512 * 1024),
                                              (20, 33, 33, 256), (3, 9, 5, 8)])
def test_factor_grams_sum_every_slice_of_rows_exactly(k: int, m: int, n: int, scratch: int,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Widened a slice of rows at a time (slices that do not divide m or n, a piece of fewer than
    GRAM_PIECE deltas, a slice of one row, a scratch smaller than one row, threads): the float64 Grams of the float32 factors."""
    import threading

    from harness.linalg import factor_grams

    monkeypatch.setattr(factor_grams, "SCRATCH_BYTES", scratch)
    monkeypatch.setattr(factor_grams, "_LOCAL", threading.local())
    rng = np.random.default_rng(k)
    B = rng.standard_normal((k, m, 4)).astype(np.float32)
    A = rng.standard_normal((k, 4, n)).astype(np.float32)
    GB, GA = factor_grams.factor_grams(B, A)
    wide_b, wide_a = B.astype(np.float64), A.astype(np.float64)
    np.testing.assert_allclose(GB, wide_b.swapaxes(-1, -2) @ wide_b, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(GA, wide_a @ wide_a.swapaxes(-1, -2), rtol=1e-13, atol=1e-12)
