"""harness.linalg.features on matrices and subspaces whose spectra and angles are known in closed form."""

from __future__ import annotations

import csv
import io
import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.linalg

from harness.record.features_csv import CSV_COLUMNS, FeatureRow, csv_rows, write_features_csv
from harness.linalg.features import SCALAR_FEATURES, Spectrum, condition_number, effective_rank, energy_rank, frobenius_norm, nuclear_norm, pairwise_principal_angles, pairwise_subspace_similarity, principal_angles, scalar_features, spectral_norm, stable_rank, subspace_similarity

RNG_SEED = 20240607
Q, N_GEOM = 0.5, 10  # geometric spectrum s_i = Q**i, i = 0..N_GEOM-1


def orthonormal(rows: int, cols: int, seed: int = RNG_SEED) -> np.ndarray:
    return np.linalg.qr(np.random.default_rng(seed).standard_normal((rows, cols)))[0]


def with_spectrum(s: list[float], m: int, n: int) -> np.ndarray:
    """A dense (m, n) matrix U diag(s) V^T with random orthonormal U, V."""
    k = len(s)
    return orthonormal(m, k, RNG_SEED) @ np.diag(s) @ orthonormal(n, k, RNG_SEED + 1).T


def rank_one(m: int, n: int) -> np.ndarray:
    u, v = orthonormal(m, 1, 1), orthonormal(n, 1, 2)
    return 3.0 * u @ v.T


def entropy_rank(s: list[float]) -> float:
    total = math.fsum(s)
    return math.exp(-math.fsum(x / total * math.log(x / total) for x in s if x > 0))


GEOM = [Q**i for i in range(N_GEOM)]

# (matrix, {feature: exact value}); all are checked through Spectrum.from_matrix(W).
KNOWN_SPECTRA = {
    "identity-1": (np.eye(1), dict(spectral_norm=1, frobenius_norm=1, nuclear_norm=1,
                                   stable_rank=1, effective_rank=1, condition_number=1)),
    "identity-7": (np.eye(7), dict(spectral_norm=1, frobenius_norm=math.sqrt(7), nuclear_norm=7,
                                   stable_rank=7, effective_rank=7, condition_number=1)),
    "rank-1 tall": (rank_one(9, 4), dict(spectral_norm=3, frobenius_norm=3, nuclear_norm=3,
                                         stable_rank=1, effective_rank=1, condition_number=1)),
    "rank-1 wide": (rank_one(3, 8), dict(spectral_norm=3, frobenius_norm=3, nuclear_norm=3,
                                         stable_rank=1, effective_rank=1, condition_number=1)),
    "geometric": (with_spectrum(GEOM, 12, 10), dict(
        spectral_norm=1,
        frobenius_norm=math.sqrt((1 - Q ** (2 * N_GEOM)) / (1 - Q**2)),
        nuclear_norm=(1 - Q**N_GEOM) / (1 - Q),
        stable_rank=(1 - Q ** (2 * N_GEOM)) / (1 - Q**2),  # sum q^{2i}
        effective_rank=entropy_rank(GEOM),
        condition_number=Q ** -(N_GEOM - 1),
    )),
    "with zeros": (with_spectrum([3, 2, 0, 0], 4, 4), dict(
        spectral_norm=3, frobenius_norm=math.sqrt(13), nuclear_norm=5, stable_rank=13 / 9,
        effective_rank=math.exp(-(0.6 * math.log(0.6) + 0.4 * math.log(0.4))),
        condition_number=1.5,  # over the nonzero spectrum {3, 2}
    )),
}


@pytest.mark.parametrize("W, expected", KNOWN_SPECTRA.values(), ids=KNOWN_SPECTRA.keys())
def test_scalar_features_of_known_spectra(W: np.ndarray, expected: dict[str, float]) -> None:
    got = scalar_features(Spectrum.from_matrix(W), expected)
    assert got == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("n", [1, 3, 10])
@pytest.mark.parametrize("tau", ["0.1", "0.25", "0.5", "0.7", "0.9", "0.95", "1"])
def test_energy_rank_of_identity_is_ceil_tau_n(n: int, tau: str) -> None:
    assert energy_rank(Spectrum(np.ones(n)), float(tau)) == math.ceil(Fraction(tau) * n)


# By hand: the first k of the geometric spectrum hold (1 - 4^-k) / (1 - 4^-10) of the energy,
# i.e. 0.75, 0.9375, 0.984375, 0.99609 for k = 1..4.
@pytest.mark.parametrize("tau, k", [(0.5, 1), (0.75, 1), (0.9, 2), (0.95, 3), (0.99, 4), (1.0, 10)])
def test_energy_rank_of_geometric_decay(tau: float, k: int) -> None:
    assert energy_rank(Spectrum(GEOM), tau) == k
    assert energy_rank(Spectrum.from_matrix(with_spectrum(GEOM, 12, 10)), tau) == k


