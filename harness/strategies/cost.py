"""Flop and byte counts of every kernel, and the throughput model behind the planner's estimates.

The counts are the roofline's (harness.machine.roofline): standard operation counts, and the least
traffic a kernel needs (every input read once per pass it must make, every output written once).
The throughputs are the fallback where the machine's wisdom (harness.machine.wisdom) has no measurement:
fitted on a 2-core x86 CPU with OpenBLAS (numpy) and MKL (torch CPU), where 3072x768 float32
svdvals took 0.19 s with numpy and 0.10 s batched in torch. The CUDA figure was measured on an
H100 (torch 2.11, cuSOLVER gesvd, the driver the harness uses there: 65 ms per 3072x768 matrix,
6.6 GFLOP, in batches of 38).
"""

from __future__ import annotations

from typing import NamedTuple

from harness.linalg.device import Backend
from harness.machine.info import MachineInfo

CPU_GFLOPS_PER_CORE = 17.0  # LAPACK gesdd, numpy/OpenBLAS, effective
TORCH_CPU_SPEEDUP = 2.0  # batched torch.linalg on the CPU vs one numpy call per matrix
CUDA_GFLOPS = 100.0  # batched gesvd on an H100, effective (measured, see above)
GEMM_EFFICIENCY = 0.6  # randomized / factored kernels are GEMM- and QR-bound, small ones
PER_CALL_OVERHEAD_S = 2e-5  # Python and dispatch overhead per matrix in batched small kernels


class Work(NamedTuple):
    """What one matrix (or one PCA position) costs: floating-point operations and the bytes a
    kernel must move at least."""

    flops: float
    bytes: float


def svd_flops(shape: tuple[int, int], vectors: bool) -> float:
    """Golub & Van Loan (5.4.9): bidiagonalisation, plus R-SVD accumulation for vectors."""
    big, small = max(shape), min(shape)
    if vectors:
        return 6.0 * big * small**2 + 20.0 * small**3
    return 4.0 * big * small**2 - 4.0 / 3.0 * small**3


def lanczos_flops(shape: tuple[int, int], k: int) -> float:
    """The planner's effective count for ARPACK: 50 k products' worth of 2 m n flops, fitted to
    its times (svds of 3072x768, k=3: 20.8 ms modelled, 19.6 ms measured on 2 cores). It runs
    slower per flop than LAPACK's blocked kernels, so it is not the roofline's count
    (arpack_products): that one is what ARPACK does at least, this one what it costs."""
    m, n = shape
    return 2.0 * m * n * 50.0 * k


def arpack_products(shape: tuple[int, int], k: int) -> int:
    """Products with A or A^T that scipy's svds (ARPACK on A^T A) makes at least: one Lanczos
    factorisation of ncv = max(2k + 1, 20) steps (two products each), and the k Ritz vectors'
    checks. Counted with a LinearOperator: 43, 44, 45 for k = 1, 2, 3 on rank-16 LoRA deltas of
    3072x768, which converge in that one factorisation; slowly decaying spectra restart (79 for
    k = 3 on a 0.97^i spectrum, 211 on a Gaussian matrix), so the achieved rate is a floor there.
    The old count, 50 k products, put svds at 224-327% of its roof."""
    ncv = min(min(shape), max(2 * k + 1, 20))
    return 2 * ncv + k + 2


def randomized_flops(shape: tuple[int, int], q: int, niter: int) -> float:
    """Halko, Martinsson & Tropp (2011), alg. 4.4: 2 niter + 2 products with an m x n matrix
    and a q-column sketch, and the thin QRs and small SVD of (m + n) x q panels."""
    m, n = shape
    return 2.0 * m * n * q * (2 * niter + 2) + 4.0 * (m + n) * q * q


def factored_flops(shape: tuple[int, int], rank: int) -> float:
    """Two Householder QRs of (m x r) and (n x r), 2 (m + n) r^2 (Trefethen & Bau, lecture
    10), the products with Q for the vectors, as much again, and an r x r SVD, ~22 r^3 (Golub &
    Van Loan 5.4.9)."""
    m, n = shape
    return 4.0 * (m + n) * rank**2 + 22.0 * rank**3


