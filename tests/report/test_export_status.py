"""Walk 17 (exports): one meaning of a row's status in every form, whether it was timed said apart;
a row's unstable_why tags a shape group only where one is meant; a verdict's JSON direction only
where the interval says one."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from pathlib import Path

from harness.record.run_record import RunRecord
from harness.report.exports import results_csv, results_json, results_markdown, row_unstable_why
from harness.report.html import render_report
from harness.report.terminal import run_table

from .test_run_screen import real
from harness.report.labels import DTYPE_NOTE

from .test_table_agreement import cells, html_row

README = Path(__file__).resolve().parents[2] / "README.md"
OUTPUTS = README.parent / "docs" / "outputs.md"


def _dual_gram(record: RunRecord) -> tuple[dict[str, str], dict[str, object]]:
    rows = list(csv.DictReader(io.StringIO(results_csv(record))))
    data = json.loads(results_json(record))["results"]
    pick = lambda rs: next(r for r in rs if (r["analysis"], r["strategy"]) == ("geometry", "dual_gram"))  # noqa: E731
    return pick(rows), pick(data)


def test_a_not_timed_strategys_status_is_its_checks_in_every_form(tmp_path: Path) -> None:
    """`dual_gram - not timed - - 5.5e-08 passed` in the terminal and md, while csv and JSON said
    `status: not timed`, and the README called `not timed` a status."""
    record = real("first_smoke", tmp_path)
    row = next(r for r in cells(record) if r.get("analysis") == "geometry" and r["strategy"] == "dual_gram")
    assert (row["per matrix"], row["status"]) == ("not timed", "passed")
    md = next(line for line in results_markdown(record).splitlines() if line.startswith("| geometry | dual_gram |"))
    assert "| not timed |" in md and md.endswith("| passed |"), md
    csv_row, json_row = _dual_gram(record)
    assert (csv_row["status"], csv_row["timing"], csv_row["reason"]) == ("passed", "not timed", "out of time on a busy machine")
    assert (json_row["status"], json_row["timing"], json_row["passed"]) == ("passed", "not timed", True)
    page = re.sub(r"<[^>]+>", "", html.unescape(render_report(record, tmp_path / "first_smoke")))
    assert "dual_gram: not timed (out of time on a busy machine); its answer passed its check" in page
    caption = str(run_table(record, explain=True).explain(()))  # type: ignore[misc]
    assert "Status: passed or FAILED its tolerance, timed or not" in caption, caption
    readme = " ".join(README.read_text().split())
    assert "its status: its check's `passed` or `FAILED`, timed or not" in readme


def test_a_row_earlier_runs_rounds_alone_timed_says_reused_and_why(tmp_path: Path) -> None:
    record = real("first_smoke", tmp_path)
    a = next(a for a in record.analyses if a.name == "geometry")
    t = next(t for t in a.timings if t.role != "baseline")
    for g in t.groups:
        g.pooled = len(g.rounds)
    rows = json.loads(results_json(record))["results"]
    row = next(r for r in rows if (r["analysis"], r["strategy"]) == ("geometry", t.label))
    assert (row["status"], row["timing"]) == ("passed", "reused") and row["reason"]
    assert all(r["timing"] == "timed" and r["reason"] is None for r in rows if r["strategy"] != t.label and r["per_matrix_s"])


def test_a_machine_cause_every_group_shares_gets_no_tag_and_a_groups_own_cause_names_it() -> None:
    """`other processes took up to 77% of the 2 CPUs (3072x768r16)` of two groups both at 77%
    (this run's and earlier runs' figures told apart as two), while `IQR 40% of median`, one group's,
    had no tag."""
    machine = ["other processes took 77% of the 2 CPUs", "load 6.2 on 2 cores",
               "earlier runs' rounds: other processes took 72-77% of the 2 CPUs", "earlier runs' rounds: load 6.2 on 2 cores"]
    why = row_unstable_why([("3072x768r16", machine), ("768x3072r16", ["IQR 40% of median", *machine])])
    assert why == ("from this run's and earlier runs' pooled rounds: other processes took 72-77% of the 2 CPUs; "
                   "load 6.2 on 2 cores; IQR 40% of median (768x3072r16)"), why
    differ = row_unstable_why([("a1x2r3", ["load 6.2 on 2 cores", "IQR 35% of median"]), ("b4x5r6", ["load 5.1 on 2 cores"]),
                               ("c7x8r9", ["load 6.2 on 2 cores", "IQR 30% of median"])])
    assert differ == "load up to 6.2 on 2 cores (a1x2r3, c7x8r9); IQR up to 35% of median (a1x2r3; also c7x8r9)", differ


def test_a_not_significant_verdicts_json_has_no_direction(tmp_path: Path) -> None:
    record = real("first_smoke", tmp_path)
    verdicts = [v for v in json.loads(results_json(record))["verdicts"] if v["kind"] == "verdict"]
    said = {v["significance"] for v in verdicts}
    assert "not significant" in said and said - {"not significant"}
    for v in verdicts:
        assert v["direction"] == (None if v["significance"] == "not significant" else v["significance"]), v


def test_a_dtype_reads_the_same_in_every_human_form_and_in_full_in_csv_and_json(tmp_path: Path) -> None:
    """Walk 18: dual_gram (not timed) read `-` under dtype in the terminal and `f32` in md, and the
    HTML's tables and How to read said `float32`, `(float64, float32, bfloat16, ...)` where --explain
    said `(f32, bf16, +c compiled)`; csv/json keep `float32`, which docs/outputs.md says."""
    record = real("first_smoke", tmp_path)
    drawn = [r for r in cells(record) if r.get("analysis") == "geometry"]
    assert {r["dtype"] for r in drawn} == {"f32"} and "dual_gram" in {r["strategy"] for r in drawn}
    terminal = next(r for r in drawn if r["strategy"] == "dual_gram")
    md = next(line for line in results_markdown(record).splitlines() if line.startswith("| geometry | dual_gram |"))
    assert md.split(" | ")[3:5] == [terminal["device"], "f32"], md
    page = render_report(record, tmp_path / "first_smoke")
    assert "float32" not in " ".join(re.findall(r"<table.*?</table>", page, re.S))  # the timing and frontier tables
    assert re.search(r"<td>f32</td>", html_row(page, "factored_gram"))
    reading = " ".join(re.sub(r"<[^>]+>", "", html.unescape(page)).split())
    assert DTYPE_NOTE in reading and "float64, float32, bfloat16" not in reading
    csv_row, json_row = _dual_gram(record)
    assert csv_row["precision"] == json_row["precision"] == "float32"
    assert "`precision` with `compiled` (the dtype's machine-readable form: `float32`" in " ".join(OUTPUTS.read_text().split())


def test_only_a_speedup_is_unresolved_in_csv_and_json_as_the_tables_count_them(tmp_path: Path) -> None:
    """Walk 18: csv and JSON had dual_gram (not timed, no speedup) `unresolved: true`, 8 rows
    against the terminal's, md's and JSON warnings' `7 speedups unresolved (?)`."""
    record = real("first_smoke", tmp_path)
    csv_row, json_row = _dual_gram(record)
    assert (csv_row["speedup"], csv_row["unresolved"]) == ("", "False")
    assert (json_row["speedup"], json_row["unresolved"]) == (None, False)
    counted = sum(t.unresolved for a in record.analyses for t in a.timings)
    rows = list(csv.DictReader(io.StringIO(results_csv(record))))
    assert counted and sum(r["unresolved"] == "True" for r in rows) == counted
    assert sum(r["unresolved"] for r in json.loads(results_json(record))["results"]) == counted
    said = [w for w in json.loads(results_json(record))["warnings"] if "unresolved (?)" in w]
    assert said and said[0].startswith(f"{counted} speedups unresolved (?)")
