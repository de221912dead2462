"""Rounding to a precision, and errors that grow as precision drops: on matrices with known
spectra, against float64 LAPACK, bfloat16's near 2^-8 of sigma_1 and float32's near 2^-24."""

from __future__ import annotations

import numpy as np
import pytest

from harness.linalg.factored import factored_svdvals, frobenius_gram
from harness.linalg.gram_svd import gram_svdvals
from harness.linalg.precision import UNIT_ROUNDOFF, meets, round_to, storage_dtype
from tests.conftest import known_spectrum

torch = pytest.importorskip("torch")


def test_rounding_matches_the_formats_casts() -> None:
    x = np.random.default_rng(0).standard_normal(10_000).astype(np.float32) * 1e3
    t = torch.from_numpy(x)
    assert np.array_equal(round_to(x, "bfloat16"), t.bfloat16().float().numpy())
    assert np.array_equal(round_to(x, "float16"), t.half().float().numpy())
    for precision in ("bfloat16", "float16", "tf32"):  # nearest: at most half a spacing, u relative
        assert np.max(np.abs(round_to(x, precision) - x) / np.abs(x)) <= UNIT_ROUNDOFF[precision]
    assert np.array_equal(round_to(x, "float32"), x) and round_to(x.astype(np.float64), "float64").dtype == np.float64
    special = np.array([np.inf, -np.inf, np.nan, 0.0], np.float32)
    assert np.array_equal(round_to(special, "bfloat16"), special, equal_nan=True)
    assert storage_dtype("bfloat16") == np.float32 and storage_dtype("float64") == np.float64


def test_a_tolerance_below_a_precisions_unit_roundoff_is_out_of_reach() -> None:
    assert meets("bfloat16", 1e-2) and not meets("bfloat16", 1e-3)
    assert meets("float16", 1e-3) and not meets("float16", 1e-4)
    assert meets("float32", 1e-7) and not meets("float32", 1e-8)


def _error(S: np.ndarray, S_ref: np.ndarray) -> float:
    return float(np.max(np.abs(S[:, : S_ref.shape[1]] - S_ref) / S_ref[:, :1]))


@pytest.fixture(scope="module")
def dense() -> tuple[np.ndarray, np.ndarray]:
    """Three 300 x 80 matrices whose singular values are 2..1 (well conditioned), and them."""
    spectra = [np.linspace(2, 1, 80)] * 3
    W = np.stack([known_spectrum(300, 80, s, seed=i) for i, s in enumerate(spectra)])
    return W, np.stack(spectra)


def test_the_grams_error_grows_as_precision_drops(dense: tuple[np.ndarray, np.ndarray]) -> None:
    """gram_svdvals at each precision: float64 at round-off, float32 inputs near 2^-24 (their
    products exact in float64), float16 near 2^-11 and bfloat16 near 2^-8 of sigma_1."""
    W, S_ref = dense
    errors = {p: _error(gram_svdvals(W.astype(storage_dtype(p)), precision=p), S_ref)
              for p in ("float64", "float32", "float16", "bfloat16")}
    assert errors["float64"] < 1e-13
    assert 2**-24 / 16 < errors["float32"] < 2**-24 * 16
    assert 2**-11 / 16 < errors["float16"] < 2**-11 * 16
    assert 2**-8 / 16 < errors["bfloat16"] < 2**-8 * 16
    assert errors["float64"] < errors["float32"] < errors["float16"] < errors["bfloat16"]


def test_factored_spectra_lose_accuracy_with_precision_and_no_more() -> None:
    """LoRA factors with a known spectrum: the Grams of B and A at each precision, exact
    references from float64 (the dense product's LAPACK values)."""
    rng = np.random.default_rng(3)
    r, s = 8, np.linspace(3, 1, 8)
    B = np.stack([np.linalg.qr(rng.standard_normal((200, r)))[0] * s for _ in range(4)])
    A = np.stack([np.linalg.qr(rng.standard_normal((120, r)))[0].T for _ in range(4)])
    scale = np.ones(4)
    S_ref = np.linalg.svd(B @ A, compute_uv=False)[:, :r]
    errors = {p: _error(factored_svdvals(B.astype(storage_dtype(p)), A.astype(storage_dtype(p)), scale,
                                         backend="numpy") if p in ("float64", "float32") else
                        _factored(B, A, scale, p), S_ref)
              for p in ("float64", "float32", "bfloat16")}
    assert errors["float64"] < 1e-13
    assert 2**-24 / 16 < errors["float32"] < 2**-24 * 16
    assert 2**-8 / 16 < errors["bfloat16"] < 2**-8 * 16


def _factored(B: np.ndarray, A: np.ndarray, scale: np.ndarray, precision: str) -> np.ndarray:
    from harness.linalg.factored import factored_svd

    return factored_svd(B.astype(np.float32), A.astype(np.float32), scale, compute_uv=False, backend="numpy",
                        precision=precision)[0]


def test_a_narrow_frobenius_gram_is_near_its_unit_roundoff() -> None:
    rng = np.random.default_rng(5)
    B = rng.standard_normal((5, 64, 4)).astype(np.float32)
    A = rng.standard_normal((5, 4, 48)).astype(np.float32)
    scale = np.ones(5)
    G_ref = frobenius_gram(B.astype(np.float64), A.astype(np.float64), scale)
    for precision, u in (("float16", 2**-11), ("bfloat16", 2**-8)):
        G = frobenius_gram(B, A, scale, precision=precision)
        error = np.max(np.abs(G - G_ref)) / np.max(np.abs(G_ref))
        assert u / 16 < error < u * 16
