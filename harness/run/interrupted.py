"""The rounds of the analysis a run was timing when it stopped (Ctrl-C, SIGTERM, a kill), kept in
its folder after each round, so that the run resuming it times only the rounds still missing
(run.folder takes over the analyses it finished whole). Read back, the file is data from
elsewhere: size-capped, validated, and used only when it is the stopped run's (its run id) and
each of its points on each group is this run's alike (the item its rounds pool under and the
matrices a call); anything else is ignored and the analysis is timed from its start."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from harness.base.atomic import write_atomic
from harness.base.bounded import read_capped
from harness.base.numbers import Count, Tally
from harness.bench.series import Round
from harness.machine.measurements import Item, StoredRound
from harness.record.verification import Verification

if TYPE_CHECKING:  # annotations only: the folder's checks import this module without the phase's
    from harness.run.items import Timeline
    from harness.run.subjects import Subject

INTERRUPTED = "interrupted.json"  # in the run folder, while an analysis is being timed
CAP = 16 << 20  # bytes: a few hundred rounds of a few dozen subjects are well under 1 MB


class KeptCheck(BaseModel):
    ids: tuple[str, ...]  # the matrices a round visited
    verdict: Verification


class KeptSubject(BaseModel):
    """One point on one group: its rounds and what the record keeps beside them."""

    point: str
    group: str
    item: Item
    matrices: Count
    rounds: list[StoredRound]
    calls: Tally
    threads: dict[str, int] = {}
    checks: list[KeptCheck] = []


class Interrupted(BaseModel):
    run_id: str  # the run that wrote it: the stopped run's record names it (bench.run_id)
    analysis: str
    subjects: list[KeptSubject]

    @property
    def count(self) -> int:
        """The rounds it keeps: a point's, the most any point has."""
        return max((len(s.rounds) for s in self.subjects), default=0)


def save(folder: Path, run_id: str, analysis: str, subjects: Sequence[Subject], lines: dict[int, Timeline]) -> None:
    """The rounds this run timed of `analysis` so far (and any it kept from a stopped run), atomically."""
    kept = Interrupted(run_id=run_id, analysis=analysis, subjects=[KeptSubject(
        point=s.name, group=s.group, item=s.item, matrices=s.allocation.matrices, calls=lines[id(s)].calls,
        rounds=[StoredRound(**r.model_dump()) for r in lines[id(s)].new], threads=lines[id(s)].threads,
        checks=[KeptCheck(ids=ids, verdict=v) for ids, v in s.checks.items()]) for s in subjects])
    write_atomic(folder / INTERRUPTED, lambda fh: fh.write(kept.model_dump_json().encode()))


def clear(folder: Path | None) -> None:
    """The analysis ended: its rounds are in the record (or it raised): the file goes (none without
    a run folder)."""
    if folder is not None:
        (folder / INTERRUPTED).unlink(missing_ok=True)


def read(folder: Path) -> Interrupted | None:
    """The file as a stopped run left it, validated whole; None where there is none, or it is not one."""
    try:
        return Interrupted.model_validate_json(read_capped(folder / INTERRUPTED, CAP))
    except (OSError, ValueError):  # a pydantic ValidationError is a ValueError
        return None


def restore(kept: Interrupted, subjects: Sequence[Subject], lines: dict[int, Timeline]) -> float | None:
    """Take the kept rounds back as this run's own (their round ids name the stopped run), with
    their calls, thread pools and verdicts; the seconds they cost, for the analysis' budget. None,
    and nothing taken, unless every subject and every kept one match one to one."""
    by_key = {(k.point, k.group): k for k in kept.subjects}
    if len(by_key) != len(kept.subjects) or set(by_key) != {(s.name, s.group) for s in subjects}:
        return None
    if any(by_key[s.name, s.group].item != s.item or by_key[s.name, s.group].matrices != s.allocation.matrices
           for s in subjects):
        return None
    spent_s = 0.0
    for s in subjects:
        k, line = by_key[s.name, s.group], lines[id(s)]
        line.new = [Round(**r.model_dump()) for r in k.rounds]
        line.calls, line.threads = k.calls, dict(k.threads)
        s.checks.update({c.ids: c.verdict for c in k.checks})
        if k.rounds:
            spent_s += k.calls * sum(r.seconds for r in k.rounds) / len(k.rounds)
    return spent_s
