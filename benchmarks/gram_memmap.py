"""Benchmark: streamed dual-Gram vs the per-pair loop on an n x d float32 memmap, and the
factored Gram of the task-geometry adapters. A standalone script, not an asv suite:

    python benchmarks/gram_memmap.py [--n 18] [--d 50000000] [--budget-mib 1024]

Makes the memmap in a temporary folder (n * d * 4 bytes; 3.6 GB by default) and deletes it.
The file is written just before it is read, so it is in the page cache when RAM allows it: the
figures are page-cache throughputs, not disk ones (the script says which it believes).
Peak anonymous memory (RssAnon, so not the memmap's file pages) is sampled every 5 ms by a
thread, from /proc/self/status, above its level before the call.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np

from harness.data.layout import AdapterLayout
from harness.data.registry import build_source
from harness.data.workload import Workload
from harness.linalg.device import torch_module
from harness.linalg.factored import frobenius_gram
from harness.linalg.gram import gram_from_array, gram_pairwise
from harness.spec import load_spec

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[1]
GiB = 2**30


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


def make_memmap(path: Path, n: int, d: int, chunk: int = 1 << 24) -> np.memmap:
    X = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, d))
    rng = np.random.default_rng(0)
    for i in range(n):
        for start in range(0, d, chunk):
            stop = min(d, start + chunk)
            X[i, start:stop] = rng.standard_normal(stop - start, dtype=np.float32) + np.float32(0.1 * i)
    X.flush()
    del X
    return np.load(path, mmap_mode="r")


def sequential_read(path: Path, block: int = 64 << 20) -> tuple[float, int]:
    """Seconds to read the whole file in `block`-byte reads into one buffer, and bytes read."""
    buffer = bytearray(block)
    total = 0
    start = time.perf_counter()
    with open(path, "rb", buffering=0) as fh:
        while (got := fh.readinto(buffer)) > 0:
            total += got
    return time.perf_counter() - start, total


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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=18)
    p.add_argument("--d", type=int, default=50_000_000)
    p.add_argument("--budget-mib", type=int, default=1024, help="dual_gram's memory budget")
    p.add_argument("--skip-pairwise", action="store_true")
    args = p.parse_args()
    budget = args.budget_mib * 2**20
    nbytes = args.n * args.d * 4
    with tempfile.TemporaryDirectory(prefix="gram_memmap_") as tmp:
        path = Path(tmp) / "X.npy"
        start = time.perf_counter()
        X = make_memmap(path, args.n, args.d)
        print(f"memmap {args.n} x {args.d:,} float32 = {nbytes / 1e9:.2f} GB written in "
              f"{time.perf_counter() - start:.1f} s; in page cache (written just now, and "
              f"smaller than MemAvailable): {in_page_cache(nbytes)}")
        read_s, read_bytes = sequential_read(path)
        read_s, read_bytes = sequential_read(path)  # second pass: the steady (cached) state
        read_gbs = read_bytes / read_s / 1e9
        print(f"sequential read: {read_s:.2f} s, {read_gbs:.2f} GB/s")
        backend = "cpu" if torch_module() is not None else "numpy"  # dual_gram's choice on a CPU
        gram_from_array(np.ones((args.n, 1 << 16), np.float32), memory_budget=budget, backend=backend)  # BLAS start-up
        G, dual_s, dual_mem = peak_anon(partial(gram_from_array, X, memory_budget=budget, backend=backend))
        dual_gbs = nbytes / dual_s / 1e9
        print(f"dual_gram (backend {backend}, float32 slices, float64 accumulation, budget "
              f"{args.budget_mib} MiB): {dual_s:.2f} s, {dual_gbs:.2f} GB/s = {dual_gbs / read_gbs:.0%} "
              f"of sequential read; peak RssAnon +{dual_mem / 2**20:.0f} MiB")
        _, np_s, np_mem = peak_anon(partial(gram_from_array, X, memory_budget=budget))
        print(f"dual_gram (backend numpy): {np_s:.2f} s, {nbytes / np_s / 1e9:.2f} GB/s = "
              f"{nbytes / np_s / 1e9 / read_gbs:.0%} of sequential read; peak RssAnon +{np_mem / 2**20:.0f} MiB")
        if not args.skip_pairwise:
            G_pair, pair_s, pair_mem = peak_anon(partial(gram_pairwise, X))
            error = np.abs(G - G_pair).max() / np.abs(G_pair).max()
            print(f"gram_pairwise: {pair_s:.2f} s, peak RssAnon +{pair_mem / 2**20:.0f} MiB; "
                  f"dual_gram speedup {pair_s / dual_s:.1f}x; max |G - G_pair| / max |G| = {error:.1e}")
        del X
    generation, math_only, n, positions = factored_gram_task_geometry()
    print(f"factored_gram, task geometry ({n} adapters x {positions} positions, float32 factors): "
          f"{math_only:.2f} s for the Gram math; generating the synthetic factors took {generation:.2f} s")


if __name__ == "__main__":
    main()
