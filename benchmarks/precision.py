"""The precision axis on task_geometry's own work: the Gram of one (layer, module) position of its
PCA (38 adapters of 3072 x 768 LoRA deltas; dual_gram over the dense deltas, factored_gram from
the factors) and the batched factored spectra of one (shape, rank) group (38 deltas, rank 16), at
float32 and bfloat16: seconds (time_*) and the error against float64 (track_error: max |G - G64|
/ max |G64| for the Grams, max |s - s64| / s64_1 for the spectra)."""

from __future__ import annotations

from concurrent.futures import Executor

import numpy as np

from harness.base.executors import SerialExecutor
from harness.data.layout import AdapterLayout
from harness.data.registry import build_source
from harness.data.workload import Workload
from harness.linalg.device import torch_module
from harness.linalg.precision import storage_dtype
from harness.specs.reading import load_spec
from harness.strategies.base import ExecContext, OpRequest, Strategy
from harness.strategies.gram import GramStrategy
from harness.strategies.registry import STRATEGIES

SPEC = "configs/task_geometry.toml"
BUDGET = 1 << 30


def _workload() -> Workload:
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    spec = load_spec(root / SPEC, ["data.layers=1"])
    return Workload.from_source(build_source(spec.data, spec.experiment.seed, root))


def _context(precision: str, backend: str) -> ExecContext:
    def executor() -> Executor:
        return SerialExecutor()

    return ExecContext(storage_dtype(precision), backend, 1, 0, executor, precision=precision)  # type: ignore[arg-type]


def _refuse_without_torch(precision: str) -> None:
    if precision == "bfloat16" and torch_module() is None:
        raise NotImplementedError("bfloat16 products need torch")


class PcaGram:
    """One position's Gram of task_geometry's 38 adapters, by strategy and precision."""

    params = (["dual_gram", "factored_gram"], ["float32", "bfloat16"])
    param_names = ["strategy", "precision"]
    timeout = 300

    def setup(self, strategy: str, precision: str) -> None:
        _refuse_without_torch(precision)
        workload = _workload()
        self.source = workload.source
        self.layout = AdapterLayout.from_workload(workload).at(0)
        self.strategy = STRATEGIES[strategy]
        assert isinstance(self.strategy, GramStrategy)
        self.ctx = _context(precision, "cpu" if torch_module() is not None else "numpy")
        self.grams()  # imports, kernels, the source's first loads

    def grams(self) -> np.ndarray:
        return self.strategy.grams(self.source, self.layout, self.ctx, BUDGET)  # type: ignore[union-attr]

    def time_gram(self, strategy: str, precision: str) -> None:
        self.grams()

    def track_error(self, strategy: str, precision: str) -> float:
        exact = STRATEGIES["factored_gram"].grams(self.source, self.layout, _context("float64", "numpy"),  # type: ignore[union-attr]
                                                  BUDGET)
        return float(np.max(np.abs(self.grams() - exact)) / np.max(np.abs(exact)))

    track_error.unit = "relative error"  # type: ignore[attr-defined]


class FactoredSpectra:
    """All singular values of one (shape, rank) group of task_geometry (38 deltas of 3072 x 768,
    rank 16) by the factored strategy, by precision."""

    params = (["float32", "bfloat16"],)
    param_names = ["precision"]
    timeout = 300

    def setup(self, precision: str) -> None:
        _refuse_without_torch(precision)
        workload = _workload()
        group = workload.groups()[0]
        self.strategy = STRATEGIES["factored"]
        assert isinstance(self.strategy, Strategy)
        self.op = OpRequest("svdvals")
        self.data = self.strategy.load(workload.source, group.refs, storage_dtype(precision))
        self.exact = self.strategy.compute(
            self.op, self.strategy.load(workload.source, group.refs, np.dtype(np.float64)), _context("float64", "numpy")).S
        self.ctx = _context(precision, "numpy")
        self.values()

    def values(self) -> np.ndarray:
        return self.strategy.compute(self.op, self.data, self.ctx).S  # type: ignore[union-attr]

    def time_values(self, precision: str) -> None:
        self.values()

    def track_error(self, precision: str) -> float:
        S = self.values()
        q = S.shape[1]
        return float(np.max(np.abs(S - self.exact[:, :q]) / self.exact[:, :1]))

    track_error.unit = "relative error"  # type: ignore[attr-defined]
