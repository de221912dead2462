"""Terminal tables and lines of a plan and of a run record: by default what a reader acts on (the
verdicts, one compact table, one line per kind of warning), everything on request (`--wide`,
`--verbose`, `--explain`) and in the HTML report."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np

from harness.base.units import format_bytes, format_rate, format_seconds, format_share, plural
from harness.record.run_record import UNTIMED, AnalysisRecord, RunRecord, StrategyTiming
from harness.report.fitting import Fitted, rule_table, value
from harness.report.frontier import frontier_lines
from harness.report.pairing import point_name
from harness.report.plan_view import grouped, overrun_text, planned_text, threads_text
from harness.report.unresolved import WHY_BELOW, WHY_VERBOSE, outlook_note, quieter_advised, unresolved_line
from harness.report.labels import (BENCH_ROUNDS_NOTE, DTYPE_NOTE, PER_MATRIX_NOTE, COMPUTE_TOTAL, COMPUTED_NOTE, PEAK_COLUMN, PEAK_NOTE, RESUMED, SPEEDUP_COLUMN, check_status, NO_ANSWER, total_text, ROLES_NOTE, ROUNDS_NOTE, SPEEDUP_NOTE, UNSTABLE_MARK, VERIFIED_NOTE,
                                   device_library, dtype_text, errors_text, medians_footnote, peak_text, per_matrix_text, planned_point, precision_text,
                                   rounds_text, speedup_cell, strategy_label, table_footnotes,
                                   shown, verdict_lines, worst_error)
from harness.bench.noise import reasons_text
from harness.report.unstable import (Unstable, measurement_count, summary_reasons, unstable_measurements,
                                     unstable_why)


# every column; a terminal too narrow for them all leaves these out, first to last (--wide says
# which); the default table leaves them silently, so it widens with the terminal, unless a value
# over its floor left out one the width holds (fitting.Fitted.note)
RUN_COLUMNS = ("analysis", "strategy", "role", "device", "dtype", "per matrix", COMPUTE_TOTAL, SPEEDUP_COLUMN,
               "rounds", "GFLOP/s", PEAK_COLUMN, "max error", "status")
# rounds last: it says how much data lies behind each speedup (a long speedup cell dropped it first, issue 48)
RUN_OPTIONAL = (PEAK_COLUMN, "GFLOP/s", "device", "role", COMPUTE_TOTAL, "dtype", "rounds")
ERRORS_APART = "values / vectors error"  # --wide's alone, first to leave: it never costs the default a column
# what every width shows: one row per strategy, what a reader acts on, within 100 columns
COMPACT_COLUMNS = tuple(c for c in RUN_COLUMNS if c not in RUN_OPTIONAL)
# the widest a column's values commonly are ("1.15 ms !", "1,648x (1,086-2,501) ?", "5.8e-08", "not
# run", "3+6"; a point the limit cut says "not timed" under per matrix, and its check's "passed" as
# its status): the columns a width shows then hang on the width alone (fitting.Fitted.floors), and
# a wider value (`3+6 (2 resumed)`) that leaves one out more is said
FLOORS = {"per matrix": 9, COMPUTE_TOTAL: 8, SPEEDUP_COLUMN: 22, "rounds": 3, "max error": 7, "status": 7}
STATUS = {"passed": "[green]passed[/]", "FAILED": "[bold red]FAILED[/]", "error": "[bold red]error[/]",
          "not timed": "[yellow]not timed[/]", "not run": "not run"}


# where a column the width left out is shown: every one is in the HTML report
ELSEWHERE = ", and so does the HTML report (`harness report RUN`)"


def _caption(record: RunRecord, drawn: tuple[str, ...], left_out: tuple[str, ...], verbose: bool) -> str:
    """What the `drawn` columns and their marks mean (`--explain`; the HTML report always explains),
    never a column or a line not on the screen (walk 6: the speedup's note named the compute total
    a 100-column table had left out, and the rounds' a benchmark line only --verbose prints); the
    line under the table names the columns `left_out` and where they are."""
    errors = (f"; {ERRORS_APART} gives each" if ERRORS_APART in drawn
              else "" if ERRORS_APART in left_out else "; --wide gives each")
    notes = {
        "role": ROLES_NOTE, "strategy": COMPUTED_NOTE + ".",
        "per matrix": f"{UNSTABLE_MARK} measured under unreliable conditions (below). {PER_MATRIX_NOTE}",
        COMPUTE_TOTAL: f"{COMPUTE_TOTAL.capitalize()}: scaled to the workload (~ = extrapolated), compute only (the wall "
                       "time of each analysis, loading included, is in --verbose).",
        SPEEDUP_COLUMN: SPEEDUP_NOTE, "rounds": ROUNDS_NOTE + (f" {BENCH_ROUNDS_NOTE}" if verbose else ""),
        "GFLOP/s": "GFLOP/s: achieved.",
        PEAK_COLUMN: PEAK_NOTE + ("" if record.roofs else " (none measured: `harness calibrate`)") + ".",
        "device": "Device (library): where and with what it ran.",
        "dtype": DTYPE_NOTE,
        "max error": "Max error: max |s - s_ref| / s_1 against float64 references, and the singular triplets' worst "
                     f"residual where the op has vectors (the worse of the two{errors}). " + VERIFIED_NOTE,
        "status": "Status: passed or FAILED its tolerance, timed or not (a point the limit left not timed says so under "
                  "per matrix; its answer was still checked); error (it raised) or not run: why is below the table.",
    }
    if "role" in drawn:
        notes.pop("strategy")  # the roles' note says it
    # a line each (walk 23: `--explain` gave one 22-line paragraph)
    return "\n".join(note for column, note in notes.items() if column in drawn)


def _timed_row(record: RunRecord, a: AnalysisRecord, t: StrategyTiming, wide: bool) -> list[str]:
    status = check_status(a, t.label)
    label = shown(strategy_label(a, t.label, a.computed(t)))
    speedup = shown(speedup_cell(a, t, short=True) if any(b.role == "baseline" for b in a.timings) else "(no baseline timed)")
    worst = worst_error(a, t.label)
    return [label, t.role, "{} ({})".format(*device_library(t.device)), precision_text(record, t), per_matrix_text(t.seconds_per_matrix, bool(t.unstable)),
            shown(total_text(t.estimate_total_s, t.extrapolated)), speedup,
            rounds_text(t), format_rate(t.gflops_per_s), peak_text(record, t),
            "-" if worst is None else f"{worst:.1e}", STATUS[status], *([errors_text(a, t.label)] if wide else [])]


def untimed_rows(record: RunRecord, a: AnalysisRecord) -> Iterator[tuple[str, str, str, str]]:
    """(label, role, status, why) of every compared strategy with no timing: it raised instead of
    answering (error), the limit came first (not timed), or it cannot run here (not run)."""
    timed = {t.label for t in a.timings}
    planned = {t.label: t.role for s in record.plan.steps if s.analysis == a.name for t in s.timed}
    for v in a.verification:
        if v.reason is not None and v.strategy not in timed:
            yield strategy_label(a, v.strategy), planned.get(v.strategy, "-"), "error", v.reason
    for s in a.skipped:
        untimed = s.reason == UNTIMED
        yield (s.strategy, planned.get(s.strategy, "-"), "not timed" if untimed else "not run",
               UNTIMED.split(": ", 1)[1] if untimed else s.reason)


def _untimed_row(record: RunRecord, a: AnalysisRecord, label: str, role: str, status: str, wide: bool) -> list[str]:
    """Dashes where a timing would be; a point the limit cut says so under per matrix, and shows
    its check, dtype and device as a timed row does (its answer was computed so)."""
    if status in NO_ANSWER:
        return [shown(label), role, *["-"] * (len(RUN_COLUMNS) - 4), STATUS[status], *(["-"] if wide else [])]
    cells = ["-"] * (len(RUN_COLUMNS) - 5)  # device to % of peak
    if (point := planned_point(record, a, label)) is not None:
        cells[1] = dtype_text(point.precision or record.plan.dtype, point.compiled)
        cells[0] = "{} ({})".format(*device_library(point.device)) if point.device else "-"
    cells[RUN_COLUMNS.index("per matrix") - RUN_COLUMNS.index("device")] = STATUS[status]
    worst = worst_error(a, label)
    return [shown(label), role, *cells, "-" if worst is None else f"{worst:.1e}", STATUS[check_status(a, label)],
            *([errors_text(a, label)] if wide else [])]


def run_table(record: RunRecord, wide: bool = False, explain: bool = False, verbose: bool = False) -> Fitted:
    """The results, one row per strategy (the verdict lines above it keep the speedups, the lines
    below it say why a row has no timing): every column the width holds, at least COMPACT_COLUMNS;
    `wide` says what the width left out, and gives the values' and the vectors' errors apart;
    `explain` says what the drawn columns mean, and what the width left out (`verbose`: the lines
    below the table it explains include the benchmark line)."""
    columns = RUN_COLUMNS + ((ERRORS_APART,) if wide else ())
    table = rule_table()
    for column in columns:
        table.add_column(column)
    labels = []  # every row's name as it would read marked: the pick's mark on any of them
    for a in record.analyses:
        untimed = list(untimed_rows(record, a))
        rows = [_timed_row(record, a, t, wide) for t in a.timings]
        rows += [_untimed_row(record, a, label, role, status, wide) for label, role, status, _why in untimed]
        for i, row in enumerate(rows):  # a label is a value too: `factored *` never leaves its mark on a line alone
            table.add_row(shown(a.name) if i == 0 else "", *map(value, row), end_section=i == len(rows) - 1)
        labels += [shown(strategy_label(a, name, True)) for name in [*(t.label for t in a.timings), *(u[0] for u in untimed)]]
    floors = {**FLOORS, "strategy": max(map(len, labels), default=0)}
    notes = table_footnotes(record, record.analyses, more="" if explain else "; --explain says more")
    notes += [(SPEEDUP_COLUMN, line)] if (line := medians_footnote(record.analyses)) else []
    if not explain and any(a.computed(t) for a in record.analyses for t in a.timings):  # --explain's caption says it
        notes.insert(0, ("strategy", f"{COMPUTED_NOTE}."))  # walks 22-23: every other mark had a line, `*` none
    caption = (lambda out: _caption(record, tuple(c for c in columns if c not in out), out, verbose)) if explain else None
    return Fitted(table, ((ERRORS_APART,) if wide else ()) + RUN_OPTIONAL, note=wide or explain, floors=floors,
                  elsewhere=ELSEWHERE, footnotes=tuple((column, shown(line)) for column, line in notes), explain=caption)


def run_screen(record: RunRecord, wide: bool = False, explain: bool = False,
               verbose: bool = False) -> list[str | Fitted]:
    """What `harness run` (and `harness.api.run`) print: the verdict first, as hyperfine prints it,
    the machine, the table, then the lines below it. Strings are lines of markup."""
    return [*map(shown, verdict_lines(record)), title_line(record), run_table(record, wide=wide, explain=explain, verbose=verbose),
            *run_lines(record, verbose=verbose), *map(shown, frontier_lines(record))]


def title_line(record: RunRecord) -> str:
    """`task_geometry: 224 matrices on Intel(R) Xeon(R) Processor (2 cores)`, above the table."""
    m = record.machine
    return f"[bold]{shown(record.experiment)}[/]: {record.plan.n_matrices} matrices on {shown(m.cpu)} ({m.cores} cores)"


def untimed_lines(record: RunRecord) -> list[str]:
    """Why rows have no timing, each reason once: `not timed, out of time on a busy machine:
    top3: scipy_svds, top3: torch; ...`, `not run (CuPy is not installed): ...`, `error: ...`."""
    lines = []
    for a in record.analyses:
        lines += [f"[bold red]error[/]: {shown(a.name)} {shown(v.strategy)} raised: {shown(v.reason)}"
                  for v in a.verification if v.reason is not None and v.strategy not in {t.label for t in a.timings}]
    untimed = [f"{a.name}: {s.strategy}" for a in record.analyses for s in a.skipped if s.reason == UNTIMED]
    if untimed:
        lines.append(f"not timed, {UNTIMED.split(': ', 1)[1]}: {shown(', '.join(untimed))}; the next run "
                     "(without --fresh) times each of them once whatever its limit, and --budget 30s gives more")
    lines += held_lines(record)
    not_run = [(f"{a.name} {s.strategy}", s.reason) for a in record.analyses for s in a.skipped if s.reason != UNTIMED]
    lines += [f"not run ({shown(reason)}): {shown(', '.join(what))}" for reason, what in grouped(not_run)]
    return lines


SETTLED, CUT = "earlier runs' rounds already settle it", "the limit ran out first"


def held(a: AnalysisRecord, t: StrategyTiming) -> str | None:
    """Why this run timed no round of a row earlier runs' rounds time (`0+4`): SETTLED (a
    baseline: its analysis' every speedup) or CUT; None where it timed one, or resumed it (its cell
    says why: the stopped run timed it)."""
    if t.resumed or not t.groups or any(len(g.rounds) > g.pooled for g in t.groups):
        return None
    return _why(a, t)


def _why(a: AnalysisRecord, t: StrategyTiming) -> str:
    """SETTLED where earlier runs' rounds settle every speedup the row stands in, else CUT."""
    done = all(o.settled for o in a.timings if o.role != "baseline") if t.role == "baseline" else t.settled
    return SETTLED if done else CUT


