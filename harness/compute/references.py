"""float64 references of the sampled matrices: computed once per run, shared by every analysis
and strategy, and kept in the result cache.

For LoRA inputs the reference is exact from float64 factors (two thin QRs and an r x r SVD for
the values, the factored Gram for PCA), milliseconds where a dense float64 SVD of a 3072 x 768
delta takes a second; tests prove both equal dense LAPACK. Vectors are checked through
residuals, which need W v and W^T u, never the dense W: `Operator` applies the factors.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from threadpoolctl import threadpool_limits

from harness.data.layout import AdapterLayout, Position
from harness.data.workload import MatrixRef, Source
from harness.linalg.factored import factored_svdvals, frobenius_gram, pad_spectrum
from harness.linalg.kron import kron_frobenius_gram, kron_svd
from harness.linalg.gram import accumulate_gram
from harness.linalg.prefetch import SLOT_BYTES, SLOTS, Ring
from harness.strategies.base import OpResult
from harness.compute.verify import Operator, combine, verify
from harness.record.verification import Verification
from harness.store.cache import ResultCache
from harness.store.keys import Keys


F64 = np.dtype(np.float64)
T = TypeVar("T")


def parts(source: Source, items: Sequence[T]) -> list[Sequence[T]]:
    """`items` whole where the source has factors (small), else one by one: a dense float64
    matrix (and LAPACK's copy of it) is the most a reference or a check holds at once. Whole, a
    sample of two 48838 x 1024 embeddings held 1.6 GB of float64 for the values and 0.8 GB for
    the vectors' check under a 512 MiB budget (a 4.9 GB peak)."""
    return [items] if source.has_factors else [items[i : i + 1] for i in range(len(items))]


def checked(
    strategy: str, result: OpResult, source: Source, refs: Sequence[MatrixRef], references: References,
    tolerance: float,
) -> Verification:
    """The verdict on `result` for `refs`: values against the float64 references, vectors
    through the float64 matrices, a part (:func:`parts`) at a time."""
    S_ref = references.values(refs)
    verdicts = []
    for part in parts(source, range(len(refs))):
        assert isinstance(part, range)  # parts of a range are ranges
        cut = slice(part.start, part.stop)
        own = OpResult(result.S[cut], *(None if a is None else a[cut] for a in (result.U, result.Vh)))
        W = operator(source, refs[cut]) if result.U is not None else None
        verdicts.append(verify(strategy, own, W, S_ref[cut], tolerance))
    return combine(strategy, verdicts)


def operator(source: Source, refs: Sequence[MatrixRef]) -> Operator:
    """The matrices of `refs` in float64, as factors when the source has them (LoRA, LoKr)."""
    if source.has_factors:
        return Operator(factors=source.load_factors(refs, F64))
    if all(ref.form == "kron" for ref in refs):  # a 25600 x 25600 LoKr delta is 5.2 GB dense in float64
        return Operator(kron=source.load_kron(refs, F64))
    return Operator(dense=source.load_dense(refs, F64))


def exact_values(source: Source, refs: Sequence[MatrixRef]) -> np.ndarray:
    """All min(m, n) singular values of each matrix, float64: from float64 factors (padded
    with the rank-r delta's exact zeros), from the two Kronecker factors' SVDs for LoKr (their
    products, exactly; never the dense delta), else LAPACK's gesdd on the dense matrix."""
    if source.has_factors:
        f = source.load_factors(refs, F64)
        return pad_spectrum(factored_svdvals(f.B, f.A, f.scale), min(refs[0].shape))
    if all(ref.form == "kron" for ref in refs):  # a 25600 x 25600 LoKr delta is 5.2 GB dense in float64
        k = source.load_kron(refs, F64)
        return pad_spectrum(kron_svd(k.W1, k.W2, k.scale, compute_uv=False)[0], min(refs[0].shape))
    return np.linalg.svd(source.load_dense(refs, F64), compute_uv=False)


def exact_gram(source: Source, position: Position, ring: Ring) -> np.ndarray:
    """The (n, n) Gram of one position's deltas in float64: factored, else dense, as the source
    hands it over (a file source streams float64 row blocks through `ring`: the embedding
    position of 18 fine-tunes of a 352M model is 7.2 GB in float64, whole). BLAS runs one
    thread: a stream's readers use the cores, and OpenBLAS's spinning second thread against
    them made that position's Gram 5x slower (18.6 s against 3.6 s, page cache, 2 cores)."""
    if source.has_factors:
        f = source.load_factors(position.refs, F64)
        return frobenius_gram(f.B, f.A, f.scale)
    if all(ref.form == "kron" for ref in position.refs):  # LoKr: from the factors, never the dense deltas
        k = source.load_kron(position.refs, F64)
        return kron_frobenius_gram(k.W1, k.W2, k.scale)
    with threadpool_limits(1, user_api="blas"):
        return accumulate_gram((block for _, block in source.dense_blocks([position.refs], F64, ring)),
                               backend="numpy")


@dataclass
class References:
    """The run's references, by matrix id and by position, from memory, the cache, or computed."""

    source: Source
    cache: ResultCache | None = None
    keys: Keys | None = None
    values_by_id: dict[str, np.ndarray] = field(default_factory=dict)
    grams_by_position: dict[str, np.ndarray] = field(default_factory=dict)
    memory_budget: int = SLOTS * SLOT_BYTES  # for the ring of the float64 Grams that stream
    computed: int = 0
    cached: int = 0
    seconds: float = 0.0

    def _key(self, kind: str, name: str) -> str | None:
        return None if self.cache is None or self.keys is None else self.keys.reference(kind, name)

    def _lookup(self, kind: str, name: str) -> np.ndarray | None:
        key = self._key(kind, name)
        hit = self.cache.get_arrays(key) if key is not None and self.cache is not None else None
        if hit is not None and "ref" in hit:
            self.cached += 1
            return hit["ref"]
        return None

    def _store(self, kind: str, name: str, value: np.ndarray) -> None:
        self.computed += 1
        key = self._key(kind, name)
        if key is not None and self.cache is not None:
            self.cache.put_arrays(key, {"ref": value}, f"float64 reference: {kind} of {name}", kind="reference")

    def values(self, refs: Sequence[MatrixRef]) -> np.ndarray:
        """(len(refs), min(m, n)) float64 singular values; refs share one shape group."""
        start = time.perf_counter()
        for ref in refs:
            if ref.id not in self.values_by_id and (hit := self._lookup("values", ref.id)) is not None:
                self.values_by_id[ref.id] = hit
        missing = [ref for ref in refs if ref.id not in self.values_by_id]
        for part in parts(self.source, missing) if missing else []:
            for ref, S in zip(part, exact_values(self.source, part)):
                self.values_by_id[ref.id] = S
                self._store("values", ref.id, S)
        self.seconds += time.perf_counter() - start
        return np.stack([self.values_by_id[ref.id] for ref in refs])

    def grams(self, layout: AdapterLayout) -> np.ndarray:
        """(positions, n, n) float64 Grams of the layout's positions."""
        start = time.perf_counter()
        names = [gram_name(p.label, layout.adapters) for p in layout.positions]
        for p, name in zip(layout.positions, names):
            if name not in self.grams_by_position:
                hit = self._lookup("gram", name)
                if hit is None:
                    hit = exact_gram(self.source, p, Ring.within(self.memory_budget))
                    self._store("gram", name, hit)
                self.grams_by_position[name] = hit
        self.seconds += time.perf_counter() - start
        return np.stack([self.grams_by_position[name] for name in names])


def gram_name(position: str, adapters: Sequence[str]) -> str:
    """A position's Gram over these adapters, as its cache key and `cache ls` name it: the adapters
    by 8 hex digits of their names' hash, so the line fits 100 columns (walk 14: 16 wrapped)."""
    return f"{position} of adapters {hashlib.sha256(chr(0).join(adapters).encode()).hexdigest()[:8]}"
