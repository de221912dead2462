"""`harness run SPEC`: run it (harness.run.session), then print the verdicts, one compact table
and one line per kind of warning; `--wide`, `--verbose` and `--explain` show the rest."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.base.progress import Display
from harness.base.units import plural
from harness.cli.commands.spec_args import budget_argument, overrides, spec_arguments
from harness.base.lines import print_shown
from harness.cli.console import err, out, say
from harness.cli.exit_codes import EXIT_VERIFICATION_FAILED, exit_code, stopped
from harness.record.run_record import RECORD
from harness.report.terminal import run_screen
from harness.report.plan_view import floor_note
from harness.run.folder import recorded
from harness.run.interrupted import INTERRUPTED
from harness.run.session import RunOptions, Session, command_line, prepare_session


def arguments(parser: argparse.ArgumentParser) -> None:
    spec_arguments(parser)
    budget_argument(parser)
    parser.add_argument("-o", "--output", help="run folder (default: a fresh results/<experiment>/<time>-<hash>)")
    parser.add_argument("--force", action="store_true",
                        help="with -o: replace the earlier run in that folder, its files only, a stopped one too "
                        "(without --force it resumes); a folder without this harness's record.json, the current "
                        "folder, home, a folder above the spec and the cache are refused")
    parser.add_argument("--report", action="store_true", help="write report.html into the run folder")
    parser.add_argument("--no-cache", action="store_true",
                        help="compute everything; neither read nor write the result cache")
    parser.add_argument("--fresh", action="store_true",
                        help="time every strategy anew: take no rounds from earlier runs (this run's rounds "
                        "are still kept for later ones)")
    parser.add_argument("--wide", action="store_true",
                        help="every column of the results table the terminal's width holds (role, device, "
                        "library, precision, compute total, rounds, GFLOP/s, %% of peak, and the values' and "
                        "vectors' errors apart), saying which a narrower terminal left out; the HTML report "
                        "(--report) always has them all")
    parser.add_argument("--explain", action="store_true",
                        help="explain the table's columns and marks below it (the HTML report always does)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="what each analysis did (wall time, cache, PCA), the benchmark phase, and every "
                        "warning in full, one line per measurement")


def _options(args: argparse.Namespace) -> RunOptions:
    return RunOptions(output=Path(args.output) if args.output else None, force=args.force, no_cache=args.no_cache,
                      fresh=args.fresh)


def _run_command(args: argparse.Namespace) -> str:
    return command_line(args.spec, overrides(args), _options(args), args.report)


AGAIN = "the same command again resumes it"


def resumer(args: argparse.Namespace, folder: Path) -> str:
    """Who resumes a run stopped in `folder`: the same command again, unless it had no -o (it
    would write a fresh folder) or had --force (it would start the run over): then the command
    that does, named in full."""
    if args.output is not None and not args.force:
        return AGAIN
    command = command_line(args.spec, overrides(args), _options(args), args.report, into=folder)
    return f"`{command}` resumes it " + ("(with --force it starts over)" if args.output is not None
                                         else "(without -o a run starts in a fresh folder)")


def holds(raw: dict[str, object], steps: int, interrupted: bool = False, resumes: str = AGAIN,
          cached: bool = True) -> str:
    """What a stopped run's folder holds, from its record (`raw`, untrusted: the count of analyses
    alone is read), and what `resumes` (resumer) does with it. A resume keeps a finished
    analysis' timings only where its own plan times it alike (run.folder.finished_analyses: the
    same inputs, machine and points), which the next plan, on the wisdom of then, decides; and
    the rounds of the analysis it stopped in, where it left them (`interrupted`: run.interrupted).
    What it computed comes back from the cache, unless the run had none (`cached`: --no-cache)."""
    analyses = raw.get("analyses")
    done = len(analyses) if isinstance(analyses, list) else 0
    if raw.get("complete") is True:  # stopped while keeping its measurements
        return "its finished record (its measurements were not kept)"
    cut = "the rounds already timed of the analysis it stopped in"
    said: list[str] = []
    if done:
        one = done == 1
        said.append(f"the {plural(done, 'finished analysis', 'finished analyses')} "
                    f"{'keeps its' if one else 'keep their'} timings where the new plan times {'it' if one else 'them'} "
                    f"the same way, the rest are timed" + (f" but for {cut}" if interrupted else ""))
    elif interrupted:
        said.append(f"{cut} are kept")
    said.append("what it computed comes back from the cache" if cached
                else "what it computed is computed again (--no-cache)")
    return (f"a record marked incomplete after {done} of {plural(steps, 'analysis', 'analyses')}; {resumes}: "
            f"{'; '.join(said)}")


def main(args: argparse.Namespace) -> int:
    from harness.cli.commands import sweep

    if (points := sweep.planned(args)) is not None:
        return sweep.run(args, points)
    options = _options(args)
    session: Session | None = None
    try:
        with Display(err) as display:
            session = prepare_session(args.spec, overrides(args), options, display, _run_command(args))
            asked = "budget" in session.context.spec.benchmark.model_fields_set  # the spec's or --budget
            if (note := floor_note(session.context.plan, asked)) is not None:
                display.plain(note)
            record = session.run()
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (harness.cli.entry)
        if session is None or not (session.folder / RECORD).is_file():
            raise  # before the run folder has a record: harness.cli.main says nothing was written
        held = holds(recorded(session.folder) or {}, len(session.context.plan.steps),
                     (session.folder / INTERRUPTED).is_file(), resumer(args, session.folder), not args.no_cache)
        say(f"{stopped(exc)}: {session.folder} holds {held}", err, markup=False)
        return exit_code(exc)
    for shown in run_screen(record, wide=args.wide, explain=args.explain, verbose=args.verbose):
        print_shown(out, shown)
    out.print(f"results: {session.folder}", markup=False, highlight=False, soft_wrap=True)
    if args.report:
        from harness.report.html import write_report  # matplotlib: only when a report is asked for

        with Display(err) as display, display.phase("rendering the report") as phase:
            phase.item(f"{session.folder}: tables and charts")
            written = write_report(session.folder)
        out.print(f"report: {written}", markup=False, highlight=False, soft_wrap=True)
    if not record.passed:
        err.print("[bold red]verification failed[/] for at least one strategy (see the status column)")
        return EXIT_VERIFICATION_FAILED
    return 0
