"""`harness validate | plan | run | report | compare | history | cache | system | calibrate |
schema`: a small function each.

Exit codes: 0 fine, 1 a regression (compare --fail-on-regression), 2 a user mistake (spec, data,
plan), 3 a verification failed, 130 interrupted (Ctrl-C), 141 stdout closed early, 143 terminated (SIGTERM, see
harness.cli.entry).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console
from rich.table import Table

import harness
from harness.store.cache import DEFAULT_DIR as DEFAULT_CACHE_DIR
from harness.store.cache import CorruptEntry, ResultCache, locate, read_header
from harness.report.compare import ALPHA, FACTOR, Comparison, CompareOutput, compare_records
from harness.report.compare import MIN_ROUNDS as MIN_COMPARE_ROUNDS
from harness.data import content_hashes
from harness.data.paths import reachable
from harness.data.workload import Census, DataError, Workload
from harness.plan.footprint import check_disk
from harness.cli.exit_codes import (
    EXIT_INCONCLUSIVE, EXIT_REGRESSION, EXIT_USER_ERROR, EXIT_VERIFICATION_FAILED, exit_code, stopped,
)
from harness.report.history import HistoryError
from harness.machine.info import probe
from harness.plan.model import PlanError, backends
from harness.run.prepare import RunContext, prepare, skipped_warning
from harness.base.atomic import FolderTaken, exclusive_folder
from harness.base.progress import Display, Phase
from harness.report.terminal import compare_table, floor_note, plan_table, run_table, system_lines, wall_lines, wisdom_tables
from harness.record.run_record import RECORD, RecordError, RunRecord, load_record
from harness.machine import measurements, wisdom
from harness.run.calibrate import calibrate as measure_machine
from harness.run.calibrate import run_roofs
from harness.run.output import OutputError
from harness.run.runner import Runner
from harness.spec import Spec, SpecError, load_spec
from harness.base.units import format_bytes, now


MAX_AGE_S = 100 * 365 * 86400.0
WIDE = 160  # tables are unreadable at the 80 columns rich assumes without a terminal
out = Console(width=None if sys.stdout.isatty() else WIDE)
err = Console(stderr=True, width=None if sys.stderr.isatty() else WIDE)
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def command(name: str) -> Callable[[Callable[[argparse.Namespace], int]], Callable[[argparse.Namespace], int]]:
    def register(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        COMMANDS[name] = fn
        return fn

    return register


def spec_hash(spec: Spec) -> str:
    canonical = json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _overrides(args: argparse.Namespace) -> list[str]:
    """--set values, and --budget as the override it is."""
    budget = getattr(args, "budget", None)
    return [*args.set, *([f"benchmark.budget={json.dumps(budget)}"] if budget is not None else [])]


def _prepare(args: argparse.Namespace) -> RunContext:
    """The run's context; the one warning line of input tensors the run leaves out."""
    context = prepare(args.spec, _overrides(args))
    if context.plan.skipped_inputs:
        err.print(skipped_warning(context.plan.skipped_inputs), markup=False, highlight=False, soft_wrap=True)
    return context


@command("validate")
def validate(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec, args.set)
    out.print(f"{args.spec}: valid ({len(spec.analysis)} analyses, data source {spec.data.source})")
    return 0


@command("plan")
def plan(args: argparse.Namespace) -> int:
    the_plan = _prepare(args).plan
    if args.json:
        print(the_plan.model_dump_json(indent=2))
    else:
        out.print(plan_table(the_plan))
    return 0


def _run_command(args: argparse.Namespace) -> str:
    """The command line that reproduces the run, its output folder and flags included: the report
    shows it verbatim, so what it leaves out a reader cannot know."""
    words = ["harness", "run", str(args.spec), *(f"--set={s}" for s in _overrides(args))]
    words += (["-o", str(args.output)] if args.output else []) + ["--report"] * args.report
    return shlex.join(words + ["--no-cache"] * args.no_cache + ["--fresh"] * args.fresh)


