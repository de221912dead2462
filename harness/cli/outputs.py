"""Files a command writes where the user says (`report -o`, `compare --html`, `history -o`, and
`run -o`'s folder): checked before any work. An output never replaces an input: `report RUN
--format json -o RUN/record.json` exited 0 and left the run unreadable. A name the file system
cannot hold (a component over 255 bytes, a path past PATH_MAX) is one line, not a traceback."""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.base.bounded import read_capped
from harness.plan.model import PlanError
from harness.record.exports import TIMINGS, VERIFICATION
from harness.record.run_record import FEATURES, RECORD, RECORD_CAP, SPECTRA

SNIFF = 4096  # bytes of an existing file read to tell a run record under another name
NAME_MAX, PATH_MAX = 255, 4096  # Linux's, where pathconf cannot say


def _limit(path: Path, name: str, default: int) -> int:
    """The file system's limit where `path` (or the nearest folder above it that exists) is."""
    above = next((p for p in [path, *path.parents] if os.path.isdir(p)), Path("."))
    try:
        return os.pathconf(above, name)
    except (OSError, ValueError):
        return default


def check_name(path: Path, expected: str) -> None:
    """PlanError unless every component of `path` and `path` itself fit the file system."""
    parent = path.parent
    longest = _limit(parent, "PC_NAME_MAX", NAME_MAX)
    for part in path.parts:
        if len(os.fsencode(part)) > longest:
            raise PlanError([f"{str(path)[:80]}...: a name in it is {len(os.fsencode(part))} bytes, more than the "
                             f"{longest} a file system takes; expected {expected}"])
    most = _limit(parent, "PC_PATH_MAX", PATH_MAX)
    if len(os.fsencode(path)) >= most:
        raise PlanError([f"{str(path)[:80]}...: {len(os.fsencode(path))} bytes, past the longest path the system "
                         f"takes ({most - 1}); expected {expected}"])


def run_files() -> tuple[str, ...]:
    """The names (patterns) of the files a run writes into its folder."""
    from harness.compute.axes import AXES_FILE  # the compute stage (0.1 s): only when an output is named
    from harness.compute.pca import PCA_FILE

    return RECORD, SPECTRA, FEATURES, TIMINGS, VERIFICATION, PCA_FILE, AXES_FILE.format(name="*")


def _is_record(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return b'"schema_version"' in fh.read(SNIFF)
    except OSError:
        return False


def check_output(text: str, reads: list[Path], expected: str = "a new file") -> Path:
    """The output file `text` names; PlanError when it is a folder, one of the files a run
    wrote (in a folder this command reads, or any run folder) or any run record."""
    path = Path(text)
    check_name(path, expected)
    if path.is_dir():
        raise PlanError([f"{path}: is a folder; expected {expected}"])
    target = path.resolve()
    read = {p.resolve() for p in reads}
    folders = {p if p.is_dir() else p.parent for p in read}
    of_a_run = (target.parent in folders or (target.parent / RECORD).is_file()) and any(
        fnmatch.fnmatchcase(target.name, name) for name in run_files())
    what = ("a file this command reads" if target in read else f"the {target.name} of run folder {target.parent}"
            if of_a_run else "a run record" if target.is_file() and _is_record(target) else None)
    if what is not None:
        raise PlanError([f"{path}: {what}, which writing here would replace; expected {expected} outside a run's "
                         "files"])
    return path


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """An output write whose OSError (a missing permission, a full disk) is one line."""
    try:
        yield
    except OSError as exc:
        raise PlanError([f"{path}: cannot write ({exc.strerror or exc}); choose another file"]) from None


def recorded(folder: Path) -> dict[str, object] | None:
    """The run folder's record as it is on disk, unchecked (None where there is none to read)."""
    try:
        raw = json.loads(read_capped(folder / RECORD, RECORD_CAP))
    except (OSError, ValueError, RecursionError):
        return None
    return raw if isinstance(raw, dict) else None


def stopped_run(folder: Path) -> dict[str, object] | None:
    """The record of a run stopped outright (SIGKILL, a power cut) in `folder`, when the folder
    holds nothing else: its own files, leftover temporary files, its report. Such a folder is a
    run to resume, not one to refuse (a killed run could only be resumed into a new folder)."""
    ours = (*run_files(), ".*.tmp", "report.html")
    if not (folder / RECORD).is_file() or not all(
            p.is_file() and any(fnmatch.fnmatchcase(p.name, name) for name in ours) for p in folder.iterdir()):
        return None
    raw = recorded(folder)
    return raw if raw is not None and raw.get("complete") is False else None


def resume(folder: Path, spec_hash: str) -> str:
    """Empty the folder of a stopped run of the same spec for this run; PlanError otherwise. The
    line to say: how far the stopped run got (its chunks come back from the cache)."""
    stopped = stopped_run(folder)
    if stopped is None:
        raise PlanError([f"{folder}: output folder exists and is not empty; choose another with -o"])
    if stopped.get("spec_hash") != spec_hash:
        raise PlanError([f"{folder}: holds a stopped run of another spec (or other --set values); choose another "
                         "folder with -o"])
    analyses = stopped.get("analyses")
    for path in folder.iterdir():
        path.unlink()
    done = len(analyses) if isinstance(analyses, list) else 0
    return (f"resuming into {folder}: a run of this spec stopped there after {done} analyses; what it computed "
            "comes back from the cache")
