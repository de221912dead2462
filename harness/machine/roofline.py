"""The machine's roofs, measured: GEMM peak per precision, memory bandwidth, host-to-GPU copies
and file reads; and where a timing sits under them.

A roofline (Williams, Waterman & Patterson, CACM 2009) bounds a kernel's throughput at
min(peak, bandwidth x intensity), intensity being flops per byte moved (harness.strategies.cost
counts both). Measured peaks, not datasheet ones: each probe keeps the best of repeated calls,
since a roof is what the machine can do, and noise only ever slows a call down.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import numpy as np
from pydantic import BaseModel, Field, model_validator

from harness.bench.threads import pinned
from harness.linalg.device import Backend, synchronize, torch_module
from harness.base.units import now

DTYPES = ("float32", "float64")
RUN_PROBE = "a run's quick probe"  # roofs measured in passing, when a run found none
CHUNK = 8 << 20  # bytes per read() when timing file reads
# What no probe here can measure: ten times the fastest device of its kind today (a GPU's float32
# and float64 GEMM ~70 TFLOP/s, HBM3e 8 TB/s, NVLink-C2C 0.9 TB/s, a CPU core's AVX-512 or Apple
# AMX ~0.3-1.5 TFLOP/s; a CPU's ceilings scale with the threads its probe ran on). A stored figure
# past them, or below MIN_RATE, was never measured: its file is kept aside.
MAX_GFLOPS = 1e6
MAX_GBS = 1e5
MAX_GFLOPS_PER_THREAD = 1e4
MAX_GBS_PER_THREAD = 1e3
MIN_RATE = 1e-3  # GFLOP/s, GB/s: slower than any machine that could run a probe
TRUST = 10.0  # a probe can understate a ceiling (a busy machine: 4x), not by more than this
Rate = Annotated[float, Field(ge=MIN_RATE, le=MAX_GFLOPS, allow_inf_nan=False)]


class Roof(BaseModel):
    """One device's ceilings: the CPU (every core) or a CUDA GPU."""

    device: str  # "cpu" or "cuda"
    gemm_gflops: dict[str, Rate]  # by dtype: the best matrix product measured
    bandwidth_gbs: Rate  # a STREAM triad, a = b + s c: bytes read and written
    transfer_gbs: Rate | None = None  # cuda: pinned host memory to the device
    threads: Annotated[int, Field(ge=1)] | None = None  # cpu: the threads every probe ran with (the machine's cores)
    libraries: list[str] = []  # what the probes ran through
    measured: str  # ISO date-time
    by: str  # "harness calibrate", "harness calibrate --quick", or RUN_PROBE

    @model_validator(mode="after")
    def _measurable(self) -> Roof:
        """ValueError naming the first ceiling no probe of this device could have measured."""
        threads = self.threads if self.device == "cpu" and self.threads else None
        flops = MAX_GFLOPS if threads is None else min(MAX_GFLOPS, MAX_GFLOPS_PER_THREAD * threads)
        bytes_ = MAX_GBS if threads is None else min(MAX_GBS, MAX_GBS_PER_THREAD * threads)
        ceilings = [*((f"gemm_gflops {d}", v, flops) for d, v in self.gemm_gflops.items()),
                    ("bandwidth_gbs", self.bandwidth_gbs, bytes_), ("transfer_gbs", self.transfer_gbs or 0.0, MAX_GBS)]
        for name, value, most in ceilings:
            if value > most:
                on = f" on {threads} threads" if threads else ""
                raise ValueError(f"{name} {value:.3g} is more than a {self.device} probe can measure{on} ({most:.0e})")
        return self

    def peak(self, dtype: str) -> float | None:
        return self.gemm_gflops.get(dtype)

    def ceiling(self, intensity: float, dtype: str) -> float | None:
        """GFLOP/s attainable at `intensity` flops per byte."""
        peak = self.peak(dtype)
        return None if peak is None else min(peak, self.bandwidth_gbs * intensity)

    def share(self, gflops: float | None, intensity: float | None, dtype: str) -> float | None:
        """Achieved over attainable at that intensity: 1.0 is on the roof."""
        if gflops is None or intensity is None or (ceiling := self.ceiling(intensity, dtype)) is None:
            return None
        return gflops / ceiling


