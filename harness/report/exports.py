"""The results table as text another tool takes: Markdown for a pull request or a paper, CSV for a
spreadsheet, JSON for scripts. One row per analysis and compared strategy, timed or not: the
terminal's figures and marks, and for a row without a timing its status and why.

The speedup's 95% interval (`speedup_low`, `speedup_high`) and `unresolved` (the interval is
wider than the precision asked for); records from before intervals read with neither."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from harness.base.units import format_seconds
from harness.record.run_record import RunRecord
from harness.record.verification import Verification
from harness.record.verdict import significance
from harness.report.labels import (COMPUTED_MARK, UNRESOLVED_MARK, UNSTABLE_MARK, device_library, printable,
                                   speedup_text, verdict_lines)
from harness.report.terminal import untimed_rows, verified

COLUMNS = ("analysis", "op", "strategy", "role", "precision", "compiled", "computed_results", "device", "library",
           "per_matrix_s", "workload_compute_s", "extrapolated", "speedup", "speedup_low", "speedup_high",
           "significance", "unresolved", "unstable", "values_error", "vectors_error", "max_error", "passed",
           "status", "reason")


def result_rows(record: RunRecord) -> list[dict[str, Any]]:
    """Every compared strategy of every analysis, timed or not, with its verification: the table's
    rows as data (`status`: passed, FAILED, not timed, not run or error; `reason`: why untimed; a
    point not timed still has its check: `passed` and its errors)."""
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
                "per_matrix_s": t.seconds_per_matrix, "workload_compute_s": t.estimate_total_s,
                "extrapolated": t.extrapolated, "speedup": t.speedup,
                "speedup_low": None if ci is None else ci[0], "speedup_high": None if ci is None else ci[1],
                "significance": significance(t), "unresolved": t.unresolved, "unstable": bool(t.unstable),
                **(dict.fromkeys(("values_error", "vectors_error", "max_error", "passed")) if v is None else _errors(v)),
                "status": "passed" if v is None or v.passed else "FAILED", "reason": None,
            })
        for label, role, status, why in untimed_rows(record, a):
            v = verified(a, label, status)  # the limit cut its rounds, not the check of its answer
            rows.append({**dict.fromkeys(COLUMNS), "analysis": a.name, "op": a.op, "strategy": label, "role": role,
                         "status": status, "reason": why, "passed": False if status == "error" else None,
                         **({} if v is None else _errors(v))})
    return rows


def _errors(v: Verification) -> dict[str, Any]:
    return {"values_error": v.values_error, "vectors_error": v.vectors_error, "max_error": v.worst, "passed": v.passed}


def results_json(record: RunRecord) -> str:
    return json.dumps({"experiment": record.experiment, "machine": record.machine.describe(),
                       "started": record.started, "complete": record.complete, "verdicts": verdict_lines(record),
                       "results": result_rows(record)}, indent=2) + "\n"


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
    return f"{row['values_error']:.1e}" + (f" / {row['vectors_error']:.1e}" if row["vectors_error"] is not None else "")


def _markdown_row(row: dict[str, Any], speedup: str) -> str:
    """As the terminal's: a point not timed says so under per matrix and shows its check's status."""
    timed = row["per_matrix_s"] is not None
    checked = row["status"] == "not timed" and row["passed"] is not None
    status = ("passed" if row["passed"] else "FAILED") if checked else row["status"]
    cells = [row["analysis"], row["strategy"] + (f" {COMPUTED_MARK}" if row["computed_results"] else ""), row["role"],
             f"{row['device']} ({row['library']})" if timed else "-",
             format_seconds(row["per_matrix_s"]) + (f" {UNSTABLE_MARK}" if row["unstable"] else "") if timed
             else "not timed" if checked else "-",
             ("~" if row["extrapolated"] else "") + format_seconds(row["workload_compute_s"]) if timed else "-",
             speedup, _error_text(row), {"FAILED": "**FAILED**", "error": "**error**"}.get(status, status)]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def results_markdown(record: RunRecord) -> str:
    """A GitHub-flavoured table with a one-line heading, the verdicts, every row (a row without a
    timing says why below the table) and the notes its marks need."""
    header = ["analysis", "strategy", "role", "device (library)", "per matrix", "workload (compute only)",
              "speedup (95% CI)", "error (values / vectors)", "status"]
    lines: list[str | None] = [f"**{record.experiment}**: {record.plan.n_matrices} matrices on {record.machine.describe()}"
             + ("" if record.complete else " (interrupted: the analyses it finished)"), "",
             *(f"- {line}" for line in verdict_lines(record)), "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    speedups = {(a.name, t.label): speedup_text(t) for a in record.analyses for t in a.timings}
    rows = result_rows(record)
    for row in rows:
        lines.append(_markdown_row(row, speedups.get((row["analysis"], row["strategy"]), "-")))
    why: dict[tuple[str, str], list[str]] = {}  # each reason once, with every row it holds for
    for row in rows:
        if row["reason"] is not None:
            why.setdefault((row["status"], row["reason"]), []).append(f"{row['analysis']} {row['strategy']}")
    untimed = [f"- {status} ({reason}): {', '.join(named)}" for (status, reason), named in why.items()]
    lines += ["", *untimed, "" if untimed else None,
              f"`{COMPUTED_MARK}` computed the recorded results; `{UNSTABLE_MARK}` measured under unreliable "
              f"conditions; `{UNRESOLVED_MARK}` unresolved: the interval is wider than the precision asked for (or "
              "one round gave none); `~` extrapolated from a sample. Workload: per-matrix medians scaled to every "
              "matrix, compute only (loading excluded); speedup against the baseline's, with its 95% interval; an "
              "interval that holds 1 is not significant. Error: max |s - s_ref| / s_1 against float64 references, "
              "and the singular triplets' worst residual where the op has vectors."]
    return "\n".join(printable(line) for line in lines if line is not None) + "\n"  # printed to a terminal
