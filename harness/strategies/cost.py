"""Flop counts and throughput assumptions behind the planner's estimates.

The throughputs were calibrated on a 2-core x86 CPU with OpenBLAS (numpy) and MKL (torch CPU):
3072x768 float32 svdvals took 0.19 s with numpy and 0.10 s batched in torch. The CUDA figure is
an assumption, not a measurement. Estimates only rank strategies; `harness run` measures them.
"""

from __future__ import annotations

from harness.linalg.device import Backend
from harness.machine import MachineInfo

CPU_GFLOPS_PER_CORE = 17.0  # LAPACK gesdd, numpy/OpenBLAS, effective
TORCH_CPU_SPEEDUP = 2.0  # batched torch.linalg on the CPU vs one numpy call per matrix
CUDA_GFLOPS = 400.0  # batched SVD on a datacenter GPU, effective: an assumption
GEMM_EFFICIENCY = 0.6  # randomized / factored kernels are GEMM- and QR-bound, small ones
PER_CALL_OVERHEAD_S = 2e-5  # Python and dispatch overhead per matrix in batched small kernels


def svd_flops(shape: tuple[int, int], vectors: bool) -> float:
    """Golub & Van Loan (5.4.9): bidiagonalisation, plus R-SVD accumulation for vectors."""
    big, small = max(shape), min(shape)
    if vectors:
        return 6.0 * big * small**2 + 20.0 * small**3
    return 4.0 * big * small**2 - 4.0 / 3.0 * small**3


def lanczos_flops(shape: tuple[int, int], k: int) -> float:
    """ARPACK on A^T A: about 50 k matrix-vector products of 2 m n flops each, observed."""
    m, n = shape
    return 2.0 * m * n * 50.0 * k


def randomized_flops(shape: tuple[int, int], q: int, niter: int) -> float:
    m, n = shape
    return 2.0 * m * n * q * (2 * niter + 2) + 4.0 * (m + n) * q * q


def factored_flops(shape: tuple[int, int], rank: int) -> float:
    """Two thin QRs of (m x r) and (n x r) and an r x r SVD."""
    m, n = shape
    return 4.0 * (m + n) * rank**2 + 22.0 * rank**3


def cpu_flops_per_s(machine: MachineInfo, cores: int | None = None) -> float:
    return CPU_GFLOPS_PER_CORE * 1e9 * (cores or machine.cores)


def device_flops_per_s(machine: MachineInfo, backend: Backend) -> float:
    """Effective SVD throughput of a backend."""
    if backend == "cuda":
        return CUDA_GFLOPS * 1e9
    if backend == "cpu":
        return cpu_flops_per_s(machine) * TORCH_CPU_SPEEDUP
    return cpu_flops_per_s(machine)


def dense_bytes(vectors: bool, shape: tuple[int, int], itemsize: int) -> int:
    """Input, a LAPACK copy, and U and Vh when asked for."""
    m, n = shape
    p = min(m, n)
    return itemsize * (2 * m * n + (m * p + p * n if vectors else p * p))


# Work around the analyses, for the whole-run estimate (2-core x86, measured on task_geometry)
TORCH_IMPORT_S = 1.5  # the first `import torch` of a process: 1.3-2.6 s
WORKER_START_S = 0.3  # a spawned worker importing numpy and the harness (in parallel)
SCALAR_ROW_S = 4e-5  # one scalar feature of one matrix, Python included
PAIR_ROW_S = 8e-6  # one pairwise feature row
FLOAT64_GEMM_FLOPS_PER_CORE = 30e9  # delta_cosine's float64 factor Grams
