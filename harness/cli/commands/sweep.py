"""`harness plan` and `harness run` of a spec with a `[sweep]`: the points and their estimates, or
each point run (harness.run.sweep) and the exponents and crossovers said first."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.markup import escape

from harness.base.progress import Display
from harness.base.units import format_seconds
from harness.base.lines import print_shown
from harness.cli.console import err, out, say
from harness.cli.exit_codes import EXIT_USER_ERROR, EXIT_VERIFICATION_FAILED, exit_code, stopped
from harness.report.fitting import Fitted, rule_table
from harness.report.sweep import PICK_COLUMNS, pick_rows, sweep_lines, write_sweep_exports
from harness.run.session import RunOptions
from harness.record.run_record import RecordError
from harness.record.sweep_record import load_sweep
from harness.run.sweep import SweepPlan, plan_sweep, run_sweep, sweep_folder


def planned(args: argparse.Namespace) -> SweepPlan | None:
    """The spec's sweep planned, `--budget` the whole sweep's; None for a spec without one."""
    return plan_sweep(args.spec, args.set, getattr(args, "budget", None))


def show_plan(sweep: SweepPlan, as_json: bool) -> int:
    if as_json:
        rows = [{"point": p.values, "estimate_s": c.plan.estimate_s, "plan": c.plan.model_dump(mode="json")}
                for p, c in zip(sweep.points, sweep.contexts)]
        print(json.dumps({"points": rows, "estimate_s": sweep.estimate_s}, indent=2))
        return 0
    analyses = [s.analysis for s in sweep.contexts[0].plan.steps]
    table = rule_table("point", *(f"{a}: strategy" for a in analyses), "matrices", "estimate",
                       title=f"sweep of {len(sweep.points)} points, each a run of its own")
    for point, context in zip(sweep.points, sweep.contexts):
        picks = {s.analysis: s.strategy for s in context.plan.steps}
        table.add_row(point.label, *(picks.get(a, "-") for a in analyses), str(context.plan.n_matrices),
                      format_seconds(context.plan.estimate_s))
    print_shown(out, Fitted(table))  # drawn as a run's tables are: lines without trailing blanks
    say(f"the whole sweep: ~{format_seconds(sweep.estimate_s)} (`harness plan` of one point: --set sweep={{}} and "
        "its values)")
    return 0


def _points_done(folder: Path) -> int:
    """The points a stopped sweep's record holds (0 before its first point ended, or unreadable)."""
    try:
        return len(load_sweep(folder).points)
    except RecordError:
        return 0


def run(args: argparse.Namespace, sweep: SweepPlan) -> int:
    if args.force:
        err.print("--force: a sweep runs into a new or empty folder; choose another with -o", markup=False)
        return EXIT_USER_ERROR
    options = RunOptions(no_cache=args.no_cache, fresh=args.fresh)
    folder = sweep_folder(sweep, args.set, Path(args.output) if args.output else None)
    try:
        with Display(err) as display:
            record = run_sweep(sweep, args.set, folder, display, options)
    except KeyboardInterrupt as exc:  # walk 22: `interrupted: nothing was written` beside its finished points
        if not folder.is_dir() or not any(folder.iterdir()):
            raise  # harness.cli.main: nothing was written
        say(f"{stopped(exc)}: {folder} holds {_points_done(folder)} of {len(sweep.points)} points of a sweep marked incomplete; a "
            "sweep does not resume: run it again into another folder (-o), or leave -o out for a fresh one", err,
            markup=False)
        return exit_code(exc)
    write_sweep_exports(record, folder)
    for line in sweep_lines(record):
        say(escape(line))
    if picks := pick_rows(record):
        table = rule_table(*PICK_COLUMNS, title="the planner's pick at each point")
        for row in picks:
            table.add_row(*(escape(row[c]) for c in PICK_COLUMNS))
        print_shown(out, Fitted(table))
    out.print(f"results: {folder}", markup=False, highlight=False, soft_wrap=True)
    if args.report:
        from harness.report.sweep_page import write_sweep_report  # matplotlib: only when a report is asked for

        out.print(f"report: {write_sweep_report(folder)}", markup=False, highlight=False, soft_wrap=True)
    if not record.passed:
        err.print("[bold red]verification failed[/] at one point or more (see its run folder)")
        return EXIT_VERIFICATION_FAILED
    return 0
