"""`harness report --format md|csv|json` keep every row and every mark (issue 41: md dropped rows
never timed without a note, printed a no-interval speedup as a clean "4.36x !", and left out the
vectors' error; there was no csv)."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.record.run_record import RECORD, load_record
from harness.report.exports import COLUMNS
from harness.report.labels import device_library

from .test_run_screen import RECORDS


@pytest.fixture
def busy(tmp_path: Path) -> Path:
    folder = tmp_path / "busy"
    folder.mkdir()
    shutil.copy(RECORDS / "busy_run.json", folder / RECORD)
    return folder


def exported(folder: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert cli.main(["report", str(folder), "--format", fmt]) == 0
    return capsys.readouterr().out


def test_markdown_keeps_every_row_its_marks_and_the_vectors_error(busy: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    record = load_record(busy)
    md = exported(busy, "md", capsys)
    rows = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| analysis")]
    compared = sum(len(a.timings) + len(a.skipped) for a in record.analyses)
    assert len(rows) == compared  # never-timed rows too
    assert sum(row.endswith("| not run |") for row in rows) == 7
    top3 = next(a for a in record.analyses if a.name == "top3")  # not timed, and verified all the same
    for v in top3.verification:
        assert any(row.startswith(f"| top3 | {v.strategy} |") and "| not timed |" in row
            and row.endswith(f"| {v.values_error:.1e}/{v.vectors_error:.1e} | passed |") for row in rows)
    assert "- not timed, out of time on a busy machine: top3: scipy_svds, top3: torch_lowrank" in md  # as the terminal
    assert "; the next run (without --fresh) times each of them once whatever its limit, and --budget 30s gives more" in md
    no_interval = [t for a in record.analyses for t in a.timings if t.speedup is not None and t.speedup_ci is None
                   and t.role != "baseline"]
    assert no_interval and all(row.count("(no interval) ?") == 1 for row in rows if "process_pool@float32" in row)
    assert "! |" in md and "`?` unresolved" in md and md.count("- spectrum: factored@float32 measured 3,057x faster") == 1  # verdicts


def _md_with_a_note(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, list[str]]:
    """A record's md with a speedup moved off its rows' ratio (a line under the table), and the
    lines under the table that its columns need."""
    from harness.record.run_record import save_record
    from harness.report.labels import table_footnotes

    record = load_record(RECORDS / f"{name}.json")
    t = next(t for a in record.analyses for t in a.timings if t.role != "baseline" and t.speedup and t.speedup_ci)
    t.speedup, t.speedup_ci = t.speedup * 1.3, (t.speedup_ci[0] * 1.3, t.speedup_ci[1] * 1.3)  # a line under it
    (folder := tmp_path / name).mkdir()
    save_record(record, folder)
    md = exported(folder, "md", capsys)
    header = next(line for line in md.splitlines() if line.startswith("| analysis |"))
    return md, [line for column, line in table_footnotes(record, record.analyses) if f"| {column} |" in header]


def test_markdown_notes_are_paragraphs_and_the_errors_read_as_the_terminals(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Walk 10: the line under the legend ran into it once rendered ("...as in the terminal. speedups
    pair..."), and the md wrote `5.8e-08 / 6.8e-08` under `error (values / vectors)` where --wide
    writes `5.8e-08/6.8e-08` under `values / vectors error`."""
    from harness.report.terminal import ERRORS_APART

    md, notes = _md_with_a_note("first_smoke", tmp_path, capsys)
    assert notes and all(f"\n\n{line}" in md for line in notes), md
    assert f"| {ERRORS_APART} |" in md and " / " not in md.split("| status |")[1].split("\n\n")[0]


