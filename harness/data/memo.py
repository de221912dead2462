"""The factors a run has loaded, kept in memory so that its analyses (spectra, top-k, features,
PCA) load each matrix once: generating or reading 2,128 LoRA factor pairs costs ~2 s, and a run
of the main job loaded them four times.

`MemoSource` wraps a source in the client process only: pickled for a worker process or a Dask
worker it becomes the plain source again, so no memo travels. It keeps factors in the run's dtype
until its byte limit, then stops adding (a run's passes are sequential scans, which an LRU would
thrash); float64 loads (references, exact features) pass through.
Dense loads go straight to the source: they are large, and formed on demand.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from harness.data.workload import Factors, KronFactors, MatrixRef, Source
from harness.linalg.gram import StoredDeltas
from harness.linalg.piece_gram import StoredPieces
from harness.linalg.prefetch import Ring


def _itself(source: Source) -> Source:
    return source


class MemoSource(Source):
    def __init__(self, inner: Source, limit_bytes: int, dtype: np.dtype) -> None:
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
        """Pickled, it is the source it wraps: workers load for themselves."""
        return _itself, (self.inner,)

    def release(self) -> None:
        """Drop every kept factor: the run has no more use for them."""
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
        found = {key: self._factors[key] for key in keys if key in self._factors}
        missing = [ref for ref, key in zip(refs, keys) if key not in found]
        if len(missing) == len(refs) and self.held_bytes >= self.limit_bytes:
            return self.inner.load_factors(refs, dtype)  # full: serve without keeping
        loads = self._loads
        if missing:
            loaded = self.inner.load_factors(missing, dtype)
            fresh = {(ref.id, dtype.str): (len(loads), i) for i, ref in enumerate(missing)}
            found.update(fresh)
            size = loaded.B.nbytes + loaded.A.nbytes
            if self.held_bytes + size <= self.limit_bytes:
                self._loads.append(loaded)
                self._factors.update(fresh)
                self.held_bytes += size
            else:
                loads = [*loads, loaded]  # this call's alone
            if len(missing) == len(refs):
                return loaded
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
