"""A workload seen as adapters x matrix positions, the shape PCA across adapters needs.

An adapter's vector is the concatenation of its matrices' deltas in position order, so the
Gram matrix of the vectors is the sum over positions of the Gram matrices of one position's
matrices: every strategy can work position by position and never hold a whole vector.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.data.workload import DataError, MatrixRef, Workload


@dataclass(frozen=True)
class Position:
    """One (layer, module) slot: the same-shaped matrix of every adapter, in adapter order."""

    layer: int | None
    module: str
    shape: tuple[int, int]
    rank: int | None
    refs: tuple[MatrixRef, ...]

    @property
    def label(self) -> str:
        return self.module if self.layer is None else f"layer{self.layer}/{self.module}"

    @property
    def size(self) -> int:
        """Parameters one adapter has at this position."""
        return self.shape[0] * self.shape[1]


@dataclass(frozen=True)
class AdapterLayout:
    adapters: tuple[str, ...]
    positions: tuple[Position, ...]

    @classmethod
    def from_workload(cls, workload: Workload) -> AdapterLayout:
        """Group refs by adapter and by (layer, module); every adapter must have the same
        positions with the same shapes, or the vectors would not be comparable."""
        by_adapter: dict[str, dict[tuple[int | None, str], MatrixRef]] = {}
        for ref in workload.refs:
            by_adapter.setdefault(ref.adapter, {})[(ref.layer, ref.module)] = ref
        if not by_adapter:
            raise DataError("pca: the workload has no matrices")
        adapters = tuple(by_adapter)
        first = by_adapter[adapters[0]]
        for name in adapters[1:]:
            mine = by_adapter[name]
            if mine.keys() != first.keys():
                missing = sorted(map(str, first.keys() - mine.keys()))
                extra = sorted(map(str, mine.keys() - first.keys()))
                raise DataError(
                    f"pca: adapter {name!r} has different matrices from {adapters[0]!r} "
                    f"(missing {missing or 'none'}, extra {extra or 'none'}); PCA needs every "
                    "adapter to have the same (layer, module) positions"
                )
            for key, ref in mine.items():
                if (ref.shape, ref.rank) != (first[key].shape, first[key].rank):
                    raise DataError(
                        f"pca: {ref.id} has shape {ref.shape} rank {ref.rank}, but "
                        f"{first[key].id} has {first[key].shape} rank {first[key].rank}"
                    )
        positions = tuple(
            Position(
                layer=layer,
                module=module,
                shape=ref.shape,
                rank=ref.rank,
                refs=tuple(by_adapter[a][(layer, module)] for a in adapters),
            )
            for (layer, module), ref in first.items()
        )
        return cls(adapters=adapters, positions=positions)

    @property
    def n(self) -> int:
        return len(self.adapters)

    @property
    def d(self) -> int:
        """Length of one adapter's vector."""
        return sum(p.size for p in self.positions)

    def head(self, count: int) -> AdapterLayout:
        """The first `count` positions (all of them for 0): the benchmark's sub-workload."""
        if count == 0 or count >= len(self.positions):
            return self
        return AdapterLayout(adapters=self.adapters, positions=self.positions[:count])

    def at(self, index: int) -> AdapterLayout:
        """Position `index` alone: what one benchmark round of a PCA times."""
        return AdapterLayout(adapters=self.adapters, positions=(self.positions[index],))
