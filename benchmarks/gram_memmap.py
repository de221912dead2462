"""Benchmark: streamed dual-Gram vs the per-pair loop on an n x d float32 memmap, the streamed
principal axes, and the factored Gram of the task-geometry adapters. A standalone script, not an
asv suite (it needs a multi-GB file):

    python benchmarks/gram_memmap.py [--n 18] [--d 50000000] [--budget-mib 1024] [--repeats 3] [--cold]
                                     [--backend cuda]

Makes the memmap in a temporary folder (n * d * 4 bytes; 3.6 GB by default) and deletes it.
Reads and Grams alternate, `--repeats` times, and medians are reported, so a noisy machine
moves both alike. "In page cache": the file was just written and is smaller than MemAvailable.
"Cold" (`--cold`): the file's pages are dropped before each read or Gram with
posix_fadvise(DONTNEED), which needs no root. The plain sequential read is timed with two
buffer sizes, since they differ by 2x in page cache (a 1 MiB buffer stays in L2). The kernel
ceiling is the same Gram on an in-memory array: arithmetic only, no file. Peak anonymous memory
(RssAnon, so not the memmap's file pages) is sampled every 5 ms by a thread, from
/proc/self/status, above its level before the call.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np

from harness.base.atomic import atomic_npy
from harness.compute.axes import orthonormality_error, stream_axes
from harness.machine.roofline import drop_from_page_cache, sequential_read
from harness.data.layout import AdapterLayout
from harness.data.registry import build_source
from harness.data.workload import Workload
from harness.linalg.device import Backend, torch_module
from harness.linalg.factored import frobenius_gram
from harness.linalg.gram import accumulate_gram, gram_from_array, gram_pairwise
from harness.linalg.pca import dual_pca
from harness.specs.reading import load_spec

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[1]
MiB = 2**20


def rss_anon() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no RssAnon in /proc/self/status (Linux only)")


def peak_anon(fn: Callable[[], T], period_s: float = 0.005) -> tuple[T, float, int]:
    """fn's result, its wall time, and the peak RssAnon above the level before it started."""
    base, peak, done = rss_anon(), [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_anon())
            time.sleep(period_s)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    start = time.perf_counter()
    try:
        result = fn()
    finally:
        elapsed = time.perf_counter() - start
        done.set()
        thread.join()
    return result, elapsed, max(peak[0], rss_anon()) - base


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def make_memmap(path: Path, n: int, d: int, chunk: int = 1 << 24) -> None:
    X = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, d))
    rng = np.random.default_rng(0)
    for i in range(n):
        for start in range(0, d, chunk):
            stop = min(d, start + chunk)
            X[i, start:stop] = rng.standard_normal(stop - start, dtype=np.float32) + np.float32(0.1 * i)
    X.flush()
    del X


def in_page_cache(nbytes: int) -> bool:
    available = next(
        int(line.split()[1]) * 1024
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemAvailable:")
    )
    return nbytes < available


def factored_gram_task_geometry() -> tuple[float, float, int, int]:
    """(seconds generating the float32 synthetic factors, seconds of the Gram math alone, n,
    positions): factored_gram's work on every position of configs/task_geometry.toml."""
    spec = load_spec(ROOT / "configs" / "task_geometry.toml")
    workload = Workload.from_source(build_source(spec.data, spec.experiment.seed, ROOT / "configs"))
    layout = AdapterLayout.from_workload(workload)
    start = time.perf_counter()
    factors = [workload.source.load_factors(p.refs, np.dtype(np.float32)) for p in layout.positions]
    generation = time.perf_counter() - start
    start = time.perf_counter()
    for f in factors:
        frobenius_gram(f.B, f.A, f.scale)
    return generation, time.perf_counter() - start, layout.n, len(layout.positions)


def axes_of_memmap(path: Path, out: Path, components: int, budget: int) -> float:
    """Principal axes of the memmap's rows into a .npy file, one column block at a time;
    returns max |A A^T - I| read back from the file."""
    X = np.load(path, mmap_mode="r")
    pca = dual_pca(gram_from_array(X, memory_budget=budget, backend="numpy"), components)
    with atomic_npy(out, (components, X.shape[1]), np.dtype(np.float32)) as axes:
        stream_axes(axes, 0, X, pca, memory_budget=budget, backend="numpy")
    return orthonormality_error(np.load(out, mmap_mode="r"), pca, budget, "numpy")


