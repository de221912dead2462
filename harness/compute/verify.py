"""Checking a strategy's answer against a float64 LAPACK reference.

Errors are relative to the matrix's largest singular value: a float32 method cannot resolve
singular values far below sigma_1 * eps, so per-value relative error would fail every exact method
on a rank-deficient matrix. Vectors are checked through the residuals ||W v_i - s_i u_i|| and
||W^T u_i - s_i v_i|| and orthonormality, which do not depend on signs or on the basis chosen
inside a repeated singular value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.data.workload import Factors, KronFactors
from harness.linalg.kron import kron_matmat
from harness.record.verification import Verification
from harness.strategies.base import OpResult


@dataclass(frozen=True)
class Operator:
    """A stack of float64 matrices W, (b, m, n), as dense arrays, LoRA factors or Kronecker
    factors (LoKr): the vectors' residuals need only W v and W^T u, never the dense W."""

    dense: np.ndarray | None = None
    factors: Factors | None = None
    kron: KronFactors | None = None

    def matmat(self, V: np.ndarray) -> np.ndarray:
        """W @ V for V (b, n, q)."""
        if self.dense is not None:
            return self.dense @ V
        if self.kron is not None:
            return kron_matmat(self.kron.W1, self.kron.W2, self.kron.scale, V)
        f = self.factors
        assert f is not None
        return f.scale[:, None, None] * (f.B @ (f.A @ V))

    def rmatmat(self, U: np.ndarray) -> np.ndarray:
        """W^T @ U for U (b, m, q)."""
        if self.dense is not None:
            return np.swapaxes(self.dense, 1, 2) @ U
        if self.kron is not None:
            k = self.kron
            return kron_matmat(np.swapaxes(k.W1, 1, 2), np.swapaxes(k.W2, 1, 2), k.scale, U)
        f = self.factors
        assert f is not None
        return f.scale[:, None, None] * (np.swapaxes(f.A, 1, 2) @ (np.swapaxes(f.B, 1, 2) @ U))


def combine(strategy: str, checks: Sequence[Verification]) -> Verification:
    """One verdict over several (groups, or parts of one): the worst error of any checked matrix."""
    vectors = [v.vectors_error for v in checks if v.vectors_error is not None]
    return Verification(
        strategy=strategy,
        n_checked=sum(v.n_checked for v in checks),
        tolerance=checks[0].tolerance,
        values_error=max(v.values_error for v in checks),
        vectors_error=max(vectors) if vectors else None,
        passed=all(v.passed for v in checks),
    )


def values_error(S: np.ndarray, S_ref: np.ndarray) -> float:
    """max_i |s_i - s_ref_i| / s_ref_1 over the values the strategy returned."""
    q = S.shape[1]
    scale = np.maximum(S_ref[:, :1], np.finfo(np.float64).tiny)
    return float(np.max(np.abs(S.astype(np.float64) - S_ref[:, :q]) / scale))


def vectors_error(result: OpResult, W: Operator, S_ref: np.ndarray) -> float:
    """Largest singular-triplet residual (relative to s_ref_1) or orthonormality defect; W
    applies the float64 matrices (dense, or their factors)."""
    assert result.U is not None and result.Vh is not None
    U = result.U.astype(np.float64)
    V = np.swapaxes(result.Vh.astype(np.float64), 1, 2)
    q = U.shape[2]
    S = result.S[:, :q].astype(np.float64)[:, None, :]
    scale = np.maximum(S_ref[:, :1, None], np.finfo(np.float64).tiny)
    left = np.linalg.norm(W.matmat(V) - U * S, axis=1) / scale[:, 0]
    right = np.linalg.norm(W.rmatmat(U) - V * S, axis=1) / scale[:, 0]
    eye = np.eye(q)
    orth = max(
        np.max(np.abs(np.swapaxes(U, 1, 2) @ U - eye)),
        np.max(np.abs(np.swapaxes(V, 1, 2) @ V - eye)),
    )
    return float(max(left.max(), right.max(), orth))


def verify(
    strategy: str, result: OpResult, W: Operator | None, S_ref: np.ndarray, tolerance: float
) -> Verification:
    """W (the float64 matrices) is needed only when the result has vectors."""
    if result.U is not None and W is None:
        raise ValueError("checking singular vectors needs the matrices (W)")
    v_err = vectors_error(result, W, S_ref) if result.U is not None and W is not None else None
    return Verification.judged(strategy, len(S_ref), tolerance, values_error(result.S, S_ref), v_err)
