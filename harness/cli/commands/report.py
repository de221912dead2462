"""`harness report RUN`: the run's self-contained HTML report, or its results table as Markdown
(for a pull request or a paper), CSV (for a spreadsheet) or JSON (for scripts)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.base.atomic import folder_in_use, write_atomic
from harness.base.progress import Display
from harness.cli.console import err, out
from harness.cli.outputs import check_output, writing
from harness.plan.model import PlanError
from harness.record.run_record import load_record
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
    if args.format != "html":
        record = load_record(folder)
        text = EXPORTS[args.format](record)
        if output is None:
            print(text, end="")
        else:
            with writing(output):
                write_atomic(output, lambda fh: fh.write(text.encode()))
            out.print(f"{args.format}: {output}")
        return 0
    from harness.report.html import REPORT, write_report  # matplotlib: only for the charts

    with Display(err) as display, display.phase("rendering the report") as phase:
        phase.item(f"{folder}: tables and charts")
        with writing(output or run_folder / REPORT):
            written = write_report(folder, output)
    out.print(f"report: {written}")
    return 0
