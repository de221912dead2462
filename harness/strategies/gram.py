"""Strategies for the Gram matrix of adapter vectors, the input of PCA across adapters (op pca).

Their work is workload-level, not per matrix: each returns one n x n float64 Gram per matrix
position (see harness.data.layout), which the caller sums for one PCA over whole adapters or
keeps apart for one PCA per position. Loading is part of the timed work here: streaming the
deltas once is what dual_gram is about, and re-reading them per pair is what gram_pairwise costs.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Sequence
from itertools import groupby
from operator import itemgetter

import numpy as np

from harness.data.delta_stream import row_bytes, warm_deltas
from harness.data.layout import AdapterLayout, Position
from harness.data.workload import MatrixRef, Source
from harness.linalg.device import Backend, resolve_device, torch_missing_reason
from harness.linalg.device_feed import DeviceFeed
from harness.linalg.factored import frobenius_gram
from harness.linalg.compiled import load_kernel
from harness.linalg.gram import (
    STORED_DTYPES,
    StoredDeltas,
    accumulate_delta_gram,
    accumulate_gram,
)
from harness.linalg.gram_blocks import SUM_COLUMNS, block_columns
from harness.linalg.parallel import kernel_threads
from harness.linalg.piece_gram import piece_grams
from harness.linalg.precision import low, narrow_gram
from harness.linalg.prefetch import SLOTS, Ring, slot_bytes
from harness.machine.info import MachineInfo
from harness.strategies import cost
from harness.strategies.base import ExecContext, StrategyBase

GEMM_GFLOPS_PER_CORE = 40.0  # float64 syrk/gemm, OpenBLAS, 2-core x86: ~80 GFLOPS measured
LORA_DENSE_GFLOPS_PER_CORE = 20.0  # forming s * B @ A in float64 then casting, effective
READ_BYTES_PER_S = 1e9  # streaming stored deltas (page cache or a fast disk): an assumption


def _sum(works: Iterable[cost.Work]) -> cost.Work:
    flops, moved = zip(*works, strict=True)
    return cost.Work(sum(flops), sum(moved))


def _gemm_rate(machine: MachineInfo) -> float:
    return GEMM_GFLOPS_PER_CORE * 1e9 * machine.cores


def dense_load_seconds(position: Position, count: int, itemsize: int, machine: MachineInfo) -> float:
    """Producing `count` dense deltas of a position: forming them from LoRA factors, or reading."""
    m, k = position.shape
    if position.rank is not None:
        return count * 2.0 * m * k * position.rank / (LORA_DENSE_GFLOPS_PER_CORE * 1e9 * machine.cores)
    return count * m * k * itemsize / READ_BYTES_PER_S


class GramStrategy(StrategyBase):
    """A workload-level strategy: per-position Gram matrices of the adapters' vectors."""

    ops = frozenset({"pca"})

    def backend(self, device: str) -> Backend:
        """CUDA when there (or torch on the CPU when named), else numpy: on the CPU numpy's syrk
        beats torch's gemm for X @ X.T (14 vs 36 ms for 608 x 3072 float64, 2 cores)."""
        if torch_missing_reason() is not None:
            return "numpy"
        backend = resolve_device(device)
        return "numpy" if device == "auto" and backend == "cpu" else backend

    @abstractmethod
    def bytes_needed(self, layout: AdapterLayout, source: Source, dtype: np.dtype) -> int:
        """Least working memory for the largest position; over budget means it cannot run."""

    def batch_sizes(self, layout: AdapterLayout, source: Source, dtype: np.dtype, budget: int) -> dict[str, int]:
        """How the work is cut under `budget`, for the plan to show; nothing by default."""
        return {}

    def work(self, layout: AdapterLayout, itemsize: int) -> cost.Work:
        """Flops and least bytes moved over every position of `layout`: the dense Gram's."""
        return _sum(cost.gram_work(layout.n, p.size, itemsize) for p in layout.positions)

    @abstractmethod
    def seconds(self, layout: AdapterLayout, machine: MachineInfo, backend: Backend) -> float:
        """A rough estimate, loading included, for the planner to compare."""

    @abstractmethod
    def grams(
        self, source: Source, layout: AdapterLayout, ctx: ExecContext, memory_budget: int
    ) -> np.ndarray:
        """(positions, n, n) float64: the Gram of each position's n matrices, flattened."""


NARROW_BLOCKS = ("deltas rounded to {p} block by block, each block's n x n product in {p} through torch (float32 "
                 "accumulation inside the GEMM, output rounded to {p}), the blocks summed in float64")


