"""Every registered strategy against float64 LAPACK, through the same verify() the runner uses."""

from collections.abc import Iterator
from concurrent.futures import Executor

import numpy as np
import pytest

from harness.data.workload import Workload
from harness.base.executors import process_pool
from harness.linalg.device import torch_module
from harness.strategies.base import ExecContext, OpRequest
from harness.strategies.registry import STRATEGIES
from harness.compute.verify import Operator
from harness.compute.references import operator, exact_values
from harness.compute.verify import verify
from tests.conftest import known_spectrum
from tests.fake_cupy import install

OPS = [OpRequest("svdvals"), OpRequest("svd"), OpRequest("svd_topk", 3)]
CASES = [(s, op) for s in STRATEGIES for op in OPS if op.op in STRATEGIES[s].ops]


@pytest.fixture(scope="module")
def pool() -> Iterator[Executor]:
    with process_pool(2) as executor:
        yield executor


@pytest.fixture(autouse=True)
def _cupy_faked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cupy strategy verified like the rest, CuPy faked by numpy where there is no GPU."""
    from harness.linalg.cupy_svd import cupy_missing_reason

    if cupy_missing_reason() is not None:
        install(monkeypatch)


def context(name: str, dtype: str, pool: Executor) -> ExecContext:
    strategy = STRATEGIES[name]
    if strategy.uses_torch and torch_module() is None:
        pytest.skip("torch is not installed")
    return ExecContext(np.dtype(dtype), strategy.backend("auto"), 2, 0, lambda: pool)


class DenseSource:
    """Matrices with known spectra: well-conditioned, ill-conditioned (1e6), geometric decay."""

    def __init__(self, shape: tuple[int, int]) -> None:
        p = min(shape)
        spectra = [np.linspace(2, 1, p), np.logspace(0, -6, p), 0.5 ** np.arange(p)]
        self.W = np.stack([known_spectrum(*shape, s, seed=i) for i, s in enumerate(spectra)])


@pytest.mark.parametrize("dtype,tol", [("float32", 2e-6), ("float64", 1e-12)])
@pytest.mark.parametrize("shape", [(50, 30), (30, 50)])
@pytest.mark.parametrize(
    "name,op", [c for c in CASES if not STRATEGIES[c[0]].needs_factors and not STRATEGIES[c[0]].approximate]
)
def test_exact_dense_strategies_match_lapack(name, op, shape, dtype, tol, pool) -> None:
    strategy = STRATEGIES[name]
    W = DenseSource(shape).W
    result = strategy.compute(op, W.astype(dtype), context(name, dtype, pool))
    S_ref = np.linalg.svd(W, compute_uv=False)
    assert result.S.shape == (3, op.width(shape))
    bound = strategy.error_bound(op, shape)  # a Gram's sqrt(u) of sigma_1, where the method has one
    check = verify(name, result, Operator(dense=W), S_ref, tol if bound is None else max(tol, bound))
    assert check.passed, check
    assert (result.U is None) == (op.op == "svdvals")


@pytest.mark.parametrize("dtype,tol", [("float32", 2e-6), ("float64", 1e-12)])
@pytest.mark.parametrize("name,op", CASES)
def test_every_strategy_on_lora_deltas(name, op, dtype, tol, lora_workload: Workload, pool) -> None:
    strategy = STRATEGIES[name]
    group = lora_workload.groups()[0]
    data = strategy.load(lora_workload.source, group.refs, np.dtype(dtype))
    W = operator(lora_workload.source, group.refs)
    S_ref = exact_values(lora_workload.source, group.refs)
    result = strategy.compute(op, data, context(name, dtype, pool))
    bound = strategy.error_bound(op, group.shape) or 0.0  # rank-deficient: a Gram's tail is off by ~sqrt(u)
    check = verify(name, result, W, S_ref, max(tol, 1e-4) if strategy.approximate else max(tol, bound))
    assert check.passed, check


def test_randomized_accuracy_depends_on_decay_and_verify_says_so(pool) -> None:
    """torch_lowrank is exact on a fast-decaying spectrum and wrong on a flat one: verification
    must tell the two apart, which is why auto never picks it."""
    W = DenseSource((50, 30)).W
    op = OpRequest("svd_topk", 3)
    ctx = context("torch_lowrank", "float64", pool)
    S_ref = np.linalg.svd(W, compute_uv=False)
    fast = STRATEGIES["torch_lowrank"].compute(op, W[2:], ctx)  # 0.5 ** i
    assert verify("torch_lowrank", fast, Operator(dense=W[2:]), S_ref[2:], 1e-6).passed
    flat = STRATEGIES["torch_lowrank"].compute(op, W[:1], ctx)  # 2 .. 1, no decay
    assert not verify("torch_lowrank", flat, Operator(dense=W[:1]), S_ref[:1], 1e-4).passed


def test_factored_pads_the_exact_zeros(lora_workload: Workload, pool) -> None:
    strategy = STRATEGIES["factored"]
    group = lora_workload.groups()[0]
    data = strategy.load(lora_workload.source, group.refs, np.dtype(np.float64))
    result = strategy.compute(OpRequest("svdvals"), data, context("factored", "float64", pool))
    assert result.S.shape == (len(group), 24)
    assert np.all(result.S[:, 4:] == 0.0) and np.all(result.S[:, :4] > 0)


def test_factored_is_unavailable_for_dense(dense_workload: Workload) -> None:
    reason = STRATEGIES["factored"].unavailable(dense_workload, "auto")
    assert reason == "needs LoRA or LoKr factors, and this workload's matrices are dense"


def test_scipy_svds_answers_k_at_full_rank(pool) -> None:
    # svds itself needs k < min(m, n): the strategy answers such k exactly through LAPACK
    # (tests/strategies/test_scipy_svds_degenerate.py checks the values)
    result = STRATEGIES["scipy_svds"].compute(OpRequest("svd_topk", 4), np.zeros((1, 4, 6)), context("scipy_svds", "float64", pool))
    assert result.S.shape == (1, 4) and not result.S.any()


def test_factored_runs_on_cuda_when_found_else_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA availability faked: "auto" takes the device when there is one; without, numpy (the
    Gram route's CPU work is numpy's, and torch's import is spared), torch's CPU only by name."""
    pytest.importorskip("torch")
    from harness.linalg import device

    strategy = STRATEGIES["factored"]
    monkeypatch.setattr(device, "cuda_available", lambda: True)
    assert strategy.backend("auto") == "cuda" and strategy.imports("cuda") == ("torch",)
    monkeypatch.setattr(device, "cuda_available", lambda: False)
    assert strategy.backend("auto") == "numpy" and strategy.imports("numpy") == ()
    assert strategy.backend("cpu") == "cpu"


def test_gram_eigh_runs_on_cuda_when_found_else_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA availability faked: "auto" and "cuda" take the device; otherwise numpy (its syrk and
    dsyevd, no torch import), "cpu" included; top-k's eigenpairs need scipy.linalg there."""
    pytest.importorskip("torch")
    from harness.linalg import device

    strategy = STRATEGIES["gram_eigh"]
    monkeypatch.setattr(device, "cuda_available", lambda: True)
    assert strategy.backend("auto") == "cuda" and strategy.backend("cuda") == "cuda"
    assert strategy.imports("cuda") == ("torch",)
    assert strategy.backend("cpu") == "numpy" and strategy.backend("numpy") == "numpy"
    monkeypatch.setattr(device, "cuda_available", lambda: False)
    assert strategy.backend("auto") == "numpy" and strategy.imports("numpy") == ("scipy.linalg",)
    monkeypatch.setattr("harness.strategies.gram_eigh.torch_missing_reason", lambda: "no torch")
    assert strategy.backend("auto") == "numpy"