def _check_run_folder(folder: Path) -> None:
    """PlanError unless `folder` can become the run folder: a new or empty folder, under folders
    (a file there would end in a traceback halfway). The default folder stays inside results/
    because the spec accepts only a safe folder name as `experiment.name`."""
    above = next(p for p in [folder, *folder.parents] if os.path.lexists(p))
    inside = "" if above == folder else f" to hold {folder}"
    reachable(above, f"a new or empty run folder{inside}")  # a link that loops passed for a new folder
    if not above.is_dir():
        raise PlanError([f"{above}: is a file; expected a new or empty run folder{inside}"])
    if folder.is_dir() and any(folder.iterdir()):
        raise PlanError([f"{folder}: output folder exists and is not empty; choose another with -o"])
    if not os.access(above, os.W_OK | os.X_OK):  # a read-only mount says so even to root
        raise PlanError([f"{above}: cannot write here (a read-only file system, or permissions); expected a "
                         f"writable folder{inside}; choose another with -o"])


@contextmanager
def _claimed(folder: Path) -> Iterator[None]:
    """The run folder, this run's alone (base.atomic.exclusive_folder): a second run given the
    same folder ends in one line; so does one that finds it filled since it was checked."""
    try:
        with exclusive_folder(folder):
            if any(folder.iterdir()):
                raise PlanError([f"{folder}: output folder exists and is not empty; choose another with -o"])
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


@command("run")
def run(args: argparse.Namespace) -> int:
    interrupted: KeyboardInterrupt | None = None
    if args.output:  # before the progress lines: a wrong -o is the whole answer
        _check_run_folder(Path(args.output))
    with Display(err) as display:
        with display.phase("loading the spec, the workload and the machine") as phase:
            phase.item(str(args.spec))
            context = _prepare(args)
        spec, workload, the_plan = context.spec, context.workload, context.plan
        digest = spec_hash(spec)
        run_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        folder = Path(args.output) if args.output else Path("results") / spec.experiment.name / f"{run_id}-{digest[:8]}"
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
        cache = None if cache_dir is None else _cache(cache_dir)
        where = context.wisdom_folder
        with display.phase("this machine's roofs: GEMM peak and bandwidth") as phase:
            record.roofs = run_roofs(where, context.wisdom, record.machine, backends(the_plan.steps))
            phase.summary = ", ".join(f"{r.device}: {r.by}" for r in record.roofs.values()) or "wisdom is off"
        pool = None if args.fresh else measurements.load(where, context.machine)
        if (note := floor_note(the_plan)) is not None:
            display.note(note)
        runner = Runner(record, workload, folder, seed=spec.experiment.seed, display=display, cache=cache,
                        wisdom_folder=where, pool=pool)
        created = not folder.exists()
        try:
            with _claimed(folder):
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
        err.print(f"{stopped(interrupted)}: {folder} holds a record marked incomplete", markup=False)
        return exit_code(interrupted)
    for line in record.verdicts:  # the verdict first, as hyperfine prints it
        out.print(line, markup=False, highlight=False, soft_wrap=True)
    out.print(run_table(record))
    for line in wall_lines(record):
        out.print(line)
    out.print(f"results: {folder}")
    if args.report:
        from harness.report.html import write_report  # matplotlib: only when a report is asked for

        out.print(f"report: {write_report(folder)}")
    if not record.passed:
        err.print("[bold red]verification failed[/] for at least one strategy (see 'passed')")
        return EXIT_VERIFICATION_FAILED
    return 0


@command("report")
def report(args: argparse.Namespace) -> int:
    from harness.report.html import write_report

    out.print(f"report: {write_report(Path(args.run), Path(args.output) if args.output else None)}")
    return 0




