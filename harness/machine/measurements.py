"""Rounds measured by earlier runs on this machine, pooled into later runs' intervals, as asv keeps
results per commit and machine.

An item is one strategy on one shape under everything its seconds depend on: the code that
determines timings (a fingerprint of the numeric packages), op, k, shape, rank, dtype, numeric
precision, compiled or eager, its process environment, device, threads and width; the file is
this machine's identity (wisdom's). A round keeps its id, which names the run that timed it, so
a later run pairs the baseline's and a strategy's seconds of the same round, and groups rounds
by run (bench.statistics: the run is the unit of replication). Rounds measured under load are
kept with their reasons, and used only where quiet rounds are too few (bench.series.speedup).

The file is data from elsewhere (machine.stored): it is read with a size cap and checked whole
(finite, positive, plausible seconds; ids that name a run); a file that fails is kept aside under
another name, with one line, and the run measures afresh. Another version's file has its own
name, and is never overwritten.
Like wisdom, it sits in the wisdom folder, under the same lock; HARNESS_WISDOM=off turns both off.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, field_validator

from harness.base.atomic import write_atomic
from harness.base.locks import on_stderr
from harness.bench.series import Round
from harness.machine import stored, wisdom
from harness.machine.info import MachineInfo
from harness.machine.wisdom import Say, identity, locked

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
    # item key -> ids of its rounds a run discarded as implausible: set aside for every later run,
    # not pooled again once later rounds outvote them in a median (walk 8: a 14x-off round came back)
    set_aside: dict[str, list[str]] = {}

    def rounds(self, item: Item) -> list[Round]:
        aside = set(self.set_aside.get(item.key(), ()))
        return [Round(round=r.round, seconds=r.seconds, busy=r.busy, when=r.when) for r in self.items.get(item.key(), [])
                if r.round not in aside]

    def add(self, item: Item, rounds: Iterable[Round], aside: Iterable[str] = ()) -> None:
        """`rounds` kept (the newest KEEP), and the ids in `aside` set aside, of those still kept."""
        key = item.key()
        known = self.items.setdefault(key, [])
        seen = {r.round for r in known}
        known.extend(StoredRound(round=r.round, seconds=r.seconds, busy=r.busy, when=r.when) for r in rounds
                     if r.round not in seen)
        del known[:-KEEP]
        ids = {r.round for r in known}
        if kept := sorted(ids & (set(self.set_aside.get(key, ())) | set(aside))):
            self.set_aside[key] = kept
        else:
            self.set_aside.pop(key, None)


def path_for(where: Path, machine: MachineInfo) -> Path:
    """This machine's pool of this VERSION: another version's file has another name."""
    return wisdom.path_for(where, machine, f"rounds-v{VERSION}-")


def _read(where: Path, machine: MachineInfo, say: Say) -> stored.Found[Measurements]:
    """The stored pool; a bad file kept aside (under the lock, if it is still the file read)
    and said in one line."""
    path = path_for(where, machine)
    found = stored.read(path, Measurements, VERSION, identity(machine), CAP)
    fate = ""
    if found.problem is not None and found.identity is not None:
        try:
            with locked(where, say):
                fate = stored.set_aside(path, found)
        except OSError as exc:
            fate = f"could not be kept aside ({exc.strerror or exc})"
    stored.tell(path, "pooled rounds", found, fate, say)
    return found


def load(where: Path | None, machine: MachineInfo, say: Say = on_stderr) -> Measurements:
    """This machine's pooled rounds; empty when there are none, or none that can be read."""
    found = _read(where, machine, say) if where is not None else None
    return found.model if found is not None and found.model is not None else Measurements(machine=identity(machine))


def keep(where: Path | None, machine: MachineInfo, new: dict[Item, list[Round]], say: Say = on_stderr,
         aside: dict[Item, set[str]] | None = None) -> None:
    """Add a run's rounds to the stored ones, and set aside the stored rounds it discarded (`aside`),
    under the wisdom lock, atomically; another version's file under this name is left as it is."""
    aside = aside or {}
    if where is None or not (new or aside):
        return
    with locked(where, say):
        found = stored.read(path_for(where, machine), Measurements, VERSION, identity(machine), CAP)
        if found.other is not None:
            say(f"pooled rounds not kept: {path_for(where, machine)} {found.other}")
            return
        pool = found.model or Measurements(machine=identity(machine))
        for item in {**new, **aside}:
            pool.add(item, new.get(item, []), aside.get(item, ()))
        text = pool.model_dump_json().encode()
        write_atomic(path_for(where, machine), lambda fh: fh.write(text))
