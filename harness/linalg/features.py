"""Spectral features of weight matrices (LoRA deltas); their tidy CSV is record.features_csv.

Pure numpy functions of singular values and singular vectors, in the style of
scikit-learn's utils/extmath.py. Scalar features read a `Spectrum`: the singular values,
possibly only the top k, and the exact total energy ||W||_F^2 = trace(W^T W) when the
caller has it. Energy fractions from a truncated spectrum use that exact total, never the
truncated sum; features that need the whole spectrum raise ValueError on a truncated one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits


@dataclass(frozen=True, eq=False)
class Spectrum:
    """Singular values `values` (1-D, descending, >= 0) of one matrix W.

    total_energy: ||W||_F^2, exact (e.g. trace((B^T B)(A A^T)) for W = B A). Optional for a
        full spectrum (then sum(values**2)); required by the energy features of a truncated one.
    truncated: `values` are only the top k of the min(m, n) singular values.
    """

    values: np.ndarray
    total_energy: float | None = None
    truncated: bool = False

    def __post_init__(self) -> None:
        s = np.array(self.values)  # a private copy, made read-only below
        if s.dtype.kind != "f":
            s = s.astype(np.float64)
        if s.ndim != 1 or s.size == 0:
            raise ValueError(f"singular values must be a non-empty 1-D array, got shape {s.shape}")
        if not np.all(np.isfinite(s)) or s[-1] < 0 or np.any(np.diff(s) > 0):
            raise ValueError("singular values must be finite, non-negative and descending")
        if self.total_energy is not None:
            captured = float(np.sum(s.astype(np.float64) ** 2))
            # A total below the captured energy is a caller bug, typically ||W||_F for ||W||_F^2;
            # the slack is loose because the two may come from different precisions.
            if not self.total_energy >= captured * (1 - 1e-3):
                raise ValueError(
                    f"total_energy {self.total_energy!r} is below the energy of the given "
                    f"singular values ({captured!r}); pass ||W||_F^2, not ||W||_F"
                )
        s.setflags(write=False)
        object.__setattr__(self, "values", s)

    @classmethod
    def from_matrix(cls, W: np.ndarray) -> Spectrum:
        """Full spectrum of a dense (m, n) matrix, with its exact energy."""
        W = np.asarray(W)
        return cls(np.linalg.svd(W, compute_uv=False), total_energy=float(np.vdot(W, W).real))

    @property
    def energy(self) -> float:
        """||W||_F^2: the exact total when given, else the sum of a full spectrum's sigma_i^2."""
        if self.total_energy is not None:
            return float(self.total_energy)
        if self.truncated:
            raise ValueError("a truncated spectrum needs total_energy = ||W||_F^2 for this feature")
        return float(np.sum(self.values.astype(np.float64) ** 2))


def _eps(s: np.ndarray) -> float:
    return float(np.finfo(s.dtype).eps)


def _full(spectrum: Spectrum, feature: str) -> np.ndarray:
    if spectrum.truncated:
        raise ValueError(f"{feature} needs the full spectrum; this one is truncated to top-k")
    return spectrum.values


def spectral_norm(spectrum: Spectrum) -> float:
    """||W||_2 = sigma_1."""
    return float(spectrum.values[0])


def frobenius_norm(spectrum: Spectrum) -> float:
    """||W||_F = sqrt(sum sigma_i^2), from the exact total energy when truncated."""
    return math.sqrt(spectrum.energy)


def nuclear_norm(spectrum: Spectrum) -> float:
    """||W||_* = sum sigma_i; the tail beyond top-k is unknown, so it needs the full spectrum."""
    return float(np.sum(_full(spectrum, "nuclear_norm")))


def stable_rank(spectrum: Spectrum) -> float:
    """||W||_F^2 / ||W||_2^2 (Rudelson & Vershynin 2007), a rank robust to small sigma_i.

    0 for the zero matrix.
    """
    top = float(spectrum.values[0])
    return spectrum.energy / top**2 if top > 0 else 0.0


def effective_rank(spectrum: Spectrum) -> float:
    """exp(H(p)), p_i = sigma_i / sum sigma_j (Roy & Vetterli 2007); zeros add 0 to H.

    Lies in [1, rank W]; 0 for the zero matrix. p needs sum sigma_j, so the full spectrum.
    """
    s = _full(spectrum, "effective_rank").astype(np.float64)
    total = np.sum(s)
    if total == 0:
        return 0.0
    p = s[s > 0] / total
    return float(np.exp(-np.sum(p * np.log(p))))


def energy_rank(spectrum: Spectrum, tau: float = 0.9) -> int:
    """Smallest k with sum_{i<=k} sigma_i^2 >= tau * ||W||_F^2; 0 for the zero matrix.

    The threshold is relaxed by len(values) * eps relative, the round-off of the sums, so
    that e.g. tau=1 is reached by a full spectrum. Raises ValueError when a truncated
    spectrum holds less than tau of the exact energy (k is then beyond the given values).
    """
    if not 0 < tau <= 1:
        raise ValueError(f"tau must be in (0, 1], got {tau!r}")
    energy = spectrum.energy
    if energy == 0:
        return 0
    s = spectrum.values
    cumulative = np.cumsum(s.astype(np.float64) ** 2)
    k = int(np.searchsorted(cumulative, tau * energy * (1 - s.size * _eps(s)))) + 1
    if k > s.size:
        raise ValueError(
            f"the {s.size} singular values hold {cumulative[-1] / energy:.4g} of the energy, "
            f"less than tau={tau}; energy_rank needs more of the spectrum"
        )
    return k


