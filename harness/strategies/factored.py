"""Exact SVD of factored deltas, never building the dense delta: LoRA (and LoHa) products
scale * B @ A from B and A, LoKr Kronecker products scale * kron(W1, W2) from W1 and W2."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.data.workload import Factors, KronFactors, MatrixRef, ShapeGroup, Source
from harness.linalg.device import Backend, resolve_device, torch_missing_reason
from harness.linalg.factored import factored_svd, gram_route, pad_spectrum
from harness.linalg.kron import kron_svd
from harness.machine.info import MachineInfo
from harness.strategies import cost
from harness.strategies.base import ExecContext, OpRequest, OpResult, Strategy


class FactoredStrategy(Strategy):
    name = "factored"
    ops = frozenset({"svdvals", "svd", "svd_topk"})
    summary = ("LoRA: float64 Grams of B and A (float32) or QRs (float64), then r x r eigensolves or SVDs, "
               "batched over a (shape, rank) group, O((m+n) r^2); LoKr: SVDs of both factors; exact")
    needs_factors = True
    factor_forms = frozenset({"lora", "kron"})
    factor_names = "LoRA or LoKr factors"
    precisions = {
        "float64": "float64 factors, Householder QRs and the r x r core SVD in float64",
        "float32": "float32 factors, their r x r Grams summed in float64, float64 eigensolves",
        "bfloat16": ("factors rounded to bfloat16, the r x r Grams' products in bfloat16 through torch (float32 "
                     "accumulation, output rounded to bfloat16), widened to float64 for the eigensolves (LAPACK "
                     "has no bfloat16); LoKr factors' SVDs stay float32"),
        "float16": ("factors rounded to float16, the Grams' products in float16 (float32 accumulation), float64 "
                    "eigensolves"),
        "tf32": "float32 factors, the Grams' products on TF32 tensor cores, float64 eigensolves",
    }
    compiles = "the casts and the batched r x r Gram products (narrow precisions)"

    def backend(self, device: str) -> Backend:
        """CUDA when asked for or found ("auto"); else numpy, unless torch on the CPU is asked for
        by name ("cpu": its batched QR for float64 factors). float32 factors take the Gram route,
        whose CPU work is numpy's either way, so "auto" spares a run torch's import (1.3-2.6 s)."""
        if torch_missing_reason() is not None:
            return "numpy"
        backend = resolve_device(device)
        return backend if backend == "cuda" or device == "cpu" else "numpy"

    def bytes_per_matrix(self, op: OpRequest, group: ShapeGroup, itemsize: int) -> int:
        if group.kron is not None:
            return 3 * int(self.work(op, group, itemsize).bytes)
        m, n = group.shape
        return itemsize * 3 * (m + n) * (group.rank or min(m, n))

    def seconds_per_matrix(
        self, op: OpRequest, group: ShapeGroup, machine: MachineInfo, backend: Backend
    ) -> float:
        flops = self.work(op, group, 8).flops  # flops do not depend on the item size
        rate = cost.device_flops_per_s(machine, backend) * cost.GEMM_EFFICIENCY
        return flops / rate + cost.PER_CALL_OVERHEAD_S

    def work(self, op: OpRequest, group: ShapeGroup, itemsize: int) -> cost.Work:
        if group.kron is not None:
            return cost.kron_work(group.kron, op.wants_vectors, itemsize)
        rank = group.rank or min(group.shape)
        if gram_route(np.dtype(f"f{itemsize}")):
            k = None if not op.wants_vectors else op.k or min(rank, *group.shape)
            return cost.factored_gram_work(group.shape, rank, k, itemsize)
        return cost.factored_work(group.shape, rank, op.wants_vectors, itemsize)

    def load(self, source: Source, refs: Sequence[MatrixRef], dtype: np.dtype) -> Factors | KronFactors:
        if refs[0].kron is not None:
            return source.load_kron(refs, dtype)
        return source.load_factors(refs, dtype)

    def compute(self, op: OpRequest, data: Any, ctx: ExecContext) -> OpResult:
        """Values of the low-rank (or Kronecker) delta padded with its exact zeros; vectors of
        its nonzero part. Kronecker factors are small: their SVDs run in numpy."""
        if isinstance(data, KronFactors):
            (m1, n1), (m2, n2) = data.W1.shape[1:], data.W2.shape[1:]
            shape, q = (m1 * m2, n1 * n2), min(m1, n1) * min(m2, n2)
            k = None if op.k is None else min(op.k, q)
            S, U, Vh = kron_svd(data.W1, data.W2, data.scale, compute_uv=op.wants_vectors, k=k)
            return OpResult(S=pad_spectrum(S, op.width(shape)), U=U, Vh=Vh)
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
            precision=ctx.arithmetic,
            log=ctx.compiled,
        )
        return OpResult(S=pad_spectrum(S, op.width((m, n))), U=U, Vh=Vh)
