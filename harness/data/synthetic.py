"""Deterministic synthetic workloads: LoRA factors or dense matrices with a known spectrum.

Each matrix is generated from its own seed sequence (seed, adapter, layer, module), so any subset
loads the same numbers in any order, on any worker, without generating the rest.
"""

from __future__ import annotations

import hashlib
import json
import math
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, ValidationInfo, field_validator

from harness.data.pages import small_pages
from harness.data.workload import Census, Factors, MatrixRef, Source
from harness.machine.info import usable_cores

# 2: LoRA factors uniform instead of Gaussian (same mean and variance), 4x faster to draw
GENERATOR_VERSION = 2
SQRT3 = math.sqrt(3.0)  # uniform on [-sqrt 3, sqrt 3): mean 0, variance 1
MATRICES_PER_THREAD = 64  # fewer are generated on one thread
MAX_SIDE = 1 << 24  # rows, columns, rank: beyond any model's layer


class SyntheticData(BaseModel):
    """`[data] source = "synthetic"`."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["synthetic"] = "synthetic"
    form: Literal["lora", "dense"] = Field("lora", description="LoRA factors B, A or dense matrices")
    adapters: StrictInt = Field(4, ge=1)
    layers: StrictInt = Field(2, ge=1)
    modules: dict[str, tuple[StrictInt, StrictInt]] = Field(
        default_factory=lambda: {"mlp_up": (256, 64), "mlp_down": (64, 256)},
        description="module name -> [rows, cols]",
    )
    rank: StrictInt = Field(16, ge=1, le=MAX_SIDE, description="LoRA rank (lora form)")
    alpha: StrictFloat = Field(32.0, allow_inf_nan=False,
                         description="LoRA alpha; scale = alpha / rank (or / sqrt(rank))")
    rslora: bool = False
    condition: StrictFloat = Field(
        1e3, ge=1.0, allow_inf_nan=False, description="dense form: sigma_max / sigma_min of the geometric spectrum"
    )

    @field_validator("modules")
    @classmethod
    def _positive_shapes(cls, modules: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
        if not modules:
            raise ValueError("at least one module is required")
        for name, (m, n) in modules.items():
            if not (1 <= m <= MAX_SIDE and 1 <= n <= MAX_SIDE):
                raise ValueError(f"module {name!r} has shape [{m}, {n}]; both must be 1 to {MAX_SIDE}")
        return modules

    @field_validator("rank")
    @classmethod
    def _rank_fits(cls, rank: int, info: ValidationInfo) -> int:
        """A LoRA delta B @ A of rank r above min(m, n) is no LoRA: B is m x r and A r x n, so
        the delta's rank is min(m, n, r) and r buys nothing but memory and time. A rank written
        out only: the default (16) left to small modules is their min(m, n) in effect, as ever."""
        modules = info.data.get("modules") or {}
        if info.data.get("form") != "lora" or not modules:
            return rank
        name, (m, n) = min(modules.items(), key=lambda item: min(item[1]))
        if rank > min(m, n):
            raise ValueError(f"{rank} exceeds min(m, n) = {min(m, n)} of the {m}x{n} layers ({name})")
        return rank

    @property
    def scale(self) -> float:
        return self.alpha / (math.sqrt(self.rank) if self.rslora else self.rank)


def dense_spectrum(p: int, condition: float) -> np.ndarray:
    """sigma_i = condition ** (-i / (p - 1)): from 1 down to 1 / condition, geometric."""
    if p == 1:
        return np.ones(1)
    return condition ** (-np.arange(p) / (p - 1))


class SyntheticSource(Source):
    def __init__(self, config: SyntheticData, seed: int) -> None:
        self.config = config
        self.seed = seed
        self.has_factors = config.form == "lora"
        # generating, 2 cores: float32 factors ~0.25 GB/s; dense (two QRs and a GEMM) ~0.1 GB/s
        self.load_bytes_per_s = 0.25e9 if self.has_factors else 0.1e9

    def refs(self) -> list[MatrixRef]:
        c = self.config
        rank = c.rank if self.has_factors else None
        width = len(str(c.adapters - 1))
        return [
            MatrixRef(
                id=f"adapter{a:0{width}d}/layer{layer}/{module}",
                adapter=f"adapter{a:0{width}d}",
                layer=layer,
                module=module,
                shape=(m, n),
                rank=rank,
                locator={"adapter": a, "layer": layer, "module": i},
            )
            for a in range(c.adapters)
            for layer in range(c.layers)
            for i, (module, (m, n)) in enumerate(c.modules.items())
        ]

    def census(self) -> Census:
        c = self.config
        shapes: dict[tuple[int, int], int] = {}
        for shape in c.modules.values():
            shapes[shape] = shapes.get(shape, 0) + c.adapters * c.layers
        return Census(shapes, c.adapters)

    def fingerprint(self) -> str:
        payload = {"v": GENERATOR_VERSION, "seed": self.seed, "config": self.config.model_dump()}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def _rng(self, ref: MatrixRef) -> np.random.Generator:
        loc = ref.locator
        return np.random.default_rng([self.seed, loc["adapter"], loc["layer"], loc["module"]])

    def _lora(self, ref: MatrixRef, B: np.ndarray, A: np.ndarray) -> None:
        """Random factors of unit variance with geometrically decaying column weights, like a
        trained LoRA, written into float32 B (m, r) and A (r, n). Uniform, not Gaussian: the
        deltas' spectra follow the same laws (they depend on the entries' variance), and a run
        draws every factor about three times (analyses, exact features, the PCA's workers), at
        143 µs a rank-16 3072 x 768 pair instead of 608 µs."""
        m, n = ref.shape
        rng = self._rng(ref)
        for X, weight in ((B, (0.7 ** np.arange(self.config.rank, dtype=np.float32)) / np.float32(math.sqrt(m))),
                          (A, np.float32(1 / math.sqrt(n)))):
            rng.random(dtype=np.float32, out=X)
            X -= np.float32(0.5)
            X *= np.float32(2 * SQRT3) * weight

    def _dense(self, ref: MatrixRef) -> np.ndarray:
        m, n = ref.shape
        p = min(m, n)
        rng = self._rng(ref)
        U, _ = np.linalg.qr(rng.standard_normal((m, p)))
        V, _ = np.linalg.qr(rng.standard_normal((n, p)))
        return ((U * dense_spectrum(p, self.config.condition)) @ V.T).astype(np.float32)

    def load_dense(self, refs: Sequence[MatrixRef], dtype: np.dtype) -> np.ndarray:
        if self.has_factors:
            return self.load_factors(refs, np.dtype(np.float64)).dense(dtype)
        return np.stack([self._dense(ref) for ref in refs]).astype(dtype)

    def load_factors(self, refs: Sequence[MatrixRef], dtype: np.dtype) -> Factors:
        """Generated in float32 whatever `dtype` is, so float32 and float64 runs (and the
        float64 reference) see the very same matrices."""
        if not self.has_factors:
            return super().load_factors(refs, dtype)
        (m, n), r = refs[0].shape, self.config.rank
        B, A = small_pages((len(refs), m, r)), small_pages((len(refs), r, n))
        threads = max(1, min(usable_cores(), -(-len(refs) // MATRICES_PER_THREAD)))

        def draw(part: range) -> None:
            for i in part:
                self._lora(refs[i], B[i], A[i])

        # numpy's generators release the GIL; a contiguous share per thread, not a task per pair
        # (1,064 pairs: 0.13-0.15 s on 2 threads against 0.19-0.20 s as single tasks, 0.18 s on one)
        step = -(-len(refs) // threads)
        parts = [range(lo, min(lo + step, len(refs))) for lo in range(0, len(refs), step)]
        if len(parts) > 1:
            with ThreadPoolExecutor(len(parts)) as pool:
                list(pool.map(draw, parts))
        else:
            draw(parts[0])
        return Factors(
            B=B.astype(dtype, copy=False),
            A=A.astype(dtype, copy=False),
            scale=np.full(len(refs), self.config.scale, dtype=np.float64),
        )
