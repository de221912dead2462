"""The run folder a `harness run` writes into: its name checked against what the file system
holds, the files a run writes, an earlier run there that --force replaces (its files alone, and
never in the current folder, home, a folder above the spec or the cache), and a run stopped
outright there, which the next run of the same spec resumes into (a killed run could only be
resumed into a new folder)."""

from __future__ import annotations

import fnmatch
import json
import os
from pathlib import Path

from harness.base.bounded import read_capped
from harness.base.units import plural
from harness.plan.model import PlanError, Step
from harness.record.exports import TIMINGS, VERIFICATION
from harness.run.interrupted import Interrupted
from harness.record.run_record import FEATURES, RECORD, RECORD_CAP, SPECTRA, AnalysisRecord, RunRecord, written_by_us

NAME_MAX, PATH_MAX = 255, 4096  # Linux's, where pathconf cannot say
REPORT_FILE = "report.html"  # what --report writes (report.html's REPORT: that stage sits above this one)
Place = tuple[str, Path, bool]  # a place --force never empties: in words, where, whether a folder inside it is refused too


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
    from harness.run.interrupted import INTERRUPTED

    return RECORD, SPECTRA, FEATURES, TIMINGS, VERIFICATION, PCA_FILE, AXES_FILE.format(name="*"), INTERRUPTED


def written_by_a_run() -> tuple[str, ...]:
    """Every name (pattern) a run and its report leave in the run folder, their temporary files
    (base.atomic's ".NAME.XXXXXXXX.tmp") included: what --force and a resumed run delete, no more."""
    names = (*run_files(), REPORT_FILE)
    return (*names, *(f".{name}.*.tmp" for name in names))


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
    ours = written_by_a_run()
    if not (folder / RECORD).is_file() or not all(
            p.is_file() and any(fnmatch.fnmatchcase(p.name, name) for name in ours) for p in folder.iterdir()):
        return None
    raw = recorded(folder)
    return raw if raw is not None and raw.get("complete") is False and written_by_us(raw) else None


def earlier_run(folder: Path) -> bool:
    """Whether `folder` holds a run of this harness: a record.json it can read, marked as its own."""
    return (folder / RECORD).is_file() and written_by_us(recorded(folder))


def check_places(folder: Path, places: list[Place]) -> None:
    """PlanError when --force would empty `folder` while it is one of `places` or holds one (a
    folder above the spec holds the spec), or lies inside one that says so (the cache), links
    resolved first: `-o . --force` deleted the spec, notes and the cache beside an earlier run."""
    real = Path(os.path.realpath(folder))
    for what, place, inside in places:
        where = Path(os.path.realpath(place))
        how = ("is" if real == where else "holds" if real in where.parents
               else "lies inside" if inside and where in real.parents else None)
        if how is not None:
            raise PlanError([f"{folder}: {how} {what}; --force replaces only the folder of an earlier run; choose "
                             "another with -o"])


def empty_run(folder: Path) -> None:
    """The files an earlier run wrote in `folder` deleted, for this run: those alone (a file of
    the user's beside them stays), and not the folder (another process may hold it open, and a
    lock taken on it stays valid)."""
    names = written_by_a_run()
    for entry in folder.iterdir():
        if any(fnmatch.fnmatchcase(entry.name, name) for name in names) and (entry.is_symlink() or not entry.is_dir()):
            entry.unlink()


def resume(folder: Path, spec_hash: str) -> tuple[RunRecord, Interrupted | None]:
    """Empty the folder of a stopped run of the same spec for this run, and return that run's
    record, checked whole (RunRecord: untrusted data, validated before a number is read from
    it), and the rounds of the analysis it stopped in (run.interrupted, validated too);
    PlanError when the folder holds anything else."""
    from harness.run import interrupted

    stopped = stopped_run(folder)
    if stopped is None:
        raise PlanError([f"{folder}: output folder exists and is not empty; choose another with -o"])
    if stopped.get("spec_hash") != spec_hash:
        raise PlanError([f"{folder}: holds a stopped run of another spec (or other --set values); choose another "
                         "folder with -o"])
    record = RunRecord.model_validate(stopped)  # stopped_run checked it validates
    rounds = interrupted.read(folder)
    empty_run(folder)
    return record, rounds


def _timed_alike(mine: Step, theirs: Step) -> bool:
    """Whether two plans time an analysis alike: its op, strategy and tolerance, and the same
    compared points (a wisdom the stopped run taught may have changed the plan's choice)."""
    fields = ("op", "k", "strategy", "device", "precision", "tolerance")
    return (all(getattr(mine, f) == getattr(theirs, f) for f in fields)
            and [t.label for t in mine.timed] == [t.label for t in theirs.timed])


def _alike(stopped: RunRecord, record: RunRecord) -> set[str]:
    """The analyses a stopped run and this run (`record`, just begun) time alike (_timed_alike),
    of the same input files, harness and machine."""
    if (stopped.workload_fingerprint, stopped.harness_version, stopped.machine.identity) != (
            record.workload_fingerprint, record.harness_version, record.machine.identity):
        return set()
    theirs = {s.analysis: s for s in stopped.plan.steps}
    return {s.analysis for s in record.plan.steps if s.analysis in theirs and _timed_alike(s, theirs[s.analysis])}


def finished_analyses(stopped: RunRecord, record: RunRecord) -> dict[str, AnalysisRecord]:
    """The analyses of a stopped run that this run (`record`, just begun) takes over as they are,
    their rounds not timed again: those it finished, which this run times alike (_alike). Every
    other analysis is timed anew, but for the rounds kept of the one it stopped in (interrupted_rounds)."""
    alike = _alike(stopped, record)
    return {a.name: a for a in stopped.analyses if a.name in alike}


def interrupted_rounds(stopped: RunRecord, record: RunRecord, rounds: Interrupted | None) -> Interrupted | None:
    """The rounds the stopped run timed of the analysis it stopped in, which this run takes back:
    when that run wrote them (its run id), the analysis is not one it finished, and this run times
    it alike (_alike); the phase then checks each point on each group (run.interrupted.restore)."""
    if rounds is None or stopped.bench is None or rounds.run_id != stopped.bench.run_id:
        return None
    finished = {a.name for a in stopped.analyses}
    return rounds if rounds.analysis in _alike(stopped, record) - finished else None


def resume_line(folder: Path, kept: int, steps: int, rounds: Interrupted | None = None, cached: bool = True) -> str:
    """What resuming into `folder` does, said before it does it; without a cache (`cached`:
    --no-cache) what the stopped run computed is computed again."""
    now = steps - kept
    cut = (f" but for {plural(rounds.count, 'round')} of {rounds.analysis} kept from the interrupted run"
           if rounds is not None and rounds.count else "")
    return (f"resuming into {folder}: a run of this spec stopped there; {plural(kept, 'finished analysis', 'finished analyses')} "
            f"{'is' if kept == 1 else 'are'} kept as timed, {now} {'is' if now == 1 else 'are'} timed now{cut} "
            + ("(what the stopped run computed comes back from the cache)" if cached
               else "(--no-cache: what the stopped run computed is computed again)"))
