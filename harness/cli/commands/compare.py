"""`harness compare RUN_A RUN_B...`: runs of one spec against the first, and the regression gate,
which exits 1 on a regression and 4 when it could not judge."""

from __future__ import annotations

import argparse
import math
from typing import Literal
from pathlib import Path

from harness.base.lines import print_line, print_shown
from harness.base.progress import Display
from harness.cli.console import err, out
from harness.cli.outputs import check_output, writing
from harness.cli.exit_codes import EXIT_INCONCLUSIVE, EXIT_REGRESSION
from harness.record.folders import is_sweep
from harness.record.run_record import RecordError, RunRecord, load_record
from harness.report.compare import ALPHA, FACTOR, Comparison, CompareOutput, compare_records
from harness.report.compare_view import compare_table, summary_line, unstable_lines
from harness.report.sweep_step import sweep_step


def arguments(cmp: argparse.ArgumentParser) -> None:
    cmp.add_argument("base", metavar="RUN_A", help="run folder every other run is compared against")
    cmp.add_argument("others", nargs="+", metavar="RUN_B", help="run folders of the same spec")
    cmp.add_argument("--html", metavar="FILE", help="also write the comparison as an HTML page")
    cmp.add_argument("--fail-on-regression", nargs="?", const=FACTOR, type=_ratio, metavar="RATIO",
                     help=f"exit 1 when a group of a RUN_B is slower than RUN_A by more than RATIO (default "
                     f"{FACTOR}) with p < {ALPHA} (Welch's t on the rounds' log seconds); unstable measurements "
                     "are reported, not gated on; exit 4 when no group could be judged or a run is incomplete")
    cmp.add_argument("--allow-inconclusive", action="store_true",
                     help="with --fail-on-regression: exit 0 instead of 4 when the gate could not judge")
    cmp.add_argument("--json", action="store_true",
                     help="print the comparisons and the gate's verdict as JSON on stdout (the rest on stderr)")
    cmp.add_argument("--explain", action="store_true", help="explain the table's columns and the test below it")
    cmp.add_argument("-v", "--verbose", action="store_true",
                     help="every unstable group and its reasons, instead of one line per cause; and where a run's "
                     "table writes a row's rounds otherwise")


def _ratio(text: str) -> float:
    """--fail-on-regression's RATIO: above 1, or no run could ever pass; finite, or none could fail."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 1 < value < math.inf:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a finite ratio above 1, e.g. 1.2 (B 20% slower than A)")
    return value


def _gate_lines(c: Comparison, several: bool, verbose: bool) -> list[tuple[str, str]]:
    """(text, style): what did not pair, each regression, the unstable groups by cause (each with `verbose`), and
    which groups were not judged and what to do next: without it a gate that cannot fire would look
    like one that passed, and a comparison would end on a count with no way on. Why the gate could
    not judge is the summary line's lead, said there alone (a line of its own here said it again)."""
    where = f" ({c.b.folder})" if several else ""
    lines = [(f"{c.threads_differ}{where}", "yellow")] if c.threads_differ else []
    lines += [(f"not compared: {u}{where}", "yellow") for u in c.unmatched]
    if c.untimed:  # no row and in neither run alone: without this line they were absent without a word
        lines.append((f"not timed in either run: {', '.join(c.untimed)}{where}", "yellow"))
    lines += [(f"REGRESSION {r}{where}", "bold red") for r in c.regressions]
    lines += [(u + where, "yellow") for u in unstable_lines(c, verbose)]
    if c.not_judged:
        lines.append((c.not_judged + where, "yellow"))
    return lines


Verdict = tuple[str, str, int, Literal["passed", "regression", "inconclusive"]]


