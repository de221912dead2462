"""Batched dense SVDs on a GPU through CuPy (the `cuda` extra, cupy-cuda12x): one
cupy.linalg.svd call over a stack of matrices, which CuPy hands to cuSOLVER (batched Jacobi,
gesvdjBatched, for matrices up to 32 x 32; one solver call per matrix beyond). CuPy is optional:
`cupy_missing_reason` says why it cannot be used, without importing it where it is absent.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Any

import numpy as np

MISSING = "CuPy is not installed (the cuda extra installs cupy-cuda12x)"


def cupy_module() -> ModuleType | None:
    """cupy if it imports, else None (a broken install counts as missing)."""
    if importlib.util.find_spec("cupy") is None:
        return None
    try:
        return importlib.import_module("cupy")
    except Exception:  # an ImportError, or a CUDA library missing at import
        return None


def cupy_missing_reason() -> str | None:
    """Why CuPy cannot run here, or None: not installed, or no GPU its CUDA runtime can see."""
    cupy = cupy_module()
    if cupy is None:
        return MISSING
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # CUDARuntimeError: no driver, or no device
        return f"CuPy sees no CUDA device ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    return None if count > 0 else "CuPy sees no CUDA device"


def svd(X: np.ndarray, *, k: int | None, vectors: bool, xp: Any = None) -> tuple[np.ndarray, Any, Any]:
    """S (b, q) and, with `vectors`, U (b, m, q), Vh (b, q, n) of each matrix of X, q = k or
    min(m, n), computed by `xp` (cupy; numpy in tests) in X's dtype, copied back to the host."""
    xp = xp if xp is not None else cupy_module()
    assert xp is not None, MISSING
    A = xp.asarray(X)
    if not vectors:
        S = xp.linalg.svd(A, compute_uv=False)
        return _host(xp, S[..., :k] if k is not None else S), None, None
    U, S, Vh = xp.linalg.svd(A, full_matrices=False)
    q = k if k is not None else S.shape[-1]
    return _host(xp, S[..., :q]), _host(xp, U[..., :q]), _host(xp, Vh[..., :q, :])


def _host(xp: Any, x: Any) -> np.ndarray:
    return np.asarray(xp.asnumpy(x)) if hasattr(xp, "asnumpy") else np.asarray(x)
