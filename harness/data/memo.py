"""The factors a run has loaded, kept in memory so that its analyses (spectra, top-k, features,
PCA) load each matrix once: generating or reading 2,128 LoRA factor pairs costs ~2 s, and a run
of the main job loaded them four times.

`MemoSource` wraps a source in the client process. No memo travels: pickled for a worker process
or a Dask worker it becomes that process's own memo of the run, empty at first (one run's at a
time: a new run's replaces it, and `forget_worker_memo` drops it), so a worker also loads each
matrix once across the run's analyses. It keeps factors in the run's dtype until its byte limit,
then stops adding (a run's passes are sequential scans, which an LRU would thrash); float64 loads
(references, exact features) pass through. It is safe for a Dask worker's task threads.
Dense loads go straight to the source: they are large, and formed on demand.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from harness.data.workload import Factors, KronFactors, MatrixRef, Source
from harness.linalg.gram import StoredDeltas
from harness.linalg.piece_gram import StoredPieces
from harness.linalg.prefetch import Ring
from harness.machine.info import memory_available

WORKER_SHARE = 4  # a worker process's memo may hold a quarter of the memory available when it starts
_WORKER_MEMO: dict[str, MemoSource] = {}  # this worker process's memo: of one run at most


def _on_worker(inner: Source, limit_bytes: int, dtype: np.dtype, run: str) -> MemoSource:
    """Unpickled in another process: that process's memo of the run `run`."""
    memo = _WORKER_MEMO.get(run)
    if memo is None:
        _WORKER_MEMO.clear()  # an earlier run's: it has no more use for it
        memo = _WORKER_MEMO[run] = MemoSource(inner, min(limit_bytes, memory_available() // WORKER_SHARE), dtype, run)
    return memo


def forget_worker_memo() -> None:
    """Drop this process's memo (run on each Dask worker when the run leaves the cluster)."""
    _WORKER_MEMO.clear()


class MemoSource(Source):
    def __init__(self, inner: Source, limit_bytes: int, dtype: np.dtype, run: str | None = None) -> None:
        self.run = run or uuid.uuid4().hex  # names this memo's copies in worker processes
        self._lock = threading.Lock()
        self.inner = inner
        self.dtype = np.dtype(dtype)  # the run's: loads in any other dtype pass through
        self.has_factors = inner.has_factors
        self.reads_ahead = inner.reads_ahead
        self.hands_stored = inner.hands_stored
        self.load_bytes_per_s = inner.load_bytes_per_s
        self.limit_bytes = limit_bytes
        self.held_bytes = 0
        self._loads: list[Factors] = []  # what each load returned
        self._factors: dict[tuple[str, str], tuple[int, int]] = {}  # kept: (load, row) by (id, dtype)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled, it is the receiving process's memo of this run: workers load for themselves."""
        return _on_worker, (self.inner, self.limit_bytes, self.dtype, self.run)

    def release(self) -> None:
        """Drop every kept factor: the run has no more use for them."""
        with self._lock:
            self._factors.clear()
            self._loads.clear()
            self.held_bytes = 0

    def refs(self) -> list[MatrixRef]:
        return self.inner.refs()

    def fingerprint(self) -> str:
        return self.inner.fingerprint()

    def load_dense(self, refs: Sequence[MatrixRef], dtype: np.dtype) -> np.ndarray:
        return self.inner.load_dense(refs, dtype)

    def dense_blocks(
        self, positions: Sequence[Sequence[MatrixRef]], dtype: np.dtype, ring: Ring
    ) -> Iterator[tuple[int, np.ndarray]]:
        return self.inner.dense_blocks(positions, dtype, ring)

    def streams(self, positions: Sequence[Sequence[MatrixRef]], dtype: np.dtype) -> bool:
        return self.inner.streams(positions, dtype)

    def stored_blocks(
        self, positions: Sequence[Sequence[MatrixRef]], dtype: np.dtype, ring: Ring
    ) -> Iterator[tuple[int, StoredDeltas]] | None:
        return self.inner.stored_blocks(positions, dtype, ring)

    def stored_pieces(self, positions: Sequence[Sequence[MatrixRef]], dtype: np.dtype) -> StoredPieces | None:
        return self.inner.stored_pieces(positions, dtype)

    def load_kron(self, refs: Sequence[MatrixRef], dtype: np.dtype) -> KronFactors:
        return self.inner.load_kron(refs, dtype)

    def skipped(self) -> list[str]:
        return self.inner.skipped()

    def load_factors(self, refs: Sequence[MatrixRef], dtype: np.dtype) -> Factors:
        """Kept factors as the loads that made them: refs that are a run of one load (a later
        analysis chunking a group as an earlier one did) come back as views, no copy; others are
        stacked (a copy of 2,128 deltas' factors cost ~0.5 s)."""
        dtype = np.dtype(dtype)
        if dtype != self.dtype:
            return self.inner.load_factors(refs, dtype)
        keys = [(ref.id, dtype.str) for ref in refs]
        with self._lock:
            found = {key: self._factors[key] for key in keys if key in self._factors}
            loads = list(self._loads)  # what `found` points into, whatever other threads add
        missing = [ref for ref, key in zip(refs, keys) if key not in found]
        if len(missing) == len(refs) and self.held_bytes >= self.limit_bytes:
            return self.inner.load_factors(refs, dtype)  # full: serve without keeping
        if missing:
            loaded = self.inner.load_factors(missing, dtype)  # outside the lock: threads load at once
            size = loaded.B.nbytes + loaded.A.nbytes
            with self._lock:
                if self.held_bytes + size <= self.limit_bytes:
                    fresh = {(ref.id, dtype.str): (len(self._loads), i) for i, ref in enumerate(missing)}
                    self._loads.append(loaded)
                    self._factors.update(fresh)
                    self.held_bytes += size
            if len(missing) == len(refs):
                return loaded
            fresh = {(ref.id, dtype.str): (len(loads), i) for i, ref in enumerate(missing)}
            found.update(fresh)
            loads = [*loads, loaded]  # this call's view: `loaded` at the end
        places = [found[key] for key in keys]
        load, first = places[0]
        if all(place == (load, first + i) for i, place in enumerate(places)):
            kept = loads[load]
            return Factors(B=kept.B[first : first + len(refs)], A=kept.A[first : first + len(refs)],
                           scale=kept.scale[first : first + len(refs)])
        return Factors(
            B=np.stack([loads[j].B[i] for j, i in places]),
            A=np.stack([loads[j].A[i] for j, i in places]),
            scale=np.array([loads[j].scale[i] for j, i in places]),
        )
