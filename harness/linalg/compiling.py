"""torch.compile for the torch kernels: whether it can work here, and a log of what each
compilation cost and produced, so that no timed call pays for one and the report can say what
was fused.

torch.compile traces a function (dynamo) into graphs and inductor turns each graph into
generated kernels: on the CPU C++/OpenMP code built by a C compiler, on CUDA Triton. Linear
algebra calls (LAPACK's SVD, BLAS products) stay calls into their libraries ("extern" kernels):
what inductor can fuse is the elementwise work around them (casts, scaling, transposes made
contiguous, the clamps and square roots after an eigensolve).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.linalg.device import torch_missing_reason, torch_module

COMPILERS = ("cc", "gcc", "clang")


def compile_missing_reason(backend: str = "cpu") -> str | None:
    """Why torch.compile cannot run on `backend` here, or None: torch missing or too old, or (on
    the CPU, where inductor writes C++) no C compiler on PATH nor in $CXX / $CC."""
    if backend == "numpy":
        return "it compiles torch code, and this strategy runs in numpy here"
    if (reason := torch_missing_reason()) is not None:
        return reason
    torch = torch_module()
    if torch is None or not hasattr(torch, "compile"):
        return "this torch has no torch.compile (torch 2.0 or later)"
    if backend != "cuda" and not _c_compiler():
        return "torch.compile's inductor builds C++ on the CPU and no C compiler is on PATH (cc, gcc, clang)"
    return None


def _c_compiler() -> str | None:
    for variable in ("CXX", "CC"):
        if (named := os.environ.get(variable)) and shutil.which(named):
            return named
    return next((found for c in COMPILERS if (found := shutil.which(c))), None)


@dataclass
class CompileLog:
    """Compilations of one timed variant: the first call of each compiled function for each input
    signature is a compilation (and one execution), logged here and never timed."""

    seconds: float = 0.0
    graphs: int = 0
    kernels: int = 0
    seen: set[tuple[Any, ...]] = field(default_factory=set)
    cache: dict[Callable[..., Any], Callable[..., Any]] = field(default_factory=dict)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """fn(*args) compiled; the first call per (fn, shapes, dtypes) is logged as compilation."""
        torch = torch_module()
        assert torch is not None, "compiling needs torch"
        compiled = self.cache.get(fn)
        if compiled is None:
            compiled = self.cache[fn] = torch.compile(fn, dynamic=False)
        signature = (fn, *(_signature(a) for a in args))
        if signature in self.seen:
            return compiled(*args)
        before = _counts()
        start = time.perf_counter()
        result = compiled(*args)
        self.seconds += time.perf_counter() - start
        after = _counts()
        self.graphs += after[0] - before[0]
        self.kernels += after[1] - before[1]
        self.seen.add(signature)
        return result

    def describe(self) -> str:
        """What compilation produced, in the report's words."""
        return (f"{self.graphs} graph{'s' * (self.graphs != 1)}, {self.kernels} generated (fused) "
                f"kernel{'s' * (self.kernels != 1)}; LAPACK/BLAS calls stay extern")


def _signature(x: Any) -> tuple[Any, ...]:
    return (tuple(getattr(x, "shape", ())), str(getattr(x, "dtype", type(x).__name__)), str(getattr(x, "device", "")))


def _counts() -> tuple[int, int]:
    """Graphs dynamo has compiled and kernels inductor has generated so far in this process."""
    try:
        from torch._dynamo.utils import counters
        from torch._inductor import metrics
    except ImportError:  # pragma: no cover - torch without dynamo
        return 0, 0
    return int(counters["stats"]["unique_graphs"]), int(metrics.generated_kernel_count)
