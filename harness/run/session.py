"""One run of a spec, from its file to its record: the folder it writes (fresh, or one the caller
names, emptied only when asked to), the workload's fingerprint, the machine's roofs, the runner.
`harness run` and `harness.api.run` both call this, so a notebook's run is recorded, cached and
verified exactly as a terminal's is; neither prints anything here but through the display."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from harness.base.atomic import FolderTaken, exclusive_folder
from harness.base.progress import Display, Phase
from harness.base.units import format_bytes, now
from harness.data import content_hashes
from harness.data.paths import reachable
from harness.data.workload import Census, DataError, Workload
from harness.machine import measurements
from harness.machine.wisdom import Observation
from harness.plan.footprint import check_disk
from harness.plan.model import PlanError, backends
from harness.record.run_record import RECORD, AnalysisRecord, RunRecord
from harness.run.calibrate import missing_roofs, run_roofs
from harness.run.folder import (Place, check_name, check_places, earlier_run, empty_run, finished_analyses,
                                interrupted_rounds, resume, resume_line, stopped_run)
from harness.run.interrupted import Interrupted
from harness.run.output import OutputError
from harness.run.prepare import RunContext, skipped_warning
from harness.run.validation import every_problem, validate
from harness.run.runner import Runner
from harness.specs.reading import SpecError, load_spec
from harness.specs.sections import Spec
from harness.store.cache import ResultCache

MEASURING = "measuring this machine (first run only)"  # its roofs: a few seconds once, kept in its wisdom


@dataclass(frozen=True)
class RunOptions:
    """How to run: into which folder (None: a fresh one under results/), replacing an earlier
    run's there (`force`), with or without the result cache, pooling earlier rounds or not."""

    output: Path | None = None
    force: bool = False
    no_cache: bool = False
    fresh: bool = False
    say_taught: bool = True  # the wisdom line of measurements taken while busy (a sweep says it once)


def command_line(spec_path: str | Path, overrides: list[str], options: RunOptions, report: bool = False,
                 into: Path | None = None) -> str:
    """The command line that reproduces the run, its overrides and flags included: the report shows
    it verbatim. It has no `-o`: run as shown it writes a fresh folder under results/ (the run's own
    folder would be refused, or with --force replaced), so a reader can paste it as it is (a run
    from Python records the command that does the same). With `into`, the command that resumes a
    run stopped in that folder: `-o into`, and never --force, which would start it over."""
    words = ["harness", "run", str(spec_path), *(["-o", str(into)] if into is not None else []),
             *(f"--set={s}" for s in overrides)] + ["--report"] * report
    return shlex.join(words + ["--no-cache"] * options.no_cache + ["--fresh"] * options.fresh)


def spec_hash(spec: Spec) -> str:
    canonical = json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def default_folder(spec: Spec) -> Path:
    """results/<experiment>/<UTC time>-<spec hash>: a fresh folder per run, named so that runs of
    one spec sort by time and runs of another spec never share a name."""
    run_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return Path("results") / spec.experiment.name / f"{run_id}-{spec_hash(spec)[:8]}"


def _taken(folder: Path) -> str:
    """--force offered only where it would be taken: a folder of an earlier run (walk 25: offered for a
    folder of stray files, and for home, then refused)."""
    force = ", or --force to replace the run in it" if earlier_run(folder) else ""
    return (f"{folder}: output folder exists and is not empty; choose another with -o{',' if force else ' or'} "
            f"leave -o out for a fresh one under results/{force}")


def places(spec_path: str | Path) -> list[Place]:
    """What --force never empties, known before the spec is read: the current folder, home, and
    any folder above the spec (each, or a folder holding it)."""
    return [("the current folder", Path.cwd(), False), ("the home folder", Path(os.path.expanduser("~")), False),
            (f"the spec {spec_path}", Path(spec_path), False)]


def cache_places(context: RunContext) -> list[Place]:
    """What --force never empties once the spec is read: the result cache and the wisdom, each,
    a folder inside it, or one holding it."""
    where = [("the result cache", context.cache_dir, True)]
    return where + ([("the wisdom folder", context.wisdom_folder, True)] if context.wisdom_folder is not None else [])


