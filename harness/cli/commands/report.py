"""`harness report RUN`: the run's self-contained HTML report, or its results table as Markdown
(for a pull request or a paper), CSV (for a spreadsheet) or JSON (for scripts). A sweep's folder
(sweep.json, no record.json) gets the sweep's own HTML page or Markdown; its rows are the
points.csv and fits.csv the sweep wrote beside it."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.base.atomic import folder_in_use, write_atomic
from harness.base.progress import Display
from harness.cli.console import err, out
from harness.cli.outputs import check_output, writing
from harness.plan.model import PlanError
from harness.record.run_record import RECORD, load_record
from harness.record.sweep_record import SWEEP_RECORD
from harness.report.exports import results_csv, results_json, results_markdown

EXPORTS = {"md": results_markdown, "csv": results_csv, "json": results_json}



def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", help="run folder (holds record.json)")
    parser.add_argument("-o", "--output", help="the file to write (html: default RUN/report.html; md, csv and json: "
                        "default stdout)")
    parser.add_argument("--format", choices=["html", *EXPORTS], default="html",
                        help="html (default): the full report; md: the verdicts and the results table, pasteable "
                        "into a pull request; csv: the same rows for a spreadsheet; json: the same rows for scripts")


def main(args: argparse.Namespace) -> int:
    folder = Path(args.run)
    run_folder = folder if folder.is_dir() else folder.parent
    output = check_output(args.output, [folder]) if args.output else None
    if folder_in_use(run_folder):  # its record says how far it got, not what it will say
        raise PlanError([f"{run_folder}: a run is still writing into this folder; report it once the run has ended"])
    if (run_folder / SWEEP_RECORD).is_file() and not (run_folder / RECORD).exists():
        return _sweep(args, run_folder, output)
    if args.format != "html":
        return _emit(EXPORTS[args.format](load_record(folder)), args.format, output)
    from harness.report.html import REPORT, write_report  # matplotlib: only for the charts

    with Display(err) as display, display.phase("rendering the report") as phase:
        phase.item(f"{folder}: tables and charts")
        with writing(output or run_folder / REPORT):
            written = write_report(folder, output)
    out.print(f"report: {written}")
    return 0


def _emit(text: str, form: str, output: Path | None) -> int:
    """An export to stdout, or written whole to `output`."""
    if output is None:
        print(text, end="")
    else:
        with writing(output):
            write_atomic(output, lambda fh: fh.write(text.encode()))
        out.print(f"{form}: {output}")
    return 0


def _sweep(args: argparse.Namespace, folder: Path, output: Path | None) -> int:
    """A sweep's folder: its page (beside its sweep.json) or its Markdown; its rows are already files."""
    from harness.report.sweep import read_sweep, sweep_markdown

    if args.format in ("csv", "json"):
        raise PlanError([f"{folder}: a sweep's folder; its rows are points.csv and fits.csv here (--format html or "
                         "md renders the sweep; each point's folder is a run that takes every format)"])
    if args.format == "md":
        return _emit(sweep_markdown(read_sweep(folder)), "md", output)
    if output is not None:
        raise PlanError([f"{folder}: a sweep's page is written beside its sweep.json; leave out -o"])
    from harness.report.sweep_page import write_sweep_report  # matplotlib: only for the charts

    with Display(err) as display, display.phase("rendering the sweep's report") as phase:
        phase.item(f"{folder}: its fits and points")
        written = write_sweep_report(folder)
    out.print(f"report: {written}")
    return 0
