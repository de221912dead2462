"""Batched dense SVD kernels over a stack of same-shape matrices, on numpy or torch.

One call per stack is the point: a loop of LAPACK calls from Python leaves the batched kernels
(and on CUDA, the whole device) idle between matrices.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.linalg.device import Backend, as_backend, to_numpy, torch_module

SVD = tuple[np.ndarray, np.ndarray | None, np.ndarray | None]


def _wide(X: Any) -> bool:
    """Whether X's matrices have fewer rows than columns, so their transposes are cheaper.

    LAPACK's SVD is much slower on wide matrices than on their tall transposes (same singular
    values): on a 2-core AMD EPYC, batch of 38, torch 2.13 svdvals took 62 ms per 3072x768 matrix
    but 244 ms per 768x3072 one; numpy 230 vs 266 ms. So both kernels run on the tall orientation.
    """
    return X.shape[-2] < X.shape[-1]


def _driver(backend: Backend) -> dict[str, str]:
    """torch.linalg's `driver` keyword for `backend`: it exists only for CUDA inputs."""
    # Default gesvdj erred 5.8e-6 (random) and 2.5e-4 (rank-16 LoRA 3072x768) of sigma_1 in float32
    # (H100, torch 2.11+cu130); QR-based gesvd: 2.48 s vs 1.42 s on 38 x 3072x768 (numpy: 10.6 s).
    return {"driver": "gesvd"} if backend == "cuda" else {}


def svdvals(X: Any, *, backend: Backend = "numpy") -> np.ndarray:
    """Singular values of each matrix of X, computed on the tall orientation (see `_wide`).

    X: (b, m, n). Returns S: (b, min(m, n)), descending, in X's precision.
    """
    if backend == "numpy":
        A = to_numpy(X)
        return np.linalg.svd(np.swapaxes(A, -1, -2) if _wide(A) else A, compute_uv=False)
    torch = torch_module()
    assert torch is not None
    T = as_backend(X, backend)  # its transposed view is column-major, LAPACK's layout: no copy
    return to_numpy(torch.linalg.svdvals(T.mT if _wide(T) else T, **_driver(backend)))


def svd(X: Any, *, k: int | None = None, backend: Backend = "numpy") -> SVD:
    """Thin SVD of each matrix of X, optionally truncated to the leading k triplets.

    Computed on the tall orientation (see `_wide`): if X^T = U' S Vh', then U = Vh'^T, Vh = U'^T.
    X: (b, m, n). Returns S: (b, q), U: (b, m, q), Vh: (b, q, n) with q = min(m, n) or k.
    """
    if backend == "numpy":
        A = to_numpy(X)
        if _wide(A):
            Ut, S, Vht = np.linalg.svd(np.swapaxes(A, -1, -2), full_matrices=False)
            U, Vh = np.swapaxes(Vht, -1, -2), np.swapaxes(Ut, -1, -2)
        else:
            U, S, Vh = np.linalg.svd(A, full_matrices=False)
    else:
        torch = torch_module()
        assert torch is not None
        T = as_backend(X, backend)  # its transposed view is column-major: no copy
        if _wide(T):
            Ut, St, Vht = torch.linalg.svd(T.mT, full_matrices=False, **_driver(backend))
            Ut, Vht = Vht.mT, Ut.mT
        else:
            Ut, St, Vht = torch.linalg.svd(T, full_matrices=False, **_driver(backend))
        U, S, Vh = to_numpy(Ut), to_numpy(St), to_numpy(Vht)
    if k is not None:
        U, S, Vh = U[..., :k], S[..., :k], Vh[..., :k, :]
    return S, U, Vh


def torch_svdvals(T: Any) -> Any:
    """torch.linalg.svdvals of a batch of tensors: the unit torch.compile wraps for values."""
    torch = torch_module()
    assert torch is not None
    return torch.linalg.svdvals(T)


def torch_svd(T: Any) -> Any:
    """torch.linalg.svd (thin) of a batch of tensors: the unit torch.compile wraps for vectors."""
    torch = torch_module()
    assert torch is not None
    return torch.linalg.svd(T, full_matrices=False)


def torch_lowrank(T: Any, q: int, niter: int) -> Any:
    """torch.svd_lowrank of a batch of tensors, the caller having seeded torch's generator."""
    torch = torch_module()
    assert torch is not None
    return torch.svd_lowrank(T, q=q, niter=niter)


def compiled_svd(X: Any, k: int | None, vectors: bool, backend: Backend, log: Any) -> SVD:
    """`svd` (or its values) with the torch call compiled through `log` (a CompileLog)."""
    T = as_backend(X, backend)
    if not vectors:
        return to_numpy(log.call(torch_svdvals, T)), None, None
    U, S, Vh = (to_numpy(x) for x in log.call(torch_svd, T))
    if k is not None:
        U, S, Vh = U[..., :k], S[..., :k], Vh[..., :k, :]
    return S, U, Vh


def svd_lowrank(
    X: Any, k: int, *, oversample: int = 10, niter: int = 2, seed: int = 0, backend: Backend = "cpu",
    log: Any = None,
) -> SVD:
    """Randomized top-k SVD (Halko, Martinsson & Tropp 2011, alg. 4.4) via torch.svd_lowrank.

    A Gaussian sketch of q = k + oversample columns, refined by `niter` power iterations, so the
    error decays like (sigma_{q+1} / sigma_k) ** (2 * niter + 1): exact on matrices of rank <= q,
    poor on flat spectra. X: (b, m, n); returns S (b, k), U (b, m, k), Vh (b, k, n).
    """
    torch = torch_module()
    if torch is None or backend == "numpy":
        raise RuntimeError("svd_lowrank needs torch")
    T = as_backend(X, backend)
    q = min(k + oversample, T.shape[-2], T.shape[-1])
    with torch.random.fork_rng(devices=[T.device] if T.is_cuda else []):
        torch.manual_seed(seed)
        U, S, V = torch_lowrank(T, q, niter) if log is None else log.call(torch_lowrank, T, q, niter)
    return (
        to_numpy(S[..., :k]),
        to_numpy(U[..., :k]),
        to_numpy(V[..., :k].transpose(-2, -1)),
    )
