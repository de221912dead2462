"""`harness history`: asv's results across commits as one self-contained page (asv's own site
needs the network)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.console import out
from harness.report.history import load
from harness.report.history_page import write_history



def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results/asv", help="asv's results_dir (default results/asv)")
    parser.add_argument("-o", "--output", default="results/history.html",
                        help="HTML file (default results/history.html)")


def main(args: argparse.Namespace) -> int:
    results_dir = Path(args.results)
    out.print(f"history: {write_history(load(results_dir), results_dir, Path(args.output))}")
    return 0
