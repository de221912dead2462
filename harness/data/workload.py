"""The workload: an ordered set of matrix references and the source that can load them.

A source is a small picklable description (paths, keys, seed), never the data itself, so a
worker process or a Dask worker can load any subset of matrices on its own.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from harness.linalg.gram import StoredDeltas
from harness.linalg.piece_gram import StoredPieces
from harness.linalg.prefetch import Ring


class MatrixRef(BaseModel):
    """One matrix of the workload. `locator` is what the source needs to load it."""

    model_config = ConfigDict(frozen=True)

    id: str
    adapter: str
    layer: int | None
    module: str
    shape: tuple[int, int]
    rank: int | None = None
    # (m1, n1, m2, n2) when the delta is a Kronecker product kron(W1, W2) (LoKr): W1 m1 x n1
    kron: tuple[int, int, int, int] | None = None
    locator: dict[str, Any] = {}

    @property
    def group_key(self) -> tuple[int, int, int | None, tuple[int, int, int, int] | None]:
        """Matrices that can share one batched call: same shape, and same rank or Kronecker
        factor shapes when factored."""
        return (self.shape[0], self.shape[1], self.rank, self.kron)

    @property
    def form(self) -> str:
        """"lora" (scale * B @ A), "kron" (scale * kron(W1, W2)) or "dense"."""
        return "kron" if self.kron is not None else "lora" if self.rank is not None else "dense"


@dataclass(frozen=True)
class Factors:
    """A stack of LoRA deltas dW[i] = scale[i] * B[i] @ A[i]; B: (k, m, r), A: (k, r, n)."""

    B: np.ndarray
    A: np.ndarray
    scale: np.ndarray

    def dense(self, dtype: np.dtype | None = None) -> np.ndarray:
        """The deltas themselves, (k, m, n): formed in the factors' dtype one matrix at a time
        into one reused buffer, and stored as `dtype` (the factors' by default); the scale goes
        on the m x r factor, not the m x n product. A fresh product per matrix cost more than
        the product itself (numpy asks for huge pages on large arrays, and each new one is
        faulted in): 38 3072 x 768 float64 deltas took 0.09 s this way against 0.2-0.4 s."""
        k, m, n = len(self.B), self.B.shape[1], self.A.shape[2]
        out = np.empty((k, m, n), dtype=dtype or self.B.dtype)
        product = None if out.dtype == self.B.dtype else np.empty((m, n), dtype=self.B.dtype)
        for i in range(k):
            target = out[i] if product is None else product
            np.matmul(self.B[i] * self.B.dtype.type(self.scale[i]), self.A[i], out=target)
            if product is not None:
                out[i] = product
        return out


@dataclass(frozen=True)
class KronFactors:
    """A stack of Kronecker deltas dW[i] = scale[i] * kron(W1[i], W2[i]) (LoKr);
    W1: (k, m1, n1), W2: (k, m2, n2), dW[i]: (m1 m2) x (n1 n2)."""

    W1: np.ndarray
    W2: np.ndarray
    scale: np.ndarray


@dataclass(frozen=True)
class Census:
    """How many matrices of each shape (m, n), and over how many adapters: all a size check needs."""

    shapes: dict[tuple[int, int], int]
    adapters: int

    @classmethod
    def of(cls, refs: Sequence[MatrixRef]) -> Census:
        return cls(dict(Counter(ref.shape for ref in refs)), len({ref.adapter for ref in refs}))

    @property
    def matrices(self) -> int:
        return sum(self.shapes.values())

    @property
    def parameters(self) -> int:
        """Entries of one adapter's deltas, the length of a PCA axis (adapters share shapes)."""
        return sum(m * n * count for (m, n), count in self.shapes.items()) // max(1, self.adapters)


class DataError(ValueError):
    """A user's input file or tensor is wrong; the message names it and what was expected."""


class Source(ABC):
    """Loads matrices of a workload. Subclasses are picklable descriptions, not data."""

    has_factors: bool = False
    load_bytes_per_s: float = 1e9  # reading stored tensors (page cache or a fast disk): an estimate
    # Loads read stored files and do no BLAS work, so a loader thread can read the next chunk
    # while this one is computed (harness.compute.chunks.run_chunks_ahead). A PEFT load forms B @ A
    # (BLAS, whose thread pool is process-wide) and a generator's is compute, not I/O.
    reads_ahead: bool = False
    # Deltas handed over as the files store them (bf16 or float32 beside their base), which the
    # compiled widening kernels serve: only such a source needs those compiled before a timed call.
    hands_stored: bool = False

    def load_bytes(self, refs: Sequence[MatrixRef], itemsize: int = 4) -> int:
        """Bytes of `refs` as loaded, as factors when the source has them."""
        return sum(itemsize * (ref.rank * sum(ref.shape) if self.has_factors and ref.rank else ref.shape[0] * ref.shape[1])
                   for ref in refs)

    def load_seconds(self, refs: Sequence[MatrixRef]) -> float:
        """Estimated seconds to load `refs` once."""
        return self.load_bytes(refs) / self.load_bytes_per_s

    @abstractmethod
    def refs(self) -> list[MatrixRef]:
        """Every matrix of the source, in a stable order."""

    @abstractmethod
    def fingerprint(self) -> str:
        """A hex digest that changes whenever the numbers the source yields could change."""

    @abstractmethod
    def load_dense(self, refs: Sequence[MatrixRef], dtype: np.dtype) -> np.ndarray:
        """A (k, m, n) stack; all refs share one shape."""

    def dense_blocks(
        self, positions: Sequence[Sequence[MatrixRef]], dtype: np.dtype, ring: Ring
    ) -> Iterator[tuple[int, np.ndarray]]:
        """(index, block) pairs: (k, c_b) column blocks of each group of k same-shaped matrices
        flattened, group by group, in order: a streamed Gram's input. Here each group whole; a
        file source reads blocks ahead of the consumer into the `ring`'s buffers (page-locked
        for CUDA), across groups."""
        for i, refs in enumerate(positions):
            yield i, self.load_dense(refs, dtype).reshape(len(refs), -1)

    def streams(self, positions: Sequence[Sequence[MatrixRef]], dtype: np.dtype) -> bool:
        """Whether :meth:`dense_blocks` reads these positions in row blocks through the ring
        (memory: the ring's) rather than each position whole."""
        return False

    def stored_blocks(
        self, positions: Sequence[Sequence[MatrixRef]], dtype: np.dtype, ring: Ring
    ) -> Iterator[tuple[int, StoredDeltas]] | None:
        """The blocks of :meth:`dense_blocks`, in the same rows, as the files store them (for the
        compiled Gram of stored deltas, which widens and subtracts in cache); None where this
        source cannot hand them over so."""
        return None

    def stored_pieces(self, positions: Sequence[Sequence[MatrixRef]], dtype: np.dtype) -> StoredPieces | None:
        """These positions as cache-sized pieces of the files, read and multiplied by the Gram's
        own threads (harness.linalg.piece_gram), where that is the faster route (files in the
        page cache); None otherwise."""
        return None

    def census(self) -> Census | None:
        """The workload's shape counts without listing its matrices, where the source can count
        them (a generator can; files must be opened); None otherwise."""
        return None

    def load_factors(self, refs: Sequence[MatrixRef], dtype: np.dtype) -> Factors:
        """LoRA factors of refs sharing one (m, n, r); only for sources with has_factors."""
        raise NotImplementedError(f"{type(self).__name__} holds dense matrices, not LoRA factors")

    def load_kron(self, refs: Sequence[MatrixRef], dtype: np.dtype) -> KronFactors:
        """Kronecker factors of refs of one group whose form is "kron"."""
        raise NotImplementedError(f"{type(self).__name__} holds no Kronecker deltas")

    def skipped(self) -> list[str]:
        """Tensors of the inputs that are not analysed, `file: tensor (why)` each."""
        return []


@dataclass(frozen=True)
class ShapeGroup:
    """Matrices of one (m, n, rank) in workload order."""

    shape: tuple[int, int]
    rank: int | None
    refs: tuple[MatrixRef, ...]
    kron: tuple[int, int, int, int] | None = None

    @property
    def label(self) -> str:
        m, n = self.shape
        rank = f"r{self.rank}" if self.rank is not None else ""
        return f"{m}x{n}{rank}" + ("" if self.kron is None else "k{}x{}".format(*self.kron[:2]))

    def __len__(self) -> int:
        return len(self.refs)


@dataclass
class Workload:
    source: Source
    refs: list[MatrixRef] = field(default_factory=list)

    @classmethod
    def from_source(cls, source: Source) -> Workload:
        return cls(source=source, refs=source.refs())

    @property
    def has_factors(self) -> bool:
        return self.source.has_factors

    def not_factored(self, forms: frozenset[str]) -> str | None:
        """Why some matrices are in none of `forms` (naming a few), or None when all are."""
        others = [ref for ref in self.refs if ref.form not in forms]
        if not others:
            return None
        if len(others) == len(self.refs) and all(ref.form == "dense" for ref in others):
            return "this workload's matrices are dense"
        named = ", ".join(f"{ref.id} ({ref.form})" for ref in others[:3])
        more = f" and {len(others) - 3} more" if len(others) > 3 else ""
        return f"{len(others)} of the workload's matrices are not: {named}{more}"

    def groups(self) -> list[ShapeGroup]:
        """Shape groups in order of first appearance."""
        by_key: dict[tuple[int, int, int | None, tuple[int, int, int, int] | None], list[MatrixRef]] = {}
        for ref in self.refs:
            by_key.setdefault(ref.group_key, []).append(ref)
        return [ShapeGroup((m, n), r, tuple(refs), k) for (m, n, r, k), refs in by_key.items()]

    def fingerprint(self) -> str:
        ids = hashlib.sha256(json.dumps([r.id for r in self.refs]).encode()).hexdigest()
        return hashlib.sha256(f"{self.source.fingerprint()}:{ids}".encode()).hexdigest()

    def __len__(self) -> int:
        return len(self.refs)


def chunks(refs: Sequence[MatrixRef], size: int) -> Iterator[Sequence[MatrixRef]]:
    """Consecutive slices of at most `size` refs."""
    for start in range(0, len(refs), max(1, size)):
        yield refs[start : start + size]
