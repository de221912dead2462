"""The float32 Gram of n long rows (dual_gram's inner loop, op pca) by each CPU route: the
compiled kernel (numba) against MKL's batched product (torch) and numpy's syrk, for 18 and 38
adapters. In memory, so it tracks the arithmetic; benchmarks/gram_memmap.py adds the file."""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np

from harness.linalg.gram import accumulate_gram
from harness.linalg.device import torch_module

VALUES = 1 << 25  # 128 MiB of float32 per case, whatever n


class GramRoutes:
    params = (["compiled", "torch", "numpy"], [18, 38])
    param_names = ["route", "n"]
    timeout = 120

    def setup(self, route: str, n: int) -> None:
        if route == "compiled" and find_spec("numba") is None:
            raise NotImplementedError("numba is not installed (the `fast` extra)")
        if route == "torch" and torch_module() is None:
            raise NotImplementedError("torch is not installed")
        rng = np.random.default_rng(0)
        self.X = rng.standard_normal((n, VALUES // n), dtype=np.float32) + np.float32(0.5)
        self.backend = "cpu" if route == "torch" else "numpy"
        self.compiled = route == "compiled"
        accumulate_gram([self.X[:, :4096]], backend=self.backend, compiled=self.compiled)  # type: ignore[arg-type]  # JIT, threads

    def _gram(self) -> np.ndarray:
        return accumulate_gram([self.X], backend=self.backend, compiled=self.compiled)  # type: ignore[arg-type]

    def time_gram(self, route: str, n: int) -> None:
        self._gram()

    def track_error(self, route: str, n: int) -> float:
        """max |G - G64| / (|x_i| |x_j|) against a float64 product of the first 2**20 columns."""
        X = self.X[:, : 1 << 20]
        X64 = X.astype(np.float64)
        exact = X64 @ X64.T
        G = accumulate_gram([X], backend=self.backend, compiled=self.compiled)  # type: ignore[arg-type]
        norms = np.sqrt(np.diag(exact))
        return float(np.max(np.abs(G - exact) / np.outer(norms, norms)))

    track_error.unit = "relative error"  # type: ignore[attr-defined]
