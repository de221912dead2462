"""Exact SVD of LoRA deltas from their factors B and A, never building the dense delta."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.data.workload import Factors, MatrixRef, ShapeGroup, Source
from harness.linalg.device import Backend, resolve_device, torch_missing_reason
from harness.linalg.factored import factored_svd, pad_spectrum
from harness.machine import MachineInfo
from harness.strategies import cost
from harness.strategies.base import ExecContext, OpRequest, OpResult, Strategy


class FactoredStrategy(Strategy):
    name = "factored"
    ops = frozenset({"svdvals", "svd", "svd_topk"})
    summary = "QR of B and A.T, then an r x r SVD: O((m+n) r^2), exact"
    needs_factors = True

    def backend(self, device: str) -> Backend:
        """torch when it is there (batched QR on CUDA or CPU), else numpy: both are exact."""
        return "numpy" if torch_missing_reason() is not None else resolve_device(device)

    def bytes_per_matrix(self, op: OpRequest, group: ShapeGroup, itemsize: int) -> int:
        m, n = group.shape
        return itemsize * 3 * (m + n) * (group.rank or min(m, n))

    def seconds_per_matrix(
        self, op: OpRequest, group: ShapeGroup, machine: MachineInfo, backend: Backend
    ) -> float:
        flops = cost.factored_flops(group.shape, group.rank or min(group.shape))
        rate = cost.device_flops_per_s(machine, backend) * cost.GEMM_EFFICIENCY
        return flops / rate + cost.PER_CALL_OVERHEAD_S

    def work(self, op: OpRequest, group: ShapeGroup, itemsize: int) -> cost.Work:
        return cost.factored_work(group.shape, group.rank or min(group.shape), op.wants_vectors, itemsize)

    def load(self, source: Source, refs: Sequence[MatrixRef], dtype: np.dtype) -> Factors:
        return source.load_factors(refs, dtype)

    def compute(self, op: OpRequest, data: Any, ctx: ExecContext) -> OpResult:
        """Values of the rank-r delta padded with its exact zeros; vectors of the rank-r part."""
        factors: Factors = data
        m, n = factors.B.shape[1], factors.A.shape[2]
        q = min(factors.B.shape[2], m, n)
        k = None if op.k is None else min(op.k, q)
        S, U, Vh = factored_svd(
            factors.B,
            factors.A,
            factors.scale.astype(factors.B.dtype),
            compute_uv=op.wants_vectors,
            k=k,
            backend=ctx.backend,
        )
        return OpResult(S=pad_spectrum(S, op.width((m, n))), U=U, Vh=Vh)
