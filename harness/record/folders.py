"""What a folder given for a run is when it holds no run's record: nothing at all, a sweep's folder
(sweep.json beside one run folder per point), or something else. Every command that loads a run says it
from here (walk 22: `harness compare` of two sweeps' folders, and of a folder that did not exist, both
read "no record.json here; is this a run folder from `harness run`?")."""

from __future__ import annotations

from pathlib import Path

RECORD = "record.json"
SWEEP_RECORD = "sweep.json"


def is_sweep(folder: Path) -> bool:
    """A sweep's folder: its sweep.json and no run's record of its own."""
    return (folder / SWEEP_RECORD).is_file() and not (folder / RECORD).exists()


def sweep_points(folder: Path) -> list[Path]:
    """A sweep's point folders, each a run folder (`rank-256/`), by name."""
    try:
        return sorted(p for p in folder.iterdir() if (p / RECORD).is_file())
    except OSError:
        return []


def point_of(folder: Path, like: str = "") -> Path | None:
    """A real point folder of the sweep in `folder`: the one named `like` where it has one, else its first."""
    points = sweep_points(folder)
    return next((p for p in points if p.name == like), points[0] if points else None)


def no_record(folder: Path) -> str:
    """Why `folder` is no run folder, in words that say what it is: missing, a sweep's (naming a point to
    take instead), or a folder without a record."""
    if not folder.exists():
        return f"{folder}: does not exist; expected a run folder from `harness run`"
    if is_sweep(folder):
        point = point_of(folder)
        return (f"{folder}: a sweep's folder; each of its points is a run folder"
                + (f", e.g. {point}" if point is not None else ""))
    return f"{folder}: no {RECORD} here; is this a run folder from `harness run`?"