def test_exact_spectrum_with_zeros() -> None:
    spectrum = Spectrum(np.array([3.0, 2.0, 0.0, 0.0]))
    assert stable_rank(spectrum) == 13 / 9
    assert condition_number(spectrum) == 1.5
    assert energy_rank(spectrum, 1.0) == 2
    assert effective_rank(spectrum) == pytest.approx(entropy_rank([3, 2]), rel=1e-15)


def test_zero_matrix_has_rank_zero_and_no_condition_number() -> None:
    got = scalar_features(Spectrum(np.zeros(4)), SCALAR_FEATURES)
    assert math.isnan(got.pop("condition_number"))
    assert got == dict.fromkeys(got, 0.0)


def test_condition_number_cutoff_is_relative_and_overridable() -> None:
    spectrum = Spectrum(np.array([1.0, 1e-3, 1e-17]))  # 1e-17 < 3 * eps: numerically zero
    assert condition_number(spectrum) == 1e3
    assert condition_number(spectrum, rtol=1e-2) == 1.0


# Truncated spectra: the top 3 of the 10 x 10 identity, whose exact energy is 10.
TOP3 = Spectrum(np.ones(3), total_energy=10.0, truncated=True)


def test_truncated_spectrum_uses_exact_total_energy() -> None:
    assert energy_rank(TOP3, 0.25) == 3  # ceil(0.25 * 10); the truncated sum would give 1
    assert stable_rank(TOP3) == 10.0
    assert frobenius_norm(TOP3) == math.sqrt(10)
    assert spectral_norm(TOP3) == 1.0


def test_energy_rank_beyond_truncation_raises() -> None:
    with pytest.raises(ValueError, match="hold 0.3 of the energy, less than tau=0.5"):
        energy_rank(TOP3, 0.5)


@pytest.mark.parametrize("feature", [nuclear_norm, effective_rank, condition_number])
def test_truncated_spectrum_raises_for_full_spectrum_features(feature) -> None:
    with pytest.raises(ValueError, match=f"{feature.__name__} needs the full spectrum"):
        feature(TOP3)


@pytest.mark.parametrize("feature", [frobenius_norm, stable_rank, energy_rank])
def test_truncated_spectrum_without_total_energy_raises(feature) -> None:
    with pytest.raises(ValueError, match="needs total_energy"):
        feature(Spectrum(np.ones(3), truncated=True))


@pytest.mark.parametrize(
    "values, total_energy, match",
    [
        (np.ones((2, 2)), None, "1-D"),
        (np.array([]), None, "non-empty"),
        (np.array([1.0, 2.0]), None, "descending"),
        (np.array([1.0, -1.0]), None, "non-negative"),
        (np.array([1.0, np.nan]), None, "finite"),
        (np.array([2.0, 1.0]), math.sqrt(5.0), "pass"),  # ||W||_F given for ||W||_F^2
    ],
)
def test_spectrum_rejects_invalid_input(values, total_energy, match) -> None:
    with pytest.raises(ValueError, match=match):
        Spectrum(values, total_energy=total_energy)


def test_spectrum_is_an_immutable_copy() -> None:
    values = np.array([2.0, 1.0])
    spectrum = Spectrum(values)
    values[0] = 5.0
    assert spectrum.values[0] == 2.0
    with pytest.raises(ValueError):
        spectrum.values[0] = 3.0


def test_energy_rank_rejects_tau_outside_unit_interval() -> None:
    with pytest.raises(ValueError, match="tau"):
        energy_rank(Spectrum(np.ones(2)), 0.0)


def test_scalar_features_passes_tau() -> None:
    assert scalar_features(Spectrum(np.ones(10)), ["energy_rank"], tau=0.35) == {"energy_rank": 4.0}


def test_unknown_feature_name_is_named_with_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown feature\(s\) \['spectral_nrom'\]") as info:
        scalar_features(Spectrum(np.ones(2)), ["spectral_norm", "spectral_nrom"])
    assert all(name in str(info.value) for name in SCALAR_FEATURES)


# Pairwise: subspaces of R^6 built from the standard basis, then rotated by a common random
# orthogonal matrix, which leaves every similarity and angle unchanged.
E = orthonormal(6, 6)  # E[:, k]: the rotated k-th standard basis vector


@pytest.mark.parametrize("i, j", [(1, 1), (1, 3), (2, 2), (3, 1), (3, 3)])
def test_subspace_similarity_identical_and_orthogonal(i: int, j: int) -> None:
    assert subspace_similarity(E[:, :3], E[:, :3], i, j) == pytest.approx(1.0)
    assert subspace_similarity(E[:, :3], E[:, 3:], i, j) == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("i, j, phi", [(1, 1, 1.0), (1, 2, 1.0), (2, 1, 1.0), (2, 2, 0.5)])
