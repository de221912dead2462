"""Tidy CSV exports of a RunRecord: timings.csv (one row per timed sample) and verification.csv.

record.json nests every sample four levels deep (analyses, timings, groups, measurement); these
flat tables are what pandas or a spreadsheet reads without knowing the schema. They are pure
functions of the record, so a record from an older run exports too:
``python -m harness.record.exports RUN_FOLDER``.
"""

from __future__ import annotations

import csv
import io
import sys
import types
import typing
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any


from harness.base.atomic import write_atomic
from harness.bench.conditions import Conditions
from harness.bench.noise import reasons_text
from harness.bench.series import run_of
from harness.bench.statistics import quartiles
from harness.record.run_record import AnalysisRecord, GroupTiming, RunRecord, StrategyTiming, load_record

TIMINGS = "timings.csv"
VERIFICATION = "verification.csv"

_SCALARS = {int, float, str, bool, type(None)}


def _is_scalar(annotation: Any) -> bool:
    """int, float, str, bool or an Optional/union of them: what fits in one CSV cell."""
    if annotation in _SCALARS:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return all(_is_scalar(a) for a in typing.get_args(annotation))
    return False


# Conditions' scalar fields, read from the model so that fields added later get columns too
CONDITION_FIELDS: tuple[str, ...] = tuple(
    name for name, field in Conditions.model_fields.items() if _is_scalar(field.annotation)
)

TIMING_COLUMNS: tuple[str, ...] = (
    "experiment", "started", "host", "analysis", "op", "k", "strategy", "role", "chosen", "device",
    "precision", "compiled", "compile_s", "group", "sample", "round", "pooled", "seconds", "matrices", "total", "seconds_per_matrix",
    "median_s", "q1_s", "q3_s", "iqr_s", "warmup", "threads", "bench_threads",
    "flops", "bytes", "gflops_per_s", "gbytes_per_s",
    "speedup", "speedup_low", "speedup_high", "unresolved", "unresolved_reason", "speedup_runs", "speedup_rounds",
    "speedup_busy_rounds", "speedup_spread", "env",
    "rounds", "rounds_this_run", "rounds_pooled", "pooled_since", "run", "timed", "busy",
    "cached", "cut", "unstable", "unstable_reasons",
    *(f"cond_{name}" for name in CONDITION_FIELDS),
)

VERIFICATION_COLUMNS: tuple[str, ...] = (
    "experiment", "started", "host", "analysis", "op", "k", "strategy", "chosen",
    "n_checked", "tolerance", "values_error", "vectors_error", "passed",
)


def format_threads(threads: dict[str, int]) -> str:
    """The measurement's thread pools in one cell, "api:prefix=N;...", in a stable order."""
    return ";".join(f"{pool}={n}" for pool, n in sorted(threads.items()))


def _per_s(amount: float | None, seconds: float) -> float | None:
    return None if amount is None or seconds <= 0 else amount / seconds / 1e9


def _group_rows(
    record: RunRecord, analysis: AnalysisRecord, timing: StrategyTiming, group: GroupTiming
) -> Iterator[dict[str, Any]]:
    """One row per timed sample of a shape group: the group's columns, then the sample's."""
    common = _group_columns(record, analysis, timing, group)
    busy = set(group.busy)
    for i, seconds in enumerate(group.measurement.samples_s):
        per_matrix = seconds / group.sampled if group.sampled else None
        yield {
            **common,
            "sample": i,
            "round": group.rounds[i] if i < len(group.rounds) else None,
            "run": run_of(group.rounds[i]) if i < len(group.rounds) else None,
            "timed": group.timed[i] or None if i < len(group.timed) else None,  # `started` is this record's run
            "busy": i < len(group.rounds) and group.rounds[i] in busy,
            "pooled": i < group.pooled,
            "seconds": seconds,
            "seconds_per_matrix": per_matrix,
            "gflops_per_s": _per_s(group.flops, per_matrix or 0.0),
            "gbytes_per_s": _per_s(group.bytes, per_matrix or 0.0),
        }


