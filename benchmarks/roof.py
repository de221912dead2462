"""Issue 30's kernels against what they replace, at the shapes the issue measured: dense
3072 x 768 values through the float64 Gram (`gram_eigh`) against numpy's gesdd, and a whole
(shape, rank) group of rank-16 LoRA deltas in one batched factored call against one call per delta.

Kernel-level, in memory (as benchmarks/gram.py): they track the arithmetic; benchmarks/speedups.py
tracks the same strategies' speedups as `harness run` measures them.
"""

from __future__ import annotations

import numpy as np

from harness.linalg.factored import factored_svdvals
from harness.linalg.gram_svd import gram_svd, gram_svdvals

SHAPES = {"3072x768": (3072, 768), "768x3072": (768, 3072)}
TOP_K = 16


def _relative_error(S: np.ndarray, S_ref: np.ndarray) -> float:
    """max_i |s_i - s_ref_i| / s_ref_1, verification's measure (harness.compute.verify)."""
    q = S.shape[-1]
    return float(np.max(np.abs(S.astype(np.float64) - S_ref[..., :q]) / S_ref[..., :1]))


class DenseValues:
    """All singular values of one float32 matrix: the Gram of its smaller side and a symmetric
    eigensolve, against LAPACK's bidiagonalisation (the `numpy` baseline); top-16 triplets too."""

    params = (["gram_eigh", "numpy"], list(SHAPES))
    param_names = ["route", "shape"]
    timeout = 300

    def setup_cache(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per shape: a float32 matrix with a geometric spectrum (1 to 1e-4) and its float64
        LAPACK values (a second or two, once)."""
        rng = np.random.default_rng(0)
        cases = {}
        for label, (m, n) in SHAPES.items():
            p = min(m, n)
            U, _ = np.linalg.qr(rng.standard_normal((m, p)))
            V, _ = np.linalg.qr(rng.standard_normal((n, p)))
            X = ((U * np.logspace(0, -4, p)) @ V.T).astype(np.float32)[None]
            cases[label] = (X, np.linalg.svd(X.astype(np.float64), compute_uv=False))
        return cases

    def _values(self, route: str, X: np.ndarray) -> np.ndarray:
        return gram_svdvals(X) if route == "gram_eigh" else np.linalg.svd(X, compute_uv=False)

    def time_svdvals(self, cases: dict[str, tuple[np.ndarray, np.ndarray]], route: str, shape: str) -> None:
        self._values(route, cases[shape][0])

    def time_topk(self, cases: dict[str, tuple[np.ndarray, np.ndarray]], route: str, shape: str) -> None:
        X = cases[shape][0]
        gram_svd(X, TOP_K) if route == "gram_eigh" else np.linalg.svd(X, full_matrices=False)

    def track_error(self, cases: dict[str, tuple[np.ndarray, np.ndarray]], route: str, shape: str) -> float:
        """Max error relative to sigma_1 against float64 LAPACK; lower is better."""
        X, S_ref = cases[shape]
        return _relative_error(self._values(route, X), S_ref)

    track_error.unit = "relative error"  # type: ignore[attr-defined]


class FactoredGroup:
    """Values of a whole (shape, rank) group of rank-16 3072 x 768 float32 LoRA deltas: one
    batched factored call (float64 Grams of the factors, r x r eigensolves) against one call per
    delta, as the strategy ran before it was batched."""

    params = (["batched", "per_delta"], [64, 512])
    param_names = ["route", "deltas"]
    timeout = 300
    m, n, rank = 3072, 768, 16

    def setup(self, route: str, deltas: int) -> None:
        rng = np.random.default_rng(0)
        self.B = rng.standard_normal((deltas, self.m, self.rank), dtype=np.float32)
        self.A = rng.standard_normal((deltas, self.rank, self.n), dtype=np.float32) / np.float32(self.n**0.5)
        self.scale = np.full(deltas, 2.0, dtype=np.float32)

    def _values(self, route: str) -> np.ndarray:
        if route == "batched":
            return factored_svdvals(self.B, self.A, self.scale)
        return np.concatenate([factored_svdvals(self.B[i : i + 1], self.A[i : i + 1], self.scale[i : i + 1])
                               for i in range(len(self.B))])

    def time_svdvals(self, route: str, deltas: int) -> None:
        self._values(route)

    def track_error(self, route: str, deltas: int) -> float:
        """Max error relative to sigma_1 of the first 16 deltas against the float64 Householder
        route (exact to float64 round-off from the factors); lower is better."""
        f64 = [x[:16].astype(np.float64) for x in (self.B, self.A, self.scale)]
        return _relative_error(self._values(route)[:16], factored_svdvals(*f64))

    track_error.unit = "relative error"  # type: ignore[attr-defined]
