"""Singular values (and leading triplets) of dense matrices through the float64 Gram of their
smaller side and a symmetric eigensolve.

For W of shape m x n with m >= n, W.T W = V S^2 V.T: the n x n Gram in float64 (a symmetric rank-k
update, m n^2 flops) and its eigenvalues (~4/3 n^3 for the tridiagonal reduction) cost less than
the bidiagonalisation of a dense SVD (4 m n^2 - 4/3 n^3 for the values alone), so on 3072 x 768
the values come several times faster than LAPACK's gesdd. For m < n the m x m Gram W W.T is
formed instead: the Gram is always of the smaller side, the cheap orientation.

Accuracy (why this is a strategy the planner must check against a tolerance, not a drop-in SVD):
the Gram squares the condition number. Rounding in the float64 Gram and in the eigensolver moves
each eigenvalue lambda_i = sigma_i^2 by at most about delta = c u sigma_1^2 (u = 2^-53 for float64,
Weyl's theorem; c grows with the sizes, see `error_bound`), so

    |sigma_i - sigma_i~| <~ delta / sigma_i = c u sigma_1^2 / sigma_i   (where sigma_i^2 >> delta),
    |sigma_i - sigma_i~| <= sqrt(delta) = sqrt(c u) sigma_1              (always).

Relative to sigma_1 the error is therefore bounded whatever the spectrum (`error_bound`, ~2e-6 of
sigma_1 at 3072 x 768 and about 1e-8 measured on random matrices), but singular values far below
sqrt(u) sigma_1 ~ 1e-8 sigma_1 lose all their relative accuracy: a spectrum graded down to
1e-12 sigma_1 comes back with its tail at ~1e-8 sigma_1, which a float64 LAPACK SVD resolves.
Products of float32 entries are exact in float64, so float32 inputs carry only the float64 sums'
rounding (Higham, Accuracy and Stability, 3.5).

Vectors (top k): the eigenvectors V_k of the Gram give the other side as U_k = W V_k S_k^-1; their
residuals and orthogonality are off by about u (sigma_1 / sigma_k)^2, so matrices whose k-th
value is below VECTOR_FLOOR * sigma_1 take a dense LAPACK SVD instead (exact, slower).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.linalg import dense
from harness.linalg.device import Backend, as_backend, to_numpy, torch_module
from harness.linalg.precision import UNIT_ROUNDOFF as ROUNDOFF, low, narrow_gram, round_to

UNIT_ROUNDOFF = float(np.finfo(np.float64).eps) / 2
VECTOR_FLOOR = 1e-3  # top-k vectors from the Gram where sigma_k >= this * sigma_1


def error_bound(shape: tuple[int, int], precision: str = "float64") -> float:
    """The largest error of `gram_svdvals`, relative to sigma_1, on any m x n matrix: sqrt(c u)
    with c = p sqrt(q) + p for p = min(m, n), q = max(m, n).

    Each Gram entry sums q products: its rounding grows like sqrt(q) u (probabilistic rounding
    error analysis, Higham & Mary 2019) times |W|.T |W|, whose 2-norm is at most p sigma_1^2; the
    eigensolver adds a backward error of about p u sigma_1^2 (Golub & Van Loan 8.3). The bound is
    spectrum-free because verification measures errors relative to sigma_1 (harness.compute
    .verify): a planner can compare it with a tolerance before any data is read. It covers
    `gram_svd`'s vectors too: with sigma_k >= VECTOR_FLOOR sigma_1, their residuals and
    orthogonality defects stay within about u / VECTOR_FLOOR^2 ~ 1e-10, below it.

    At a narrow `precision` (bfloat16, float16, tf32: the Gram's products in it) u is that
    precision's unit roundoff in the Gram's term, so the bound is about sqrt(p sqrt(q) u_low).
    """
    p, q = min(shape), max(shape)
    u = ROUNDOFF[precision] if low(precision) else UNIT_ROUNDOFF
    return float(np.sqrt(p * np.sqrt(q) * u + p * UNIT_ROUNDOFF))


def _grams_numpy(X: np.ndarray) -> tuple[np.ndarray, bool]:
    """The float64 Gram of each matrix's smaller side, (b, p, p), and whether the matrices are wide.

    One matrix widened at a time (its float64 copy, 19 MB at 3072 x 768, is the most held), and
    `Y.T @ Y` of a contiguous Y, which numpy hands to BLAS as a symmetric rank-k update (syrk)."""
    b, m, n = X.shape
    wide = m < n
    p = min(m, n)
    G = np.empty((b, p, p))
    for i in range(b):
        Y = np.asarray(X[i], dtype=np.float64)
        np.matmul(Y, Y.T, out=G[i]) if wide else np.matmul(Y.T, Y, out=G[i])
    return G, wide


def _grams_torch(X: Any, backend: Backend) -> tuple[Any, bool, Any]:
    """The float64 Grams on a torch device, one batched product, whether the matrices are wide,
    and the matrices widened to float64 on the device."""
    torch = torch_module()
    assert torch is not None, f"backend {backend!r} needs torch"
    T = as_backend(X, backend).to(torch.float64)
    wide = T.shape[-2] < T.shape[-1]
    return (T @ T.mT if wide else T.mT @ T), wide, T


def _grams(X: Any, backend: Backend, precision: str, log: Any) -> tuple[np.ndarray, bool]:
    """The Grams of the smaller side in float64, products in float64 (float32 inputs: exact), or
    at a narrow `precision` in it (harness.linalg.precision.narrow_gram), widened to float64."""
    if low(precision):
        wide = X.shape[-2] < X.shape[-1]
        return narrow_gram(X, precision, backend, rows=wide, log=log), wide
    return _grams_numpy(to_numpy(X))


def gram_svdvals(X: Any, *, backend: Backend = "numpy", precision: str = "float64", log: Any = None) -> np.ndarray:
    """All singular values of each matrix of X from the eigenvalues of its float64 Gram.

    Parameters
    ----------
    X : array of shape (b, m, n), float32 or float64 (numpy array or torch tensor)
    backend : {"numpy", "cpu", "cuda"}
        "cuda" forms the Grams and solves them on the device (cuSOLVER syevd); anything else in
        numpy on the CPU (LAPACK dsyevd).
    precision : the Gram's products: "float64" (default), or "bfloat16" / "float16" / "tf32"
        (inputs rounded to it, torch's product in it, float32 accumulation); the eigensolve
        is float64 LAPACK whatever it is (LAPACK has no narrower one).
    log : a CompileLog to torch.compile the narrow Gram with, or None

    Returns
    -------
    S : ndarray of shape (b, min(m, n)), descending, in X's dtype; error bounded by
        `error_bound` relative to sigma_1 (see the module docstring)
    """
    out = to_numpy(X[:0]).dtype
    if backend == "cuda" and not low(precision):
        torch = torch_module()
        assert torch is not None
        G, _, _ = _grams_torch(X, backend)
        lam = to_numpy(torch.linalg.eigvalsh(G))
    else:
        G, _ = _grams(X, backend, precision, log)
        lam = np.linalg.eigvalsh(G)
    return np.sqrt(np.clip(lam[:, ::-1], 0, None)).astype(out)


def _top_eigh_numpy(G: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest eigenpairs of each symmetric G, ascending: LAPACK's dsyevr on that index
    range alone (a quarter of a full eigh's time at k = 16 of 768)."""
    from scipy.linalg import eigh  # the strategy's warm() imports it before any timed call

    p = G.shape[-1]
    pairs = [eigh(g, subset_by_index=[p - k, p - 1], driver="evr") for g in G]
    return np.stack([lam for lam, _ in pairs]), np.stack([vec for _, vec in pairs])


def gram_svd(X: Any, k: int, *, backend: Backend = "numpy", precision: str = "float64", log: Any = None) -> dense.SVD:
    """The k leading singular triplets of each matrix of X through its float64 Gram.

    The Gram's top-k eigenvectors are the singular vectors of the smaller side; the other side is
    W V_k S_k^-1 (or W.T U_k S_k^-1 for wide matrices), formed in float64. Matrices whose k-th
    value is below VECTOR_FLOOR * sigma_1, where those vectors would lose accuracy as
    (sigma_1 / sigma_k)^2, are solved by dense LAPACK instead (`harness.linalg.dense.svd`).

    Parameters
    ----------
    X : array of shape (b, m, n)
    k : int, 1 <= k <= min(m, n)
    backend : {"numpy", "cpu", "cuda"}
    precision, log : as for `gram_svdvals`; at a narrow precision the other side's vectors are
        formed in float64 from the inputs rounded to it

    Returns
    -------
    S : ndarray (b, k), U : ndarray (b, m, k), Vh : ndarray (b, k, n), in X's dtype
    """
    out = to_numpy(X[:0]).dtype
    if not 1 <= k <= min(X.shape[-2:]):
        raise ValueError(f"k={k} must be in [1, min(m, n)] = [1, {min(X.shape[-2:])}]")
    if backend == "cuda" and not low(precision):
        torch = torch_module()
        assert torch is not None
        G, wide, W = _grams_torch(X, backend)
        lam, V = torch.linalg.eigh(G)
        V = V[..., -k:]
        lam, other, V = to_numpy(lam[..., -k:]), to_numpy((W.mT if wide else W) @ V), to_numpy(V)
    else:
        A = to_numpy(X)
        G, wide = _grams(X, backend, precision, log)
        A = round_to(A, precision) if low(precision) else A
        lam, V = _top_eigh_numpy(G, k)
        other = np.stack([(a.T if wide else a).astype(np.float64) @ v for a, v in zip(A, V)])
    # descending; `other` = W V S (tall) or W.T U S (wide): divided by S, the other side's vectors
    S = np.sqrt(np.clip(lam[:, ::-1], 0, None))
    inv = np.where(S > 0, 1 / np.where(S > 0, S, 1), 0)
    V, other = V[..., ::-1], other[..., ::-1] * inv[:, None, :]
    left, right = (V, other) if wide else (other, V)
    S, U, Vh = S.astype(out), left.astype(out), np.swapaxes(right, -1, -2).astype(out)
    weak = np.flatnonzero((S[:, 0] <= 0) | (S[:, -1] < VECTOR_FLOOR * S[:, 0]))
    if len(weak):
        S[weak], U[weak], Vh[weak] = dense.svd(to_numpy(X)[weak], k=k, backend="numpy")
    return S, U, Vh