def held_lines(record: RunRecord) -> list[str]:
    """Why each row this run timed no round of (`0+4`) was not timed: earlier runs' rounds
    already settle every speedup it stands in (a baseline: its analysis' every one), or the limit
    ran out before it (walk-through 7: dual_gram showed `1 reused` six runs, no word why; walk 9: a
    settled row had no line, and a settled unresolved one was said to wait on the limit). A row this
    run timed on some shape groups names the others (walk 17: torch's `0+8` group went unsaid)."""
    settled: list[str] = []
    cut: list[str] = []
    for a in record.analyses:
        for t in a.timings:  # a resumed row's cell says why: the stopped run timed it
            untimed = [g for g in t.groups if 0 < g.pooled >= len(g.rounds)]
            if t.resumed or not untimed:
                continue
            names = ([(point_name(a.name, t.label), min(g.pooled for g in untimed))] if len(untimed) == len(t.groups)
                     else [(point_name(a.name, t.label, g.group), g.pooled) for g in untimed])
            (settled if _why(a, t) == SETTLED else cut).extend(f"{name} ({plural(n, 'reused round')})" for name, n in names)
    lines = []
    if settled:
        lines.append(f"not timed again, earlier runs' rounds already settle every speedup {_they(settled, 'it stands', 'they stand')} "
                     f"in: {shown(', '.join(settled))}; --fresh times {_they(settled, 'it', 'them')} anew")
    if cut:  # the limit is the budget, or the floor where that is more (walk-through 8: "the budget (2.00 s)" of a 1 s budget)
        b = record.bench
        limit = ("this run's limit" if b is None else
                 f"the {format_seconds(b.limit_s)} {'budget' if b.limit_s <= b.budget_s else 'floor'}")
        lines.append(f"not timed again, {limit} ran out first: {shown(', '.join(cut))}; "
                     f"--budget 30s times {_they(cut, 'it', 'them')}")
    return lines


