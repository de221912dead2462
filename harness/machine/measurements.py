"""Rounds measured by earlier runs on this machine, pooled into later runs' intervals, as asv keeps
results per commit and machine.

An item is one strategy on one shape under everything its seconds depend on: the code that
determines timings (a fingerprint of the numeric packages), op, k, shape, rank, dtype, numeric
precision, compiled or eager, its process environment, device, threads and width; the file is
this machine's identity (wisdom's). A round keeps its id, which names the run that timed it, so
a later run pairs the baseline's and a strategy's seconds of the same round, and groups rounds
by run (bench.statistics: the run is the unit of replication). Rounds measured under load are
kept with their reasons, and used only where quiet rounds are too few (bench.series.speedup).

The file is data from elsewhere: it is read with a size cap and checked whole (finite, positive,
plausible seconds; ids that name a run); a file that fails is kept aside under another name, with
one line, and the run measures afresh. Another version's file has its own name: never overwritten.
Like wisdom, it sits in the wisdom folder, under the same lock; HARNESS_WISDOM=off turns both off.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ValidationError, field_validator

from harness.base.atomic import write_atomic
from harness.base.bounded import TooLarge, read_capped
from harness.bench.series import Round
from harness.machine import wisdom
from harness.machine.info import MachineInfo
from harness.machine.wisdom import identity, locked

VERSION = 2  # 2: rounds name their run (a unique id) and keep the reasons the machine was busy
KEEP = 64  # rounds an item keeps, newest last: older ones speak for a machine that has moved on
CAP = 16 << 20  # bytes: 64 rounds of a few hundred items is well under 2 MB
PLAUSIBLE_S = (1e-9, 1e5)  # one call's seconds: a nanosecond to a day


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
    env: tuple[tuple[str, str], ...] = ()  # the point's own environment variables, beyond the user's

    def key(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:24]


class StoredRound(Round):
    """A round as the file holds it: checked as data from elsewhere."""

    @field_validator("seconds")
    @classmethod
    def _plausible(cls, seconds: float) -> float:
        low, high = PLAUSIBLE_S
        if not (math.isfinite(seconds) and low <= seconds <= high):
            raise ValueError(f"{seconds!r} seconds; expected a finite value from {low:g} to {high:g}")
        return seconds

    @field_validator("round")
    @classmethod
    def _names_a_run(cls, rid: str) -> str:
        if rid.count("#") < 2 or not rid.split("#", 1)[0]:
            raise ValueError(f"round id {rid[:40]!r}; expected '<run>#<analysis>#<n>'")
        return rid


class Measurements(BaseModel):
    version: int = VERSION
    machine: dict[str, str]
    items: dict[str, list[StoredRound]] = {}

    def rounds(self, item: Item) -> list[Round]:
        return [Round(round=r.round, seconds=r.seconds, busy=r.busy) for r in self.items.get(item.key(), [])]

    def add(self, item: Item, rounds: Iterable[Round]) -> None:
        known = self.items.setdefault(item.key(), [])
        seen = {r.round for r in known}
        known.extend(StoredRound(round=r.round, seconds=r.seconds, busy=r.busy) for r in rounds if r.round not in seen)
        del known[:-KEEP]


def path_for(where: Path, machine: MachineInfo) -> Path:
    """This machine's pool of this VERSION: another version's file has another name."""
    return wisdom.path_for(where, machine, f"rounds-v{VERSION}-")


def _aside(path: Path) -> Path:
    """Where a bad pool is kept: the first free `<name>.bad`, `<name>.bad-2`, ..."""
    n = 1
    while (target := path.with_name(path.name + (".bad" if n == 1 else f".bad-{n}"))).exists():
        n += 1
    path.replace(target)
    return target


def load(where: Path | None, machine: MachineInfo) -> tuple[Measurements, str | None]:
    """This machine's pooled rounds (empty when there are none), and a line when the file was bad
    and kept aside."""
    empty = Measurements(machine=identity(machine))
    if where is None:
        return empty, None
    path = path_for(where, machine)
    try:
        stored = Measurements.model_validate_json(read_capped(path, CAP))
    except FileNotFoundError:
        return empty, None
    except TooLarge as exc:
        why = str(exc)
    except OSError as exc:
        return empty, f"pooled rounds not read: {path}: {exc.strerror or exc}; measuring afresh"
    except (ValidationError, ValueError) as exc:
        count = exc.error_count() if isinstance(exc, ValidationError) else 1
        why = f"not a pool of rounds ({count} problem{'s' if count != 1 else ''})"
    else:
        if stored.version == VERSION and stored.machine == empty.machine:
            return stored, None
        why = f"version {stored.version} of machine {stored.machine.get('hostname', '?')}"
    try:
        kept = _aside(path)
    except OSError as exc:
        return empty, f"pooled rounds ignored: {path}: {why}; could not keep it aside ({exc.strerror}); measuring afresh"
    return empty, f"pooled rounds kept aside as {kept}: {why}; measuring afresh"


def keep(where: Path | None, machine: MachineInfo, new: dict[Item, list[Round]]) -> str | None:
    """Add a run's rounds to the stored ones under the wisdom lock, atomically; a line when the
    stored file was bad (kept aside first, as `load` does)."""
    if where is None or not new:
        return None
    with locked(where):
        stored, note = load(where, machine)
        for item, rounds in new.items():
            stored.add(item, rounds)
        text = stored.model_dump_json().encode()
        write_atomic(path_for(where, machine), lambda fh: fh.write(text))
    return note
