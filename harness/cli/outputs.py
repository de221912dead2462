"""Files a command writes where the user says (`report -o`, `compare --html`, `history -o`, and
`run -o`'s folder): checked before any work. An output never replaces an input: `report RUN
--format json -o RUN/record.json` exited 0 and left the run unreadable. A name the file system
cannot hold (a component over 255 bytes, a path past PATH_MAX) is one line, not a traceback."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.plan.model import PlanError
from harness.record.run_record import RECORD
from harness.run.folder import check_name, run_files

SNIFF = 4096  # bytes of an existing file read to tell a run record under another name


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
