"""Device resolution shared by every kernel: CUDA, else torch on the CPU, else numpy.

torch is optional. Every function here works, and says why, when it cannot be imported.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Literal

import numpy as np

Backend = Literal["cuda", "cpu", "numpy"]
DEVICES = ("auto", "cuda", "cpu", "numpy")


def torch_module() -> ModuleType | None:
    """torch if it imports, else None (a broken install counts as missing)."""
    try:
        return importlib.import_module("torch")
    except Exception:  # an ImportError, or a broken build raising something else
        return None


def torch_missing_reason() -> str | None:
    if torch_module() is None:
        return "torch is not installed (pip install 'spectral-harness[torch]')"
    return None


def cuda_available() -> bool:
    torch = torch_module()
    return bool(torch is not None and torch.cuda.is_available())


def cuda_missing_reason() -> str | None:
    if (reason := torch_missing_reason()) is not None:
        return reason
    if not cuda_available():
        return "torch sees no CUDA device"
    return None


def resolve_device(device: str = "auto") -> Backend:
    """'auto' -> 'cuda' when available, else 'cpu' (torch), else 'numpy'.

    An explicit 'cuda' or 'cpu' that cannot be honoured raises RuntimeError with the reason.
    """
    if device == "auto":
        if cuda_available():
            return "cuda"
        return "cpu" if torch_module() is not None else "numpy"
    if device == "cuda":
        if (reason := cuda_missing_reason()) is not None:
            raise RuntimeError(f"device 'cuda' requested but {reason}")
        return "cuda"
    if device == "cpu":
        if (reason := torch_missing_reason()) is not None:
            raise RuntimeError(f"device 'cpu' (torch) requested but {reason}")
        return "cpu"
    if device == "numpy":
        return "numpy"
    raise ValueError(f"unknown device {device!r}; expected one of {', '.join(DEVICES)}")


def as_backend(x: np.ndarray | Any, backend: Backend) -> Any:
    """The array on `backend`: a numpy array for 'numpy', else a torch tensor on that device."""
    if backend == "numpy":
        return to_numpy(x)
    torch = torch_module()
    assert torch is not None, "as_backend with a torch backend needs torch"
    if isinstance(x, torch.Tensor):
        return x.to(backend)
    return torch.from_numpy(np.ascontiguousarray(x)).to(backend)


def to_numpy(x: Any) -> np.ndarray:
    """A numpy array from a numpy array or a torch tensor on any device."""
    if isinstance(x, np.ndarray):
        return x
    return x.detach().cpu().numpy()


def synchronize(backend: Backend) -> None:
    """Wait for queued CUDA work, so a timer reads the work itself and not its launch."""
    if backend == "cuda":
        torch = torch_module()
        assert torch is not None
        torch.cuda.synchronize()


def cuda_free_bytes() -> int | None:
    """Free memory on the current CUDA device, or None without CUDA."""
    if not cuda_available():
        return None
    torch = torch_module()
    assert torch is not None
    free, _total = torch.cuda.mem_get_info()
    return int(free)