def _they(rows: list[str], one: str, more: str) -> str:
    return one if len(rows) == 1 else more


def unstable_head(record: RunRecord, unstable: list[Unstable], style: str = "") -> str:
    """`18 of 18 measurements (a strategy on one shape group) unstable (!)`, the words in rich's
    `style` where given: the terminal's line, the reports' lists and the API's repr begin so."""
    head = f"{len(unstable)} of {plural(measurement_count(record), 'measurement')} (a strategy on one shape group) unstable"
    return (f"[{style}]{head}[/]" if style else head) + f" ({UNSTABLE_MARK})"


def unstable_advice(record: RunRecord, unstable: list[Unstable]) -> str:
    """What to do about them, the re-run pointing back to the unresolved line's where that said it
    (quieter_advised); reused rounds said here, once, not stacked after the causes' own words."""
    rerun = ("and re-run as advised above" if quieter_advised(record) else "or re-run on a quiet machine "
             "(`harness system` names what is busy) or with more time for rounds (--budget 30s)")
    return (f"compare their speedups with care, {rerun}"
            + ("; some were timed by earlier runs, which --fresh measures anew" if any(u.pooled for u in unstable) else ""))


def _unstable_line(record: RunRecord, unstable: list[Unstable]) -> str:
    why = unstable_why(summary_reasons(u) for u in unstable)
    return (f"{why.lead(unstable_head(record, unstable, 'bold yellow'))}: {shown(why.text)}; "
            f"{shown(unstable_advice(record, unstable))}")