def test_markdown_notes_sit_right_under_the_table_as_the_terminals_do(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Walk 13: `speedups pair each round's two times ...` followed the long legend paragraph, where
    the terminal has it right under its table, before the warnings."""
    md, notes = _md_with_a_note("busy_run", tmp_path, capsys)
    after = md.split(" |\n\n")[-1]  # what follows the table's last row
    assert notes and after.startswith("\n\n".join(notes) + "\n\n- "), after  # then the warnings, then the legend
    assert after.index("- ") < after.index("computed the recorded results")


def test_markdown_shows_the_vectors_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "main"
    folder.mkdir()
    shutil.copy(RECORDS / "main_job.json", folder / RECORD)
    record = load_record(folder)
    top3 = next(a for a in record.analyses if a.name == "top3")
    md = exported(folder, "md", capsys)
    for v in top3.verification:
        assert f"{v.values_error:.1e}/{v.vectors_error:.1e}" in md


def test_csv_and_json_hold_the_same_rows(busy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = list(csv.DictReader(io.StringIO(exported(busy, "csv", capsys))))
    data = json.loads(exported(busy, "json", capsys))
    assert [r["strategy"] for r in rows] == [r["strategy"] for r in data["results"]]
    assert list(rows[0]) == list(COLUMNS) and data["verdicts"]
    untimed = [r for r in rows if r["timing"] == "not timed"]
    assert len(untimed) == 4 and all(r["reason"] == "out of time on a busy machine" and r["speedup"] == "" for r in untimed)
    checks = {v.strategy: v for a in load_record(busy).analyses if a.name == "top3" for v in a.verification}
    for csv_row, json_row in ((r, next(j for j in data["results"] if j["strategy"] == r["strategy"])) for r in untimed):
        v = checks[csv_row["strategy"]]  # the limit cut its rounds, not the check of its answer
        assert csv_row["passed"] == "True" and json_row["passed"] is True
        assert float(csv_row["max_error"]) == json_row["max_error"] == max(v.values_error, v.vectors_error or 0.0)
        assert json_row["vectors_error"] == v.vectors_error is not None
    timed = [r for r in rows if r["timing"] == "timed"]
    assert all(float(r["per_matrix_s"]) > 0 and r["significance"] for r in timed)


def test_an_untimed_row_says_the_precision_device_and_library_the_plan_gave_it(
        busy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The walk-through's CSV row `geometry,pca,dual_gram,compare,,,,,,...,not timed` left them empty."""
    plan = load_record(busy).plan
    planned = {(s.analysis, t.label): t for s in plan.steps for t in s.timed}
    rows = list(csv.DictReader(io.StringIO(exported(busy, "csv", capsys))))
    data = json.loads(exported(busy, "json", capsys))["results"]
    untimed = [(r, j) for r, j in zip(rows, data) if r["timing"] == "not timed"]
    assert untimed
    for row, fields in untimed:
        t = planned[(row["analysis"], row["strategy"])]
        device, library = device_library(t.device)  # the timed rows' words: cpu (numpy)
        expected = {"precision": t.precision or plan.dtype, "device": device, "library": library, "compiled": t.compiled}
        assert {k: fields[k] for k in expected} == expected
        assert {k: row[k] for k in expected} == {k: str(v) for k, v in expected.items()}
    md = exported(busy, "md", capsys)  # walk 5: the md said `-` where the csv gave the plan's device
    for row, _fields in untimed:
        line = next(x for x in md.splitlines() if x.startswith(f"| {row['analysis']} | {row['strategy']} |"))
        assert f"| {row['device']} ({row['library']}) |" in line, line


def test_every_flag_column_holds_booleans_alone(busy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Walk 9: the not-timed rows left `extrapolated, unresolved, times_disagree, unstable` blank, so
    pandas read those columns as objects of True, False and NaN."""
    rows = list(csv.DictReader(io.StringIO(exported(busy, "csv", capsys))))
    data = json.loads(exported(busy, "json", capsys))["results"]
    assert any(r["timing"] == "not timed" for r in rows)
    for flag in ("compiled", "extrapolated", "unresolved", "times_disagree", "unstable", "resumed"):
        assert {r[flag] for r in rows} <= {"True", "False"}, flag
        assert all(isinstance(d[flag], bool) for d in data), flag
    assert all(r["unresolved"] == "False" for r in rows if r["timing"] == "not timed")  # no speedup to resolve (walk 18)


def test_the_md_and_the_page_say_the_machines_memory_alike(busy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Walk 5: the md's header said `24 GiB`, the HTML `23.5 GiB (22.6 GiB available)`."""
    from harness.base.units import format_bytes

    machine = load_record(busy).machine
    assert f", {format_bytes(machine.memory_total)}, " in exported(busy, "md", capsys).splitlines()[0]

def test_the_md_keeps_the_terminals_warnings_and_every_export_has_rounds() -> None:
    """Issue 48: the md kept only `not timed`, dropping the unresolved and unstable lines (and their
    load figures); no export had the rounds column."""
    from pathlib import Path

    from harness.record.run_record import load_record
    from harness.report.exports import results_markdown
    from harness.report.labels import rounds_text

    record = load_record(Path(__file__).parent / "records" / "busy_run.json")
    md = results_markdown(record)
    assert "speedups unresolved (?)" in md and "measurements (a strategy on one shape group) unstable (!): " in md
    assert "  - 12 × other processes took 72-77% of the 2 CPUs" in md.splitlines()  # its causes listed, with their figures
    assert "| rounds |" in md
    texts = [rounds_text(t) for a in record.analyses for t in a.timings]
    shown = [line.split(" | ")[8] for line in md.splitlines() if line.startswith("| ") and "| not run |" not in line
             and "| not timed |" not in line][1:]  # below the header
    assert shown == texts


def test_the_json_has_the_mds_warnings_as_plain_text(busy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Walk-through 7 (exports 1): the md had three warning lines (not timed, unresolved, unstable),
    the JSON none."""
    warnings = json.loads(exported(busy, "json", capsys))["warnings"]
    md = exported(busy, "md", capsys)
    bullets = [line[2:] for line in md.split("|---|")[-1].splitlines() if line.startswith("- ")]
    assert warnings[:-1] == bullets[:-1] and len(warnings) >= 3  # the unstable line last, its causes a list in md
    assert bullets[-1].startswith(warnings[-1].split(": ")[0] + ": compare their speedups") and bullets[-1].endswith("by cause:")
    assert any(w.startswith("not timed, ") for w in warnings) and any("unresolved (?)" in w for w in warnings)
    assert not [w for w in warnings if "[bold" in w or "[/" in w]  # no markup


def test_json_and_csv_rounds_are_numbers_the_md_keeps_the_terminals_text(
        busy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Walk-through 6: JSON `rounds` was `'3'` (`'3+6'` pooled) beside int `rounds_this_run` and
    `rounds_pooled`."""
    from harness.report.labels import rounds_text

    record = load_record(busy)
    a = record.analyses[0]
    t = a.timings[0]
    t.rounds, t.rounds_pooled = 9, 6
    (busy / RECORD).write_text(record.model_dump_json())
    data = json.loads(exported(busy, "json", capsys))["results"]
    rows = list(csv.DictReader(io.StringIO(exported(busy, "csv", capsys))))
    timed = [(j, r) for j, r in zip(data, rows, strict=True) if j["per_matrix_s"] is not None]
    assert timed[0][0]["rounds"] == 9 and (timed[0][0]["rounds_this_run"], timed[0][0]["rounds_pooled"]) == (3, 6)
    for j, r in timed:
        assert isinstance(j["rounds"], int) and j["rounds"] == j["rounds_this_run"] + j["rounds_pooled"]
        assert int(r["rounds"]) == j["rounds"] and j["resumed"] is False
    md = exported(busy, "md", capsys)
    assert next(line for line in md.splitlines() if line.startswith(f"| {a.name} | {t.label} ")).split(" | ")[8] \
        == rounds_text(t)  # after the dtype column


def test_an_untimed_row_says_whether_it_computed_the_results_and_the_md_marks_it_as_before(
        busy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Walk-through 6: csv `computed_results` was empty for a row not timed, `True`/`False` for the
    others. top3's factored computed its results though the limit cut its rounds: the plan's value."""
    data = json.loads(exported(busy, "json", capsys))["results"]
    rows = list(csv.DictReader(io.StringIO(exported(busy, "csv", capsys))))
    untimed = {(j["analysis"], j["strategy"]): (j["computed_results"], r["computed_results"])
               for j, r in zip(data, rows, strict=True) if j["per_matrix_s"] is None}
    assert untimed[("top3", "factored")] == (True, "True")
    assert {v for k, v in untimed.items() if k != ("top3", "factored")} == {(False, "False")}
    md = exported(busy, "md", capsys)  # as the terminal: the mark is on timed rows, as it was
    assert [line for line in md.splitlines() if line.startswith("| top3 | factored")] == [
        line for line in md.splitlines() if line.startswith("| top3 | factored | ")]


def test_csv_and_json_rows_say_why_a_measurement_was_unstable(busy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 48 (exports 2): `unstable` was a bare boolean; the row says why, with its load figures."""
    from harness.report.unstable import unstable_why

    rows = list(csv.DictReader(io.StringIO(exported(busy, "csv", capsys))))
    data = json.loads(exported(busy, "json", capsys))["results"]
    timings = {(a.name, t.label): t for a in load_record(busy).analyses for t in a.timings}
    assert any(r["unstable"] == "True" for r in rows)
    for csv_row, json_row in zip(rows, data, strict=True):
        t = timings.get((json_row["analysis"], json_row["strategy"]))
        if not json_row["unstable"]:
            assert json_row["unstable_why"] is None and csv_row["unstable_why"] == ""
            continue
        assert t is not None and csv_row["unstable_why"] == json_row["unstable_why"]
        assert json_row["unstable_why"] == unstable_why((g.measurement.reasons for g in t.groups), counted=False).said()
        assert json_row["unstable_why"].startswith("other processes took 7")  # the record's figure
        assert not re.search(r"\(\d+\)", json_row["unstable_why"])  # walk 6: a bare "(1)" in a row's own field


def test_a_rows_unstable_why_counts_nothing(busy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Walk-through 6: a row's csv field read `..., IQR 34% of median (1)`: the run's warning counts
    measurements, a row's own field has nothing to count."""
    record = load_record(busy)
    t = next(t for a in record.analyses for t in a.timings if len(t.groups) > 1)
    t.groups[0].measurement.unstable, t.groups[0].measurement.reasons = True, ["IQR 34% of median"]
    t.groups[1].measurement.unstable, t.groups[1].measurement.reasons = True, ["IQR 40% of median", "load 5.1 on 2 cores"]
    (busy / RECORD).write_text(record.model_dump_json())
    rows = list(csv.DictReader(io.StringIO(exported(busy, "csv", capsys))))
    (why,) = [r["unstable_why"] for r in rows if r["strategy"] == t.label and r["analysis"] in {a.name for a in record.analyses}
              and "IQR up to 40%" in r["unstable_why"]]
    assert "load 5.1 on 2 cores" in why and not re.search(r"\((?:\d+|\d+ measurements?)\)", why), why


def test_a_rows_unstable_why_spans_no_range_over_its_shape_groups(busy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Walk-through 7 (exports 2): a row read `IQR 35-54% of median`, a range over its two shape
    groups that reads as one measurement's: the worst is said, with its group."""
    record = load_record(busy)
    t = next(t for a in record.analyses for t in a.timings if len(t.groups) > 1)
    for g, iqr in zip(t.groups, (35, 54)):
        g.measurement.unstable, g.measurement.reasons = True, [f"IQR {iqr}% of median", "load 4.5 on 2 cores"]
    (busy / RECORD).write_text(record.model_dump_json())
    rows = json.loads(exported(busy, "json", capsys))["results"]
    (why,) = [r["unstable_why"] for r in rows if r["strategy"] == t.label and r["unstable_why"] and "IQR" in r["unstable_why"]]
    assert why == f"load 4.5 on 2 cores; IQR up to 54% of median ({t.groups[1].group})", why  # the machine's cause first


def test_a_worst_that_is_a_range_says_its_high_end(busy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Walk 11: `other processes took up to 72-76% of the 2 CPUs (48x32r4)`: "up to" a range."""
    record = load_record(busy)
    t = next(t for a in record.analyses for t in a.timings if len(t.groups) > 1)
    for g, took in zip(t.groups, ("50-52", "72-76")):
        g.measurement.unstable, g.measurement.reasons = True, [f"other processes took {took}% of the 2 CPUs"]
    (busy / RECORD).write_text(record.model_dump_json())
    rows = json.loads(exported(busy, "json", capsys))["results"]
    (why,) = [r["unstable_why"] for r in rows if r["strategy"] == t.label and r["unstable_why"]]
    assert why == f"other processes took up to 76% of the 2 CPUs ({t.groups[1].group})", why



def test_a_rows_worst_reason_shares_its_notes_parenthetical_with_its_group() -> None:
    """Walk 12: one parenthetical per reason; the row's group beside a reason's own note made two."""
    from harness.report.exports import row_unstable_why

    steal = "CPU steal {}% (the hypervisor ran other guests)"
    why = row_unstable_why([("768x3072r16", [steal.format(6)]), ("3072x768r16", [f"earlier runs' rounds: {steal.format(9)}"])])
    assert why == "from this run's and earlier runs' pooled rounds: CPU steal up to 9% (3072x768r16; the hypervisor ran other guests)"


def test_an_md_of_a_run_stopped_before_any_analysis_says_so_in_one_line(busy: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Walk 22: `harness report runs/ctrlc --format md` of a run stopped by Ctrl-C after 0 of 3 analyses
    printed a header-only table and the whole marks footnote under `(interrupted: …)`."""
    record = load_record(busy)
    stopped = record.model_copy(update={"analyses": [], "complete": False, "finished": None})
    (busy / RECORD).write_text(stopped.model_dump_json())
    md = exported(busy, "md", capsys)
    assert md.count("\n") == 1 and "|" not in md and "computed the recorded results" not in md  # no table, no legend
    assert md.startswith(f"**{record.experiment}**: ")
    assert (f"interrupted after 0 of {len(record.plan.steps)} analyses, so no results yet; "
            f"`harness run {record.spec_path} -o FOLDER` into its folder, the same command again, resumes it") in md


@pytest.mark.parametrize("name", ["busy_run", "first_smoke", "main_job", "small_reused", "main_job timed in full"])
def test_the_mds_legend_explains_the_marks_its_table_shows_and_no_other(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Walk 22: the whole legend under every table, whatever marks it held. Each mark is read where
    its row puts it: `*` after the strategy, `!` after the time, `?` in the speedup, `~` before the total.
    The main job timed in full (every matrix, no total extrapolated) has no `~`."""
    record = json.loads((RECORDS / f"{name.split()[0]}.json").read_text())
    for analysis in record["analyses"] if name.endswith("in full") else []:
        for timing in analysis["timings"]:
            timing["extrapolated"] = False
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / RECORD).write_text(json.dumps(record))
    md = exported(folder, "md", capsys)
    cells = [[c.strip() for c in line.strip("|").split(" | ")] for line in md.splitlines()
             if line.startswith("| ") and not line.startswith("| analysis")]
    shown = {"*": any(c[1].endswith(" *") for c in cells), "!": any(c[5].endswith(" !") for c in cells),
             "?": any("?" in c[7] for c in cells), "~": any(c[6].startswith("~") for c in cells)}
    legend = md.rstrip().splitlines()[-1]
    assert {mark: f"`{mark}` " in legend for mark in shown} == shown, legend


@pytest.mark.parametrize("name", ["busy_run", "main_job"])
def test_the_md_has_every_column_of_the_widest_terminal_table_and_their_notes(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Walk 24: the md left out GFLOP/s and % of peak without a word, and with them the `>100%` note."""
    from harness.report.labels import roof_footnote

    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(RECORDS / f"{name}.json", folder / RECORD)
    md = exported(folder, "md", capsys)
    header = next(line for line in md.splitlines() if line.startswith("| analysis"))
    assert "| GFLOP/s | % of peak |" in header
    record = load_record(folder)
    note = roof_footnote(record, record.analyses)
    assert note is None or note in " ".join(md.split())
    assert name != "main_job" or note is not None  # one record that has the note
