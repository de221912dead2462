"""Rounds measured by earlier runs on this machine, pooled into later runs' intervals, as asv keeps
results per commit and machine.

An item is one strategy on one shape under everything its seconds depend on: the code that
determines timings (a fingerprint of the numeric packages), op, k, shape, rank, dtype, numeric
precision, compiled or eager, device, threads and width; the file is this machine's identity (wisdom's). A round keeps its id, so a
later run pairs the baseline's and a strategy's seconds of the same round, never of different
ones. Rounds measured under flagged conditions are not kept. Like wisdom, the file sits in the
wisdom folder, under the same lock; HARNESS_WISDOM=off turns both off.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ValidationError

from harness.base.atomic import write_atomic
from harness.machine.info import MachineInfo
from harness.machine import wisdom
from harness.machine.wisdom import identity, locked

VERSION = 1
KEEP = 40  # rounds an item keeps, newest last: older ones speak for a machine that has moved on


class Item(BaseModel, frozen=True):
    """What a round's seconds depend on."""

    code: str  # fingerprint of the code that determines timings
    strategy: str
    op: str
    k: int | None
    shape: tuple[int, int]
    rank: int | None
    dtype: str
    device: str
    threads: int
    width: int
    precision: str = ""  # the arithmetic (harness.linalg.precision); "" = dtype's own
    compiled: bool = False

    def key(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:24]


class Round(BaseModel):
    """One round's seconds per matrix (per position for a PCA) of one item."""

    round: str  # "<run started>#<analysis>#<n>": the same id on every item timed in that round
    seconds: float


class Measurements(BaseModel):
    version: int = VERSION
    machine: dict[str, str]
    items: dict[str, list[Round]] = {}

    def rounds(self, item: Item) -> list[Round]:
        return list(self.items.get(item.key(), []))

    def add(self, item: Item, rounds: Iterable[Round]) -> None:
        known = self.items.setdefault(item.key(), [])
        seen = {r.round for r in known}
        known.extend(r for r in rounds if r.round not in seen)
        del known[:-KEEP]


def path_for(where: Path, machine: MachineInfo) -> Path:
    return wisdom.path_for(where, machine, "rounds-")


def load(where: Path | None, machine: MachineInfo) -> Measurements:
    """This machine's pooled rounds; empty when there are none (or none of this version)."""
    empty = Measurements(machine=identity(machine))
    if where is None:
        return empty
    try:
        stored = Measurements.model_validate_json(path_for(where, machine).read_bytes())
    except (OSError, ValidationError, ValueError):
        return empty
    return stored if stored.version == VERSION and stored.machine == empty.machine else empty


def keep(where: Path | None, machine: MachineInfo, new: dict[Item, list[Round]]) -> None:
    """Add a run's rounds to the stored ones under the wisdom lock, atomically."""
    if where is None or not new:
        return
    with locked(where):
        stored = load(where, machine)
        for item, rounds in new.items():
            stored.add(item, rounds)
        text = stored.model_dump_json().encode()
        write_atomic(path_for(where, machine), lambda fh: fh.write(text))