UNRESOLVED_EACH = "unresolved "  # how warning_lines begins its line on one unresolved speedup


def warning_lines(record: RunRecord, verbose: bool = False, unstable_line: bool = True, report: bool = False) -> list[str]:
    """One line per kind of warning (why rows have no timing, unresolved speedups, unstable
    measurements, a phase over its limit); with `verbose` one line per measurement and reason;
    without `unstable_line` none for the unstable ones (the HTML headline lists them by cause); a
    `report` (HTML, md, JSON: no --verbose to point to) lists why each speedup is unresolved."""
    b = record.bench
    lines = untimed_lines(record)
    retried = {a.name: n for a in record.analyses if (n := sum(p.attempts > 1 for p in a.placements))}
    if retried:
        lines.append(f"[yellow]{plural(sum(retried.values()), 'chunk')} resubmitted after losing their worker[/] "
                     f"({', '.join(retried)}): the results are whole" + ("" if report else "; --verbose says where each analysis ran"))
    unresolved = [(a.name, t) for a in record.analyses for t in a.timings if t.unresolved]
    if unresolved and not verbose:
        lines.append(unresolved_line(record, unresolved, WHY_BELOW if report else WHY_VERBOSE))
    lines += [f"{UNRESOLVED_EACH}{shown(name)} {shown(t.label)}: {shown(t.unresolved_reason or 'no interval')}"
              + outlook_note(t, b.precision if b is not None else None) for name, t in unresolved if verbose or report]
    unstable = unstable_measurements(record)
    if unstable and not verbose and unstable_line:
        lines.append(_unstable_line(record, unstable))
    lines += [f"[bold yellow]unstable[/] {shown(u.analysis)} {shown(u.strategy)} on {shown(u.group)}: "
              f"{shown(reasons_text(u.reasons))}" + (" (rounds of earlier runs; --fresh measures anew)" if u.pooled else "")
              for u in unstable if verbose]
    return lines