def _group_columns(
    record: RunRecord, analysis: AnalysisRecord, timing: StrategyTiming, group: GroupTiming
) -> dict[str, Any]:
    """What every sample row of a shape group repeats: its analysis, strategy, measurement, conditions."""
    m = group.measurement
    q1, _, q3 = quartiles(m.samples_s) if m.samples_s else (None, None, None)
    conditions = m.conditions.model_dump() if m.conditions is not None else {}
    return {
        **_analysis_columns(record, analysis),
        "strategy": timing.strategy,
        "role": timing.role,
        "chosen": analysis.computed(timing),
        "device": timing.device,
        # the numeric precision of its arithmetic (not [benchmark] precision, the intervals' target)
        "precision": timing.precision or record.plan.dtype,
        "compiled": timing.compiled,
        "compile_s": timing.compile_s,
        "group": group.group,
        "matrices": group.sampled,
        "total": group.total,
        "median_s": m.median_s,
        "q1_s": q1,
        "q3_s": q3,
        "iqr_s": m.iqr_s,
        "warmup": m.warmup,
        "threads": format_threads(m.threads),
        "bench_threads": record.bench.threads if record.bench is not None else None,
        "flops": group.flops,
        "bytes": group.bytes,
        "speedup": timing.speedup,
        "speedup_low": timing.speedup_ci[0] if timing.speedup_ci else None,
        "speedup_high": timing.speedup_ci[1] if timing.speedup_ci else None,
        "unresolved": timing.unresolved,
        "unresolved_reason": timing.unresolved_reason,
        # what stands behind the speedup's interval: the runs (its replicates) and their rounds
        "speedup_runs": timing.runs,
        "speedup_rounds": timing.rounds,
        "speedup_busy_rounds": timing.busy_rounds,
        "speedup_spread": timing.spread,
        "env": " ".join(f"{k}={v}" for k, v in sorted(timing.env.items())),
        "rounds": len(group.rounds),
        "rounds_this_run": len(group.rounds) - group.pooled,
        "rounds_pooled": group.pooled,
        "pooled_since": timing.pooled_since,
        "cached": timing.cached,
        "cut": timing.cut,
        "unstable": m.unstable,
        "unstable_reasons": reasons_text(m.reasons),  # the prefix once (walk 22 read it twice)
        **{f"cond_{name}": conditions.get(name) for name in CONDITION_FIELDS},
    }


def timing_rows(record: RunRecord) -> Iterator[dict[str, Any]]:
    """One row per analysis x strategy x shape group x round (schema 4; earlier records: timed
    call), keyed by TIMING_COLUMNS; `pooled` rows were measured by an earlier run.

    Rates (gflops_per_s, gbytes_per_s) are of that one sample; the group's median, quartiles,
    threads and conditions repeat on each of its rows.
    """
    for analysis in record.analyses:
        for timing in analysis.timings:
            for group in timing.groups:
                yield from _group_rows(record, analysis, timing, group)


def _analysis_columns(record: RunRecord, analysis: AnalysisRecord) -> dict[str, Any]:
    """What identifies a row's run and analysis, so rows of several runs can be stacked."""
    return {"experiment": record.experiment, "started": record.started, "host": record.machine.hostname,
            "analysis": analysis.name, "op": analysis.op, "k": analysis.k}


def verification_rows(record: RunRecord) -> Iterator[dict[str, Any]]:
    """One row per analysis x checked strategy (a pca step's axes check is strategy "axes")."""
    for analysis in record.analyses:
        for v in analysis.verification:
            yield {
                **_analysis_columns(record, analysis),
                "strategy": v.strategy,
                "chosen": v.strategy == analysis.strategy,
                "n_checked": v.n_checked,
                "tolerance": v.tolerance,
                "values_error": v.values_error,
                "vectors_error": v.vectors_error,
                "passed": v.passed,
            }


def csv_text(columns: Sequence[str], rows: Iterable[dict[str, Any]]) -> str:
    """Header and rows; None as an empty cell, floats as repr (they read back bit for bit)."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()


def write_exports(record: RunRecord, folder: Path) -> list[Path]:
    """timings.csv and verification.csv of `record` in `folder`, each written atomically; an
    incomplete record exports the analyses it has."""
    written = []
    for name, columns, rows in (
        (TIMINGS, TIMING_COLUMNS, timing_rows(record)),
        (VERIFICATION, VERIFICATION_COLUMNS, verification_rows(record)),
    ):
        data = csv_text(columns, rows).encode()
        path = folder / name
        write_atomic(path, lambda fh: fh.write(data))  # noqa: B023 - called before the loop goes on
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Export the record of each run folder given (for runs older than these files)."""
    folders = sys.argv[1:] if argv is None else list(argv)
    if not folders:
        print("usage: python -m harness.record.exports RUN_FOLDER...", file=sys.stderr)
        return 2
    for folder in map(Path, folders):
        record = load_record(folder)
        for path in write_exports(record, folder if folder.is_dir() else folder.parent):
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