def median_line(label: str, seconds: list[float], nbytes: int) -> str:
    s = statistics.median(seconds)
    runs = ", ".join(f"{x:.2f}" for x in seconds)
    return f"{label}: median {s:.2f} s = {nbytes / s / 1e9:.2f} GB/s (runs {runs} s)"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=18)
    p.add_argument("--d", type=int, default=50_000_000)
    p.add_argument("--budget-mib", type=int, default=1024, help="dual_gram's memory budget")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--components", type=int, default=3, help="principal axes to stream (0: skip)")
    p.add_argument("--cold", action="store_true", help="also time with the file out of page cache")
    p.add_argument("--backend", choices=["numpy", "cpu", "cuda"], help="dual_gram's backend (default: cpu "
                   "with torch, else numpy); cuda streams through pinned buffers, copies beside products")
    p.add_argument("--skip-pairwise", action="store_true")
    p.add_argument("--skip-factored", action="store_true")
    args = p.parse_args()
    budget = args.budget_mib * MiB
    nbytes = args.n * args.d * 4
    backend: Backend = args.backend or ("cpu" if torch_module() is not None else "numpy")  # dual_gram's on a CPU
    warm = np.ones((args.n, 1 << 16), np.float32)
    accumulate_gram([warm], backend=backend)  # BLAS and thread-pool start-up

    def dual_gram() -> np.ndarray:  # as a user runs it: open the file, one pass
        return gram_from_array(np.load(path, mmap_mode="r"), memory_budget=budget, backend=backend)

    with tempfile.TemporaryDirectory(prefix="gram_memmap_") as tmp:
        path = Path(tmp) / "X.npy"
        start = time.perf_counter()
        make_memmap(path, args.n, args.d)
        print(f"memmap {args.n} x {args.d:,} float32 = {nbytes / 1e9:.2f} GB written in "
              f"{time.perf_counter() - start:.1f} s; in page cache: {in_page_cache(nbytes)}; "
              f"dual_gram backend {backend}, budget {args.budget_mib} MiB")
        sequential_read(path, MiB)  # settle the page cache (written pages, first mapping)

        reads: dict[int, list[float]] = {MiB: [], 64 * MiB: []}
        grams: list[float] = []
        for _ in range(args.repeats):
            for size, times in reads.items():
                times.append(sequential_read(path, size))
            grams.append(timed(dual_gram))
        G, _, mem = peak_anon(dual_gram)  # apart: the sampling thread takes CPU from timed runs
        read_s = min(statistics.median(t) for t in reads.values())
        gram_s = statistics.median(grams)
        print("in page cache:")
        for size, times in reads.items():
            print("  " + median_line(f"sequential read, {size // MiB} MiB buffer", times, nbytes))
        print("  " + median_line("dual_gram (float32 slices, float64 accumulation)", grams, nbytes)
              + f"; peak RssAnon +{mem / MiB:.0f} MiB")
        print(f"  dual_gram / fastest read: {read_s / gram_s:.0%} of the read throughput")

        ram = np.array(np.load(path, mmap_mode="r")[:, : min(args.d, 1 << 23)])
        kernel = [timed(partial(accumulate_gram, [ram], backend=backend)) for _ in range(args.repeats)]
        print("  " + median_line(f"kernel ceiling (same Gram of an in-memory {ram.nbytes / 1e9:.2f} GB array)",
                                 kernel, ram.nbytes))
        del ram

        if args.cold:
            cold_reads: list[float] = []
            cold_grams: list[float] = []
            for _ in range(args.repeats):
                drop_from_page_cache(path)
                cold_reads.append(sequential_read(path, 64 * MiB))
                drop_from_page_cache(path)
                cold_grams.append(timed(dual_gram))
            print("cold (dropped from page cache before each):")
            print("  " + median_line("sequential read, 64 MiB buffer", cold_reads, nbytes))
            print("  " + median_line("dual_gram", cold_grams, nbytes))
            print(f"  dual_gram / read: {statistics.median(cold_reads) / statistics.median(cold_grams):.0%}")

        if args.components:
            sequential_read(path, MiB)  # back in page cache
            error, axes_s, mem = peak_anon(lambda: axes_of_memmap(path, Path(tmp) / "axes.npy", args.components, budget))
            print(f"principal axes ({args.components} x {args.d:,} float32, Gram included, written and fsynced): "
                  f"{axes_s:.2f} s, peak RssAnon +{mem / MiB:.0f} MiB; max |A A^T - I| = {error:.1e}")

        if not args.skip_pairwise:
            G_pair, pair_s, pair_mem = peak_anon(lambda: gram_pairwise(np.load(path, mmap_mode="r")))
            error = np.abs(G - G_pair).max() / np.abs(G_pair).max()
            print(f"gram_pairwise: {pair_s:.2f} s, peak RssAnon +{pair_mem / MiB:.0f} MiB; dual_gram "
                  f"speedup {pair_s / gram_s:.1f}x (median); max |G - G_pair| / max |G| = {error:.1e}")
    if not args.skip_factored:
        generation, math_only, n, positions = factored_gram_task_geometry()
        print(f"factored_gram, task geometry ({n} adapters x {positions} positions, float32 factors): "
              f"{math_only:.2f} s for the Gram math; generating the synthetic factors took {generation:.2f} s")


if __name__ == "__main__":
    main()
