"""`harness gate [BASE] [HEAD]`: the regression gate between two commits of this repository, as a
`harness` command like every other. A thin launcher: the engine is `benchmarks/continuous.py`
(asv's runs of the speedups suite, judged by harness.report.gate), run from the checkout the
harness is imported from, so it needs that checkout: an installed wheel has no commits to compare."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import harness
from harness.cli.console import err
from harness.cli.exit_codes import EXIT_INCONCLUSIVE, EXIT_USER_ERROR

ENGINE = Path("benchmarks") / "continuous.py"
# a paragraph a line: the help's formatter wraps them at the reader's width (harness.cli.main)
EPILOG = (
    "needs: a git checkout of this repository with BASE (default main) and HEAD committed (harness/ as committed: "
    "uncommitted changes there are refused), asv (pip install -e '.[bench]'), and 2-3 minutes on 2 cores "
    "(107-110 s measured at load 1.7-1.9, 140-150 s at load 3.2-3.4; longer on a busier machine): each commit's "
    "speedups suite runs three times, interleaved.\n\n"
    "exit codes: 0 no regression, every point judged; 1 a regression (a speedup of HEAD fell beyond what the runs' "
    "spread explains); 2 a refused command (BASE is HEAD, uncommitted harness/, no checkout); 4 no regression, "
    "but at least one point could not be judged (its runs too far apart, or a run did not time it) or none was "
    "found (0 with --allow-inconclusive, as compare's). docs/tracking.md says how each point is judged, and the whole "
    "workflow.")


def checkout() -> Path | None:
    """The git checkout this harness is imported from, if it is one that holds the gate's engine."""
    root = Path(harness.__file__).resolve().parent.parent
    return root if (root / ENGINE).is_file() and (root / ".git").exists() else None


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("base", nargs="?", help="the commit compared against (default main)")
    parser.add_argument("head", nargs="?", help="the commit judged (default HEAD)")
    parser.add_argument("--machine", help="asv machine name (default: `harness asv-machine`'s)")
    parser.add_argument("--json", type=Path, help="also write every point's verdict and runs here (a CI artifact)")
    parser.add_argument("--bench", help="asv's --bench: the suites timed (default the main job's speedups)")
    parser.add_argument("--allow-inconclusive", action="store_true",
                        help="exit 0 instead of 4 when a point could not be judged (as compare's)")


def engine_argv(args: argparse.Namespace) -> list[str]:
    """The engine's own arguments, as given (a --json path made absolute: the engine runs in the checkout)."""
    argv = [a for a in (args.base, args.head) if a is not None]
    for flag, value in (("--machine", args.machine), ("--json", args.json and args.json.resolve()),
                        ("--bench", args.bench)):
        if value is not None:
            argv += [flag, str(value)]
    return argv


def main(args: argparse.Namespace) -> int:
    root = checkout()
    if root is None:
        err.print(f"harness gate: needs the spectral-harness repository (a git checkout with {ENGINE}); this harness "
                  f"is imported from {Path(harness.__file__).resolve().parent.parent}, which is not one",
                  markup=False, highlight=False, soft_wrap=True)
        return EXIT_USER_ERROR
    code = subprocess.run([sys.executable, "-m", "benchmarks.continuous", *engine_argv(args)], cwd=root).returncode
    if code == EXIT_INCONCLUSIVE and args.allow_inconclusive:
        err.print("harness gate: inconclusive, allowed by --allow-inconclusive: exit 0", markup=False, highlight=False)
        return 0
    return code
