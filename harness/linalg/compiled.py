"""The numba kernels, which are optional (the ``fast`` extra): each caller has a numpy path."""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

__all__ = ["load_kernel"]


@cache
def load_kernel(name: str) -> ModuleType | None:
    """``harness.linalg.<name>`` when numba is installed, else None; looked up once, since a
    failed import is retried in full each time it is asked for (hot loops ask per piece)."""
    try:
        return importlib.import_module(f"harness.linalg.{name}")
    except ImportError:
        return None
