"""One batched torch.linalg call per chunk of a shape group, on the CPU or CUDA."""

from __future__ import annotations

from typing import Any

from harness.data.workload import ShapeGroup
from harness.linalg import dense
from harness.linalg.device import Backend
from harness.machine.info import MachineInfo
from harness.strategies import cost
from harness.strategies.base import ExecContext, OpRequest, OpResult, Strategy


class TorchStrategy(Strategy):
    name = "torch"
    ops = frozenset({"svdvals", "svd", "svd_topk"})
    summary = "torch.linalg batched over each shape group (top-k: exact, then truncated)"
    uses_torch = True
    compiles = "torch.linalg.svdvals / svd of each chunk"

    def seconds_per_matrix(
        self, op: OpRequest, group: ShapeGroup, machine: MachineInfo, backend: Backend
    ) -> float:
        return cost.svd_flops(group.shape, op.wants_vectors) / cost.device_flops_per_s(
            machine, backend
        )

    def compute(self, op: OpRequest, data: Any, ctx: ExecContext) -> OpResult:
        if ctx.compiled is not None:
            S, U, Vh = dense.compiled_svd(data, op.k, op.wants_vectors, ctx.backend, ctx.compiled)
            return OpResult(S=S, U=U, Vh=Vh)
        if not op.wants_vectors:
            return OpResult(S=dense.svdvals(data, backend=ctx.backend))
        S, U, Vh = dense.svd(data, k=op.k, backend=ctx.backend)
        return OpResult(S=S, U=U, Vh=Vh)
