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


def factored_svd(
    B: Any,
    A: Any,
    scale: Any,
    *,
    compute_uv: bool = True,
    k: int | None = None,
    backend: Backend = "numpy",
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Thin SVD of a stack of LoRA deltas dW[i] = scale[i] * B[i] @ A[i], from the factors.

    With thin QRs B = Qb Rb and A.T = Qa Ra, dW = Qb (s Rb Ra.T) Qa.T, and Qb, Qa have
    orthonormal columns, so the SVD of the small core s Rb Ra.T = Uc S Vc.T gives
    dW = (Qb Uc) S (Qa Vc).T exactly. Cost O((m + n) r^2) per delta. The scale goes into the
    core, so a negative scale lands in the vectors and S stays non-negative. When only values are
    asked for, the QRs return R alone and no Q is formed.

    The rank-r delta has min(m, n) - q further singular values, all exactly zero; see
    `pad_spectrum`.

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

    Returns
    -------
    S : ndarray of shape (batch, q), descending, q = k or min(r, m, n)
    U : ndarray of shape (batch, m, q), orthonormal columns, or None
    Vh : ndarray of shape (batch, q, n), orthonormal rows, or None

    Computed in B's dtype (float32 or float64): the caller chooses the precision.
    """
    xp = _namespace(backend)
    B = _on(xp, B, backend, None)
    A = _on(xp, A, backend, B.dtype)
    s = _on(xp, scale, backend, B.dtype)[:, None, None]
    q = min(B.shape[-1], B.shape[-2], A.shape[-1])
    if k is not None and not 1 <= k <= q:
        raise ValueError(f"k={k} must be in [1, min(r, m, n)] = [1, {q}]")
    At = A.swapaxes(-1, -2)
    if not compute_uv:
        core = s * (_qr_r(xp, B) @ _qr_r(xp, At).swapaxes(-1, -2))
        S = xp.linalg.svdvals(core) if xp is not np else np.linalg.svd(core, compute_uv=False)
        return to_numpy(S[:, :k]), None, None
    Qb, Rb = xp.linalg.qr(B)
    Qa, Ra = xp.linalg.qr(At)
    Uc, S, Vch = xp.linalg.svd(s * (Rb @ Ra.swapaxes(-1, -2)), full_matrices=False)
    U = Qb @ Uc[..., :k]
    Vh = Vch[:, :k] @ Qa.swapaxes(-1, -2)
    return to_numpy(S[:, :k]), to_numpy(U), to_numpy(Vh)


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


def frobenius_gram(B: Any, A: Any, scale: Any, *, backend: Backend = "numpy") -> np.ndarray:
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

    Returns
    -------
    G : ndarray of shape (k, k), float64, symmetric
    """
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
