"""`harness run SPEC`: prepare, run, record, print the results table and what the run found."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from harness.base.progress import Display, Phase
from harness.base.units import format_bytes, now
from harness.cli.commands.cache import result_cache
from harness.cli.commands.plan import prepare_context
from harness.cli.commands.spec_args import budget_argument, overrides, spec_arguments
from harness.cli.console import err, out, say
from harness.cli.outputs import check_name, recorded, resume, stopped_run
from harness.cli.exit_codes import EXIT_VERIFICATION_FAILED, exit_code, stopped
from harness.data import content_hashes
from harness.data.paths import reachable
from harness.data.workload import Census, DataError, Workload
from harness.base.atomic import FolderTaken, exclusive_folder
from harness.machine import measurements
from harness.plan.footprint import check_disk
from harness.plan.model import PlanError, backends
from harness.record.run_record import RECORD, RunRecord
from harness.report.frontier import frontier_lines
from harness.report.terminal import RUN_OPTIONAL, Fitted, explained, floor_note, run_table, wall_lines
from harness.run.calibrate import run_roofs
from harness.run.output import OutputError
from harness.run.runner import Runner
from harness.spec import Spec



def arguments(parser: argparse.ArgumentParser) -> None:
    spec_arguments(parser)
    budget_argument(parser)
    parser.add_argument("-o", "--output", help="run folder (default results/<experiment>/<run-id>)")
    parser.add_argument("--report", action="store_true", help="write report.html into the run folder")
    parser.add_argument("--no-cache", action="store_true",
                        help="compute everything; neither read nor write the result cache")
    parser.add_argument("--fresh", action="store_true",
                        help="time every strategy anew: take no rounds from earlier runs (this run's rounds "
                        "are still kept for later ones)")
    parser.add_argument("--explain", action="store_true",
                        help="explain the table's columns and marks below it (the HTML report always does)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="every warning in full, one line per measurement, instead of one line per cause")


def spec_hash(spec: Spec) -> str:
    canonical = json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def default_folder(spec: Spec) -> Path:
    """results/<experiment>/<UTC time>-<spec hash>: a fresh folder per run, named so that runs of
    one spec sort by time and runs of another spec never share a name."""
    run_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return Path("results") / spec.experiment.name / f"{run_id}-{spec_hash(spec)[:8]}"


def _run_command(args: argparse.Namespace) -> str:
    """The command line that reproduces the run, its output folder and flags included: the report
    shows it verbatim, so what it leaves out a reader cannot know."""
    words = ["harness", "run", str(args.spec), *(f"--set={s}" for s in overrides(args))]
    words += (["-o", str(args.output)] if args.output else []) + ["--report"] * args.report
    return shlex.join(words + ["--no-cache"] * args.no_cache + ["--fresh"] * args.fresh)


def _check_run_folder(folder: Path) -> None:
    """PlanError unless `folder` can become the run folder: a new or empty folder, under folders
    (a file there would end in a traceback halfway). The default folder stays inside results/
    because the spec accepts only a safe folder name as `experiment.name`."""
    check_name(folder, "a new or empty run folder")
    above = next(p for p in [folder, *folder.parents] if os.path.lexists(p))
    inside = "" if above == folder else f" to hold {folder}"
    reachable(above, f"a new or empty run folder{inside}")  # a link that loops passed for a new folder
    if not above.is_dir():
        raise PlanError([f"{above}: is a file; expected a new or empty run folder{inside}"])
    if folder.is_dir() and any(folder.iterdir()) and stopped_run(folder) is None:
        raise PlanError([f"{folder}: output folder exists and is not empty; choose another with -o"])
    if not os.access(above, os.W_OK | os.X_OK):  # a read-only mount says so even to root
        raise PlanError([f"{above}: cannot write here (a read-only file system, or permissions); expected a "
                         f"writable folder{inside}; choose another with -o"])


@contextmanager
def _claimed(folder: Path, spec_hash: str, display: Display) -> Iterator[None]:
    """The run folder, this run's alone (base.atomic.exclusive_folder): a second run given the
    same folder ends in one line; so does one that finds it filled since it was checked, unless
    what fills it is a stopped run of the same spec, which this run takes over."""
    try:
        with exclusive_folder(folder):
            if any(folder.iterdir()):
                display.console.print(resume(folder, spec_hash), markup=False, highlight=False, soft_wrap=True)
            yield
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


def main(args: argparse.Namespace) -> int:
    interrupted: KeyboardInterrupt | None = None
    if args.output:  # before the progress lines: a wrong -o is the whole answer
        _check_run_folder(Path(args.output))
    with Display(err) as display:
        with display.phase("loading the spec, the workload and the machine") as phase:
            phase.item(str(args.spec))
            context = prepare_context(args)
        spec, workload, the_plan = context.spec, context.workload, context.plan
        digest = spec_hash(spec)
        folder = Path(args.output) if args.output else default_folder(spec)
        if not args.output:  # -o was checked before anything was printed
            _check_run_folder(folder)
        cache_dir = None if args.no_cache else context.cache_dir
        for warning in check_disk(spec, Census.of(workload.refs), folder, cache_dir):
            display.note(warning)
        with display.phase("fingerprinting the input files") as phase:
            fingerprint = _fingerprint(workload, cache_dir, phase)
        record = RunRecord(
            harness_version=context.machine.harness,
            experiment=spec.experiment.name,
            spec_path=str(args.spec),
            spec=spec.model_dump(mode="json"),
            spec_hash=digest,
            workload_fingerprint=fingerprint,
            command=_run_command(args),
            started=now(),
            machine=context.machine,
            plan=the_plan,
        )
        cache = None if cache_dir is None else result_cache(cache_dir, spec.experiment.name)
        where = context.wisdom_folder
        with display.phase("this machine's roofs: GEMM peak and bandwidth") as phase:
            record.roofs = run_roofs(where, context.wisdom, record.machine, backends(the_plan.steps))
            phase.summary = ", ".join(f"{r.device}: {r.by}" for r in record.roofs.values()) or "wisdom is off"
        pool = measurements.load(where, context.machine, say=display.note)
        if (note := floor_note(the_plan)) is not None:
            display.note(note)
        runner = Runner(record, workload, folder, seed=spec.experiment.seed, display=display, cache=cache,
                        wisdom_folder=where, pool=pool if where is not None else None, fresh=args.fresh)
        created = not folder.exists()
        try:
            with _claimed(folder, digest, display):
                runner.run()
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (harness.cli.entry)
            interrupted = exc
        except DataError:
            if created:  # a bad input file found while loading: leave nothing behind
                shutil.rmtree(folder, ignore_errors=True)
            raise
        except OutputError:
            if created and not (folder / RECORD).exists():  # not even the first record went in
                shutil.rmtree(folder, ignore_errors=True)
            raise
    if interrupted is not None:
        finished = (recorded(folder) or {}).get("complete") is True  # stopped while keeping its measurements
        held = "its finished record (its measurements were not kept)" if finished else "a record marked incomplete"
        err.print(f"{stopped(interrupted)}: {folder} holds {held}", markup=False)
        return exit_code(interrupted)
    for line in record.verdicts:  # the verdict first, as hyperfine prints it
        say(line)
    out.print(Fitted(explained(run_table(record), args.explain), RUN_OPTIONAL))
    for line in wall_lines(record, verbose=args.verbose):
        say(line)
    for line in frontier_lines(record):
        say(line)
    out.print(f"results: {folder}")
    if args.report:
        from harness.report.html import write_report  # matplotlib: only when a report is asked for

        with Display(err) as display, display.phase("rendering the report") as phase:
            phase.item(f"{folder}: tables and charts")
            written = write_report(folder)
        out.print(f"report: {written}")
    if not record.passed:
        err.print("[bold red]verification failed[/] for at least one strategy (see 'passed')")
        return EXIT_VERIFICATION_FAILED
    return 0
