"""What every strategy is: the ops it serves, whether it can run here, what it costs, and how.

Strategies are thin: the math lives in `harness.linalg`, the fan-out (a process pool, Dask) is an
executor the runner hands over through `ExecContext`, never something a strategy builds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from harness.data.workload import MatrixRef, ShapeGroup, Source, Workload
from harness.linalg.compiling import CompileLog, compile_missing_reason
from harness.linalg.device import Backend, load_for, resolve_device, torch_missing_reason
from harness.linalg.precision import NARROW
from harness.machine.info import MachineInfo
from harness.strategies import cost


@dataclass(frozen=True)
class OpRequest:
    """One op as a strategy sees it: svdvals, svd, or svd_topk with k."""

    op: str
    k: int | None = None

    @property
    def wants_vectors(self) -> bool:
        return self.op != "svdvals"

    def width(self, shape: tuple[int, int]) -> int:
        """How many singular values the op yields for one matrix."""
        return self.k if self.k is not None else min(shape)


@dataclass
class OpResult:
    """S: (b, q) descending; U: (b, m, q) and Vh: (b, q, n) for ops with vectors."""

    S: np.ndarray
    U: np.ndarray | None = None
    Vh: np.ndarray | None = None


@dataclass
class ExecContext:
    dtype: np.dtype  # what inputs are loaded in (harness.linalg.precision.storage_dtype)
    backend: Backend
    workers: int
    seed: int
    executor: Callable[[], Executor]
    precision: str = ""  # the arithmetic of the heavy products; "" is `dtype`'s own
    compiled: CompileLog | None = None  # torch.compile the torch kernels, logging each compilation

    @property
    def arithmetic(self) -> str:
        """The precision the strategy computes in: bfloat16, float16 and tf32 change its kernels."""
        return self.precision or str(self.dtype)


# What every strategy says about a precision it offers; a strategy overrides the narrow ones it has
FLOAT_MEANINGS = {
    "float64": "inputs and every operation in float64",
    "float32": "inputs and every operation in float32",
}
NO_NARROW = ("nothing in it multiplies in bf16 or fp16 (LAPACK has no such routine): rounding the inputs "
             "and solving in float32 would time float32")
TF32_CUDA_ONLY = "tf32 is a mode of CUDA tensor cores; this strategy runs on the CPU here"


class StrategyBase(ABC):
    """What every strategy declares, whatever the shape of its work."""

    name: ClassVar[str]
    ops: ClassVar[frozenset[str]]
    summary: ClassVar[str]
    needs_factors: ClassVar[bool] = False
    factor_forms: ClassVar[frozenset[str]] = frozenset({"lora"})  # MatrixRef.form it computes on
    factor_names: ClassVar[str] = "LoRA factors"
    uses_torch: ClassVar[bool] = False
    approximate: ClassVar[bool] = False
    fans_out: ClassVar[bool] = False  # spreads a call's matrices over the executor's workers
    # precision -> what it means for this strategy (inputs, products, where it widens); others are
    # not offered, and `not_offered` says why
    precisions: ClassVar[dict[str, str]] = FLOAT_MEANINGS
    compiles: ClassVar[str | None] = None  # what torch.compile wraps when `compile = true`, or None

    def unavailable(self, workload: Workload, device: str) -> str | None:
        """Why this strategy cannot run this workload on the requested device, or None."""
        if self.needs_factors and (why := workload.not_factored(self.factor_forms)) is not None:
            return f"needs {self.factor_names}, and {why}"
        if self.uses_torch:
            if (reason := torch_missing_reason()) is not None:
                return reason
            try:
                resolve_device(device)
            except RuntimeError as exc:
                return str(exc)
        return None

    def not_offered(self, precision: str, backend: Backend) -> str | None:
        """Why this strategy does not compute at `precision` on `backend`, or None when it does."""
        if precision == "tf32" and backend != "cuda":
            return TF32_CUDA_ONLY
        if precision not in self.precisions:
            return NO_NARROW if precision in NARROW else f"{self.name} has no {precision} kernel"
        return None

    def not_compiled(self, precision: str, backend: Backend) -> str | None:
        """Why `compile = true` gives this strategy no compiled variant at `precision`, or None."""
        if self.compiles is None:
            return "no torch code to compile (numpy, LAPACK or SciPy throughout)"
        if backend == "numpy" and precision not in NARROW:
            return f"at {precision} it runs in numpy here: no torch code to compile"
        return compile_missing_reason("cpu" if backend == "numpy" else backend)

    def backend(self, device: str) -> Backend:
        """Where the math runs: numpy strategies ignore `device`; torch ones resolve it."""
        return resolve_device(device) if self.uses_torch else "numpy"

    def warm(self, backend: Backend, source: Source | None = None) -> None:
        """Import (and compile) what a first call on `source` would (on any source when None), so
        that no timed call pays for it."""
        load_for(backend)

    def imports(self, backend: Backend) -> tuple[str, ...]:
        """What :meth:`warm` imports (or compiles) on `backend`, for the progress display."""
        return () if backend == "numpy" else ("torch",)

    def error_bound(self, op: OpRequest, shape: tuple[int, int], precision: str = "float64") -> float | None:
        """The largest error this strategy can make on any m x n matrix, whatever its spectrum,
        relative to sigma_1 (the measure verification uses), where its method adds to LAPACK's
        round-off in the run's dtype (or at a narrow `precision`); None where it does not. The planner leaves a strategy out
        of an analysis whose tolerance is below its bound."""
        return None


class Strategy(StrategyBase):
    """A per-matrix strategy: the runner hands it chunks of one shape group."""

    def bytes_per_matrix(self, op: OpRequest, group: ShapeGroup, itemsize: int) -> int:
        """Working memory one matrix of the group needs; sizes the batches."""
        return cost.dense_bytes(op.wants_vectors, group.shape, itemsize)

    def work(self, op: OpRequest, group: ShapeGroup, itemsize: int) -> cost.Work:
        """Flops and least bytes moved per matrix, for the roofline: a dense SVD's by default."""
        return cost.dense_work(group.shape, op.wants_vectors, itemsize)

    def costs_by_rank(self, op: OpRequest, group: ShapeGroup, itemsize: int) -> bool:
        """Whether its work on the group grows with the LoRA rank (factored's does; a dense SVD's does
        not): the wisdom keys a measurement by rank only where it does, so a rank-blind strategy
        has one figure per shape (numpy on 512x512 read 45.4 ms at rank 16, 36.2 ms elsewhere)."""
        if group.rank is None:
            return False
        other = replace(group, rank=group.rank + 1)
        return self.work(op, other, itemsize).flops != self.work(op, group, itemsize).flops

    @abstractmethod
    def seconds_per_matrix(
        self, op: OpRequest, group: ShapeGroup, machine: MachineInfo, backend: Backend
    ) -> float:
        """A rough estimate the planner compares across strategies."""

    def load(self, source: Source, refs: Sequence[MatrixRef], dtype: np.dtype) -> Any:
        """The input this strategy computes on; loading is not part of the timed work."""
        return source.load_dense(refs, dtype)

    @abstractmethod
    def compute(self, op: OpRequest, data: Any, ctx: ExecContext) -> OpResult:
        """The timed work."""