def _ratio(text: str) -> float:
    """--fail-on-regression's RATIO: above 1, or no run could ever pass."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a ratio above 1, e.g. 1.2 (B 20% slower than A)")
    return value


def _gate_lines(c: Comparison, several: bool) -> list[tuple[str, str]]:
    """(text, style): each regression, each unstable row and why, and a note when rows have too
    few rounds: without it a gate that cannot fire would look like one that passed."""
    where = f" ({c.b.folder})" if several else ""
    lines = [(f"REGRESSION {r}{where}", "bold red") for r in c.regressions]
    lines += [(("unstable, not gated: " if c.gate else "unstable: ") + u + where, "yellow") for u in c.unstable]
    if c.gate and (few := c.too_few):
        fewest = min(min(r.n_a, r.n_b) for r in few)
        lines.append((f"not gated: {len(few)} of {len(c.rows)} groups have too few rounds to test (fewest {fewest} "
                      f"a side not shared with the other run, it needs {MIN_COMPARE_ROUNDS}: run each side with "
                      f"more --budget, or --fresh so that they share none){where}", "yellow"))
    lines += [(f"inconclusive: {why}{where}", "bold yellow") for why in c.inconclusive]
    return lines


def _verdict(comparisons: list[Comparison], ratio: float, allow_inconclusive: bool) -> tuple[str, str, int]:
    """The gate's headline, its style and the exit code: 1 on a regression, 4 when inconclusive
    (0 with --allow-inconclusive), else 0."""
    regressions = sum(len(c.regressions) for c in comparisons)
    alpha = comparisons[0].alpha
    gated = sum(c.n_gated for c in comparisons)
    total = sum(len(c.rows) for c in comparisons)
    if regressions:
        return (f"FAILED: {regressions} regression(s): slower than {ratio:g}x with p < {alpha}", "bold red",
                EXIT_REGRESSION)
    if any(c.inconclusive for c in comparisons):
        code = 0 if allow_inconclusive else EXIT_INCONCLUSIVE
        return (f"INCONCLUSIVE: {gated} of {total} groups gated; the gate could not judge (see above)"
                + (" — allowed by --allow-inconclusive" if allow_inconclusive else ""), "bold yellow", code)
    return (f"passed: no group slower than {ratio:g}x with p < {alpha} ({gated} of {total} groups gated)", "green",
            0)


@command("compare")
def compare(args: argparse.Namespace) -> int:
    """Every run against the first; RecordError (exit 2) when their specs differ. With
    --fail-on-regression exit 1 on a regression, 4 when the gate could not judge; with --json
    stdout holds the JSON alone, so human lines go to stderr."""
    base = load_record(Path(args.base))
    from harness.report.html import write_compare

    gate = args.fail_on_regression is not None
    ratio = args.fail_on_regression or FACTOR
    comparisons = [compare_records(base, load_record(Path(f)), (args.base, f), factor=ratio, gate=gate)
                   for f in args.others]
    human = err if args.json else out
    for c in comparisons:
        if not args.json:
            out.print(compare_table(c))
        for text, style in _gate_lines(c, len(comparisons) > 1):
            human.print(text, style=style, markup=False, highlight=False, soft_wrap=True)
    if args.html:
        human.print(f"report: {write_compare(comparisons, Path(args.html))}")
    passed = all(c.passed for c in comparisons)
    code = 0 if passed else EXIT_REGRESSION
    if gate:
        text, style, code = _verdict(comparisons, ratio, args.allow_inconclusive)
        human.print(text, style=style, markup=False, highlight=False, soft_wrap=True)
    if args.json:
        inconclusive = [f"{c.b.folder}: {why}" for c in comparisons for why in c.inconclusive]
        print(CompareOutput(gate=ratio if gate else None, passed=passed, inconclusive=inconclusive,
                            n_gated=sum(c.n_gated for c in comparisons), comparisons=comparisons)
              .model_dump_json(indent=2))
    return code


def _cache(root: Path) -> ResultCache:
    return ResultCache(root, warn=lambda message: err.print(message, markup=False, highlight=False, soft_wrap=True))


@command("cache")
def cache(args: argparse.Namespace) -> int:
    """ls / verify / clear the result cache of `--dir`, else of SPEC, else ./.harness-cache."""
    root = DEFAULT_CACHE_DIR
    if args.dir:
        root = Path(args.dir)
    elif args.spec:
        root = locate(load_spec(args.spec).execution.cache_dir, args.spec)
    if not root.is_dir():  # else ls/verify say "0 of 0 entries check out" of a folder that is not there
        raise PlanError([f"{root}: is a file, not a cache folder" if root.exists() else f"{root}: no cache folder here"])
    store = _cache(root)
    if args.action == "clear":
        count, size = store.clear(args.older_than)
        out.print(f"removed {count} entries ({format_bytes(size)}) from {root}")
        return 0
    entries = list(store.entries())
    table = Table(title=f"{root}: {len(entries)} entries, {format_bytes(sum(e.size for e in entries))}",
                  title_justify="left")
    for column in ("key", "kind", "holds", "size", "last used"):
        table.add_column(column, overflow="fold")
    corrupt = 0
    for entry in entries:
        try:
            header = read_header(entry)
            kind, label = header.kind, header.label
        except CorruptEntry as exc:
            corrupt += 1
            kind, label = "[bold red]corrupt[/]", str(exc)
        used = datetime.fromtimestamp(entry.mtime, timezone.utc).isoformat(timespec="seconds")
        table.add_row(entry.key[:16], kind, label, format_bytes(entry.size), used)
    if args.action == "ls" or corrupt:
        out.print(table)
    if args.action == "verify":
        out.print(f"{len(entries) - corrupt} of {len(entries)} entries check out; corrupt ones are "
                  "recomputed on their next use")
        return EXIT_VERIFICATION_FAILED if corrupt else 0
    return 0


def _age(text: str) -> float:
    """`30d`, `12h`, `15m` or `90s` in seconds; a negative age (`-5d`) would clear everything."""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    try:
        seconds = float(text[:-1]) * units[text[-1]]
    except (ValueError, KeyError, IndexError):
        seconds = math.nan
    if not 0 <= seconds <= MAX_AGE_S:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an age like 30d, 12h, 15m or 90s, "
                                         "from 0 to 100 years") from None
    return seconds


def _watch(text: str) -> float:
    """`system --seconds`: how long to sample the machine, a positive time up to an hour."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r}: expected seconds above 0, at most 3600")
    return seconds


