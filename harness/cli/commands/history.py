"""`harness history`: asv's results across commits as one self-contained page (asv's own site
needs the network)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.base.progress import Display
from harness.cli.console import err, out
from harness.cli.outputs import check_output, writing
from harness.plan.model import PlanError
from harness.report.history import load
from harness.report.history_page import write_history



def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results/asv", help="asv's results_dir (default results/asv)")
    parser.add_argument("-o", "--output", default="results/history.html",
                        help="HTML file (default results/history.html)")


def main(args: argparse.Namespace) -> int:
    results_dir = Path(args.results)
    page = check_output(args.output, [results_dir], "a new HTML file")
    if page.resolve().is_relative_to(results_dir.resolve()) and page.exists():
        raise PlanError([f"{page}: a file of asv's results ({results_dir}), which writing here would replace; "
                         "expected a new HTML file"])
    with Display(err) as display, display.phase("drawing asv's history") as phase:
        phase.item(f"reading {results_dir}")
        results = load(results_dir)
        phase.item(f"{len(results)} series: a chart each")
        with writing(page):
            written = write_history(results, results_dir, page)
    out.print(f"history: {written}")
    return 0
