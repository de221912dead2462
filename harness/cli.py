"""`harness validate | plan | run | schema`: one small function per command, found by name.

Exit codes: 0 fine, 2 a user mistake (spec, data, plan), 3 a verification failed, 130 interrupted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console

from harness.data.registry import build_source
from harness.data.workload import DataError, Workload
from harness.machine import probe
from harness.plan import Plan, PlanError, compile_plan
from harness.report.terminal import plan_table, run_table, wall_lines
from harness.results import RecordError, RunRecord
from harness.run import Runner, now
from harness.spec import Spec, SpecError, load_spec

EXIT_USER_ERROR = 2
EXIT_VERIFICATION_FAILED = 3
EXIT_INTERRUPTED = 130

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


def _prepare(args: argparse.Namespace) -> tuple[Spec, Workload, Plan]:
    spec = load_spec(args.spec, args.set)
    source = build_source(spec.data, spec.experiment.seed, Path(args.spec).resolve().parent)
    workload = Workload.from_source(source)
    return spec, workload, compile_plan(spec, workload, probe())


@command("validate")
def validate(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec, args.set)
    out.print(f"{args.spec}: valid ({len(spec.analysis)} analyses, data source {spec.data.source})")
    return 0


@command("plan")
def plan(args: argparse.Namespace) -> int:
    _spec, _workload, the_plan = _prepare(args)
    if args.json:
        print(the_plan.model_dump_json(indent=2))
    else:
        out.print(plan_table(the_plan))
    return 0


@command("run")
def run(args: argparse.Namespace) -> int:
    spec, workload, the_plan = _prepare(args)
    run_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    digest = spec_hash(spec)
    folder = Path(args.output) if args.output else Path("results") / spec.experiment.name / f"{run_id}-{digest[:8]}"
    if folder.exists() and any(folder.iterdir()):
        raise PlanError([f"{folder}: output folder exists and is not empty; choose another with -o"])
    record = RunRecord(
        harness_version=probe().harness,
        experiment=spec.experiment.name,
        spec_path=str(args.spec),
        spec=spec.model_dump(mode="json"),
        spec_hash=digest,
        workload_fingerprint=workload.fingerprint(),
        command=shlex.join(["harness", "run", str(args.spec)] + [f"--set={s}" for s in args.set]),
        started=now(),
        machine=probe(),
        plan=the_plan,
    )
    runner = Runner(
        record,
        workload,
        folder,
        seed=spec.experiment.seed,
        warmup=spec.benchmark.warmup,
        repeats=spec.benchmark.repeats,
        console=err,
    )
    try:
        runner.run()
    except KeyboardInterrupt:
        err.print(f"interrupted: {folder} holds a record marked incomplete")
        return EXIT_INTERRUPTED
    out.print(run_table(record))
    for line in wall_lines(record):
        out.print(line)
    out.print(f"results: {folder}")
    if not record.passed:
        err.print("[bold red]verification failed[/] for at least one strategy (see 'passed')")
        return EXIT_VERIFICATION_FAILED
    return 0


@command("schema")
def schema(args: argparse.Namespace) -> int:
    print(json.dumps(Spec.model_json_schema(), indent=2))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="harness", description=__doc__.splitlines()[0])
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
    sub.choices["run"].add_argument("-o", "--output", help="run folder (default results/<experiment>/<run-id>)")
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
    except (DataError, RecordError) as exc:
        err.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
