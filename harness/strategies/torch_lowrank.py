"""Randomized top-k with torch.svd_lowrank, batched per shape group; approximate by design."""

from __future__ import annotations

from typing import Any

from harness.data.workload import ShapeGroup
from harness.linalg import dense
from harness.linalg.device import Backend
from harness.machine.info import MachineInfo
from harness.strategies import cost
from harness.strategies.base import ExecContext, OpRequest, OpResult, Strategy

OVERSAMPLE = 10
NITER = 2


class TorchLowrankStrategy(Strategy):
    name = "torch_lowrank"
    ops = frozenset({"svd_topk"})
    summary = (
        f"torch.svd_lowrank, seeded, q = k + {OVERSAMPLE} oversampling, {NITER} power iterations"
    )
    uses_torch = True
    approximate = True
    compiles = "torch.svd_lowrank: the sketch, power iterations, QRs and the small SVD"

    def bytes_per_matrix(self, op: OpRequest, group: ShapeGroup, itemsize: int) -> int:
        m, n = group.shape
        q = min((op.k or 1) + OVERSAMPLE, m, n)
        return itemsize * (m * n + 4 * (m + n) * q)

    def seconds_per_matrix(
        self, op: OpRequest, group: ShapeGroup, machine: MachineInfo, backend: Backend
    ) -> float:
        q = min((op.k or 1) + OVERSAMPLE, *group.shape)
        flops = cost.randomized_flops(group.shape, q, NITER)
        return flops / (cost.device_flops_per_s(machine, backend) * cost.GEMM_EFFICIENCY)

    def work(self, op: OpRequest, group: ShapeGroup, itemsize: int) -> cost.Work:
        return cost.randomized_work(group.shape, min((op.k or 1) + OVERSAMPLE, *group.shape), NITER, itemsize)

    def compute(self, op: OpRequest, data: Any, ctx: ExecContext) -> OpResult:
        S, U, Vh = dense.svd_lowrank(
            data, op.k or 1, oversample=OVERSAMPLE, niter=NITER, seed=ctx.seed, backend=ctx.backend,
            log=ctx.compiled,
        )
        return OpResult(S=S, U=U, Vh=Vh)