@command("asv-machine")
def asv_machine(args: argparse.Namespace) -> int:
    from harness.run.asv_cases import machine_name

    print(machine_name(probe()))
    return 0


@command("system")
def system(args: argparse.Namespace) -> int:
    """What would make timings unreliable on this machine right now, as `pyperf system show`."""
    from harness.bench.conditions import sample_conditions
    from harness.linalg.device import torch_module

    torch_module()  # its thread pool is part of what timings run with
    machine = probe()
    for line in system_lines(machine, sample_conditions(args.seconds, machine.cores)):
        out.print(line)
    return 0


@command("calibrate")
def calibrate(args: argparse.Namespace) -> int:
    """Measure this machine into its wisdom (or show the wisdom), for `auto` to plan from."""
    where = wisdom.folder(Path(args.dir))
    if where is None:
        raise PlanError([f"calibrate: wisdom is off (${wisdom.ENV}=off)"])
    machine = probe()
    if not args.show:
        try:  # before minutes of measuring, not after: their results had nowhere to go
            wisdom.check_writable(where, machine)
        except OSError as exc:
            raise PlanError([f"calibrate: cannot keep the wisdom in {where} ({exc.strerror or exc}); expected a "
                             f"writable folder (--dir, or ${wisdom.ENV})"]) from None
        with Display(err) as display:
            _stored, notes = measure_machine(where, machine, display, quick=args.quick)
        for note in notes:
            err.print(note, markup=False)
    stored = wisdom.load(where, machine)
    for renderable in wisdom_tables(stored, wisdom.path_for(where, machine)):
        out.print(renderable)
    return 0


@command("history")
def history(args: argparse.Namespace) -> int:
    """asv's results across commits as one self-contained page (asv's own site needs the network)."""
    from harness.report.history import load
    from harness.report.history_page import write_history

    results_dir = Path(args.results)
    out.print(f"history: {write_history(load(results_dir), results_dir, Path(args.output))}")
    return 0