def _verdict(comparisons: list[Comparison], ratio: float, allow_inconclusive: bool) -> Verdict:
    """The gate's last line, its style, the exit code (1 on a regression, 4 when inconclusive, 0 with
    --allow-inconclusive, else 0) and the verdict --json gives beside it. An inconclusive gate says so
    and why in each summary line, first; a last line said it again ("INCONCLUSIVE: 0 of 16 groups
    gated ... (why: the first line)"), so it has none, but for the exit --allow-inconclusive makes 0."""
    regressions = sum(len(c.regressions) for c in comparisons)
    alpha = comparisons[0].alpha
    gated = sum(c.n_gated for c in comparisons)
    total = sum(len(c.rows) for c in comparisons)
    if regressions:
        return (f"FAILED: {regressions} regression(s): slower than {ratio:g}x with p < {alpha}", "bold red",
                EXIT_REGRESSION, "regression")
    if any(c.inconclusive for c in comparisons):
        if allow_inconclusive:
            return "inconclusive, allowed by --allow-inconclusive: exit 0", "yellow", 0, "inconclusive"
        return "", "", EXIT_INCONCLUSIVE, "inconclusive"
    return (f"passed: no group slower than {ratio:g}x with p < {alpha} ({gated} of {total} groups gated)", "green",
            0, "passed")


def _same_run(a: RunRecord, b: RunRecord) -> bool:
    """Whether two records are of one run (a folder copied, or given twice): its run id, unique to each run and
    carried by its rounds; a record without one (before run ids) by its start time and command alike."""
    ids = [r.bench.run_id if r.bench is not None else "" for r in (a, b)]
    if all(ids):
        return ids[0] == ids[1]
    return (a.started, a.command) == (b.started, b.command)


def _no_sweeps(base: str, others: list[str]) -> None:
    """A sweep's folder given for a run: RecordError saying what to compare instead (walk 22: two sweeps' folders
    read "no record.json here; is this a run folder"). Only a command compare accepts (walk 24: `compare RUN
    SWEEP/rank-128` of another spec exits 2, as two points of one sweep would: each its own swept value)."""
    for folder in (base, *others):
        if is_sweep(Path(folder)):
            other = others[0] if folder == base else base
            raise RecordError(f"{folder}: a sweep's folder; {sweep_step(folder, other, first=folder == base)}")


def main(args: argparse.Namespace) -> int:
    """Every run against the first; RecordError (exit 2) when their specs differ. With
    --fail-on-regression exit 1 on a regression, 4 when the gate could not judge; with --json
    stdout holds the JSON alone, so human lines go to stderr."""
    gate = args.fail_on_regression is not None
    ratio = args.fail_on_regression or FACTOR
    page = check_output(args.html, [Path(args.base), *map(Path, args.others)], "a new HTML file") if args.html else None
    _no_sweeps(args.base, args.others)
    with Display(err) as display, display.phase("comparing runs", total=len(args.others)) as phase:
        phase.item(f"{args.base}: reading")
        base = load_record(Path(args.base))
        comparisons = []
        for f in args.others:
            phase.item(f"{f}: reading, testing every group")
            record = load_record(Path(f))
            if _same_run(base, record):  # it judged nothing (walk 21: `none judged (too few rounds)` of `3, 3` rows)
                raise RecordError(f"{args.base} and {f} are the same run: compare two runs of one spec "
                                  "(harness run SPEC again makes a second)")
            comparisons.append(compare_records(base, record, (args.base, f), factor=ratio, gate=gate))
            phase.advance()
    human = err if args.json else out
    several = len(comparisons) > 1
    for c in comparisons:
        print_line(human, summary_line(c, several))
        if not args.json:
            print_shown(out, compare_table(c, explain=args.explain, verbose=args.verbose))
        for text, style in _gate_lines(c, several, args.verbose):
            print_line(human, text, style=style)
    if page is not None:
        from harness.report.html import write_compare  # matplotlib: only for the chart

        with Display(err) as display, display.phase("rendering the comparison") as phase, writing(page):
            phase.item(f"{page}: tables and the ratio chart")
            written = write_compare(comparisons, page)
        human.print(f"report: {written}")
    passed = all(c.passed for c in comparisons)
    code, verdict = (0 if passed else EXIT_REGRESSION), None
    if gate:
        text, style, code, verdict = _verdict(comparisons, ratio, args.allow_inconclusive)
        if text:
            print_line(human, text, style=style)
        passed = verdict == "passed"  # an inconclusive gate did not pass, whatever its exit code
    if args.json:
        inconclusive = [f"{c.b.folder}: {why}" for c in comparisons for why in c.inconclusive]
        print(CompareOutput(gate=ratio if gate else None, passed=passed, verdict=verdict, inconclusive=inconclusive,
                            n_gated=sum(c.n_gated for c in comparisons), comparisons=comparisons)
              .model_dump_json(indent=2))
    return code
