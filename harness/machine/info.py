"""The machine, probed once: the planner's only view of hardware, and part of every record."""

from __future__ import annotations

import functools
import os
import platform
import socket
import sys
from pathlib import Path

import numpy as np
import scipy
from pydantic import BaseModel
from threadpoolctl import threadpool_info

import harness
from harness.base.units import format_bytes
from harness.linalg.device import cuda_available, torch_missing_reason, torch_version


class ThreadPool(BaseModel):
    api: str
    library: str
    version: str | None
    threads: int


class MachineInfo(BaseModel):
    hostname: str
    platform: str
    cpu: str
    cores: int
    memory_total: int
    memory_available: int
    python: str
    harness: str
    numpy: str
    scipy: str
    torch: str | None
    torch_missing: str | None
    torch_threads: int | None  # None: torch was not loaded when the machine was probed
    blas: list[ThreadPool]
    cuda_device: str | None = None
    cuda_memory_total: int | None = None
    cuda_memory_free: int | None = None
    numpy_blas: str | None = None  # what numpy was built against, whatever is loaded when probed
    thread_env: dict[str, str] = {}  # thread variables set in the user's environment (thread_environment)

    @property
    def identity(self) -> str:
        """Stable across runs on one machine: what timing results may be compared under."""
        return f"{self.hostname}|{self.cpu}|{self.cores}|{self.cuda_device or 'no-gpu'}"

    def describe(self) -> str:
        gpu = f", {self.cuda_device}" if self.cuda_device else ", no CUDA"
        torch = f"torch {self.torch}" if self.torch else "no torch"
        return (
            f"{self.cpu} ({self.cores} cores), {format_bytes(self.memory_total)}, "  # as the page says it
            f"numpy {self.numpy}, {torch}{gpu}"
        )


def _meminfo() -> dict[str, int]:
    info: dict[str, int] = {}
    path = Path("/proc/meminfo")
    if path.exists():
        for line in path.read_text().splitlines():
            key, _, rest = line.partition(":")
            info[key] = int(rest.split()[0]) * 1024
    return info


def _memory_total(mem: dict[str, int]) -> int:
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    return mem.get("MemTotal") or page * os.sysconf("SC_PHYS_PAGES")


def memory_available() -> int:
    """Bytes of memory available now (MemAvailable of /proc/meminfo, read afresh; the total where
    the kernel gives none): cheap, unlike probe(), whose figure is the one at its first call."""
    mem = _meminfo()
    return mem["MemAvailable"] if "MemAvailable" in mem else _memory_total(mem)


def _cpu_name() -> str:
    path = Path("/proc/cpuinfo")
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


# Variables the BLAS and OpenMP runtimes read when they load (thread counts, wait policies, spin
# times): what the user's environment sets is what their programs run with, so it is recorded, and
# part of the machine's identity (its wisdom and pooled rounds), never changed by the harness.
THREAD_PREFIXES = ("OMP_", "GOMP_", "KMP_", "OPENBLAS_", "GOTO_", "MKL_", "BLIS_", "VECLIB_", "NUMEXPR_")


def thread_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The thread-related variables set in `environ` (this process's by default)."""
    env = os.environ if environ is None else environ
    return {name: env[name] for name in sorted(env) if name.startswith(THREAD_PREFIXES)}


def _numpy_blas() -> str | None:
    """numpy's BLAS as built (`scipy-openblas 0.3.31`), from numpy's own build record."""
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas['name']} {blas.get('version', '')}".strip()
    except Exception:  # numpy < 1.26 has no mode="dicts"; a build without the record
        return None


def usable_cores() -> int:
    """The cores this process may run on (its affinity), not the host's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@functools.cache
def probe() -> MachineInfo:
    mem = _meminfo()
    total = _memory_total(mem)
    missing = torch_missing_reason()  # imports a CUDA build of torch, never a CPU one
    loaded = sys.modules.get("torch")
    info = MachineInfo(
        hostname=socket.gethostname(),
        platform=platform.platform(),
        cpu=_cpu_name(),
        cores=usable_cores(),
        memory_total=total,
        memory_available=mem.get("MemAvailable", total),
        python=platform.python_version(),
        harness=harness.__version__,
        numpy=np.__version__,
        scipy=scipy.__version__,
        torch=torch_version(),
        torch_missing=missing,
        torch_threads=loaded.get_num_threads() if loaded is not None else None,
        blas=[
            ThreadPool(
                api=p["internal_api"],
                library=Path(p["filepath"]).name,
                version=p.get("version"),
                threads=p["num_threads"],
            )
            for p in sorted(threadpool_info(), key=lambda p: (p["internal_api"], p["filepath"]))
        ],  # in load order, `harness system` listed openblas and openmp one way, then the other
        numpy_blas=_numpy_blas(),
        thread_env=thread_environment(),
    )
    if cuda_available():
        torch = sys.modules["torch"]
        free, total_gpu = torch.cuda.mem_get_info()
        info.cuda_device = torch.cuda.get_device_name()
        info.cuda_memory_total, info.cuda_memory_free = int(total_gpu), int(free)
    return info
