"""The baseline: one LAPACK call per matrix, as most analysis scripts do it."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.data.workload import ShapeGroup
from harness.linalg.device import Backend
from harness.machine.info import MachineInfo
from harness.strategies import cost
from harness.strategies.base import ExecContext, OpRequest, OpResult, Strategy


def svd_one(W: np.ndarray, op: OpRequest) -> OpResult:
    """One matrix through numpy's gesdd; results carry a leading batch axis of 1."""
    if not op.wants_vectors:
        return OpResult(S=np.linalg.svd(W, compute_uv=False)[None])
    U, S, Vh = np.linalg.svd(W, full_matrices=False)
    q = op.width(W.shape)
    return OpResult(S=S[None, :q], U=U[None, :, :q], Vh=Vh[None, :q])


def stack_results(parts: list[OpResult]) -> OpResult:
    """Concatenate per-matrix (or per-chunk) results along the batch axis."""
    first = parts[0]
    return OpResult(
        S=np.concatenate([p.S for p in parts]),
        U=None if first.U is None else np.concatenate([p.U for p in parts]),
        Vh=None if first.Vh is None else np.concatenate([p.Vh for p in parts]),
    )


class NumpyStrategy(Strategy):
    name = "numpy"
    ops = frozenset({"svdvals", "svd"})
    summary = "np.linalg.svd one matrix at a time (the sequential baseline)"

    def seconds_per_matrix(
        self, op: OpRequest, group: ShapeGroup, machine: MachineInfo, backend: Backend
    ) -> float:
        return cost.svd_flops(group.shape, op.wants_vectors) / cost.cpu_flops_per_s(machine)

    def compute(self, op: OpRequest, data: Any, ctx: ExecContext) -> OpResult:
        return stack_results([svd_one(W, op) for W in data])
