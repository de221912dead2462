"""Batched dense SVD kernels over a stack of same-shape matrices, on numpy or torch.

One call per stack is the point: a loop of LAPACK calls from Python leaves the batched kernels
(and on CUDA, the whole device) idle between matrices.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.linalg.device import Backend, as_backend, to_numpy, torch_module

SVD = tuple[np.ndarray, np.ndarray | None, np.ndarray | None]


def svdvals(X: Any, *, backend: Backend = "numpy") -> np.ndarray:
    """Singular values of each matrix of X.

    X: (b, m, n). Returns S: (b, min(m, n)), descending, in X's precision.
    """
    if backend == "numpy":
        return np.linalg.svd(to_numpy(X), compute_uv=False)
    torch = torch_module()
    assert torch is not None
    return to_numpy(torch.linalg.svdvals(as_backend(X, backend)))


def svd(X: Any, *, k: int | None = None, backend: Backend = "numpy") -> SVD:
    """Thin SVD of each matrix of X, optionally truncated to the leading k triplets.

    X: (b, m, n). Returns S: (b, q), U: (b, m, q), Vh: (b, q, n) with q = min(m, n) or k.
    """
    if backend == "numpy":
        U, S, Vh = np.linalg.svd(to_numpy(X), full_matrices=False)
    else:
        torch = torch_module()
        assert torch is not None
        U, S, Vh = (to_numpy(t) for t in torch.linalg.svd(as_backend(X, backend), full_matrices=False))
    if k is not None:
        U, S, Vh = U[..., :k], S[..., :k], Vh[..., :k, :]
    return S, U, Vh


def svd_lowrank(
    X: Any, k: int, *, oversample: int = 10, niter: int = 2, seed: int = 0, backend: Backend = "cpu"
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
        U, S, V = torch.svd_lowrank(T, q=q, niter=niter)
    return (
        to_numpy(S[..., :k]),
        to_numpy(U[..., :k]),
        to_numpy(V[..., :k].transpose(-2, -1)),
    )