def bench_summary(record: RunRecord) -> str | None:
    """The benchmark phase in one sentence, the terminal's and the report's: what it spent, its
    rounds, what it resolved, its threads, the references."""
    b = record.bench
    if b is None:
        return None
    why = record.plan.bench.threads_reason if record.plan.bench is not None else ""
    references = (f"{b.references_computed} computed, {b.references_cached} from the cache, "
                  f"{format_seconds(b.references_s)}" if b.references_computed or b.references_cached
                  else "none needed (every verdict came from the result cache)")
    return (f"{format_seconds(b.spent_s - b.one_off_s)} of warm-ups and rounds {planned_text(record)}, and "
            f"{format_seconds(b.one_off_s)} of one-off work (starting "
            f"each strategy's own worker process, verifying answers){overrun_text(record)}; {_rounds(record)}; "
            f"{b.resolved} of {plural(b.resolved + b.unresolved, 'speedup')} resolved to ±{format_share(b.precision)}; "
            f"{threads_text(b.threads, why)}; float64 references: {references}")


def _rounds(record: RunRecord) -> str:
    """Each analysis' rounds as its table's rounds column writes them (`geometry 3+9`: this run's +
    pooled), and the busy blocks among this run's: the run's totals (3 rounds, 100 pooled) mixed
    rounds of one analysis with blocks of every strategy and group, and matched no table."""
    texts = {a.name: _analysis_rounds(a) for a in record.analyses if a.timings}
    said = ("rounds per timing (this run's+pooled, as in the tables): " + ", ".join(f"{shown(n)} {t}" for n, t in texts.items())
            if texts else "no rounds timed")
    blocks = sum(len(g.rounds) - g.pooled for a in record.analyses for t in a.timings for g in t.groups)
    busy = record.bench.busy_rounds if record.bench is not None else 0
    return said + (f"; {busy} of this run's {blocks} timed blocks (one strategy on one shape group in one round) "
                   "ran while the machine was busy: kept, and flagged" if busy else "")


def _analysis_rounds(a: AnalysisRecord) -> str:
    """`3+2`, or `2 (torch 1)` where its rows differ: the count most rows show, then the others by
    name, each as its row writes it (walk-through 7: `svd_topk 2/1` beside tables that read `3+2`)."""
    texts = {t.label: rounds_text(t) for t in a.timings}
    common = Counter(texts.values()).most_common(1)[0][0]
    others = [f"{shown(label)} {text}" for label, text in texts.items() if text != common]
    return common + (f" ({', '.join(others)})" if others else "")


