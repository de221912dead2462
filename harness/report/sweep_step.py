"""What `harness compare` says to compare when handed a sweep's folder for a run: only a command it accepts.
Compare takes two runs of one spec, and each point of a sweep is a run of its own spec (the sweep's with
the point's swept value), so a point pairs only with the same point of another sweep of that spec, or a
run of that point's spec. Walk 24 met `a sweep's folder; compare two of its points, e.g. harness compare
RUN SWEEP/rank-128`, which exits 2: the run was of another spec."""

from __future__ import annotations

import shlex
from pathlib import Path

from harness.record.folders import is_sweep, sweep_points
from harness.record.run_record import RecordError, load_record
from harness.record.sweep_record import load_sweep


def _spec_hash(folder: Path) -> str | None:
    """The spec hash of the run in `folder`; None where it holds no readable run."""
    try:
        return load_record(folder).spec_hash
    except RecordError:
        return None


def _matching(sweep: Path, other: Path) -> tuple[Path, Path] | None:
    """(a point of `sweep`, the run of `other` of the same spec: itself, or its sweep's point of that name)."""
    for point in sweep_points(sweep):
        theirs = other / point.name if is_sweep(other) else other
        mine = _spec_hash(point)
        if mine is not None and mine == _spec_hash(theirs):
            return point, theirs
    return None


def _second_sweep(sweep: Path) -> str:
    """`harness run configs/sweep_rank.toml -o SWEEP-2`: the sweep's own command (its spec and --set overrides,
    so each point's spec stays) into a new folder beside it, never over it."""
    try:
        record = load_sweep(sweep)
        command = record.command if record.command.startswith("harness run ") else f"harness run {record.spec_path}"
    except RecordError:
        command = "harness run SPEC"
    return f"{command} -o {shlex.quote(f'{sweep}-2')}"


def sweep_step(sweep_folder: str, other_folder: str, first: bool) -> str:
    """What to do instead, after `SWEEP: a sweep's folder; `: the same point of the other side where that is a
    sweep (or run) of its spec, else what compare needs and the commands that make a second sweep and compare
    a point of the two. `first`: the sweep was given as RUN_A, so its point comes first."""
    sweep, other = Path(sweep_folder), Path(other_folder)

    def compare(mine: Path, theirs: Path) -> str:
        return shlex.join(["harness", "compare", *map(str, (mine, theirs) if first else (theirs, mine))])

    found = _matching(sweep, other)
    if found is not None:
        whose = "the same point of the other sweep" if is_sweep(other) else "the run of its spec"
        return f"compare a point of it with {whose}, e.g. {compare(*found)}"
    points = sweep_points(sweep)
    point = points[-1].name if points else "POINT"
    second = Path(f"{sweep}-2")
    return (f"{other} is no run of any of its points' specs, and compare takes two runs of one spec (a sweep's points "
            "differ in the swept value, so two points of one sweep do not compare either): compare a point with "
            f"the same point of a second sweep of its spec, made by `{_second_sweep(sweep)}`, then "
            f"`harness compare {sweep / point} {second / point}`")