class DualGramStrategy(GramStrategy):
    name = "dual_gram"
    summary = "streams each position's n deltas once, column slices into a float64 Gram"
    precisions = {
        "float64": "float64 deltas and products",
        "float32": "float32 deltas, products over slices of at most 1024 columns in float32, summed in float64",
        "bfloat16": NARROW_BLOCKS.format(p="bfloat16"),
        "float16": NARROW_BLOCKS.format(p="float16"),
        "tf32": "float32 deltas, each block's product on TF32 tensor cores, summed in float64",
    }
    compiles = "the cast of each block, its Gram product and the widening (narrow precisions)"

    def backend(self, device: str) -> Backend:
        """Torch wherever it is there: on the CPU, MKL's batched float32 product beats OpenBLAS's
        syrk for n ~ 20 rows (18 rows, 2 cores: ~8 vs ~6 GB/s, benchmarks/gram_memmap.py). With
        numba installed, float32 data takes the compiled kernel on either CPU backend (~2x)."""
        if torch_missing_reason() is not None:
            return "numpy"
        return resolve_device(device)

    def warm(self, backend: Backend, source: Source | None = None) -> None:
        """The compiled kernels load numba and their cached machine code on first use, or compile
        it (in a fresh clone: 1.1 s for the float32 Gram, 3 s more for the kernels of stored
        deltas), so only those `source` will call: the widening ones for a source that hands its
        deltas over as stored (any source when None)."""
        super().warm(backend, source)
        accumulate_gram([np.ones((2, 64), dtype=np.float32)], backend=backend)
        if source is not None and not source.hands_stored:
            return
        warm_deltas()
        if backend != "cuda" and (kernel := load_kernel("gram_kernel")) is not None:
            for base in STORED_DTYPES:  # bf16 rows over either base: each pairing is its own machine code
                accumulate_delta_gram([StoredDeltas(np.ones((2, 64), np.uint16), np.zeros(64, base))])
                for rows in STORED_DTYPES:  # the pieces' (harness.linalg.piece_gram)
                    kernel.add_piece_delta_gram(np.zeros((2, 2)), np.ones((2, 64), rows), np.zeros(64, base),
                                                kernel.piece_scratch(2))

    def imports(self, backend: Backend) -> tuple[str, ...]:
        return (*super().imports(backend), "numba kernels")

    def bytes_needed(self, layout: AdapterLayout, source: Source, dtype: np.dtype) -> int:
        """Streamed from files: the ring's slots of one row of the widest position each (more
        rows fill what the budget gives). Else one position's n deltas whole, plus the float64
        copy of one column slice."""
        itemsize, n = np.dtype(dtype).itemsize, layout.n
        if source.streams([p.refs for p in layout.positions], dtype):
            return SLOTS * max(row_bytes(n, p.shape[1], itemsize) for p in layout.positions)
        return max(n * p.size * itemsize + n * min(p.size, SUM_COLUMNS) * 8 for p in layout.positions)

    def batch_sizes(self, layout: AdapterLayout, source: Source, dtype: np.dtype, budget: int) -> dict[str, int]:
        """Rows per streamed block of the position with the longest rows, or the column slice
        of a whole position."""
        itemsize, n = np.dtype(dtype).itemsize, layout.n
        if source.streams([p.refs for p in layout.positions], dtype):
            longest = max(p.shape[1] for p in layout.positions)
            return {"rows": max(1, slot_bytes(budget) // row_bytes(n, longest, itemsize))}
        widest = max(p.size for p in layout.positions)
        return {"columns": block_columns(n, widest, 8, max(budget - n * widest * itemsize, 0))}

    def seconds(self, layout: AdapterLayout, machine: MachineInfo, backend: Backend) -> float:
        n = layout.n
        load = sum(dense_load_seconds(p, n, 4, machine) for p in layout.positions)
        return load + n * n * layout.d / _gemm_rate(machine)

    def grams(
        self, source: Source, layout: AdapterLayout, ctx: ExecContext, memory_budget: int
    ) -> np.ndarray:
        """Every position's deltas as the source streams them (Source.dense_blocks): a file
        source reads the next block in a thread while this one is multiplied, across positions,
        into one ring of buffers under the budget (pinned for CUDA); others hand over each
        position whole. On the CPU with the compiled kernel, a source that can hands its blocks
        over as stored (Source.stored_blocks), widened and subtracted in cache as they are
        multiplied; files in the page cache go further (Source.stored_pieces): each core reads
        cache-sized pieces into its own stage and multiplies them there, at memory speed. On
        CUDA that ring also stages blocks that are not pinned, and one side stream copies every
        position's blocks."""
        out = np.zeros((len(layout.positions), layout.n, layout.n))
        cuda = ctx.backend == "cuda"
        ring = Ring.within(memory_budget, pinned=cuda)
        refs = [p.refs for p in layout.positions]
        if low(ctx.arithmetic):  # bf16 / fp16 / tf32 products: torch's, never the float32 kernels
            return self._narrow(source, refs, ctx, ring, out)
        compiled = not cuda and load_kernel("gram_kernel") is not None
        if compiled and (pieces := source.stored_pieces(refs, ctx.dtype)) is not None:
            return piece_grams(pieces, kernel_threads())
        stored = source.stored_blocks(refs, ctx.dtype, ring) if compiled else None
        if stored is not None:
            for i, held in groupby(stored, key=itemgetter(0)):
                out[i] = accumulate_delta_gram(block for _, block in held)
            return out
        feed = DeviceFeed() if cuda else None
        for i, blocks in groupby(source.dense_blocks(refs, ctx.dtype, ring), key=itemgetter(0)):
            out[i] = accumulate_gram((block for _, block in blocks), backend=ctx.backend, ring=ring, feed=feed)
        return out

    @staticmethod
    def _narrow(source: Source, refs: Sequence[Sequence[MatrixRef]], ctx: ExecContext, ring: Ring,
                out: np.ndarray) -> np.ndarray:
        """Each position's blocks as dense float32, their Grams' products at ctx's narrow precision."""
        for i, blocks in groupby(source.dense_blocks(refs, ctx.dtype, ring), key=itemgetter(0)):
            for _, block in blocks:
                out[i] += narrow_gram(block, ctx.arithmetic, ctx.backend, rows=True, log=ctx.compiled)
        return out


class FactoredGramStrategy(GramStrategy):
    name = "factored_gram"
    summary = "<dW_i, dW_j> from B_i.T B_j and A_i A_j.T: no dense delta at all"
    needs_factors = True
    precisions = {
        "float64": "float64 factors and cross-Grams",
        "float32": "float32 factors and cross-Grams' products, their elementwise products and sums in float64",
        "bfloat16": ("factors rounded to bfloat16, the cross-Grams' products in bfloat16 through torch (float32 "
                     "accumulation, output rounded to bfloat16), elementwise products and sums in float64"),
        "float16": "factors rounded to float16, cross-Grams' products in float16, the rest float64",
        "tf32": "float32 factors, the cross-Grams' products on TF32 tensor cores, the rest float64",
    }
    compiles = "the casts and the cross-Gram products (narrow precisions)"

    def bytes_needed(self, layout: AdapterLayout, source: Source, dtype: np.dtype) -> int:
        """Factors in float64, and the two (n r) x (n r) cross-Grams."""
        n = layout.n
        return max(
            8 * n * (p.rank or 0) * (p.shape[0] + p.shape[1]) + 2 * 8 * (n * (p.rank or 0)) ** 2
            for p in layout.positions
        )

    def work(self, layout: AdapterLayout, itemsize: int) -> cost.Work:
        """The two cross-Grams X X^T of the stacked factors, X of n r rows: syrk's n r (n r + 1)
        (m + k) flops with symmetry (linalg.factored.frobenius_gram makes each a syrk; counted as
        two general products, 2 n^2 r^2 (m + k), it read 158% of its roof); the factors read once."""
        n = layout.n
        return _sum(cost.Work(n * (p.rank or 0) * (n * (p.rank or 0) + 1.0) * (p.shape[0] + p.shape[1]),
                              float(itemsize * n * (p.shape[0] + p.shape[1]) * (p.rank or 0)))
                    for p in layout.positions)

    def seconds(self, layout: AdapterLayout, machine: MachineInfo, backend: Backend) -> float:
        return self.work(layout, 8).flops / _gemm_rate(machine)

    def grams(
        self, source: Source, layout: AdapterLayout, ctx: ExecContext, memory_budget: int
    ) -> np.ndarray:
        out = np.empty((len(layout.positions), layout.n, layout.n))
        for i, position in enumerate(layout.positions):
            f = source.load_factors(position.refs, ctx.dtype)
            out[i] = frobenius_gram(f.B, f.A, f.scale, backend=ctx.backend, precision=ctx.arithmetic,
                                    log=ctx.compiled)
        return out


class GramPairwiseStrategy(GramStrategy):
    name = "gram_pairwise"
    summary = "G[i, j] one pair at a time, re-loading both vectors (the published loop)"

    def backend(self, device: str) -> Backend:
        return "numpy"

    def bytes_needed(self, layout: AdapterLayout, source: Source, dtype: np.dtype) -> int:
        """Two matrices, and their float64 copies."""
        return max(2 * p.size * (np.dtype(dtype).itemsize + 8) for p in layout.positions)

    def work(self, layout: AdapterLayout, itemsize: int) -> cost.Work:
        """One dot of 2 d flops per pair, both vectors read for each."""
        pairs = layout.n * (layout.n + 1) // 2
        return _sum(cost.Work(2.0 * pairs * p.size, 2.0 * pairs * p.size * itemsize) for p in layout.positions)

    def seconds(self, layout: AdapterLayout, machine: MachineInfo, backend: Backend) -> float:
        n = layout.n
        pairs = n * (n + 1) // 2
        load = sum(dense_load_seconds(p, 2 * pairs, 4, machine) for p in layout.positions)
        return load + 2.0 * pairs * layout.d / (machine.cores * 1e9)

    def grams(
        self, source: Source, layout: AdapterLayout, ctx: ExecContext, memory_budget: int
    ) -> np.ndarray:
        out = np.zeros((len(layout.positions), layout.n, layout.n))
        for i in range(layout.n):
            for j in range(i, layout.n):
                for p, position in enumerate(layout.positions):
                    xi = source.load_dense([position.refs[i]], ctx.dtype).astype(np.float64).ravel()
                    xj = source.load_dense([position.refs[j]], ctx.dtype).astype(np.float64).ravel()
                    out[p, i, j] = out[p, j, i] = float(xi @ xj)
        return out