def bench_lines(record: RunRecord, verbose: bool = False) -> list[str]:
    """The benchmark phase in one line, then its warnings (warning_lines)."""
    summary = bench_summary(record)
    return [] if summary is None else [f"benchmark: {summary}", *warning_lines(record, verbose)]


def run_lines(record: RunRecord, verbose: bool = False) -> list[str]:
    """What `harness run` prints after its table: by default one line per kind of warning and each
    PCA's axes file; with `verbose` every analysis' wall time, its PCA figures, the benchmark line
    and every warning in full."""
    if not verbose:
        return warning_lines(record) + [line for a in record.analyses for line in _axes_lines(a)]
    return wall_lines(record) + bench_lines(record, verbose=True)


def wall_lines(record: RunRecord) -> list[str]:
    """What the run did: each analysis's wall time (loading and all, unlike the table's
    compute-only compute total) and its PCA figures."""
    lines = [
        f"{shown(a.name)}: {a.n_matrices} matrices through {a.strategy} on {'{} ({})'.format(*device_library(a.device))} in "
        f"{format_seconds(a.wall_s)} wall, loading included" + _cache_note(a)
        for a in record.analyses
    ]
    return lines + [line for a in record.analyses for line in _variance_lines(a) + _axes_lines(a)]


def _cache_note(analysis: AnalysisRecord) -> str:
    """Says when the wall time is that of reading the result cache, not of computing, and where
    the computed chunks ran."""
    chunks = analysis.cached_chunks + analysis.computed_chunks
    notes = [f"{analysis.cached_chunks} of {chunks} chunks from the cache"] if analysis.cached_chunks else []
    workers = {p.worker for p in analysis.placements}
    if len(workers) > 1:
        notes.append(f"{len(analysis.placements)} chunks on {len(workers)} workers")
    if retried := sum(p.attempts > 1 for p in analysis.placements):
        notes.append(f"{plural(retried, 'chunk')} resubmitted after losing their worker")
    if any(t.cached for t in analysis.timings):
        when = max((t.reused_from for t in analysis.timings if t.cached and t.reused_from), default=None)
        notes.append("timings reused from earlier runs on this machine" + (f", timed {when[:10]}" if when else ""))
    if any(t.resumed for t in analysis.timings):
        notes.append(RESUMED)
    if kept := max((t.resumed_rounds for t in analysis.timings), default=0):
        notes.append(f"{plural(kept, 'round')} kept from the interrupted run")
    return f" ({'; '.join(notes)})" if notes else ""


def _variance_lines(analysis: AnalysisRecord) -> list[str]:
    """op pca: explained-variance ratios, one line for a global PCA, the range for per-layer."""
    ratios = analysis.explained_variance_ratio
    if not ratios:
        return []
    if list(ratios) == ["global"]:
        return [f"{shown(analysis.name)}: explained variance ratio " + ", ".join(f"{r:.3f}" for r in ratios["global"])]
    first = [r[0] for r in ratios.values()]
    return [f"{shown(analysis.name)}: PC1 explains {min(first):.3f} to {max(first):.3f} of the variance "
            f"across {len(ratios)} (layer, module) PCAs"]


def axes_summary(analysis: AnalysisRecord) -> str | None:
    """op pca with axes = true: the file, its size, its time and its check, in one line."""
    axes = analysis.axes
    if axes is None:
        return None
    size = axes.components * axes.parameters * np.dtype(axes.dtype).itemsize
    passed = next((v.passed for v in analysis.verification if v.strategy == "axes"), False)
    return (f"principal axes ({axes.components} x {axes.parameters:,} {axes.dtype}, {format_bytes(size)}) "
            f"in {axes.file}, written in {format_seconds(axes.seconds)}; max |A A^T - I| = "
            f"{axes.orthonormality_error:.1e}" + ("" if passed else ", over the tolerance: FAILED"))


def _axes_lines(analysis: AnalysisRecord) -> list[str]:
    summary = axes_summary(analysis)
    return [] if summary is None else [f"{shown(analysis.name)}: {summary}"]
