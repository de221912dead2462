"""Exact spectra and Frobenius geometry of LoRA deltas, computed from their factors.

A LoRA delta dW = s * B @ A (B: m x r, A: r x n, r << min(m, n)) is never formed here: every
function works on the factors, so its cost is O((m + n) r^2) per delta instead of the
O(m n min(m, n)) of a dense SVD, and its memory is that of the factors.

Inputs are numpy arrays or torch tensors; `backend` picks where the work runs ("numpy", or
torch on "cpu" / "cuda"). Outputs are numpy arrays.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from harness.linalg.device import Backend, as_backend, to_numpy, torch_module
from harness.linalg.factor_grams import factor_grams
from harness.linalg.precision import low, narrow_product, round_to


def _namespace(backend: Backend) -> ModuleType:
    """numpy, or torch for a torch backend: both spell asarray, linalg.qr and linalg.svd alike."""
    if backend == "numpy":
        return np
    torch = torch_module()
    assert torch is not None, f"backend {backend!r} needs torch"
    return torch


def _on(xp: ModuleType, x: Any, backend: Backend, dtype: Any) -> Any:
    return xp.asarray(as_backend(x, backend), dtype=dtype)


def _qr_r(xp: ModuleType, X: Any) -> Any:
    """The R factor alone of a batched thin QR (no Householder vectors turned into Q)."""
    R = xp.linalg.qr(X, mode="r")
    return R if xp is np else R[1]


VECTOR_FLOOR = 1e-3  # Gram-route vectors where sigma_k >= this * sigma_1: error <= eps64 / floor^2
GESVDJ_BATCHED_MAX = 32  # cuSOLVER's gesvdjBatched takes matrices up to 32 x 32


def core_svd_driver(backend: Backend, r: int) -> str | None:
    """The cuSOLVER driver for a batch of r x r cores on `backend`: batched Jacobi (gesvdjBatched,
    made for matrices up to 32 x 32, reached through torch's ``driver="gesvdj"``) on CUDA for
    r <= 32, else None (torch's default: LAPACK on the CPU, gesvd on CUDA)."""
    return "gesvdj" if backend == "cuda" and r <= GESVDJ_BATCHED_MAX else None


def gram_route(dtype: Any) -> bool:
    """Whether factors of `dtype` go through the float64 Gram route (float32 and narrower) rather
    than Householder QR in their own precision (float64): see `factored_svd`."""
    size = dtype.itemsize if isinstance(getattr(dtype, "itemsize", None), int) else np.dtype(dtype).itemsize
    return size < 8


def _gram_core(xp: ModuleType, GB: Any, GA: Any, vectors: bool) -> tuple[Any, Any, Any]:
    """S (ascending order undone: descending), the eigenvectors W of M = F G_A F.T (or None) and
    F, a square root of G_B (F.T F = G_B, from its eigendecomposition, exact zeros kept)."""
    d, V = xp.linalg.eigh(GB)
    F = xp.sqrt(xp.clip(d, 0, None))[..., :, None] * V.swapaxes(-1, -2)
    M = F @ GA @ F.swapaxes(-1, -2)
    M = (M + M.swapaxes(-1, -2)) * 0.5
    if not vectors:
        lam = xp.linalg.eigvalsh(M)
        return xp.sqrt(xp.clip(xp.flip(lam, -1), 0, None)), None, F
    lam, W = xp.linalg.eigh(M)
    return xp.sqrt(xp.clip(xp.flip(lam, -1), 0, None)), xp.flip(W, -1), F


def _factored_svd_gram(B: Any, A: Any, scale: Any, compute_uv: bool, k: int, backend: Backend,
                       precision: str = "float64", log: Any = None) -> tuple[Any, ...]:
    """The Gram route of `factored_svd`: S (batch, k) float64, and for vectors U, Vh in B's
    dtype with a mask of the deltas whose k-th value is too small for them (None without).

    The r x r Grams G_B = B.T B and G_A = A A.T in float64 (`factor_grams`), a square root
    F = D^(1/2) V.T of G_B from its eigendecomposition (F.T F = G_B, so ||B A x|| = ||F A x|| for
    every x), and the eigenvalues S^2 and eigenvectors W of the r x r M = F G_A F.T =
    (F A)(F A).T, all float64. Vectors without inverting a factor: Vh = S^-1 W.T F A and
    U = dW Vh.T S^-1 = B (G_A F.T W S^-2).
    Error: the Grams carry eps64 round-off of ||B||^2 ||A||^2, so sigma_i is off by about
    eps64 sigma_1^2 / sigma_i and never by more than sqrt(eps64) sigma_1 ~ 1.5e-8 sigma_1
    (a square root of an eigenvalue off by eps64 sigma_1^2): below float32's own round-off of
    the factors, so this route is as exact as float32 arithmetic allows, for any conditioning.
    Vectors divide by sigma_k: their error is about eps64 (sigma_1 / sigma_k)^2, so deltas
    whose k-th value is below VECTOR_FLOOR * sigma_1 take the QR route instead.
    Cost: 2 (m + n) r^2 flops for the Grams, O(r^3) for the eigensolves, the factors read once.
    """
    on: Backend = "cuda" if backend == "cuda" else "numpy"
    xp = _namespace(on)
    B = _on(xp, B, on, None)
    A = _on(xp, A, on, B.dtype)
    if low(precision) and on == "numpy":  # the vectors come from the factors as rounded
        B, A = round_to(B, precision), round_to(A, precision)
    s = _on(xp, scale, on, xp.float64)
    GB, GA = factor_grams(B, A, on, precision, log)
    S, W, F = _gram_core(xp, GB, GA, compute_uv)
    S = S[:, :k]
    if not compute_uv:
        return S * abs(s)[:, None], None, None, None
    W = W[..., :k]
    inv = xp.where(S > 0, 1 / xp.where(S > 0, S, 1), 0)
    X = inv[..., :, None] * (W.swapaxes(-1, -2) @ F) * xp.where(s < 0, -1.0, 1.0)[:, None, None]
    Y = (GA @ F.swapaxes(-1, -2) @ W) * (inv * inv)[..., None, :]
    U = B @ _on(xp, Y, on, B.dtype)  # (m x r)(r x k)
    Vh = _on(xp, X, on, B.dtype) @ A  # (k x r)(r x n)
    weak = (S[:, 0] <= 0) | (S[:, -1] < VECTOR_FLOOR * S[:, 0])
    return S * abs(s)[:, None], U, Vh, weak


def _factored_svd_qr(B: Any, A: Any, scale: Any, compute_uv: bool, k: int | None, backend: Backend) -> tuple[Any, ...]:
    """The Householder route of `factored_svd`, in B's dtype: thin QRs B = Qb Rb and
    A.T = Qa Ra, and the SVD of the core s Rb Ra.T = Uc S Vc.T, so dW = (Qb Uc) S (Qa Vc).T
    (Golub & Van Loan 5.4.5; values alone form no Q). Accurate to float64's round-off of
    sigma_1, which the Gram route's sqrt(eps64) would not be. On CUDA the r x r cores go through
    batched Jacobi (`core_svd_driver`)."""
    xp = _namespace(backend)
    B = _on(xp, B, backend, None)
    A = _on(xp, A, backend, B.dtype)
    s = _on(xp, scale, backend, B.dtype)[:, None, None]
    At = A.swapaxes(-1, -2)
    if not compute_uv:
        core = s * (_qr_r(xp, B) @ _qr_r(xp, At).swapaxes(-1, -2))
        S = xp.linalg.svdvals(core) if xp is not np else np.linalg.svd(core, compute_uv=False)
        return S[:, :k], None, None
    Qb, Rb = xp.linalg.qr(B)
    Qa, Ra = xp.linalg.qr(At)
    core = s * (Rb @ Ra.swapaxes(-1, -2))
    if xp is np:
        Uc, S, Vch = np.linalg.svd(core, full_matrices=False)
    else:
        Uc, S, Vch = xp.linalg.svd(core, full_matrices=False, driver=core_svd_driver(backend, core.shape[-1]))
    return S[:, :k], Qb @ Uc[..., :k], Vch[:, :k] @ Qa.swapaxes(-1, -2)


def factored_svd(
    B: Any,
    A: Any,
    scale: Any,
    *,
    compute_uv: bool = True,
    k: int | None = None,
    backend: Backend = "numpy",
    precision: str = "float64",
    log: Any = None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Thin SVD of a stack of LoRA deltas dW[i] = scale[i] * B[i] @ A[i], from the factors.

    Two exact routes, one batched call each over the whole stack (a (shape, rank) group):
    **Gram** (`_factored_svd_gram`, float32 factors: float64 Grams of the factors, as exact as
    float32 arithmetic allows) and **Householder** (`_factored_svd_qr`, float64 factors and the
    Gram route's weak deltas: QRs of the factors and an SVD of their r x r core, accurate to
    float64's round-off of sigma_1). Each route's docstring gives its derivation and error.

    The scale goes into the core (QR) or onto the vectors (Gram): a negative scale lands in the
    vectors and S stays non-negative. The rank-r delta has min(m, n) - q further singular
    values, all exactly zero; see `pad_spectrum`.

    Parameters
    ----------
    B : array of shape (batch, m, r)
    A : array of shape (batch, r, n)
    scale : array of shape (batch,)
    compute_uv : bool
        Also return the singular vectors.
    k : int, optional
        Keep the k largest triplets, 1 <= k <= min(r, m, n).
    backend : {"numpy", "cpu", "cuda"}
        Where the work runs; the Gram route's CPU work is numpy's for "cpu" too (faster there
        than torch's batched small products, measured).
    precision, log : the Grams' products (`factor_grams`); a narrow precision takes the Gram
        route, its eigensolves float64 LAPACK (there is no narrower one)

    Returns
    -------
    S : ndarray of shape (batch, q), descending, q = k or min(r, m, n), in B's dtype
    U : ndarray of shape (batch, m, q), orthonormal columns, or None
    Vh : ndarray of shape (batch, q, n), orthonormal rows, or None
    """
    dtype = B.dtype
    q = min(B.shape[-1], B.shape[-2], A.shape[-1])
    if k is not None and not 1 <= k <= q:
        raise ValueError(f"k={k} must be in [1, min(r, m, n)] = [1, {q}]")
    if not gram_route(dtype) and not low(precision):
        S, U, Vh = _factored_svd_qr(B, A, scale, compute_uv, k, backend)
        return to_numpy(S), None if U is None else to_numpy(U), None if Vh is None else to_numpy(Vh)
    S, U, Vh, weak = _factored_svd_gram(B, A, scale, compute_uv, k or q, backend, precision, log)
    S, out = to_numpy(S), to_numpy(B[:0]).dtype
    if not compute_uv:
        return S.astype(out), None, None
    U, Vh, weak = to_numpy(U), to_numpy(Vh), to_numpy(weak)
    if weak.any():
        _redo_by_qr(np.flatnonzero(weak), (B, A, scale), (S, U, Vh), k or q, backend)
    return S.astype(out), U, Vh


def _redo_by_qr(idx: np.ndarray, factors: tuple[Any, Any, Any], out: tuple[np.ndarray, np.ndarray, np.ndarray],
                k: int, backend: Backend) -> None:
    """The deltas `idx` (the Gram route's weak ones) again by the Householder route, written into `out` (S, U, Vh)."""
    B, A, scale = (to_numpy(x)[idx] for x in factors)
    Sq, Uq, Vq = _factored_svd_qr(B, A, scale, True, k, backend)
    S, U, Vh = out
    S[idx], U[idx], Vh[idx] = to_numpy(Sq), to_numpy(Uq), to_numpy(Vq)


def factored_svdvals(B: Any, A: Any, scale: Any, *, backend: Backend = "numpy") -> np.ndarray:
    """The min(r, m, n) leading singular values, (batch, q), of scale * B @ A; see factored_svd."""
    return factored_svd(B, A, scale, compute_uv=False, backend=backend)[0]


def pad_spectrum(S: np.ndarray, length: int) -> np.ndarray:
    """S, (..., q), padded with exact zeros to (..., length), length >= q.

    A rank-r delta of shape m x n has min(m, n) - r singular values that are exactly zero, so
    padding to min(m, n) gives the full spectrum a dense SVD would return (up to its round-off).
    """
    if length < S.shape[-1]:
        raise ValueError(f"length={length} is shorter than the spectrum ({S.shape[-1]})")
    return np.pad(S, [(0, 0)] * (S.ndim - 1) + [(0, length - S.shape[-1])])


def frobenius_inner(
    B1: Any,
    A1: Any,
    s1: Any,
    B2: Any,
    A2: Any,
    s2: Any,
    *,
    backend: Backend = "numpy",
) -> np.ndarray:
    """All Frobenius inner products <dW1[i], dW2[j]> of two stacks of LoRA deltas.

    <s1 B1 A1, s2 B2 A2>_F = s1 s2 trace(A1.T B1.T B2 A2) = s1 s2 sum((B1.T B2) * (A1 A2.T)),
    so only r1 x r2 cross-Grams of the factors are needed. Both Grams of every pair come from
    two GEMMs over the flattened stacks; the factors are cast to float64 first, because inner
    products of nearly orthogonal deltas cancel and float32 accumulation over m and n would
    lose them. Memory O(k1 k2 r1 r2): the caller chunks large stacks.

    Parameters
    ----------
    B1 : array of shape (k1, m, r1)
    A1 : array of shape (k1, r1, n)
    s1 : array of shape (k1,)
    B2 : array of shape (k2, m, r2)
    A2 : array of shape (k2, r2, n)
    s2 : array of shape (k2,)
    backend : {"numpy", "cpu", "cuda"}

    Returns
    -------
    G : ndarray of shape (k1, k2), float64
    """
    xp = _namespace(backend)
    B1, A1, s1, B2, A2, s2 = (_on(xp, x, backend, xp.float64) for x in (B1, A1, s1, B2, A2, s2))
    (k1, m, r1), (k2, _, r2), n = B1.shape, B2.shape, A1.shape[-1]
    GB = B1.swapaxes(-1, -2).reshape(k1 * r1, m) @ B2.swapaxes(0, 1).reshape(m, k2 * r2)
    GA = A1.reshape(k1 * r1, n) @ A2.reshape(k2 * r2, n).swapaxes(0, 1)
    G = (GB * GA).reshape(k1, r1, k2, r2).sum(axis=(1, 3))
    return to_numpy(s1[:, None] * G * s2[None, :])


def frobenius_norms(B: Any, A: Any, scale: Any, *, backend: Backend = "numpy") -> np.ndarray:
    """||scale[i] * B[i] @ A[i]||_F, (batch,) float64, from the r x r Grams of the factors.

    ||s B A||_F^2 = s^2 sum((B.T B) * (A A.T)), accumulated in float64 as in frobenius_inner.

    Parameters
    ----------
    B : array of shape (batch, m, r)
    A : array of shape (batch, r, n)
    scale : array of shape (batch,)
    backend : {"numpy", "cpu", "cuda"}
    """
    xp = _namespace(backend)
    B, A, s = (_on(xp, x, backend, xp.float64) for x in (B, A, scale))
    sq = ((B.swapaxes(-1, -2) @ B) * (A @ A.swapaxes(-1, -2))).sum(axis=(-2, -1))
    return to_numpy(abs(s) * xp.sqrt(xp.clip(sq, 0, None)))


def frobenius_gram(B: Any, A: Any, scale: Any, *, backend: Backend = "numpy", precision: str = "float64",
                   log: Any = None) -> np.ndarray:
    """Gram matrix G[i, j] = <dW[i], dW[j]>_F of one stack of LoRA deltas, float64.

    frobenius_inner of a stack with itself, but each cross-Gram is ``X @ X.T`` of one
    contiguous matrix, which BLAS computes as a symmetric rank-k update (syrk): half the flops
    of the general product. O(k^2 r^2 (m + n)) flops, O(k^2 r^2) memory.

    Precision: the cross-Grams are computed in the factors' dtype (float32 factors: float32
    sums over m or n terms, relative error about ``sqrt(m) * 2**-24 ~ 3e-6`` of
    ``|b_i| |b_j|`` for m = 3072, twice as fast as float64); their elementwise products and the
    r x r sums, where inner products of nearly orthogonal deltas cancel, are float64. Float64
    factors keep float64 throughout.

    Parameters
    ----------
    B : array of shape (k, m, r)
    A : array of shape (k, r, n)
    scale : array of shape (k,)
    backend : {"numpy", "cpu", "cuda"}
    precision : "float64" (default: as above), or "bfloat16" / "float16" / "tf32": both
        cross-Grams' products in that precision (harness.linalg.precision.narrow_product, float32
        accumulation), their elementwise products and sums float64; `log` compiles the products

    Returns
    -------
    G : ndarray of shape (k, k), float64, symmetric
    """
    if low(precision):
        (k, m, r), n = B.shape, A.shape[-1]
        XB, XA = to_numpy(B).swapaxes(-1, -2).reshape(k * r, m), to_numpy(A).reshape(k * r, n)
        GB, GA = (narrow_product(X, X.T, precision, backend, log) for X in (XB, XA))
        s = np.asarray(to_numpy(scale), dtype=np.float64)
        G = s[:, None] * (GB * GA).reshape(k, r, k, r).sum(axis=(1, 3)) * s[None, :]
        return (G + G.T) * 0.5
    xp = _namespace(backend)
    B = _on(xp, B, backend, None)
    dtype = xp.float32 if B.dtype == xp.float32 else xp.float64
    B, A = (_on(xp, x, backend, dtype) for x in (B, A))
    s = _on(xp, scale, backend, xp.float64)
    (k, m, r), n = B.shape, A.shape[-1]
    XB = B.swapaxes(-1, -2).reshape(k * r, m)
    XA = A.reshape(k * r, n)
    if backend == "numpy":
        XB = np.ascontiguousarray(XB)  # a contiguous X makes X @ X.T a syrk
    GB, GA = (xp.asarray(X @ X.T, dtype=xp.float64) for X in (XB, XA))
    G = (GB * GA).reshape(k, r, k, r).sum(axis=(1, 3))
    G = to_numpy(s[:, None] * G * s[None, :])
    return (G + G.T) * 0.5