def factored_gram_flops(shape: tuple[int, int], rank: int, k: int | None) -> float:
    """The float64 Grams B.T B and A A.T, 2 (m + n) r^2; two r x r symmetric eigensolves with
    vectors, ~9 r^3 each (Golub & Van Loan 8.3), and forming F G_A F.T, 4 r^3; with k vectors,
    U = B Y and Vh = X A, 2 (m + n) r k."""
    m, n = shape
    return 2.0 * (m + n) * rank**2 + 22.0 * rank**3 + (2.0 * (m + n) * rank * k if k else 0.0)


def gram_eigh_flops(shape: tuple[int, int], k: int | None) -> float:
    """The float64 Gram of the smaller side p = min(m, n) over q = max(m, n), p (p + 1) q with
    symmetry (syrk), and its eigenvalues, ~4/3 p^3 for the tridiagonal reduction (Golub & Van Loan
    8.3); with k vectors, the reduction's back-transformation of k eigenvectors, 2 p^2 k, and the
    other side's vectors, 2 p q k."""
    p, q = min(shape), max(shape)
    return p * (p + 1.0) * q + 4.0 / 3.0 * p**3 + (2.0 * p * k * (p + q) if k else 0.0)


def gram_eigh_work(shape: tuple[int, int], k: int | None, itemsize: int) -> Work:
    """The matrix read once (widened in cache, one matrix at a time); the values, and k triplets,
    written once."""
    m, n = shape
    out = (k or min(shape)) + ((m + n) * k if k else 0)
    return Work(gram_eigh_flops(shape, k), itemsize * (m * n + out))


def dense_work(shape: tuple[int, int], vectors: bool, itemsize: int) -> Work:
    """A LAPACK-style SVD: the matrix read once, the values (and U, Vh) written once."""
    m, n = shape
    p = min(m, n)
    return Work(svd_flops(shape, vectors), itemsize * (m * n + p + ((m + n) * p if vectors else 0)))


def lanczos_work(shape: tuple[int, int], k: int, itemsize: int) -> Work:
    """Each of ARPACK's products (arpack_products) reads the whole matrix: 2 m n flops per m n
    items read."""
    m, n = shape
    products = arpack_products(shape, k)
    return Work(2.0 * m * n * products, float(itemsize * m * n * products))


def randomized_work(shape: tuple[int, int], q: int, niter: int, itemsize: int) -> Work:
    m, n = shape
    return Work(randomized_flops(shape, q, niter), itemsize * (m * n * (2 * niter + 2) + 2 * (m + n) * q))


def factored_work(shape: tuple[int, int], rank: int, vectors: bool, itemsize: int) -> Work:
    """The factors read once; the outputs written once."""
    m, n = shape
    out = rank + ((m + n) * rank if vectors else 0)
    return Work(factored_flops(shape, rank), itemsize * ((m + n) * rank + out))


def factored_gram_work(shape: tuple[int, int], rank: int, k: int | None, itemsize: int) -> Work:
    """The factors read once (widened in cache, never written back); k triplets written once."""
    m, n = shape
    out = (k or rank) + ((m + n) * k if k else 0)
    return Work(factored_gram_flops(shape, rank, k), itemsize * ((m + n) * rank + out))


def kron_work(kron: tuple[int, int, int, int], vectors: bool, itemsize: int) -> Work:
    """kron(W1, W2): the two factors' SVDs, and for vectors the q kept Kronecker columns formed."""
    m1, n1, m2, n2 = kron
    q = min(m1, n1) * min(m2, n2)
    formed = (m1 * m2 + n1 * n2) * q if vectors else 0
    flops = svd_flops((m1, n1), vectors) + svd_flops((m2, n2), vectors) + formed
    return Work(flops, itemsize * (m1 * n1 + m2 * n2 + q + formed))


def gram_work(n: int, d: int, itemsize: int) -> Work:
    """The Gram of n rows of length d: n (n + 1) d flops with symmetry (syrk), the data read once."""
    return Work(float(n * (n + 1) * d), float(itemsize * n * d))


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
# a timed point's worker in one process of the benchmark: forked from the forkserver, ready, its answers
# verified (walk 10: 3.5-7.1 s of one-off work a run, 0.2-0.25 s a worker at slowdown 2)
TIMING_WORKER_S = 0.12
SCALAR_ROW_S = 4e-5  # one scalar feature of one matrix, Python included
PAIR_ROW_S = 8e-6  # one pairwise feature row
FLOAT64_GEMM_FLOPS_PER_CORE = 30e9  # delta_cosine's float64 factor Grams
