"""What a run keeps in memory from start to end and what it writes, counted from shapes alone.

The plan checks batches against the memory budget one shape group at a time; this checks the
rest: the matrix list itself, every spectrum the run holds until it writes spectra.npz, the top-k
bases subspace features compare, and the files it writes. A synthetic workload is counted before
a single matrix is listed, so `data.adapters = 1e9` is refused in milliseconds with the numbers,
not after the matrix list has eaten the machine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.data.workload import Census
from harness.machine.info import MachineInfo
from harness.plan.model import PlanError
from harness.specs.sections import PcaAnalysis, Spec, SvdTopkAnalysis
from harness.linalg.features import SUBSPACE_FEATURES
from harness.base.units import format_bytes

REF_BYTES = 1500  # one MatrixRef in the matrix list: 1,459 B measured with tracemalloc (560k refs)
NPZ_ENTRY_BYTES = 300  # an array's overhead in spectra.npz: zip headers twice, the .npy header
CSV_ROW_BYTES = 100  # a features.csv row: names, layer, module, metric and a repr'd float
RECORD_BYTES = 2**20  # record.json, timings.csv, verification.csv: task_geometry's are 140 KB in all
FLOAT = 8  # spectra are kept and written in float64


@dataclass(frozen=True)
class Footprint:
    held: dict[str, int]  # what stays in memory for the whole run, by what it is
    written: dict[str, int]  # bytes of each file the run folder gets
    cached: int  # bytes of result-cache entries (the spectra again)

    @property
    def held_bytes(self) -> int:
        return sum(self.held.values())

    @property
    def written_bytes(self) -> int:
        return sum(self.written.values())


def footprint(spec: Spec, census: Census) -> Footprint:
    itemsize = np.dtype(spec.execution.dtype).itemsize  # of bases and axes; spectra are float64
    spectra = bases = entries = rows = axes = 0
    for analysis in spec.analysis:
        if isinstance(analysis, PcaAnalysis):
            if analysis.axes:
                axes += analysis.components * census.parameters * itemsize
            continue
        k = analysis.k if isinstance(analysis, SvdTopkAnalysis) else None
        for (m, n), count in census.shapes.items():
            spectra += count * (min(k, m, n) if k else min(m, n)) * FLOAT
            if k and any(f in SUBSPACE_FEATURES for f in analysis.features):
                bases += count * m * min(k, m, n) * itemsize
        entries += census.matrices
        rows += census.matrices * len(analysis.features)
    written = {"spectra.npz": spectra + entries * NPZ_ENTRY_BYTES, "features.csv": rows * CSV_ROW_BYTES,
               "the record and its CSVs": RECORD_BYTES}
    if axes:
        written["axes-*.npy"] = axes
    return Footprint(held={"the matrix list": census.matrices * REF_BYTES, "spectra": spectra, "top-k bases": bases},
                     written=written, cached=written["spectra.npz"])


def _held(fp: Footprint) -> str:
    return ", ".join(f"{what} {format_bytes(size)}" for what, size in fp.held.items() if size)


def check_memory(spec: Spec, census: Census, machine: MachineInfo) -> None:
    """PlanError when what the run holds throughout cannot fit in the machine's available memory.
    The memory budget is not the bar: it bounds each batch's working set, beside what is held."""
    fp = footprint(spec, census)
    if fp.held_bytes > machine.memory_available:
        raise PlanError([f"data: {census.matrices:,} matrices of {census.adapters:,} adapters keep "
                         f"{format_bytes(fp.held_bytes)} in memory for the whole run ({_held(fp)}); this machine "
                         f"has {format_bytes(machine.memory_available)} available; analyse fewer matrices"])


def _free(path: Path) -> tuple[int, int]:
    """(device id, free bytes) of the file system that holds `path` or would hold it."""
    above = next(p for p in [path, *path.parents] if p.exists())
    usage = os.statvfs(above)
    return os.stat(above).st_dev, usage.f_bavail * usage.f_frsize


def check_disk(spec: Spec, census: Census, folder: Path, cache: Path | None) -> list[str]:
    """PlanError when the run folder's disk (and the cache's, the same one counted once) cannot
    take what the run will write. A cache on a disk of its own that lacks room costs only the
    caching (ResultCache.put stops at the first refused write): a warning line, returned."""
    fp = footprint(spec, census)
    needs = {folder: fp.written_bytes, **({cache: fp.cached} if cache is not None else {})}
    free: dict[int, int] = {}
    on: dict[int, list[Path]] = {}  # the paths of each file system
    for path in needs:
        device, free[device] = _free(path)
        on.setdefault(device, []).append(path)
    warnings = []
    for device, paths in on.items():
        if (need := sum(needs[p] for p in paths)) > free[device] and folder not in paths:
            warnings.append(f"warning: {cache}: the result cache would take {format_bytes(need)} and its disk has "
                            f"{format_bytes(free[device])} free; this run's results may not all be cached")
        elif need > free[device]:
            what = " and ".join(str(p) for p in paths)
            files = ", ".join(f"{name} {format_bytes(size)}" for name, size in fp.written.items() if size)
            raise PlanError([f"{what}: the run will write {format_bytes(need)} ({files}"
                             f"{', the result cache ' + format_bytes(fp.cached) if cache in paths else ''}) "
                             f"and the disk has {format_bytes(free[device])} free; free space or write elsewhere "
                             "(-o, execution.cache_dir)"])
    return warnings
