"""The r x r Grams G_B = B.T B and G_A = A A.T of a stack of LoRA factors, in float64: what the
factored routes (harness.linalg.factored) build every spectrum of a delta from, read once from the
factors at memory speed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from harness.linalg.device import Backend, as_backend, to_numpy, torch_module
from harness.linalg.parallel import kernel_threads
from harness.linalg.precision import low, narrow_gram

GRAM_PIECE = 8  # deltas widened to float64 together, a slice of their rows at a time
SCRATCH_BYTES = 512 * 1024  # a thread's widened slice: within a core's L2 (1 MiB here), made once
_LOCAL = threading.local()
# A batch of fewer factor values than this is not split over threads: asking how many (~1 ms),
# starting them and their scratches cost more than they save (32 deltas of 1024+1024 at r = 16,
# 1 M values: 0.058 ms a delta on 2 threads, 0.031 on one); ~1 ns a value here, ~4 ms alone
SPLIT_VALUES = 4_000_000


def _scratch(least: int) -> np.ndarray:
    """This thread's float64 scratch of SCRATCH_BYTES (or `least` values, if more), made once:
    allocated a call at a time, the widened pieces of an 8192-wide delta (2 MB) were fresh
    mappings whose page faults cost more than the products (a 2-delta call: 1.0 ms a delta,
    against 0.24 ms in this scratch). The calling thread keeps its scratch from call to call; a
    batch split over threads (SPLIT_VALUES and more) makes one a thread, small beside its work."""
    scratch = getattr(_LOCAL, "scratch", None)
    if scratch is None or scratch.size < least:
        scratch = _LOCAL.scratch = np.empty(max(least, SCRATCH_BYTES // 8))
    return scratch


def _factor_grams_numpy(B: np.ndarray, A: np.ndarray, threads: Callable[[], int]) -> tuple[np.ndarray, np.ndarray]:
    """float64 G_B = B.T B and G_A = A A.T, (k, r, r) each, of float32 (or narrower) stacks:
    GRAM_PIECE deltas at a time, a slice of their rows (of A's columns) at a time widened into a
    per-thread scratch that stays in cache and summed (a widened copy of the whole stack cost more
    than the products), the batch split over `threads()` threads; asked only for a batch worth
    splitting (SPLIT_VALUES). Its cost is then linear in m + n at every width: 0.032,
    0.062, 0.12, 0.24 ms a delta at m = n = 1024..8192, r = 16 (2 deltas a call)."""
    k, m, r = B.shape
    n = A.shape[-1]
    GB, GA = np.zeros((k, r, r)), np.zeros((k, r, r))

    def grams(lo: int, hi: int) -> None:
        scratch = _scratch(GRAM_PIECE * r)  # a slice of one row at least
        for i in range(lo, hi, GRAM_PIECE):
            j = min(i + GRAM_PIECE, hi)
            step = max(1, scratch.size // ((j - i) * r))  # rows of B (columns of A) a slice
            for s in range(0, m, step):
                b = scratch[: (j - i) * min(step, m - s) * r].reshape(j - i, -1, r)
                np.copyto(b, B[i:j, s:s + step])
                GB[i:j] += b.swapaxes(-1, -2) @ b
            for s in range(0, n, step):
                a = scratch[: (j - i) * r * min(step, n - s)].reshape(j - i, r, -1)
                np.copyto(a, A[i:j, :, s:s + step])
                GA[i:j] += a @ a.swapaxes(-1, -2)

    split = k >= 2 * GRAM_PIECE and k * (m + n) * r >= SPLIT_VALUES
    count = max(1, min(threads(), k // GRAM_PIECE)) if split else 1
    cuts = np.linspace(0, k, count + 1).astype(int)
    if count == 1:
        grams(0, k)
    else:
        with ThreadPoolExecutor(count) as pool:
            list(pool.map(grams, cuts[:-1], cuts[1:]))
    return GB, GA


def factor_grams(B: Any, A: Any, backend: Backend = "numpy", precision: str = "float64",
                 log: Any = None) -> tuple[Any, Any]:
    """The r x r Grams G_B = B.T B and G_A = A A.T of a stack of factors, summed in float64.

    Products of float32 values are exact in float64, so each entry carries float64's round-off
    only: |G - fl(G)| <= m eps64 |B|.T |B| (Higham, Accuracy and Stability, 3.5).

    Parameters
    ----------
    B : array of shape (batch, m, r)
    A : array of shape (batch, r, n)
    backend : {"numpy", "cpu", "cuda"}
        numpy and "cpu" compute on the CPU in numpy, the batch split over `kernel_threads`;
        "cuda" widens on the device and runs one batched product per Gram.

    precision : "float64" (the default: float64 sums), or "bfloat16" / "float16" / "tf32": the
        products in that precision through torch (float32 accumulation, harness.linalg.precision),
        widened to float64; `log` (a CompileLog) compiles them
    Returns
    -------
    G_B, G_A : arrays of shape (batch, r, r), float64: numpy arrays, or CUDA tensors for "cuda"
    """
    if low(precision):
        GB, GA = narrow_gram(B, precision, backend, rows=False, log=log), narrow_gram(A, precision, backend,
                                                                                      rows=True, log=log)
        return (GB, GA) if backend != "cuda" else (as_backend(GB, backend), as_backend(GA, backend))
    if backend != "cuda":
        return _factor_grams_numpy(to_numpy(B), to_numpy(A), kernel_threads)
    torch = torch_module()
    assert torch is not None, f"backend {backend!r} needs torch"
    B, A = (as_backend(x, backend).to(torch.float64) for x in (B, A))
    return B.mT @ B, A @ A.mT