def higher(old: Roof | None, new: Roof) -> Roof:
    """The roof a new probe leaves: each ceiling the higher of the two, since a probe can only
    understate what the hardware does (a busy machine gave a GEMM peak 4x low, and a timing reused
    from the cache then read 1.7% of peak in one run and 7.5% in the next). A probe with another
    thread count replaces the old roof outright; the labels are the newer probe's. An old ceiling
    more than TRUST times what the new probe measured is not this machine's, and is not kept."""
    if old is None or old.threads != new.threads:
        return new

    def top(was: float | None, now: float | None) -> float | None:
        if was is None or (now is not None and was > TRUST * now):
            return now
        return was if now is None else max(was, now)

    gemm = {d: top(old.gemm_gflops.get(d), new.gemm_gflops.get(d)) for d in {*old.gemm_gflops, *new.gemm_gflops}}
    return new.model_copy(update={
        "gemm_gflops": gemm, "bandwidth_gbs": top(old.bandwidth_gbs, new.bandwidth_gbs),
        "transfer_gbs": top(old.transfer_gbs, new.transfer_gbs), "libraries": sorted({*old.libraries, *new.libraries})})


class ReadRoof(BaseModel):
    """Sequential reads of one file: from the page cache, and cold where that can be forced."""

    cached_gbs: Annotated[float, Field(ge=MIN_RATE, le=MAX_GBS, allow_inf_nan=False)]
    cold_gbs: Annotated[float, Field(ge=MIN_RATE, le=MAX_GBS, allow_inf_nan=False)] | None
    cold_how: str  # how the cache was dropped, or why it could not be
    file_bytes: Annotated[int, Field(ge=1)]
    measured: str


def roof_device(backend: str) -> str:
    """numpy and torch on the CPU share the CPU's roof."""
    return "cuda" if backend == "cuda" else "cpu"


def best_seconds(fn: Callable[[], object], backend: Backend, seconds: float, least: int = 3) -> float:
    """The fastest of repeated calls, one warm-up first, for about `seconds` (`least` calls at least)."""
    fn()
    synchronize(backend)
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < least or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        fn()
        synchronize(backend)
        times.append(time.perf_counter() - t0)
    return min(times)


def _gemm_numpy(n: int, dtype: str, seconds: float) -> float:
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(dtype) for _ in range(2))
    out = np.empty_like(a)
    return 2.0 * n**3 / best_seconds(lambda: np.matmul(a, b, out=out), "numpy", seconds) / 1e9


def _gemm_torch(n: int, dtype: str, backend: Backend, seconds: float) -> float:
    torch = torch_module()
    assert torch is not None
    kind = getattr(torch, dtype)
    a, b = (torch.randn(n, n, dtype=kind, device=backend) for _ in range(2))
    out = torch.empty_like(a)
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # a float32 peak in float32, not tf32
    try:
        return 2.0 * n**3 / best_seconds(lambda: torch.matmul(a, b, out=out), backend, seconds) / 1e9
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32


def _triad(backend: Backend, values: int, seconds: float) -> float:
    """GB/s of a = b + s c over three float32 arrays: torch runs it on every thread in one
    pass; numpy (no torch) in one thread, so it understates a multi-core CPU's bandwidth."""
    torch = torch_module() if backend != "numpy" else None
    if torch is None:
        b, c = np.ones(values, np.float32), np.full(values, 2.0, np.float32)
        a = np.empty_like(b)
        fn: Callable[[], object] = lambda: np.add(b, c, out=a)  # noqa: E731
        backend = "numpy"
    else:
        tb, tc = (torch.full((values,), v, dtype=torch.float32, device=backend) for v in (1.0, 2.0))
        ta = torch.empty_like(tb)
        fn = lambda: torch.add(tb, tc, alpha=0.5, out=ta)  # noqa: E731
    return 3 * 4 * values / best_seconds(fn, backend, seconds) / 1e9


