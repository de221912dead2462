"""One vocabulary for every page and table: how a strategy, a speedup, a spread, a role and a
mark are written and explained, so the terminal, the HTML report, the charts and the exports never
disagree (one verdict; unreliable measurements' one count and words are in `unstable`)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape

from harness.base.units import format_seconds, format_share, format_speedup
from harness.machine.roofline import roof_device
from harness.record.run_record import UNTIMED, AnalysisRecord, GroupTiming, RunRecord, StrategyTiming
from harness.record.verdict import (TOO_WIDE, UNREADABLE_SPAN, choice_check, medians_against, medians_ratio, readable_interval, verdict,
                                    with_interval)
from harness.record.verification import Verification
from harness.linalg.precision import SHORT
from harness.plan.model import Candidate, Timed
from harness.strategies.registry import APPROXIMATE

# the role says why a strategy was timed, a separate mark says which one computed the recorded
# results (any role can)
COMPUTED_MARK = "*"
UNRESOLVED_MARK = "?"
# the column every table names alike: per-matrix medians scaled to the workload, compute only
# (loading, features and writing are not in it); the exports' field is its snake form, in seconds
COMPUTE_TOTAL = "compute total"
COMPUTE_TOTAL_FIELD = COMPUTE_TOTAL.replace(" ", "_") + "_s"
UNSTABLE_MARK = "!"
RATIO_APART = 1.05  # a speedup this far from its rows' per-matrix ratio gets a note under the table
# the terminal's speedup cell where the per-matrix medians point the other way (medians_footnote gives their figure)
MEDIANS_MARK = "ᵐ"
APART_MARK = "≠"  # the rows' times fall outside the speedup's interval (apart_footnote says why)
COMPUTED_NOTE = f"{COMPUTED_MARK} computed the recorded results"
RESUMED = "timed by the stopped run this one resumed in its folder, kept as it was"
# a rounds cell's mark of RESUMED (`3+6 r`): `3+6 resumed` cost a 100-column table its dtype (walk 12)
RESUMED_MARK = "r"
ROLES_NOTE = ("Role: baseline, the speedups' reference; chosen, the plan's pick, named in the compare list or not; "
              f"compare, named in the spec's compare list. {COMPUTED_NOTE}, whatever its role.")
# the spread is of the compute total, not of the per-matrix median the walk-through read it beside
SPREAD_HEADER = f"{COMPUTE_TOTAL} [q1, q3]"
SPREAD_NOTE = (f"{SPREAD_HEADER}: the 25th and 75th percentiles of the {COMPUTE_TOTAL} over the samples; "
               "n=1: timed once, no spread to show")
# the table's columns whose cells carry marks a note under the table explains (the md export's too)
SPEEDUP_COLUMN = "speedup (95% CI)"
PEAK_COLUMN = "% of peak"
# in the time's words, not a column's: the compute total it named is often not drawn (walk 6)
SPEEDUP_NOTE = ("Speedup: the baseline's time over the strategy's in each round that timed both (earlier runs' pooled "
                "rounds too), their geometric mean, with its 95% interval (low-high); the per-matrix times are each "
                "row's median over all its own rounds, so their ratio can differ from the speedup, which is the "
                f"comparison; {UNRESOLVED_MARK}: unresolved, the interval is wider than the precision asked for; an "
                "interval that holds 1 is not significant; a verdict's `x1.5 either way`: each end lies that factor "
                "from the speedup (its interval is symmetric on a log scale).")
# seconds_per_matrix as it is (walk 11 read "median over the rounds" beside two groups' 2.87 ms and 89 µs averaged)
PER_MATRIX_NOTE = ("Per matrix: each shape group's median call over the matrices a call takes; over several groups, "
                   "their medians' sum over all their matrices (a mean, not a median: compare shows each group).")
# a round as compare and the piped log count it (walk 8 read `rounds: 1` in the log against `3+9` here)
ROUNDS_NOTE = ("Rounds behind each speedup, a round timing each strategy once in one of the run's worker processes "
               "(1 round in each of 3 processes is 3): 5, this run's; 3+6, this run's 3 and 6 pooled from earlier runs of the same "
               "code on this machine; 0+3, none timed by this run, all 3 from earlier runs (--fresh times anew); "
               "over several shape groups, the group with the fewest (0+6: this run timed another of them, not that one); "
               f"3+6 {RESUMED_MARK}, resumed: {RESUMED}.")
# only where the benchmark line is shown (--verbose, the HTML report): the default run prints none
BENCH_ROUNDS_NOTE = ("The benchmark summary's rounds per timing, 3+2 (torch 1), gives an analysis' count as most of its "
                     "rows write it, then the rows that differ by name.")
# why one seeded spec's max error moves between runs (walk 6): pinning the check to one window of the
# sample would check fewer matrices over the runs, so the note says what is checked instead
VERIFIED_NOTE = ("The max error is over the matrices this run's rounds visited: rounds rotate through the timed sample, "
                 "continuing where the pooled rounds of earlier runs stopped, so each run checks its own matrices and "
                 "the max error of one spec and seed differs a little from run to run.")
ABOVE_ROOF = ">100%"
PEAK_NOTE = ("% of peak: of the roof at the kernel's flops per byte, min(GEMM peak, bandwidth x flops/byte), both "
             f"measured on this machine; - where there is no roof; {ABOVE_ROOF} where the timing sits above its roof, "
             "which no kernel beats: its flop or byte count is the cost model's, and the model does not hold for it, "
             "so there is no share to give")


def per_matrix_text(seconds: float, unstable: bool) -> str:
    """`228 µs !`: a per-matrix median with UNSTABLE_MARK where it was measured under unreliable
    conditions, the same cell in the terminal, md and HTML (walk 16: the HTML's read `228 µs`)."""
    return format_seconds(seconds) + (f" {UNSTABLE_MARK}" if unstable else "")


def total_text(seconds: float, extrapolated: bool) -> str:
    """A compute total as every table writes it: `~` where it is extrapolated from a sample (the
    frontier table wrote `485 µs` beside the results table's `~485 µs`)."""
    return ("~" if extrapolated else "") + format_seconds(seconds)


def printable(text: str) -> str:
    """`text` with its control characters written out (`\\x1b`): a label from a record (an older or
    edited one; a spec refuses them) must never reach the terminal raw."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def shown(text: str) -> str:
    """Plain text from a record as rich markup prints it: printable, and its `[/bold]` shown, not
    applied (a label holding one ended a run in a MarkupError, its results unprinted)."""
    return escape(printable(text))


def device_library(backend: str) -> tuple[str, str]:
    """(device, library) of a backend: `numpy` is numpy's arrays on the CPU, `cpu` and `cuda` are
    torch's, so "numpy on numpy" and "torch on cpu" read as the two columns they are."""
    return roof_device(backend), "numpy" if backend == "numpy" else "torch"


def device_text(backend: str) -> str:
    """`cpu (numpy)`: device_library as the tables' "device (library)" column writes it."""
    return "{} ({})".format(*device_library(backend))


def _roof_shares(record: RunRecord, t: StrategyTiming) -> list[float | None]:
    """The timing's achieved GFLOP/s over the roof at its intensity, on its device's measured roofs, as a whole
    then on each shape group, each a point of the roofline; none without a roof."""
    roof = record.roofs.get(roof_device(t.device))
    return [] if roof is None else [roof.share(t.gflops_per_s, t.intensity, record.plan.dtype)] + [
        roof.share(g.gflops_per_s, g.flops / g.bytes, record.plan.dtype) for g in t.groups
        if g.gflops_per_s and g.flops and g.bytes and g.measurement.median_s > 0]


def peak_share(record: RunRecord, t: StrategyTiming) -> float | None:
    """The timing's share of its roof; None without a roof, and None above the roof: no kernel
    beats it, so a share over 100% is a flop or byte count that does not hold for that kernel,
    never a figure to show (peak_text says so)."""
    shares = _roof_shares(record, t)
    return None if not shares or above_roof(record, t) else shares[0]


def above_roof(record: RunRecord, t: StrategyTiming) -> bool:
    """Over its roof as a whole or on one of its shape groups (walk 25: a row of `99%` whose group on
    768x3072 ran at 42.5 GFLOP/s under a roof of 36.1, a hollow marker on the roofline)."""
    return any(share is not None and share > 1.0 for share in _roof_shares(record, t))


def roof_footnote(record: RunRecord, analyses: Sequence[AnalysisRecord]) -> str | None:
    """The line under a table (of `analyses`) whose % of peak reads ABOVE_ROOF somewhere, naming those rows."""
    above = [f"{a.name} {t.label}" for a in analyses for t in a.timings if above_roof(record, t)]
    return None if not above else (f"% of peak {ABOVE_ROOF} ({', '.join(above)}): above this machine's measured "
                                   "roof at the kernel's flops per byte (the GEMM peak, or the memory bandwidth's "
                                   "ceiling below it), which no kernel beats: the cost model's flop or byte count "
                                   "does not hold for that kernel, so its share is no figure, whatever its GFLOP/s")


def peak_text(record: RunRecord, t: StrategyTiming) -> str:
    """`41%`; `-` without a roof; ABOVE_ROOF above it (a bare `-` there read as "not measured")."""
    return ABOVE_ROOF if above_roof(record, t) else format_share(peak_share(record, t))


def strategy_label(analysis: AnalysisRecord, strategy: str, computed: bool | None = None) -> str:
    """`torch *` for the strategy (or point, `torch@bfloat16`) that computed the analysis's
    results, else `torch`."""
    computed = strategy == analysis.strategy if computed is None else computed
    return strategy + (f" {COMPUTED_MARK}" if computed else "")


DTYPE_NOTE = "dtype: its arithmetic (f32, bf16, +c compiled)."  # the dtype column's, in the terminal and md alike


def precision_text(record: RunRecord, t: StrategyTiming) -> str:
    """`bf16`, `f32+c` (compiled): a timing's numeric precision, short enough for a column."""
    return dtype_text(t.precision or record.plan.dtype, t.compiled)


def planned_point(record: RunRecord, a: AnalysisRecord, label: str) -> Timed | Candidate | None:
    """The plan's point of a row with no timing (a timed point, else a candidate): what it was to be,
    its dtype and device, which a row the limit cut shows as a timed row does (walk 18: `-`)."""
    steps = [s for s in record.plan.steps if s.analysis == a.name]
    return (next((t for s in steps for t in s.timed if t.label == label), None)
            or next((c for s in steps for c in s.candidates if c.label == label), None))


def dtype_text(precision: str, compiled: bool) -> str:
    """A precision as the dtype column writes it (`float32` -> `f32`, `+c` compiled): the terminal's and md's."""
    return SHORT.get(precision, precision) + ("+c" if compiled else "")


def speedup_text(t: StrategyTiming) -> str:
    """`1,130x (1,050-1,210)`, `0.94x (0.73-1.22) ?` when unresolved, `1x (baseline)`, and
    `4.36x (no interval) ?` where one round gave none; ends too far apart as with_interval says."""
    if t.role == "baseline":
        return "1x (baseline)"
    return f"- {UNRESOLVED_MARK}" if t.speedup is None else marked_speedup(t.speedup, t.speedup_ci, t.unresolved)


def marked_speedup(speedup: float, ci: tuple[float, float] | None, unresolved: bool) -> str:
    """with_interval, and UNRESOLVED_MARK when the interval is wider than the precision asked for:
    one notation for the run's tables and the history's (walk-through 6)."""
    return with_interval(speedup, ci) + (f" {UNRESOLVED_MARK}" if unresolved else "")


def times_disagree(analysis: AnalysisRecord, t: StrategyTiming) -> bool:
    """Whether the rows' compute totals disagree with the speedup: their ratio (baseline over
    strategy) lies outside its 95% interval, which the paired rounds exclude. The speedup pairs the
    rounds that timed both, earlier runs' too, each row's times the median over all its own rounds (a
    baseline timed anew on a quieter machine can read faster); no interval excludes nothing."""
    base = baseline_of(analysis)
    if base is None or t is base or t.speedup_ci is None:
        return False
    low, high = t.speedup_ci
    return not low <= base.estimate_total_s / t.estimate_total_s <= high


def baseline_of(analysis: AnalysisRecord) -> StrategyTiming | None:
    return next((b for b in analysis.timings if b.role == "baseline"), None)


def ratio_footnote(analyses: Sequence[AnalysisRecord]) -> str | None:
    """The line under a table where a speedup and the ratio of its rows' per-matrix times differ by
    over RATIO_APART, naming the row that differs most (walk 6: `44.3x` beside 11.0 ms over 236 µs,
    46.6, with no word why); a row with APART_MARK has its own note, and one whose cell (or
    medians_footnote) gives both figures says them already."""
    apart: list[tuple[float, str]] = []  # (how far apart, the row and its two figures)
    for a in analyses:
        base = baseline_of(a)
        for t in a.timings:
            if (base is not None and t is not base and t.speedup and (ratio := medians_ratio(t, base))
                    and not times_disagree(a, t) and _medians_other(a, t) is None):
                apart.append((max(ratio / t.speedup, t.speedup / ratio),
                              f"{a.name} {t.label}: {format_speedup(t.speedup)} against {format_speedup(ratio)}"))
    factor, row = max(apart, default=(1.0, ""))
    if factor <= RATIO_APART:
        return None
    return f"speedups pair each round's two times, so they can differ from the ratio of the per-matrix column ({row})"


def table_footnotes(record: RunRecord, analyses: Sequence[AnalysisRecord], more: str = "") -> list[tuple[str, str]]:
    """(column, line): the lines under a table of `analyses` that explain its cells, each shown
    while its column is (the terminal's, the md export's and the HTML report's, one source);
    `more` ends the ratio's line (the terminal's pointer to --explain)."""
    ratio = ratio_footnote(analyses)
    notes = ((SPEEDUP_COLUMN, apart_footnote(analyses)), (SPEEDUP_COLUMN, ratio and ratio + more),
             (SPEEDUP_COLUMN, too_wide_footnote(analyses)), (PEAK_COLUMN, roof_footnote(record, analyses)),
             ("rounds", resumed_footnote(analyses)))
    return [(column, line) for column, line in notes if line]


def speedup_cell(analysis: AnalysisRecord, t: StrategyTiming, short: bool = False) -> str:
    """speedup_figures in one line: `0.670x paired (too wide) ?, 1.28x by medians`."""
    return ", ".join(speedup_figures(analysis, t, short))


def speedup_figures(analysis: AnalysisRecord, t: StrategyTiming, short: bool = False) -> list[str]:
    """speedup_text, with APART_MARK where the rows' times fall outside its interval; where the
    per-matrix medians point the other way from a speedup whose interval holds 1, both figures as
    the verdict gives them (walk 15: the cell kept `0.670x (too wide) ?` beside a verdict of both),
    one item each, so that a page may break a cell between them, never inside one; `short`, the
    terminal's one line, the paired figure with MEDIANS_MARK, which medians_footnote resolves
    (walk 17: a cell on two lines changed the table's layout, its `?` on the second)."""
    other = _medians_other(analysis, t)
    figures = [speedup_text(t)] if other is None or t.speedup is None else (
        [speedup_text(t) + MEDIANS_MARK] if short else
        [f"{format_speedup(t.speedup)} paired ({readable_interval(t.speedup_ci)})" + (f" {UNRESOLVED_MARK}" if t.unresolved else ""),
         f"{format_speedup(other)} by medians"])  # the mark the paired figure's, whose interval it judges (walk 23)
    figures[-1] += f" {APART_MARK}" if times_disagree(analysis, t) else ""
    return figures


def _medians_other(analysis: AnalysisRecord, t: StrategyTiming) -> float | None:
    base = baseline_of(analysis)
    return None if base is None or t.speedup is None else medians_against(t, base)


def medians_footnote(analyses: Sequence[AnalysisRecord]) -> str | None:
    """The line under the terminal's table (of `analyses`) resolving its MEDIANS_MARK cells: the
    per-matrix medians' figure that the verdict gives beside the paired one."""
    rows = [f"{a.name} {t.label} {format_speedup(other)}" for a in analyses for t in a.timings
            if (other := _medians_other(a, t)) is not None]
    return None if not rows else (f"{MEDIANS_MARK}: by the per-matrix medians, the other way from the paired speedup "
                                  f"(whose interval holds 1): {', '.join(rows)}")


def apart_footnote(analyses: Sequence[AnalysisRecord]) -> str | None:
    """The line under a table (of `analyses`) with an APART_MARK, naming those rows and which figure to trust."""
    apart = [f"{a.name} {t.label}" for a in analyses for t in a.timings if times_disagree(a, t)]
    return None if not apart else (
        f"{APART_MARK} ({', '.join(apart)}): the ratio of the {COMPUTE_TOTAL}s lies outside the speedup's 95% "
        "interval: the speedup pairs the rounds that timed both (earlier runs' too), the times are each row's "
        "median over all its own rounds; the paired speedup, with its interval, is the comparison")


def too_wide_footnote(analyses: Sequence[AnalysisRecord]) -> str | None:
    """The line under a table (of `analyses`) with a `(too wide)` speedup: what the cell is too short to say."""
    wide = [f"{a.name} {t.label}" for a in analyses for t in a.timings if readable_interval(t.speedup_ci) == TOO_WIDE]
    return None if not wide else (
        f"{TOO_WIDE} ({', '.join(wide)}): the speedup's 95% interval holds 1 and its ends are over "
        f"{UNREADABLE_SPAN:,.0f}x apart, so neither end is a figure; more rounds narrow it")


def resumed_footnote(analyses: Sequence[AnalysisRecord]) -> str | None:
    """The line under a table (of `analyses`) with a RESUMED_MARK, naming the analyses whose rows have one."""
    marked = [a.name for a in analyses if any(rounds_text(t).endswith(f" {RESUMED_MARK}") for t in a.timings)]
    return None if not marked else f"{RESUMED_MARK} ({', '.join(marked)}): resumed, {RESUMED}"


def rounds_text(t: StrategyTiming) -> str:
    """`5+3`: rounds this run timed, and rounds pooled from earlier runs (`0+3` when all were: `3
    reused` widened the column so a 100-column pipe split a header, walk 18);
    `5+3 r` where the stopped run this one resumed in its folder timed them, taken over as they were
    (`5+3 (2 resumed)` where it timed some of this run's, before it stopped).
    A strategy's group with the fewest (group_rounds_text gives one group's)."""
    fewest = fewest_group(t)
    own, pooled = (0, 0) if fewest is None else (len(fewest.rounds) - fewest.pooled, fewest.pooled)
    text = _rounds_words(own, pooled, t.resumed)
    if t.resumed_rounds and not t.resumed:  # kept of the analysis it stopped in (walk 11: `3+9`, all kept)
        return f"{text} {RESUMED_MARK}" if t.resumed_rounds >= own else f"{text} ({t.resumed_rounds} resumed)"
    return text


def fewest_group(t: StrategyTiming) -> GroupTiming | None:
    """The shape group whose rounds a row's rounds are (the fewest; of those, the fewest this run timed)."""
    return min(t.groups, key=lambda g: (len(g.rounds), len(g.rounds) - g.pooled), default=None)


def group_rounds_text(g: GroupTiming, resumed: bool) -> str:
    """One shape group's rounds in rounds_text's notation: compare's rows are groups, read beside each run's table."""
    return _rounds_words(len(g.rounds) - g.pooled, g.pooled, resumed)


def _rounds_words(own: int, pooled: int, resumed: bool) -> str:
    text = f"{own}+{pooled}" if pooled else str(own)
    return f"{text} {RESUMED_MARK}" if resumed else text


def spread(t: StrategyTiming) -> str:
    """`[52.1 ms, 61.0 ms]`: the workload total's quartiles as an interval, which a `± IQR` beside
    the median read as a half-width is not; `n=1` when a group was timed once (no spread at all)."""
    if t.fewest_samples < 2:
        return "n=1"
    q1, q3 = t.quartile_totals
    return f"[{format_seconds(q1)}, {format_seconds(q3)}]"


def check_of(analysis: AnalysisRecord, label: str) -> Verification | None:
    """A point's check against the float64 references, if it has one."""
    return next((v for v in analysis.verification if v.strategy == label), None)


NO_ANSWER = ("error", "not run")  # a point that raised, or cannot run here: no answer to check


def check_status(analysis: AnalysisRecord, label: str, untimed: str | None = None) -> str:
    """A point's status in every form (terminal, md, HTML, csv, json): its check's verdict, `passed`
    or `FAILED`, timed or not (the limit cuts rounds, never the check); `untimed` in NO_ANSWER, that
    instead. Whether it was timed is said apart (walk 17: csv's `not timed` beside the table's `passed`)."""
    if untimed in NO_ANSWER:
        return untimed
    v = check_of(analysis, label)
    return "passed" if v is None or v.passed else "FAILED"


def worst_error(analysis: AnalysisRecord, label: str) -> float | None:
    """The worst of a point's value and vector errors against the float64 references."""
    return None if (v := check_of(analysis, label)) is None else v.worst


def errors_text(analysis: AnalysisRecord, label: str) -> str:
    """`1.6e-07/4.7e-07`: values' error, and the vectors' where the op has vectors; one spelling in
    the terminal, md and HTML (walk 10 met `/` in one and ` / ` in the other)."""
    if (v := check_of(analysis, label)) is None:
        return "-"
    return f"{v.values_error:.1e}" + (f"/{v.vectors_error:.1e}" if v.vectors_error is not None else "")


def no_verdict(a: AnalysisRecord, baseline: str | None) -> str | None:
    """Why an analysis that compares strategies has no verdict: nothing timed, no baseline, or a
    timed baseline beside which no compared strategy has a speedup (the chosen one's why first)."""
    if not a.timings and not a.skipped:
        return None  # nothing was compared
    untimed = [s.strategy for s in a.skipped if s.reason == UNTIMED]
    why = UNTIMED.split(": ", 1)[1]
    if not a.timings:
        return f"{a.name}: no speedup: " + (f"not timed ({why})" if untimed else "no strategy could be timed")
    base = next((t for t in a.timings if t.role == "baseline"), None)
    if base is None:
        if baseline is None:  # the plan could not time it: a row `not run` says why
            return f"{a.name}: no speedup: its baseline cannot run here (why: the rows not run)"
        return f"{a.name}: no speedup: its baseline {baseline} was not timed" + (f" ({why})" if baseline in untimed else "")
    others = sorted((t for t in a.timings if t is not base), key=lambda t: not a.computed(t))
    if not others and not untimed:
        return None  # the baseline alone: nothing to compare
    head = (f"{others[0].label} has no speedup over {base.label}: {others[0].unresolved_reason or 'no interval'}"
            if others else f"no strategy was timed beside {base.label}")
    return (f"{a.name}: {head}; 0 of {len(others) + len(untimed)} speedups resolved"
            + (f" ({len(untimed)} of them not timed)" if untimed else ""))


def verdicts(record: RunRecord) -> list[tuple[str, AnalysisRecord, str]]:
    """(kind, analysis, line): every analysis' verdict ("verdict", or "no verdict" saying why it
    has none), then each "choice check" line saying a strategy measured ahead of the one that ran:
    computed from the record's timings, so an older record reads in today's words."""
    baselines = {s.analysis: t.label for s in record.plan.steps for t in s.timed if t.role == "baseline"}
    found = [("verdict", a, line) if (line := verdict(a)) else ("no verdict", a, no_verdict(a, baselines.get(a.name)))
             for a in record.analyses]
    return [(kind, a, line) for kind, a, line in found if line] + [
        ("choice check", a, line) for a in record.analyses if (line := choice_check(a, APPROXIMATE))]


def verdict_lines(record: RunRecord) -> list[str]:
    return [line for _kind, _a, line in verdicts(record)]