def check_run_folder(folder: Path, force: bool = False, refused: list[Place] | None = None) -> None:
    """PlanError unless `folder` can become the run folder: a new or empty folder, under folders
    (a file there would end in a traceback halfway); with `force`, a folder holding an earlier
    run of this harness (run.folder.earlier_run), never any other, nor one of `refused`. The
    default folder stays inside results/ because the spec accepts only a safe folder name as
    `experiment.name`. A folder holding only a run stopped outright (run.folder.stopped_run) is
    checked when claimed: the same spec resumes into it."""
    check_name(folder, "a new or empty run folder")
    above = next(p for p in [folder, *folder.parents] if os.path.lexists(p))
    inside = "" if above == folder else f" to hold {folder}"
    reachable(above, f"a new or empty run folder{inside}")  # a link that loops passed for a new folder
    if not above.is_dir():
        raise PlanError([f"{above}: is a file; expected a new or empty run folder{inside}"])
    if force:
        check_places(folder, refused or [])
    if folder.is_dir() and any(folder.iterdir()) and stopped_run(folder) is None:
        if not force:
            raise PlanError([_taken(folder)])
        if not earlier_run(folder):
            raise PlanError([f"{folder}: --force replaces an earlier run of this harness, and this folder holds no "
                             f"{RECORD} of one; choose another with -o"])
    if not os.access(above, os.W_OK | os.X_OK):  # a read-only mount says so even to root
        raise PlanError([f"{above}: cannot write here (a read-only file system, or permissions); expected a "
                         f"writable folder{inside}; choose another with -o"])


@contextmanager
def _claimed(folder: Path, force: bool, spec_hash: str) -> Iterator[tuple[RunRecord, Interrupted | None] | None]:
    """The run folder, this run's alone (base.atomic.exclusive_folder): a second run given the
    same folder ends in one line; so does one that finds it filled since it was checked, unless
    what fills it is a stopped run of the same spec, which this run takes over (its record is
    yielded, with the rounds of the analysis it stopped in, for what the new run keeps of it)."""
    try:
        with exclusive_folder(folder):
            stopped = None
            if any(folder.iterdir()):
                if stopped_run(folder) is not None and not force:
                    stopped = resume(folder, spec_hash)
                elif not force or not earlier_run(folder):
                    raise PlanError([_taken(folder)])
                else:
                    empty_run(folder)
            yield stopped
    except FolderTaken as exc:
        raise PlanError([f"{exc}; choose another with -o"]) from None


def _fingerprint(workload: Workload, cache_dir: Path | None, phase: Phase) -> str:
    """The workload's fingerprint, the files it hashes named as they are read; their digests
    are kept in the cache folder, so an unchanged file is read in full once, not every run."""
    hashed: list[int] = []

    def reading(path: Path, size: int) -> None:
        hashed.append(size)
        phase.item(f"hashing {path.name} ({format_bytes(size)})")

    with content_hashes.remembered(cache_dir, reading):
        fingerprint = workload.fingerprint()
    phase.summary = f"hashed {len(hashed)} files, {format_bytes(sum(hashed))}" if hashed else "no file read in full"
    return fingerprint