def _transfer(values: int, seconds: float) -> float:
    torch = torch_module()
    assert torch is not None
    host = torch.ones(values, dtype=torch.float32).pin_memory()
    device = torch.empty(values, dtype=torch.float32, device="cuda")
    return 4 * values / best_seconds(lambda: device.copy_(host, non_blocking=True), "cuda", seconds) / 1e9


def measure_cpu(cores: int, quick: bool, use_torch: bool, by: str) -> Roof:
    """Every core's worth of threads; the faster of numpy's and torch's BLAS per precision."""
    n, seconds, values = (1024, 0.15, 1 << 23) if quick else (2048, 0.6, 1 << 25)
    if by == RUN_PROBE:  # in passing, inside a run's wall time: the best of 3 calls; a roof only rises, and
        seconds = 0.0  # calibrate's longer probes raise what this one understates (run probe 2.1 -> 1.6 s)
    libraries = ["numpy"] + (["torch"] if use_torch else [])
    with pinned(cores):
        gemm = {}
        for dtype in DTYPES:
            rates = [_gemm_numpy(n, dtype, seconds)]
            if use_torch:
                rates.append(_gemm_torch(n, dtype, "cpu", seconds))
            gemm[dtype] = max(rates)
        bandwidth = _triad("cpu" if use_torch else "numpy", values, seconds)
    return Roof(device="cpu", gemm_gflops=gemm, bandwidth_gbs=bandwidth, threads=cores, libraries=libraries,
                measured=now(), by=by)


def measure_cuda(quick: bool, by: str) -> Roof:
    n, seconds, values = (4096, 0.1, 1 << 26) if quick else (8192, 0.5, 1 << 28)
    gemm = {dtype: _gemm_torch(n, dtype, "cuda", seconds) for dtype in DTYPES}
    return Roof(device="cuda", gemm_gflops=gemm, bandwidth_gbs=_triad("cuda", values, seconds),
                transfer_gbs=_transfer(values // 4, seconds), libraries=["torch"], measured=now(), by=by)


def sequential_read(path: Path, buffer_bytes: int = CHUNK) -> float:
    """Seconds to read `path` sequentially into one reused buffer (the plain read that the
    benchmarks compare streamed reads with)."""
    view = memoryview(bytearray(buffer_bytes))
    start = time.perf_counter()
    with open(path, "rb", buffering=0) as fh:
        while fh.readinto(view):
            pass
    return time.perf_counter() - start


def drop_from_page_cache(path: Path) -> None:
    """The file's cached pages dropped (posix_fadvise DONTNEED, no root needed; dirty pages are
    written first, since they cannot be dropped)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def measure_reads(folder: Path, nbytes: int) -> ReadRoof:
    """Write a file of `nbytes` in `folder`, read it from the page cache, drop its pages with
    posix_fadvise(DONTNEED) (no root needed: Linux drops a clean file's cached pages) and read it
    cold; the file is deleted after. Reads come from the disk `folder` is on."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="read-probe-", dir=folder)
    path = Path(name)
    try:
        block = np.random.default_rng(0).bytes(CHUNK)
        with os.fdopen(fd, "wb") as fh:
            for _ in range(max(1, nbytes // CHUNK)):
                fh.write(block)
            fh.flush()
            os.fsync(fh.fileno())
        size = path.stat().st_size
        sequential_read(path)  # the written pages may be partly gone: read once into the cache
        cached = size / sequential_read(path) / 1e9
        cold, how = None, "posix_fadvise is not available here"
        if hasattr(os, "posix_fadvise"):
            drop_from_page_cache(path)
            cold, how = size / sequential_read(path) / 1e9, "posix_fadvise(POSIX_FADV_DONTNEED) on the file"
        return ReadRoof(cached_gbs=cached, cold_gbs=cold, cold_how=how, file_bytes=size, measured=now())
    finally:
        path.unlink(missing_ok=True)
