"""scipy_svds answers wherever LAPACK does: zero matrices and k >= min(m, n) - 1 exactly, without
ARPACK; matrices near float32's extremes through scaling."""

import numpy as np
import pytest
import scipy.sparse.linalg

from harness.compute.verify import Operator
from harness.base.executors import SerialExecutor
from harness.specs.sections import _AnalysisBase
from harness.strategies.base import ExecContext, OpRequest, OpResult
from harness.strategies.registry import STRATEGIES
from harness.compute.verify import verify
from tests.conftest import known_spectrum

TOLERANCE = _AnalysisBase.model_fields["tolerance"].default  # what a run checks float32 against
STRATEGY = STRATEGIES["scipy_svds"]


def context() -> ExecContext:
    return ExecContext(np.dtype("float32"), "cpu", 1, 0, lambda: SerialExecutor())


def compute(W: np.ndarray, k: int) -> OpResult:
    return STRATEGY.compute(OpRequest("svd_topk", k), W.astype(np.float32), context())


def check(W: np.ndarray, k: int) -> None:
    """Shapes as the strategy always returns them, and the harness's verdict against float64."""
    b, m, n = W.shape
    result = compute(W, k)
    q = min(k, m, n)
    assert result.S.shape == (b, q) and result.U is not None and result.Vh is not None
    assert result.U.shape == (b, m, q) and result.Vh.shape == (b, q, n)
    S_ref = np.linalg.svd(W, compute_uv=False)
    verdict = verify("scipy_svds", result, Operator(dense=W), S_ref, TOLERANCE)
    assert verdict.passed, verdict


@pytest.fixture
def no_arpack(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("ARPACK was called for a case with an exact answer")

    monkeypatch.setattr(scipy.sparse.linalg, "svds", refuse)


def spectra(m: int, n: int, scale: float = 1.0) -> np.ndarray:
    p = min(m, n)
    return np.stack([known_spectrum(m, n, np.linspace(2, 1, p), seed=0),
                     known_spectrum(m, n, 0.5 ** np.arange(p), seed=1)]) * scale


def test_a_zero_matrix_has_zero_values_and_orthonormal_vectors(no_arpack: None) -> None:
    W = np.zeros((2, 30, 20))
    check(W, 3)
    result = compute(W, 3)
    assert not result.S.any()


@pytest.mark.parametrize("scale", [1e-30, 1e30])
def test_extreme_scales_are_solved_scaled_and_scaled_back(scale: float) -> None:
    check(spectra(30, 20, scale), 3)


@pytest.mark.parametrize("shape", [(1, 25), (25, 1), (1, 1)])
def test_a_single_row_or_column_is_exact(shape: tuple[int, int], no_arpack: None) -> None:
    check(np.random.default_rng(0).standard_normal((2, *shape)), 1)


@pytest.mark.parametrize("shape", [(12, 8), (8, 12)])
@pytest.mark.parametrize("less", [1, 0])
def test_k_at_min_minus_one_and_at_min_is_exact(shape: tuple[int, int], less: int, no_arpack: None) -> None:
    check(spectra(*shape), min(shape) - less)


def test_arpack_still_does_the_ordinary_case(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = scipy.sparse.linalg.svds

    def counted(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(scipy.sparse.linalg, "svds", counted)
    check(spectra(30, 20), 3)
    assert len(calls) == 2