@dataclass
class Session:
    """A run prepared and ready: its context, its folder and its first record. `run()` does the
    work; an interrupted one leaves the folder with a record marked incomplete."""

    context: RunContext
    folder: Path
    record: RunRecord
    options: RunOptions
    display: Display
    cache: ResultCache | None
    learned: list[Observation] = field(default_factory=list)  # what the run added to the machine's wisdom

    def run(self) -> RunRecord:
        context, folder = self.context, self.folder
        where = context.wisdom_folder
        used = backends(context.plan.steps)
        # a phase only where it measures (walk 15: `this machine's roofs`, 8 s with no word why; walk 17:
        # every later run, which reads the roofs kept, logged `measuring this machine (first run only)`)
        measuring = self.display.phase(MEASURING) if missing_roofs(where, context.wisdom, used) else nullcontext()
        with measuring as phase:
            self.record.roofs = run_roofs(where, context.wisdom, self.record.machine, used)
            if phase is not None:
                phase.summary = ", ".join(f"{r.device}: {r.by}" for r in self.record.roofs.values())
        pool = measurements.load(where, context.machine, say=self.display.plain) if where is not None else None
        created = not folder.exists()
        try:
            with _claimed(folder, self.options.force, self.record.spec_hash) as stopped:
                kept, rounds = self._kept(stopped)
                runner = Runner(self.record, context.workload, folder, seed=context.spec.experiment.seed,
                                display=self.display, cache=self.cache, wisdom_folder=where, pool=pool,
                                fresh=self.options.fresh, kept=kept, interrupted=rounds,
                                say_taught=self.options.say_taught)
                runner.run()
            self.learned = runner.learned
        except DataError:
            if created:  # a bad input file found while loading: leave nothing behind
                shutil.rmtree(folder, ignore_errors=True)
            raise
        except OutputError:
            if created and not (folder / RECORD).exists():  # not even the first record went in
                shutil.rmtree(folder, ignore_errors=True)
            raise
        return self.record

    def _kept(self, stopped: tuple[RunRecord, Interrupted | None] | None
              ) -> tuple[dict[str, AnalysisRecord], Interrupted | None]:
        """What this run keeps of a stopped run it resumes (run.folder.finished_analyses, and the
        rounds of the analysis it stopped in: run.folder.interrupted_rounds), said."""
        if stopped is None:
            return {}, None
        kept, rounds = finished_analyses(stopped[0], self.record), interrupted_rounds(stopped[0], self.record, stopped[1])
        self.display.plain(resume_line(self.folder, len(kept), len(self.context.plan.steps), rounds,
                                       self.cache is not None))
        return kept, rounds


def _check_spec_and_folder(spec_path: str | Path, overrides: list[str], folder: Path, force: bool) -> None:
    """The -o folder's refusal and the spec's own problems (read and validated: cheap) in one
    answer: a wrong -o alone hid a wrong --set until the next try."""
    try:
        load_spec(spec_path, overrides)
        problems: list[str] = []
    except SpecError as exc:
        problems = every_problem(spec_path, overrides, exc).lines
    try:
        check_run_folder(folder, force, places(spec_path))
    except PlanError as exc:
        if not problems:
            raise
        problems = [*problems, *exc.lines]
    if problems:
        raise SpecError(problems)


def prepare_session(spec_path: str | Path, overrides: list[str], options: RunOptions, display: Display,
                    command: str, notes: list[str] | None = None) -> Session:
    """Everything before the work: the spec, workload, machine and plan (SpecError, PlanError:
    the user's to fix), the folder checked, the inputs fingerprinted, the record begun. `notes`
    gathers the lines a caller shows before the work (disk space, inputs left out)."""
    if options.output is not None:  # before the workload is loaded: a wrong -o is the answer, with the spec's
        _check_spec_and_folder(spec_path, overrides, options.output, options.force)
    notes = [] if notes is None else notes
    with display.phase("loading the spec, the workload and the machine") as phase:
        phase.item(str(spec_path))
        context = validate(spec_path, overrides)
        if options.output is not None and options.force:  # in the phase: its refusal is the whole answer
            check_places(options.output, cache_places(context))
    if context.plan.skipped_inputs:
        display.plain(skipped_warning(context.plan.skipped_inputs))
    spec = context.spec
    folder = options.output or default_folder(spec)
    if options.output is None:
        check_run_folder(folder)
    cache_dir = None if options.no_cache else context.cache_dir
    for warning in check_disk(spec, Census.of(context.workload.refs), folder, cache_dir):
        display.plain(warning)
    with display.phase("fingerprinting the input files") as phase:
        fingerprint = _fingerprint(context.workload, cache_dir, phase)
    record = RunRecord(harness_version=context.machine.harness, experiment=spec.experiment.name,
                       spec_path=str(spec_path), spec=spec.model_dump(mode="json"), spec_hash=spec_hash(spec),
                       workload_fingerprint=fingerprint, command=command, started=now(), machine=context.machine,
                       plan=context.plan)
    cache = None if cache_dir is None else ResultCache(cache_dir, warn=display.plain, experiment=spec.experiment.name)
    return Session(context, folder, record, options, display, cache)
