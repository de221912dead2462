"""The results table as text another tool takes: Markdown for a pull request or a paper, JSON for
scripts. One row per analysis and timed strategy, the same figures as the terminal table.

The speedup's 95% interval (`speedup_ci`, [low, high]) and `unresolved` (the interval is wider
than the precision asked for); records from before intervals read with neither."""

from __future__ import annotations

import json
from typing import Any

from harness.base.units import format_interval, format_seconds, format_speedup
from harness.record.run_record import AnalysisRecord, RunRecord, StrategyTiming
from harness.report.labels import device_library


def speedup_text(t: StrategyTiming) -> str:
    """`1,130x (1,050-1,210)`, `0.98x (0.90-1.07, unresolved)`, or `15.3x` without an interval."""
    text = format_speedup(t.speedup)
    if t.speedup_ci is None:
        return text
    return f"{text} ({format_interval(*t.speedup_ci)}{', unresolved' if t.unresolved else ''})"


def result_rows(record: RunRecord) -> list[dict[str, Any]]:
    """Every timed strategy of every analysis, with its verification: the table's rows as data."""
    rows = []
    for a in record.analyses:
        checks = {v.strategy: v for v in a.verification}
        for t in a.timings:
            device, library = device_library(t.device)
            v = checks.get(t.label)
            ci = t.speedup_ci
            rows.append({
                "analysis": a.name, "op": a.op, "strategy": t.strategy, "role": t.role,
                "precision": t.precision or record.plan.dtype, "compiled": t.compiled,
                "computed_results": a.computed(t), "device": device, "library": library,
                "per_matrix_s": t.seconds_per_matrix, "workload_compute_s": t.estimate_total_s,
                "extrapolated": t.extrapolated, "speedup": t.speedup,
                "speedup_low": None if ci is None else ci[0], "speedup_high": None if ci is None else ci[1],
                "unresolved": t.unresolved, "unstable": bool(t.unstable),
                "max_error": None if v is None else v.values_error, "passed": None if v is None else v.passed,
            })
    return rows


def results_json(record: RunRecord) -> str:
    return json.dumps({"experiment": record.experiment, "machine": record.machine.describe(),
                       "started": record.started, "complete": record.complete, "results": result_rows(record)},
                      indent=2) + "\n"


def _markdown_row(a: AnalysisRecord, row: dict[str, Any], t: StrategyTiming) -> str:
    cells = [a.name, row["strategy"] + (" *" if row["computed_results"] else ""), row["role"],
             f"{row['device']} ({row['library']})", format_seconds(row["per_matrix_s"]),
             ("~" if row["extrapolated"] else "") + format_seconds(row["workload_compute_s"]),
             speedup_text(t) + (" !" if row["unstable"] else ""),
             "-" if row["max_error"] is None else f"{row['max_error']:.1e}",
             {True: "yes", False: "**NO**", None: "-"}[row["passed"]]]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def results_markdown(record: RunRecord) -> str:
    """A GitHub-flavoured table with a one-line heading and the notes its marks need."""
    header = ["analysis", "strategy", "role", "device (library)", "per matrix", "workload (compute only)",
              "speedup", "max error", "passed"]
    lines = [f"**{record.experiment}**: {record.plan.n_matrices} matrices on {record.machine.describe()}"
             + ("" if record.complete else " (interrupted: the analyses it finished)"), "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    rows = iter(result_rows(record))
    for a in record.analyses:
        for t in a.timings:
            lines.append(_markdown_row(a, next(rows), t))
    lines += ["", "`*` computed the recorded results; `!` measured under unreliable conditions; `~` extrapolated "
              "from a sample. Workload: per-matrix medians scaled to every matrix, compute only (loading "
              "excluded); speedup against the baseline's, with its interval where the record has one."]
    return "\n".join(lines) + "\n"
