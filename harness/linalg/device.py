"""Device resolution shared by every kernel: CUDA, else torch on the CPU, else numpy.

torch is optional. Every function here works, and says why, when it cannot be imported. Nothing
here imports torch (1.3 s or more) when a question can be answered without it: an installed CPU
build (version `+cpu`) has no CUDA, so planning, a warm run that reads everything from the cache,
`validate` and `report` never pay for the import; the first kernel that uses torch does.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
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


MISSING = "torch is not installed (pip install 'spectral-harness[torch]')"
# (why torch cannot be used there or None, whether it has CUDA) of the machine a plan is made for
_PLANNED_FOR: ContextVar[tuple[str | None, bool] | None] = ContextVar("planned_for", default=None)


@contextmanager
def planning_for(torch_missing: str | None, cuda: bool) -> Iterator[None]:
    """Answer torch_missing_reason() and cuda_available() for another machine (a Dask worker, from
    its own probe) while the work it will run is planned; this process's answers otherwise."""
    token = _PLANNED_FOR.set((torch_missing, cuda))
    try:
        yield
    finally:
        _PLANNED_FOR.reset(token)


def _cpu_only_build() -> bool:
    """An installed torch whose version says it was built without CUDA (`2.13.0+cpu`)."""
    try:
        return importlib.metadata.version("torch").endswith("+cpu")
    except importlib.metadata.PackageNotFoundError:
        return False


def torch_version() -> str | None:
    """The installed torch's version, without importing it when it is not loaded yet."""
    if "torch" not in sys.modules and importlib.util.find_spec("torch") is not None:
        try:
            return importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:  # importable, but not installed by pip
            pass
    torch = torch_module()
    return None if torch is None else str(torch.__version__)


def torch_missing_reason() -> str | None:
    """Why torch cannot be used, or None. A CPU build that is installed but not loaded yet
    counts as usable without importing it; a CUDA build is imported (its devices are asked for
    anyway), so a broken install of one is found here."""
    if (other := _PLANNED_FOR.get()) is not None:
        return other[0]
    if "torch" not in sys.modules and importlib.util.find_spec("torch") is not None and _cpu_only_build():
        return None
    return MISSING if torch_module() is None else None


def cuda_available() -> bool:
    if (other := _PLANNED_FOR.get()) is not None:
        return other[1]
    if "torch" not in sys.modules and _cpu_only_build():
        return False
    torch = torch_module()
    return bool(torch is not None and torch.cuda.is_available())


def load_for(backend: Backend) -> None:
    """Import torch before timing a torch backend, so no timed call pays for the import."""
    if backend != "numpy":
        torch_module()


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
        return "cpu" if torch_missing_reason() is None else "numpy"
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
        if torch is not None:  # without torch, CUDA work here is CuPy's, copied back (synchronised) already
            torch.cuda.synchronize()


def cuda_free_bytes() -> int | None:
    """Free memory on the current CUDA device, or None without CUDA."""
    if not cuda_available():
        return None
    torch = torch_module()
    assert torch is not None
    free, _total = torch.cuda.mem_get_info()
    return int(free)
