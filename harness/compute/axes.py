"""Principal axes of a pca step in parameter space, streamed into a .npy file of the run folder.

An axis is as long as an adapter vector (352M values in the reference case), so axes are written
only when asked (``axes = true``), never cached and never held whole in memory: each position's
n deltas are loaded once, and each column block's piece of the axes
(:func:`harness.linalg.pca.principal_axes`) is written to its place in the file. The file has
the same columns for both scopes: position p owns columns ``offsets[p]:offsets[p + 1]`` (its
m x n values, row-major); with ``scope = "per_layer"`` they hold that position's own PCA, with
``"global"`` the slices of the one global axis. The PCA comes from the step's pca.npz arrays,
so a cached step needs no Gram."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np

from harness.base.atomic import NpyColumns, atomic_npy
from harness.data.layout import AdapterLayout
from harness.data.workload import DataError, Workload
from harness.linalg.device import Backend
from harness.linalg.gram import gram_from_array
from harness.linalg.gram_blocks import block_columns, iter_column_blocks
from harness.linalg.pca import DualPCA, principal_axes
from harness.compute.pca import GLOBAL, pca_from_arrays, pca_prefix
from harness.base.progress import Display
from harness.record.run_record import AxesRecord
from harness.specs.sections import PcaAnalysis
from harness.base.units import format_bytes
from harness.record.verification import Verification

AXES_FILE = "axes-{name}.npy"
# Columns per product: its float64 copy of the block (n x 64K x 8 bytes, 20 MB for 38 adapters)
# is reused from the heap; one full-position copy of 0.7 GB cost page faults, 0.1 to 2 s each.
PIECE_COLUMNS = 1 << 16


def axes_index(name: str, layout: AdapterLayout) -> dict[str, np.ndarray]:
    """pca.npz entries that say which columns of the axes file belong to which position."""
    sizes = [p.size for p in layout.positions]
    return {
        f"{name}:axes_positions": np.array([p.label for p in layout.positions]),
        f"{name}:axes_offsets": np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        f"{name}:axes_shapes": np.array([p.shape for p in layout.positions], dtype=np.int64),
    }


def axes_backend(step_backend: Backend) -> Backend:
    """CUDA when the step runs there; numpy otherwise: torch's float64 copy of a read-only
    block made it 3x slower on the CPU (0.45 against 0.14 s for a 38 x 2.4M position)."""
    return "cuda" if step_backend == "cuda" else "numpy"


def orthonormality_error(A: np.ndarray, pca: DualPCA, memory_budget: int, backend: Backend) -> float:
    """max |A A^T - I| over the nonzero components (axes of zero variance are all zeros)."""
    expected = np.diag((pca.singular_values > 0).astype(np.float64))
    gram = gram_from_array(A, memory_budget=memory_budget, backend=backend)
    return float(np.max(np.abs(gram - expected)))


def stream_axes(
    out: NpyColumns, column: int, X: np.ndarray, pca: DualPCA, *, memory_budget: int, backend: Backend
) -> None:
    """The axes' entries for the columns of an n x c data matrix X, into columns
    [column, column + c) of `out`, one column block at a time."""
    n, c = X.shape
    columns = min(block_columns(n, c, X.dtype.itemsize, memory_budget), PIECE_COLUMNS)
    for b, piece in enumerate(principal_axes(iter_column_blocks(X, columns), pca, backend=backend)):
        out.write(column + b * columns, piece)


def write_axes(
    name: str,
    analysis: PcaAnalysis,
    arrays: dict[str, np.ndarray],
    workload: Workload,
    folder: Path,
    *,
    dtype: np.dtype,
    backend: Backend,
    memory_budget: int,
    tolerance: float,
    display: Display,
) -> tuple[AxesRecord, Verification, dict[str, np.ndarray]]:
    """Write axes-<name>.npy for the PCA(s) in `arrays`: its record, the verdict of its
    orthonormality (judged against `tolerance`) and the file's pca.npz index."""
    start = time.perf_counter()
    layout = AdapterLayout.from_workload(workload)
    index = axes_index(name, layout)
    offsets = index[f"{name}:axes_offsets"]
    k, d = analysis.components, int(offsets[-1])
    path = folder / AXES_FILE.format(name=name)
    needed = k * d * dtype.itemsize
    free = shutil.disk_usage(folder).free
    if needed > free:
        raise DataError(f"{path}: the principal axes need {format_bytes(needed)} on disk, "
                        f"{format_bytes(free)} is free; set axes = false or free some space")
    keys = [GLOBAL] if analysis.scope == GLOBAL else [p.label for p in layout.positions]
    pcas = {key: pca_from_arrays(arrays, pca_prefix(name, analysis.scope, key), analysis.center) for key in keys}

    with atomic_npy(path, (k, d), dtype) as out, display.phase(f"{name}: principal axes", len(layout.positions)) as phase:
        for p, position in enumerate(layout.positions):
            phase.item(position.label)
            X = workload.source.load_dense(position.refs, dtype).reshape(layout.n, -1)
            pca = pcas[GLOBAL if analysis.scope == GLOBAL else position.label]
            stream_axes(out, int(offsets[p]), X, pca, memory_budget=memory_budget, backend=backend)
            phase.advance()
        phase.item("checking A A^T = I")
        A = np.load(out.path, mmap_mode="r")
        if analysis.scope == GLOBAL:
            error = orthonormality_error(A, pcas[GLOBAL], memory_budget, backend)
        else:
            error = max(
                orthonormality_error(A[:, offsets[p] : offsets[p + 1]], pcas[position.label], memory_budget, backend)
                for p, position in enumerate(layout.positions)
            )
    record = AxesRecord(file=path.name, components=k, parameters=d, dtype=dtype.name,
                        seconds=time.perf_counter() - start, orthonormality_error=error)
    return record, Verification.judged("axes", len(pcas) * k, tolerance, error), index
