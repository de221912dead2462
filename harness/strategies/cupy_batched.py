"""Dense SVDs batched on a GPU through CuPy: the seeds' own answer for many small SVDs, where a
GPU and CuPy exist; unavailable, with the reason, everywhere else."""

from __future__ import annotations

from typing import Any

from harness.data.workload import ShapeGroup, Source, Workload
from harness.linalg import cupy_svd
from harness.linalg.device import Backend
from harness.machine.info import MachineInfo
from harness.strategies import cost
from harness.strategies.base import ExecContext, OpRequest, OpResult, Strategy


class CupyStrategy(Strategy):
    name = "cupy"
    ops = frozenset({"svdvals", "svd", "svd_topk"})
    summary = "cupy.linalg.svd over each chunk's stack on the GPU (cuSOLVER; top-k: exact, then truncated)"
    precisions = {
        "float64": "float64 inputs and cuSOLVER's float64 SVD",
        "float32": "float32 inputs and cuSOLVER's float32 SVD",
    }

    def unavailable(self, workload: Workload, device: str) -> str | None:
        if device in ("cpu", "numpy"):
            return f"it runs on a GPU, and execution.device is {device!r}"
        return cupy_svd.cupy_missing_reason()

    def backend(self, device: str) -> Backend:
        return "cuda"

    def warm(self, backend: Backend, source: Source | None = None) -> None:
        """Import CuPy and create its cuSOLVER handle before any timed call."""
        cupy = cupy_svd.cupy_module()
        if cupy is not None:
            cupy.linalg.svd(cupy.ones((1, 2, 2), dtype=cupy.float32), compute_uv=False)

    def imports(self, backend: Backend) -> tuple[str, ...]:
        return ("cupy",)

    def seconds_per_matrix(
        self, op: OpRequest, group: ShapeGroup, machine: MachineInfo, backend: Backend
    ) -> float:
        return cost.svd_flops(group.shape, op.wants_vectors) / cost.device_flops_per_s(machine, "cuda")

    def compute(self, op: OpRequest, data: Any, ctx: ExecContext) -> OpResult:
        S, U, Vh = cupy_svd.svd(data, k=op.k, vectors=op.wants_vectors)
        return OpResult(S=S, U=U, Vh=Vh)
