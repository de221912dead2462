"""`harness history`: asv's results across commits as one self-contained page (asv's own site
needs the network)."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

from harness.base.progress import Display
from harness.cli.console import err, out
from harness.cli.outputs import check_output, writing
from harness.plan.model import PlanError
from harness.report.history import HistoryError, Series, load, skipped_line
from harness.report.history_page import write_history


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results/asv", help="asv's results_dir (default results/asv)")
    parser.add_argument("-o", "--output", default="results/history.html",
                        help="HTML file (default results/history.html)")
    parser.add_argument("--since", help="the commit the headline compares the newest results with: a hash, a "
                        "prefix of one, or a git ref (default: the oldest commit with results)")


def since_commit(ref: str, series: list[Series]) -> str:
    """The full hash in the results that `ref` names (a prefix, or a ref git resolves)."""
    commits = {p.commit for s in series for p in s.points}
    found = [c for c in commits if c.startswith(ref.lower())]
    if len(found) != 1:
        git = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                             capture_output=True, text=True)
        found = [c for c in commits if c == git.stdout.strip()] if git.returncode == 0 else found
    if len(found) != 1:
        raise HistoryError(f"--since {ref}: {'names several' if found else 'names no'} commit with results "
                           f"({len(commits)} commits have them)")
    return found[0]


def main(args: argparse.Namespace) -> int:
    results_dir = Path(args.results)
    page = check_output(args.output, [results_dir], "a new HTML file")
    if page.resolve().is_relative_to(results_dir.resolve()) and page.exists():
        raise PlanError([f"{page}: a file of asv's results ({results_dir}), which writing here would replace; "
                         "expected a new HTML file"])
    skipped: list[str] = []
    with Display(err) as display, display.phase("drawing asv's history") as phase:
        phase.item(f"reading {results_dir}")
        results = load(results_dir, skipped)
        since = since_commit(args.since, results) if args.since else None
        phase.item(f"{len(results)} series")
        with writing(page):
            written = write_history(results, results_dir, page, since)
    if skipped:
        err.print(skipped_line(skipped), markup=False, highlight=False, soft_wrap=True)
    out.print(f"history: {written}")
    return 0