@command("schema")
def schema(args: argparse.Namespace) -> int:
    print(json.dumps(Spec.model_json_schema(), indent=2))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="harness", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"%(prog)s {harness.__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_text in [
        ("validate", "check a spec and report every problem"),
        ("plan", "show what would run, where, and why"),
        ("run", "run a spec and record the results"),
    ]:
        c = sub.add_parser(name, help=help_text)
        c.add_argument("spec", help="experiment spec (TOML)")
        c.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override a spec value, e.g. --set data.adapters=4 (value parsed as TOML)")
    sub.choices["plan"].add_argument("--json", action="store_true", help="print the plan as JSON")
    for name in ("plan", "run"):
        sub.choices[name].add_argument("--budget", metavar="DURATION",
                                       help='time for timing the compared strategies, e.g. "20s" '
                                       "(overrides [benchmark] budget)")
    sub.choices["run"].add_argument("-o", "--output", help="run folder (default results/<experiment>/<run-id>)")
    sub.choices["run"].add_argument("--report", action="store_true", help="write report.html into the run folder")
    rep = sub.add_parser("report", help="write a run's self-contained HTML report")
    rep.add_argument("run", help="run folder (holds record.json)")
    rep.add_argument("-o", "--output", help="HTML file (default RUN/report.html)")
    cmp = sub.add_parser("compare", help="compare runs of one spec: timing ratios and their significance")
    cmp.add_argument("base", metavar="RUN_A", help="run folder every other run is compared against")
    cmp.add_argument("others", nargs="+", metavar="RUN_B", help="run folders of the same spec")
    cmp.add_argument("--html", metavar="FILE", help="also write the comparison as an HTML page")
    cmp.add_argument("--fail-on-regression", nargs="?", const=FACTOR, type=_ratio, metavar="RATIO",
                     help=f"exit 1 when a group of a RUN_B is slower than RUN_A by more than RATIO (default "
                     f"{FACTOR}) with p < {ALPHA} (Welch's t on the rounds' log seconds); unstable measurements "
                     "are reported, not gated on; exit 4 when no group could be judged or a run is incomplete")
    cmp.add_argument("--allow-inconclusive", action="store_true",
                     help="with --fail-on-regression: exit 0 instead of 4 when the gate could not judge")
    cmp.add_argument("--json", action="store_true",
                     help="print the comparisons and the gate's verdict as JSON on stdout (the rest on stderr)")
    sub.choices["run"].add_argument("--no-cache", action="store_true",
                                    help="compute everything; neither read nor write the result cache")
    sub.choices["run"].add_argument("--fresh", action="store_true",
                                    help="time every strategy anew: take no rounds from earlier runs "
                                    "(this run's rounds are still kept for later ones)")
    cache_parser = sub.add_parser("cache", help="list, verify or clear the result cache")
    cache_parser.add_argument("action", choices=["ls", "verify", "clear"])
    cache_parser.add_argument("spec", nargs="?", help="spec whose [execution] cache_dir to use")
    cache_parser.add_argument("--dir", help=f"cache folder (default {DEFAULT_CACHE_DIR})")
    cache_parser.add_argument("--older-than", type=_age, metavar="AGE",
                              help="clear only entries unused for AGE, e.g. 30d, 12h")
    sub.add_parser("asv-machine", help="print this machine's asv name: host and GPU model (or cpu)")
    sys_parser = sub.add_parser("system", help="show what would make timings unreliable here right now")
    sys_parser.add_argument("--seconds", type=_watch, default=1.0, help="how long to watch the machine (default 1)")
    cal = sub.add_parser("calibrate", help="measure this machine (GEMM peak, bandwidth, reads, every strategy) "
                         "so that auto plans from measurements")
    cal.add_argument("--quick", action="store_true", help="fewer shapes and shorter probes (~20 s on 2 cores)")
    cal.add_argument("--show", action="store_true", help="print this machine's wisdom; measure nothing")
    cal.add_argument("--dir", default=str(DEFAULT_CACHE_DIR),
                     help=f"cache folder whose wisdom/ to use (default {DEFAULT_CACHE_DIR}; $HARNESS_WISDOM overrides)")
    hist = sub.add_parser("history", help="asv results across commits and machines as a self-contained HTML page")
    hist.add_argument("--results", default="results/asv", help="asv's results_dir (default results/asv)")
    hist.add_argument("-o", "--output", default="results/history.html", help="HTML file (default results/history.html)")
    sub.add_parser("schema", help="print the spec's JSON Schema")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (SpecError, PlanError) as exc:
        for line in exc.lines:
            err.print(line, markup=False, highlight=False, soft_wrap=True)
        return EXIT_USER_ERROR
    except (DataError, RecordError, HistoryError, OutputError) as exc:
        err.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        return EXIT_USER_ERROR
    except KeyboardInterrupt as exc:  # before a run folder exists: nothing to keep, but say so
        err.print(f"{stopped(exc)}: nothing was written", markup=False)
        return exit_code(exc)
