"""Exact SVD of Kronecker-product deltas (LoKr) from their factors, never forming the product.

If W1 = U1 S1 V1.T and W2 = U2 S2 V2.T, then kron(W1, W2) = kron(U1, U2) kron(S1, S2)
kron(V1, V2).T (Van Loan, "The ubiquitous Kronecker product", J. Comput. Appl. Math. 123, 2000):
the singular values of the product are all products s1_i s2_j, and its singular vectors the
Kronecker products of the factors' vectors. Two small SVDs replace one of the full matrix.
"""

from __future__ import annotations

import numpy as np


def kron_svd(
    W1: np.ndarray,
    W2: np.ndarray,
    scale: np.ndarray,
    *,
    compute_uv: bool = True,
    k: int | None = None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Thin SVD of a stack of deltas scale[i] * kron(W1[i], W2[i]), from the factors.

    The scale's sign goes into U, so S stays non-negative. Computed in W1's dtype.

    Parameters
    ----------
    W1 : array of shape (batch, m1, n1)
    W2 : array of shape (batch, m2, n2)
    scale : array of shape (batch,)
    compute_uv : bool
        Also return the singular vectors.
    k : int, optional
        Keep the k largest triplets, 1 <= k <= q.

    Returns
    -------
    S : ndarray of shape (batch, q), descending, q = k or min(m1, n1) * min(m2, n2); the
        product's further min(m1 m2, n1 n2) - q singular values are exactly zero
    U : ndarray of shape (batch, m1 m2, q), orthonormal columns, or None
    Vh : ndarray of shape (batch, q, n1 n2), orthonormal rows, or None
    """
    W2 = np.asarray(W2, dtype=W1.dtype)
    s = np.asarray(scale, dtype=W1.dtype)
    q = min(W1.shape[-2:]) * min(W2.shape[-2:])
    if k is not None and not 1 <= k <= q:
        raise ValueError(f"k={k} must be in [1, min(m1, n1) * min(m2, n2)] = [1, {q}]")
    if compute_uv:
        (U1, S1, V1h), (U2, S2, V2h) = (np.linalg.svd(W, full_matrices=False) for W in (W1, W2))
    else:
        S1, S2 = (np.linalg.svd(W, compute_uv=False) for W in (W1, W2))
    products = (S1[:, :, None] * S2[:, None, :]).reshape(len(S1), -1)
    order = np.argsort(-products, axis=1, kind="stable")[:, :k]
    rows = np.arange(len(S1))[:, None]
    S = np.abs(s)[:, None] * products[rows, order]
    if not compute_uv:
        return S, None, None
    i, j = np.divmod(order, S2.shape[1])  # product index i * len(S2) + j -> (i, j)
    # Column (i, j) of kron(U1, U2) is kron(U1[:, i], U2[:, j]); only the kept ones are formed.
    U1k, U2k = U1.swapaxes(1, 2)[rows, i], U2.swapaxes(1, 2)[rows, j]  # (batch, q, m1), (batch, q, m2)
    U = np.einsum("bqa,bqc->bacq", U1k, U2k).reshape(len(S1), -1, order.shape[1])
    Vh = np.einsum("bqa,bqc->bqac", V1h[rows, i], V2h[rows, j]).reshape(len(S1), order.shape[1], -1)
    return S, np.sign(s)[:, None, None] * U, Vh


def kron_matmat(W1: np.ndarray, W2: np.ndarray, scale: np.ndarray, V: np.ndarray) -> np.ndarray:
    """scale * kron(W1, W2) @ V without forming the Kronecker product.

    W1: (b, m1, n1), W2: (b, m2, n2), V: (b, n1 n2, q) -> (b, m1 m2, q). With the row-major
    index (i, j) -> i n2 + j, kron(W1, W2) vec(X) = vec(W1 X W2^T) for X (n1, n2) [Van Loan,
    "The ubiquitous Kronecker product", 2000]: O(q (m1 n1 n2 + m1 m2 n2)) flops and memory of
    the operands, where the dense product holds m1 m2 n1 n2 values.
    """
    b, n1, n2, q = W1.shape[0], W1.shape[2], W2.shape[2], V.shape[2]
    X = V.reshape(b, n1, n2, q)
    Y = np.einsum("bij,bjkq->bikq", W1, X)  # (b, m1, n2, q)
    Z = np.einsum("bikq,blk->bilq", Y, W2)  # (b, m1, m2, q)
    return scale[:, None, None] * Z.reshape(b, W1.shape[1] * W2.shape[1], q)


def kron_frobenius_gram(W1: np.ndarray, W2: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """(b, b) Gram of the flattened deltas scale[i] * kron(W1[i], W2[i]) from the factors:
    <kron(A, B), kron(C, D)>_F = <A, C>_F <B, D>_F, so no dense delta is formed."""
    G1 = np.einsum("imn,jmn->ij", W1, W1)
    G2 = np.einsum("imn,jmn->ij", W2, W2)
    return np.outer(scale, scale) * G1 * G2
