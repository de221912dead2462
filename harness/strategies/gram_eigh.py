"""Dense svdvals and svd_topk through the float64 Gram of the smaller side and a symmetric
eigensolve: faster than a bidiagonalisation, with an error bounded relative to sigma_1 (see
harness.linalg.gram_svd), so the planner uses it only where its tolerance allows that bound."""

from __future__ import annotations

from typing import Any

from harness.data.workload import ShapeGroup, Source
from harness.linalg.device import Backend, resolve_device, torch_missing_reason
from harness.linalg.gram_svd import error_bound, gram_svd, gram_svdvals
from harness.machine.info import MachineInfo
from harness.strategies import cost
from harness.strategies.base import ExecContext, OpRequest, OpResult, Strategy

NARROW_GRAM = ("inputs rounded to {p} and the Gram's products in {p} through torch (float32 accumulation "
               "inside the GEMM, output rounded to {p}), widened to float64 for LAPACK's eigensolve (LAPACK "
               "has no {p}); top-k's other side formed in float64 from the rounded inputs")


class GramEighStrategy(Strategy):
    name = "gram_eigh"
    ops = frozenset({"svdvals", "svd_topk"})
    summary = ("float64 Gram of the smaller side (syrk) and its symmetric eigensolve; error <= "
               "sqrt(c eps64) of sigma_1, so tiny singular values lose their relative accuracy")
    precisions = {
        "float64": "float64 inputs, float64 Gram and eigensolve",
        "float32": "float32 inputs, Gram products exact in float64, float64 eigensolve",
        "bfloat16": NARROW_GRAM.format(p="bfloat16"),
        "float16": NARROW_GRAM.format(p="float16"),
        "tf32": "float32 inputs, the Gram's products on TF32 tensor cores, float64 eigensolve",
    }
    compiles = "the cast to the narrow precision, the Gram product and its widening (narrow precisions)"

    def backend(self, device: str) -> Backend:
        """CUDA when asked for or found ("auto"); else numpy on the CPU (its syrk and dsyevd),
        which spares a run torch's import (1.3-2.6 s)."""
        if device == "numpy" or torch_missing_reason() is not None:
            return "numpy"
        return "cuda" if resolve_device(device) == "cuda" else "numpy"

    def warm(self, backend: Backend, source: Source | None = None) -> None:
        super().warm(backend, source)
        if backend == "numpy":
            import scipy.linalg  # noqa: F401  (top-k eigenpairs: dsyevr on an index range)

    def imports(self, backend: Backend) -> tuple[str, ...]:
        return super().imports(backend) if backend != "numpy" else ("scipy.linalg",)

    def error_bound(self, op: OpRequest, shape: tuple[int, int], precision: str = "float64") -> float | None:
        return error_bound(shape, precision)

    def bytes_per_matrix(self, op: OpRequest, group: ShapeGroup, itemsize: int) -> int:
        """The input, one float64 copy of it and the p x p float64 Gram, with its eigenvectors
        for top-k (the copy is one matrix's on the CPU, the whole batch's on CUDA)."""
        m, n = group.shape
        p = min(m, n)
        return itemsize * m * n + 8 * (m * n + p * p * (2 if op.wants_vectors else 1))

    def work(self, op: OpRequest, group: ShapeGroup, itemsize: int) -> cost.Work:
        return cost.gram_eigh_work(group.shape, op.k, itemsize)

    def seconds_per_matrix(
        self, op: OpRequest, group: ShapeGroup, machine: MachineInfo, backend: Backend
    ) -> float:
        """The Gram at float64 GEMM speed, the eigensolve at LAPACK's (on CUDA: all at the
        device's SVD rate, a lower bound on its advantage until measured)."""
        p, q = min(group.shape), max(group.shape)
        flops = cost.gram_eigh_flops(group.shape, op.k)
        if backend == "cuda":
            return flops / cost.device_flops_per_s(machine, backend)
        gram = p * (p + 1.0) * q
        return (gram / (cost.FLOAT64_GEMM_FLOPS_PER_CORE * machine.cores)
                + (flops - gram) / cost.cpu_flops_per_s(machine))

    def compute(self, op: OpRequest, data: Any, ctx: ExecContext) -> OpResult:
        precision = ctx.arithmetic
        if not op.wants_vectors:
            return OpResult(S=gram_svdvals(data, backend=ctx.backend, precision=precision, log=ctx.compiled))
        S, U, Vh = gram_svd(data, op.k or 1, backend=ctx.backend, precision=precision, log=ctx.compiled)
        return OpResult(S=S, U=U, Vh=Vh)
