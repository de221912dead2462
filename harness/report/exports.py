"""The results table as text another tool takes: Markdown for a pull request or a paper, CSV for a
spreadsheet, JSON for scripts. One row per analysis and compared strategy, timed or not: the
terminal's figures and marks, its status (its check's), and whether it was timed and why not.

The speedup's 95% interval (`speedup_low`, `speedup_high`) and `unresolved` (the interval is
wider than the precision asked for); records from before intervals read with neither. CSV and
JSON give numbers where the tables give text: `rounds` is the total (md's `3+6` is 9)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from typing import Any

from rich.text import Text

from harness.base.units import format_rate, plural
from harness.record.run_record import AnalysisRecord, RunRecord, StrategyTiming
from harness.record.verification import Verification
from harness.bench.noise import EARLIER, FIGURE, grouped_by, cause_key, reason_range
from harness.bench.statistics import LEVEL
from harness.record.verdict import headline, medians_ratio, overtaken, significance
from harness.strategies.registry import APPROXIMATE
from harness.report.labels import (COMPUTE_TOTAL, COMPUTE_TOTAL_FIELD, COMPUTED_MARK, PEAK_COLUMN, SPEEDUP_COLUMN, UNRESOLVED_MARK, UNSTABLE_MARK,
                                   DTYPE_NOTE, NO_ANSWER, check_of, check_status, table_footnotes, device_library, dtype_text, fewest_group, per_matrix_text, planned_point, printable, peak_share, peak_text, above_roof, rounds_text, speedup_cell, times_disagree,
                                   total_text, verdict_lines, verdicts)
from harness.report.terminal import ERRORS_APART, unstable_advice, unstable_head, held, untimed_rows, warning_lines
from harness.report.unstable import NOTE, unstable_causes, unstable_measurements, unstable_why

COLUMNS = ("analysis", "op", "strategy", "role", "precision", "compiled", "computed_results", "device", "library",
           "per_matrix_s", COMPUTE_TOTAL_FIELD, "extrapolated", "speedup", "speedup_low", "speedup_high",
           "significance", "unresolved", "times_disagree", "unstable", "unstable_why", "rounds", "rounds_this_run", "rounds_pooled", "rounds_group",
           "resumed", "gflops_per_s", "peak_share", "above_roof",
           "values_error", "vectors_error", "max_error", "passed",
           "status", "timing", "reason")


# a row without a timing: what each flag column says of it, so that every flag column is booleans
# alone (walk 9: pandas read a column of True, False and blanks as objects); with no speedup there is
# none unresolved (walk 18: csv's 8 `unresolved` rows against the tables' 7, a not-timed row the 8th)
UNTIMED_FLAGS = {"compiled": False, "extrapolated": False, "unresolved": False, "times_disagree": False, "unstable": False,
                 "resumed": False, "above_roof": False}


def result_rows(record: RunRecord) -> list[dict[str, Any]]:
    """Every compared strategy of every analysis, timed or not, with its verification: the table's
    rows as data (`status`: the tables' check_status; `timing`: timed, reused (earlier runs' rounds
    alone) or not timed, none without an answer; `reason`: why not timed, or not this run, or why no
    answer; a point not timed still has its check: `passed` and its errors)."""
    rows = []
    for a in record.analyses:
        checks = {v.strategy: v for v in a.verification}
        for t in a.timings:
            device, library = device_library(t.device)
            v = checks.get(t.label)
            ci = t.speedup_ci
            rows.append({
                "analysis": a.name, "op": a.op, "strategy": t.label, "role": t.role,
                "precision": t.precision or record.plan.dtype, "compiled": t.compiled,
                "computed_results": a.computed(t), "device": device, "library": library,
                "per_matrix_s": t.seconds_per_matrix, COMPUTE_TOTAL_FIELD: t.estimate_total_s,
                "extrapolated": t.extrapolated, "speedup": t.speedup,
                "speedup_low": None if ci is None else ci[0], "speedup_high": None if ci is None else ci[1],
                "significance": significance(t), "unresolved": t.unresolved, "times_disagree": times_disagree(a, t), "unstable": bool(t.unstable),
                "unstable_why": row_unstable_why([(g.group, g.measurement.reasons) for g in t.groups]) or None,
                "rounds": t.rounds, "rounds_this_run": t.rounds - t.rounds_pooled, "rounds_pooled": t.rounds_pooled,
                "rounds_group": None if (g := fewest_group(t)) is None else g.group,
                "resumed": t.resumed,  # the tables' GFLOP/s and % of peak (walk 20: the 160-column table's alone)
                "gflops_per_s": t.gflops_per_s, "peak_share": peak_share(record, t), "above_roof": above_roof(record, t),
                **(dict.fromkeys(("values_error", "vectors_error", "max_error", "passed")) if v is None else _errors(v)),
                "status": check_status(a, t.label), "timing": "timed" if (held_why := held(a, t)) is None else "reused",
                "reason": held_why,
            })
        for label, role, status, why in untimed_rows(record, a):
            v = None if status in NO_ANSWER else check_of(a, label)  # the limit cut its rounds, not the check of its answer
            rows.append({**dict.fromkeys(COLUMNS), **UNTIMED_FLAGS, "analysis": a.name, "op": a.op, "strategy": label,
                         "role": role, "computed_results": False, **_planned(record, a, label),
                         "status": check_status(a, label, status), "timing": None if status in NO_ANSWER else status, "reason": why,
                         "passed": False if status == "error" else None, **({} if v is None else _errors(v))})
    return rows


def row_unstable_why(groups: Sequence[tuple[str, Sequence[str]]]) -> str:
    """A row's own unstable_why over its shape groups (group, reasons), each cause once: as it is
    where every group gives it alike; else with the groups that give it (`IQR 40% of median
    (768x3072r16)`), its worst figure `up to` where they differ, with the groups at it. Never a
    range that spans two groups and reads as one's (walk 7), nor one group named of two alike
    (walk 17: this run's 77% and earlier runs' 72-77% read as two figures)."""
    texts: dict[str, dict[str, str]] = {}  # cause -> group -> its figures there (this run's and earlier runs' as one)
    for cause, said in grouped_by(((g, r.removeprefix(EARLIER)) for g, each in groups for r in each),
                                  lambda gr: cause_key(gr[1])).items():
        texts[cause] = {g: reason_range([r for h, r in said if h == g]) for g in dict.fromkeys(g for g, _r in said)}
    names = list(dict.fromkeys(g for g, _each in groups))
    final = {cause: _tagged(by_group, names) for cause, by_group in texts.items()}

    def said_as(r: str) -> str:
        own = r.removeprefix(EARLIER)
        return r[: len(r) - len(own)] + final[cause_key(own)]

    return unstable_why(([said_as(r) for r in each] for _g, each in groups), counted=False).said()


def _tagged(by_group: dict[str, str], groups: list[str]) -> str:
    """One cause of a row as its field says it, from its figures in each group that gives it."""
    distinct = set(by_group.values())
    if len(distinct) == 1:
        (text,) = distinct
        return text if len(by_group) == len(groups) else _with_group(text, ", ".join(by_group))
    high = lambda r: float(m.group(2) or m.group(1)) if (m := re.search(FIGURE, r)) else 0.0  # noqa: E731
    worst = max(distinct, key=high)
    at = [g for g, r in by_group.items() if r == worst]
    also = [g for g in by_group if g not in at] if len(by_group) < len(groups) else []
    # a range's high end alone: `up to 72-76%` read oddly (walk 11)
    text = re.sub(FIGURE, lambda m: f"up to {m.group(2) or m.group(1)}", worst, count=1)
    return _with_group(text, ", ".join(at) + (f"; also {', '.join(also)}" if also else ""))


def _with_group(reason: str, group: str) -> str:
    """`IQR up to 54% of median (768x3072r16)`; a reason's own note shares its parenthetical
    (`CPU steal up to 6% (768x3072r16; the hypervisor ran other guests)`), never a second one."""
    what, note = found.groups() if (found := NOTE.fullmatch(reason)) else (reason, "")
    return f"{what} ({group}" + (f"; {note})" if note else ")")


def _planned(record: RunRecord, a: AnalysisRecord, label: str) -> dict[str, Any]:
    """What the plan knew of a point that has no timing (its precision, device and library, and
    whether it computed the results): the CSV of a point the limit cut left them empty."""
    if (point := planned_point(record, a, label)) is None:
        return {}
    fields: dict[str, Any] = {"precision": point.precision or record.plan.dtype, "compiled": point.compiled,
                              "computed_results": a.computed(point)}
    if point.device:  # a candidate that cannot run here may have none
        fields["device"], fields["library"] = device_library(point.device)
    return fields


def _errors(v: Verification) -> dict[str, Any]:
    return {"values_error": v.values_error, "vectors_error": v.vectors_error, "max_error": v.worst, "passed": v.passed}


MACHINE_FIELDS = ("hostname", "platform", "cpu", "cores", "memory_total", "memory_available", "python", "harness",
                  "numpy", "scipy", "torch", "torch_threads", "numpy_blas", "cuda_device", "cuda_memory_total")


def _speedup_fields(t: StrategyTiming) -> dict[str, Any]:
    """A speedup as a script reads it: the estimate, its interval's ends and level, whether it
    resolved, whether it is significant and which way it points: none where the interval holds 1
    (walk 17: `faster` beside a verdict of not significantly faster or slower)."""
    ci = t.speedup_ci
    said = significance(t)
    return {"strategy": t.label, "speedup": t.speedup, "low": None if ci is None else ci[0],
            "high": None if ci is None else ci[1], "level": None if ci is None else LEVEL, "resolved": not t.unresolved,
            "significant": said in ("faster", "slower"), "significance": said,
            "direction": None if t.speedup is None or said == "not significant" else "faster" if t.speedup >= 1 else "slower"}


def verdict_fields(record: RunRecord) -> list[dict[str, Any]]:
    """Each verdict line (`text`, as the terminal prints it) with its figures beside it: `kind`
    verdict (the head strategy's speedup over `baseline`, and how many speedups resolved), no
    verdict (why in the text alone), or choice check (`strategy` ran, `measured_faster` did)."""
    out = []
    for kind, a, line in verdicts(record):
        fields: dict[str, Any] = {"text": line, "kind": kind, "analysis": a.name}
        if kind == "verdict" and (h := headline(a)) is not None:
            fields |= {**_speedup_fields(h.head), "baseline": h.baseline.label, "medians_speedup": medians_ratio(h.head, h.baseline),
                       "speedups_resolved": h.resolved, "speedups_compared": h.compared}
        elif kind == "choice check" and (found := overtaken(a, APPROXIMATE)) is not None:
            fields |= {"strategy": found[0].label, "measured_faster": found[1].label}
        out.append(fields)
    return out


def warning_texts(record: RunRecord, unstable_line: bool = True) -> list[str]:
    """The terminal's lines below its table as plain text, as a report says them (why each speedup is
    unresolved listed, not --verbose's): JSON's `warnings` (the JSON had none while md had three:
    walk-through 7), md's bullets (without `unstable_line`: markdown_warnings)."""
    return [Text.from_markup(line).plain for line in warning_lines(record, unstable_line=unstable_line, report=True)]


def markdown_warnings(record: RunRecord) -> list[str]:
    """md's bullets: the terminal's lines, its unstable measurements' a list of causes as the HTML
    report's headline gives them (one 600-character sentence read badly in a pull request: walk 12)."""
    bullets = [f"- {line}" for line in warning_texts(record, unstable_line=False)]
    if unstable := unstable_measurements(record):
        why = unstable_causes(unstable)  # whose rounds, in the lead where every cause's are the same
        head = why.lead(unstable_head(record, unstable))
        bullets.append(f"- {head}: {unstable_advice(record, unstable)}; by cause:")
        bullets += [f"  - {n} × {cause}" for n, cause in why.causes]
    return bullets


# the md table's columns; the notes under it are those of these columns (table_notes)
# every column the terminal's widest table draws (walk 24: the md left out GFLOP/s and % of peak unsaid, and
# with them the `>100%` note)
MD_HEADER = ("analysis", "strategy", "role", "device (library)", "dtype", "per matrix", COMPUTE_TOTAL, SPEEDUP_COLUMN, "rounds",
             "GFLOP/s", PEAK_COLUMN, ERRORS_APART, "status")
Cells = tuple[str, str, str, str]  # a timed row's speedup, rounds, GFLOP/s and % of peak, as the terminal's


def table_notes(record: RunRecord) -> list[str]:
    """The notes the md export prints under its table and the JSON gives as `notes` (`too wide (…)`,
    `speedups pair …`): the terminal's and the HTML report's, of the columns the exports have (the
    JSON had none of them, while every other output carried them: walk 14)."""
    return [line for column, line in table_footnotes(record, record.analyses) if column in MD_HEADER]


def results_json(record: RunRecord) -> str:
    machine = record.machine.model_dump(include=set(MACHINE_FIELDS))
    return json.dumps({"experiment": record.experiment, "machine": record.machine.describe(),
                       "machine_fields": {k: machine[k] for k in MACHINE_FIELDS}, "started": record.started,
                       "complete": record.complete, "verdicts": verdict_fields(record), "notes": table_notes(record),
                       "warnings": warning_texts(record), "results": result_rows(record)}, indent=2) + "\n"


def results_csv(record: RunRecord) -> str:
    """The rows as CSV, one column per field, empty where a row has no value."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in result_rows(record))
    return out.getvalue()


def _error_text(row: dict[str, Any]) -> str:
    if row["values_error"] is None:
        return "-"
    return f"{row['values_error']:.1e}" + (f"/{row['vectors_error']:.1e}" if row["vectors_error"] is not None else "")


def _markdown_row(row: dict[str, Any], speedup: str, rounds: str, rate: str, peak: str) -> str:
    """As the terminal's: a point not timed says so under per matrix and shows its check's status
    (and, as there, no computed mark: the mark is on timed rows)."""
    timed = row["per_matrix_s"] is not None
    status = row["status"]
    cells = [row["analysis"], row["strategy"] + (f" {COMPUTED_MARK}" if timed and row["computed_results"] else ""), row["role"],
             f"{row['device']} ({row['library']})" if row["device"] else "-",  # a point not timed: the plan's
             dtype_text(row["precision"], row["compiled"]) if row["precision"] else "-",  # as the terminal's (walk 15: none)
             per_matrix_text(row["per_matrix_s"], bool(row["unstable"])) if timed
             else "-" if status in NO_ANSWER else "not timed",
             total_text(row[COMPUTE_TOTAL_FIELD], row["extrapolated"]) if timed else "-",
             speedup, rounds, rate, peak, _error_text(row), {"FAILED": "**FAILED**", "error": "**error**"}.get(status, status)]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _marks_legend(rows: list[dict[str, Any]], cells: dict[tuple[str, str], Cells]) -> str:
    """What each mark the table shows means, only those it shows (walk 22: the whole legend under a
    run's table whatever it held), each as its row puts it (_markdown_row)."""
    timed = [r for r in rows if r["per_matrix_s"] is not None]
    marks = [(COMPUTED_MARK, "computed the recorded results", any(r["computed_results"] for r in timed)),
             (UNSTABLE_MARK, "measured under unreliable conditions", any(r["unstable"] for r in timed)),
             (UNRESOLVED_MARK, "unresolved: the interval is wider than the precision asked for (or one round gave none)",
              any(UNRESOLVED_MARK in speedup for speedup, *_ in cells.values())),
             ("~", "extrapolated from a sample", any(r["extrapolated"] for r in timed))]
    said = "; ".join(f"`{mark}` {meaning}" for mark, meaning, shown in marks if shown)
    return f"{said}. " if said else ""


def results_markdown(record: RunRecord) -> str:
    """A GitHub-flavoured table with a one-line heading, the verdicts, every row (a row without a
    timing says why below the table) and the notes its marks need; a run stopped before any analysis
    finished, one line saying so and how to resume it (walk 22: a header-only table and the whole legend)."""
    if not record.complete and not record.analyses:
        return printable(f"**{record.experiment}**: {record.plan.n_matrices} matrices on {record.machine.describe()}: "
                         f"interrupted after 0 of {plural(len(record.plan.steps), 'analysis', 'analyses')}"
                         f", so no results yet; "
                         f"`harness run {record.spec_path} -o FOLDER` into its folder, the same command again, resumes it") + "\n"
    lines: list[str | None] = [f"**{record.experiment}**: {record.plan.n_matrices} matrices on {record.machine.describe()}"
             + ("" if record.complete else " (interrupted: the analyses it finished)"), "",
             *(f"- {line}" for line in verdict_lines(record)), "",
             "| " + " | ".join(MD_HEADER) + " |", "|" + "---|" * len(MD_HEADER)]
    cells = {(a.name, t.label): (speedup_cell(a, t), rounds_text(t), format_rate(t.gflops_per_s), peak_text(record, t))
             for a in record.analyses for t in a.timings}
    rows = result_rows(record)
    for row in rows:
        lines.append(_markdown_row(row, *cells.get((row["analysis"], row["strategy"]), ("-",) * 4)))
    # right under the table, as the terminal's: the notes its cells need (after the legend they read as
    # its afterthought: walk 13), each a paragraph of its own (a line under the legend ran into it once
    # rendered: walk 10); then the terminal's lines, the untimed rows' next step too (md said the reason alone)
    lines += [part for line in table_notes(record) for part in ("", line)]
    warned = markdown_warnings(record)
    lines += ["", *warned, "" if warned else None,
              f"{_marks_legend(rows, cells)}{DTYPE_NOTE} {COMPUTE_TOTAL.capitalize()}: per-matrix medians scaled to every "
              "matrix, compute only (loading excluded); speedup against the baseline's, with its 95% interval; an "
              "interval that holds 1 is not significant. Error: max |s - s_ref| / s_1 against float64 references, "
              "and the singular triplets' worst residual where the op has vectors. Rounds: this run's+pooled, as in the terminal."]
    return "\n".join(printable(line) for line in lines if line is not None) + "\n"  # printed to a terminal