def test_subspace_similarity_partial_overlap(i: int, j: int, phi: float) -> None:
    U_a, U_b = E[:, [0, 1]], E[:, [0, 2]]  # sharing one direction of two
    assert subspace_similarity(U_a, U_b, i, j) == pytest.approx(phi)


@pytest.mark.parametrize("theta", [0.0, 0.3, 1.0, math.pi / 2])
def test_subspace_similarity_of_rotated_direction_is_cos_squared(theta: float) -> None:
    u_b = (math.cos(theta) * E[:, 0] + math.sin(theta) * E[:, 1])[:, None]
    phi = subspace_similarity(E[:, :1], u_b, 1, 1)
    assert phi == pytest.approx(math.cos(theta) ** 2, abs=1e-15)


def test_subspace_similarity_rejects_bad_indices() -> None:
    with pytest.raises(ValueError, match="1 <= i <= 2"):
        subspace_similarity(E[:, :2], E[:, :2], 3, 1)


@pytest.mark.parametrize("theta", [0.0, 0.2, 1.0, math.pi / 2])
def test_principal_angles_of_known_rotation(theta: float) -> None:
    U_a = E[:, [0, 1]]
    U_b = np.stack([E[:, 0], math.cos(theta) * E[:, 1] + math.sin(theta) * E[:, 2]], axis=1)
    np.testing.assert_allclose(principal_angles(U_a, U_b), [0.0, theta], atol=1e-7)


def test_principal_angles_match_scipy_ascending() -> None:
    U_a, U_b = orthonormal(20, 4, 5), orthonormal(20, 3, 6)
    angles = principal_angles(U_a, U_b)
    assert angles.shape == (3,) and np.all(np.diff(angles) >= 0)
    np.testing.assert_allclose(angles, np.sort(scipy.linalg.subspace_angles(U_a, U_b)), atol=1e-12)


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_pairwise_features_equal_the_pair_by_pair_ones(dtype: type, rtol: float) -> None:
    n, k = 5, 3
    U = np.linalg.qr(np.random.default_rng(RNG_SEED).standard_normal((n, 40, k)))[0].astype(dtype)
    pairs = list(zip(*np.triu_indices(n, 1)))
    phi, angles = pairwise_subspace_similarity(U), pairwise_principal_angles(U)
    assert phi.dtype == angles.dtype == dtype and angles.shape == (len(pairs), k)
    np.testing.assert_allclose(phi, [subspace_similarity(U[a], U[b], k, k) for a, b in pairs], rtol=rtol)
    np.testing.assert_allclose(angles, [principal_angles(U[a], U[b]) for a, b in pairs], rtol=rtol)


ROWS = [
    FeatureRow(analysis="spectrum", adapter="a", other_adapter=None, layer=3,
               module="q_proj", metric="stable_rank", value=1 / 3),
    FeatureRow(analysis="pairwise", adapter="a", other_adapter="b, \"quoted\"", layer=None,
               module="v_proj", metric="delta_cosine", value=-0.1),
    FeatureRow(analysis="spectrum", adapter="c", layer=0, module="mlp.down",
               metric="condition_number", value=math.nan),
]


def test_csv_rows_writes_what_dictwriter_writes_from_model_dump() -> None:
    text = io.StringIO()
    csv.DictWriter(text, fieldnames=CSV_COLUMNS, lineterminator="\n").writerows(r.model_dump() for r in ROWS)
    assert csv_rows(ROWS) == text.getvalue()


def test_write_features_csv_round_trip(tmp_path) -> None:
    path = tmp_path / "features.csv"
    path.write_text("stale")
    assert write_features_csv([csv_rows(ROWS[:2]), csv_rows(iter(ROWS[2:]))], path) == path
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames) == CSV_COLUMNS == (
            "analysis", "adapter", "other_adapter", "layer", "module", "metric", "value")
        back = [
            FeatureRow(**{**row, "other_adapter": row["other_adapter"] or None,
                          "layer": int(row["layer"]) if row["layer"] else None})
            for row in reader
        ]
    assert [r.model_dump(exclude={"value"}) for r in back] == [
        r.model_dump(exclude={"value"}) for r in ROWS]
    assert [r.value for r in back[:2]] == [r.value for r in ROWS[:2]]  # repr round-trips exactly
    assert math.isnan(back[2].value)
    assert list(tmp_path.iterdir()) == [path]  # no temp file left behind


def test_write_features_csv_keeps_old_file_on_failure(tmp_path) -> None:
    path = tmp_path / "features.csv"
    write_features_csv([csv_rows(ROWS[:1])], path)
    before = path.read_text()

    def failing():
        yield csv_rows(ROWS[1:2])
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        write_features_csv(failing(), path)
    assert path.read_text() == before
    assert list(tmp_path.iterdir()) == [path]
