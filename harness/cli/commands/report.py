"""`harness report RUN`: the run's self-contained HTML report, or its results table as Markdown
(for a pull request or a paper), CSV (for a spreadsheet) or JSON (for scripts)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.base.progress import Display
from harness.cli.console import err, out
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
    folder, output = Path(args.run), Path(args.output) if args.output else None
    if args.format != "html":
        record = load_record(folder)
        text = EXPORTS[args.format](record)
        if output is None:
            print(text, end="")
        else:
            output.write_text(text, encoding="utf-8")
            out.print(f"{args.format}: {output}")
        return 0
    from harness.report.html import write_report  # matplotlib: only for the charts

    with Display(err) as display, display.phase("rendering the report") as phase:
        phase.item(f"{folder}: tables and charts")
        written = write_report(folder, output)
    out.print(f"report: {written}")
    return 0