def condition_number(spectrum: Spectrum, rtol: float | None = None) -> float:
    """sigma_1 / sigma_min over the nonzero spectrum, i.e. of W restricted to its row space.

    Nonzero means sigma_i > rtol * sigma_1, with rtol = len(values) * eps (min(m, n) * eps for
    the full spectrum this needs; numpy's matrix_rank uses max(m, n) * eps, pass it to match).
    nan for the zero matrix.
    """
    s = _full(spectrum, "condition_number")
    if s[0] == 0:
        return math.nan
    cutoff = (s.size * _eps(s) if rtol is None else rtol) * s[0]
    return float(s[0] / s[s > cutoff][-1])


SCALAR_FEATURES: dict[str, Callable[..., float]] = {
    "spectral_norm": spectral_norm,
    "frobenius_norm": frobenius_norm,
    "nuclear_norm": nuclear_norm,
    "stable_rank": stable_rank,
    "effective_rank": effective_rank,
    "energy_rank": energy_rank,
    "condition_number": condition_number,
}


def scalar_features(
    spectrum: Spectrum, names: Iterable[str], *, tau: float = 0.9
) -> dict[str, float]:
    """{name: value} for the features `names` of SCALAR_FEATURES; tau goes to energy_rank."""
    names = list(names)
    if unknown := [name for name in names if name not in SCALAR_FEATURES]:
        raise ValueError(f"unknown feature(s) {unknown}; valid: {sorted(SCALAR_FEATURES)}")
    options = {"energy_rank": {"tau": tau}}
    return {name: float(SCALAR_FEATURES[name](spectrum, **options.get(name, {}))) for name in names}


def subspace_similarity(U_a: np.ndarray, U_b: np.ndarray, i: int, j: int) -> float:
    """phi(i, j) = ||U_a[:, :i]^T U_b[:, :j]||_F^2 / min(i, j), in [0, 1].

    Normalized subspace similarity of Hu et al. 2021 (LoRA), sec. 7.2: 1 when one top
    subspace contains the other, 0 when orthogonal. U_a: (d, p), U_b: (d, q), orthonormal
    columns sorted by singular value; 1 <= i <= p, 1 <= j <= q.
    """
    if U_a.shape[0] != U_b.shape[0]:
        raise ValueError(f"bases live in different spaces: {U_a.shape} vs {U_b.shape}")
    if not (1 <= i <= U_a.shape[1] and 1 <= j <= U_b.shape[1]):
        raise ValueError(
            f"need 1 <= i <= {U_a.shape[1]} and 1 <= j <= {U_b.shape[1]}, got i={i}, j={j}"
        )
    overlap = U_a[:, :i].T @ U_b[:, :j]
    return float(np.sum(overlap * overlap) / min(i, j))


def principal_angles(U_a: np.ndarray, U_b: np.ndarray) -> np.ndarray:
    """Principal angles (radians, ascending, min(p, q) of them) between span U_a and span U_b.

    arccos of the singular values of U_a^T U_b (Bjorck & Golub 1973), clipped to [-1, 1]
    against round-off. U_a: (d, p), U_b: (d, q), orthonormal columns. Angles below ~1e-8
    read as 0 (arccos is flat near 1); scipy.linalg.subspace_angles resolves them.
    """
    if U_a.shape[0] != U_b.shape[0]:
        raise ValueError(f"bases live in different spaces: {U_a.shape} vs {U_b.shape}")
    cosines = np.linalg.svd(U_a.T @ U_b, compute_uv=False)
    return np.arccos(np.clip(cosines, -1.0, 1.0))


def _pair_overlaps(U: np.ndarray) -> np.ndarray:
    """U[a]^T U[b], shape (pairs, k, k), of every pair a < b of a stack U (n, d, k), pairs in
    np.triu_indices(n, 1) order: one (n k, n k) Gram X X^T (a syrk, X contiguous) of the stacked
    bases costs far less than n (n - 1) / 2 small products.

    On one BLAS thread: the product is too small to gain from more, and their hand-offs stall
    when another process holds a core (tens of times slower, measured on 2 cores)."""
    n, d, k = U.shape
    X = U.transpose(0, 2, 1).reshape(n * k, d)  # a contiguous copy
    with threadpool_limits(limits=1, user_api="blas"):
        G = X @ X.T
    a, b = np.triu_indices(n, 1)
    return G.reshape(n, k, n, k).transpose(0, 2, 1, 3)[a, b]


def pairwise_subspace_similarity(U: np.ndarray) -> np.ndarray:
    """subspace_similarity(U[a], U[b], k, k) of every pair a < b (np.triu_indices(n, 1) order)
    of a stack U (n, d, k) of orthonormal bases, in U's dtype; the sums may run in another order
    than the pair by pair products: values agree to round-off in that dtype."""
    overlaps = _pair_overlaps(U)
    return np.sum((overlaps * overlaps).reshape(len(overlaps), -1), axis=1) / U.shape[2]


def pairwise_principal_angles(U: np.ndarray) -> np.ndarray:
    """principal_angles(U[a], U[b]) of every pair a < b (np.triu_indices(n, 1) order) of a stack
    U (n, d, k) of orthonormal bases: shape (pairs, k), by one batched SVD of the k x k overlaps."""
    cosines = np.linalg.svd(_pair_overlaps(U), compute_uv=False)
    return np.arccos(np.clip(cosines, -1.0, 1.0))


SUBSPACE_FEATURES = ("subspace_similarity", "principal_angles")  # need top-k vectors
PAIRWISE_FEATURES = (*SUBSPACE_FEATURES, "delta_cosine")
FULL_SPECTRUM_ONLY = ("nuclear_norm", "effective_rank", "condition_number")
