"""What `harness run` prints, drawn from the main job's real record and a busy run's (untimed rows,
long "not run" reasons, a frontier), at 100 and 160 columns: no line wider than the terminal, no
value split across lines, no word cut (issue 41). Rendered at explicit widths, never the machine's."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from harness.base.units import format_seconds
from harness.cli.console import say
from harness.record.run_record import RECORD, RunRecord, load_record
from harness.record.verification import Verification
from harness.report.fitting import Fitted, is_value
from harness.report.terminal import run_screen

RECORDS = Path(__file__).parent / "records"  # trimmed copies of real records (placements, candidates)


def real(name: str, tmp_path: Path) -> RunRecord:
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(RECORDS / f"{name}.json", folder / RECORD)
    return load_record(folder)


def draw(shown: list[object], width: int) -> tuple[str, list[str], list[str]]:
    """The terminal's text at `width` as `harness run` prints it there (lines through `say`), the
    words of every line, and the text of every value cell of the tables as drawn."""
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None, force_terminal=True)
    words, values = [], []
    for item in shown:
        if isinstance(item, Fitted):
            table = item.fit(console, width)
            values += [str(cell) for c in table.columns for cell in c._cells if is_value(cell) and str(cell)]
            words += [w for c in table.columns for cell in [c.header, *c._cells] for w in str(cell).split()]
            console.print(item)
        else:
            words += Text.from_markup(str(item)).plain.split()
            say(str(item), console)
    return console.export_text(), words, values


def assert_fits(shown: list[object], width: int) -> str:
    text, words, values = draw(shown, width)
    lines = text.splitlines()
    assert max(map(len, lines)) <= width, max(lines, key=len)
    drawn = set(text.split())
    assert [w for w in words if w not in drawn] == [], f"split at {width} columns"
    assert [v for v in values if not any(v in line for line in lines)] == [], f"a value split at {width} columns"
    return text


@pytest.mark.parametrize("width", [100, 160])
@pytest.mark.parametrize("name", ["main_job", "busy_run"])
def test_the_default_screen_fits_whole(name: str, width: int, tmp_path: Path) -> None:
    record = real(name, tmp_path)
    text = assert_fits(run_screen(record), width)
    assert "left out at this width" not in text  # the compact table fits 100 columns whole
    fitted = next(item for item in run_screen(record) if isinstance(item, Fitted))
    drawn = [c.header for c in fitted.fit(Console(width=width, file=io.StringIO()), width).columns]  # a header may wrap
    assert all(c in drawn for c in ("analysis", "strategy", "per matrix", "speedup (95% CI)", "max error", "status"))
    assert "benchmark:" not in text  # --verbose holds it
    assert ("GFLOP/s" in text) == (width == 160)  # the table widens with the terminal (issue 48)


@pytest.mark.parametrize("width", [100, 160])
@pytest.mark.parametrize("name", ["main_job", "busy_run"])
def test_the_full_screen_fits_whole(name: str, width: int, tmp_path: Path) -> None:
    record = real(name, tmp_path)
    text = assert_fits(run_screen(record, wide=True, explain=True, verbose=True), width)
    if width == 160:
        assert "% of peak" in " ".join(text.split())
        if name == "main_job":  # every column, --wide's errors apart too (the README says it adds them)
            assert "left out at this width" not in text
        else:  # its names (`process_pool@bfloat16`) leave no room for its top3 checks' errors apart
            assert "(left out at this width: values / vectors error;" in " ".join(text.split())


def test_never_timed_rows_say_so_in_one_cell_and_the_reason_once_below(tmp_path: Path) -> None:
    record = real("busy_run", tmp_path)
    top3 = next(a for a in record.analyses if a.name == "top3")
    top3.verification.append(Verification.failed("torch", 1e-4, "RuntimeError: " + "a long reason " * 12))
    text, _, _ = draw(run_screen(record), 100)
    lines = text.splitlines()
    untimed = [line for line in lines if line.startswith(" ") and " not timed " in line]  # rows, not the verdict
    assert len(untimed) == len(top3.skipped) and all(len(line.split()) <= 10 for line in untimed)
    assert sum("out of time on a busy machine" in line for line in lines) == 2  # the verdict, and the reason
    not_run = {s.reason for a in record.analyses for s in a.skipped if s.reason.startswith("bfloat16 not offered")}
    assert len(not_run) == 1 and " ".join(text.split()).count(" ".join(not_run.pop().split())) == 1
    assert sum(line.startswith("error: top3 torch raised: RuntimeError: a long reason") for line in lines) == 1
    assert any(line.split()[-1:] == ["error"] for line in lines)


def table_rows(record: RunRecord, wide: bool = False) -> list[dict[str, str]]:
    """The results table's rows as data, header -> plain cell, the analysis carried down."""
    from harness.report.terminal import run_table

    columns = run_table(record, wide=wide).table.columns
    rows = [{str(c.header): Text.from_markup(str(cell)).plain for c, cell in zip(columns, cells)}
            for cells in zip(*(c._cells for c in columns))]
    for above, row in zip(rows, rows[1:]):
        row["analysis"] = row["analysis"] or above["analysis"]
    return rows


def test_a_point_not_timed_shows_the_check_of_its_answer(tmp_path: Path) -> None:
    """The walk-through's dual_gram: cut by a busy machine's limit, verified all the same, yet its
    row read `-` everywhere."""
    from harness.report.labels import errors_text, worst_error

    record = real("busy_run", tmp_path)
    top3 = next(a for a in record.analyses if a.name == "top3")
    top3.verification[1] = top3.verification[1].model_copy(update={"passed": False})
    rows = [r for r in table_rows(record, wide=True) if r["analysis"] == "top3"]
    assert [r["strategy"] for r in rows] == [s.strategy for s in top3.skipped]
    for row, v in zip(rows, top3.verification, strict=True):
        assert row["per matrix"] == "not timed" and row["speedup (95% CI)"] == "-"
        assert row["max error"] == f"{worst_error(top3, v.strategy):.1e}" and row["status"] == ("passed" if v.passed else "FAILED")
        assert row["values / vectors error"] == errors_text(top3, v.strategy) != "-"


def test_one_count_of_unstable_measurements(tmp_path: Path) -> None:
    """The terminal, the record and the HTML headline count measurements, not reasons: a
    measurement with two reasons is one (the headline said 42 where the record said 21)."""
    from harness.report.html import _headline

    record = real("main_job", tmp_path)
    a = record.analyses[0]
    a.timings[0].groups[0].measurement.reasons.append("IQR 31% of median")  # two reasons, one measurement
    shown = " ".join(draw(run_screen(record), 160)[0].split())
    count = sum(g.measurement.unstable for a in record.analyses for t in a.timings for g in t.groups)
    assert count == record.bench.unstable  # type: ignore[union-attr]
    assert f"{count} of {count} measurements (a strategy on one shape group) unstable (!): other processes took" in shown
    assert "in 1 measurement" in shown and _headline(record)["unstable_count"] == count


def test_the_benchmark_line_counts_in_words_and_says_why_no_reference_was_computed(tmp_path: Path) -> None:
    record = real("main_job", tmp_path)
    b = record.bench
    assert b is not None
    b.rounds, b.references_computed, b.references_cached, b.references_s = 1, 0, 0, 0.0
    shown = " ".join(draw(run_screen(record, verbose=True), 160)[0].split())
    assert "rounds per timing (this run's+pooled, as in the tables): spectrum " in shown and "1 rounds" not in shown
    assert "float64 references: none needed (every verdict came from the result cache)" in shown
    assert "0 computed, 0 from the cache" not in shown


def test_the_benchmark_line_writes_rounds_as_the_tables_rows_do(tmp_path: Path) -> None:
    """Walk-through 7: the report's Benchmark paragraph wrote `svd_topk 2/1` where the tables write
    `3+2`: each count as a row writes it, the rows that differ from the most named."""
    from harness.report.terminal import bench_summary

    record = real("main_job", tmp_path)
    top3 = next(a for a in record.analyses if a.name == "top3")
    for t in top3.timings:
        for g in t.groups:  # 3 of this run's rounds and 2 pooled, torch's 1 of this run's
            g.rounds, g.pooled = (["r#t#0"], 0) if t.label == "torch" else (["r#t#0", "r#t#1", "r#t#2", "p#0", "p#1"], 2)
    summary = bench_summary(record)
    assert summary is not None
    assert "(this run's+pooled, as in the tables): spectrum 2, top3 3+2 (torch 1), geometry 2;" in summary


def test_the_fixtures_are_the_main_jobs_record() -> None:
    """A record of the README's small run of configs/task_geometry.toml (regenerate with that
    command when the record's schema moves on)."""
    main = json.loads((RECORDS / "main_job.json").read_text())
    assert main["experiment"] == "task_geometry" and "analysis[2].components=3" in main["command"]
    assert {a["name"] for a in main["analyses"]} == {"spectrum", "top3", "geometry"}


@pytest.mark.parametrize("width", [100, 160])
def test_the_compare_screen_fits_whole(width: int, tmp_path: Path) -> None:
    """asv's summary line first, the table, each cause of unreliable measurements once (21
    "unstable" lines repeated the same conditions, cut mid-word at 100 columns)."""
    from harness.report.compare import compare_records
    from harness.report.compare_view import compare_table, summary_line, unstable_lines

    a = real("main_job", tmp_path)
    b = a.model_copy(deep=True)
    for t in (t for an in b.analyses for t in an.timings):
        for g in t.groups:
            g.rounds = [r.replace("2026", "2027") for r in g.rounds]  # B's own rounds, none shared
            g.measurement.samples_s = [s * 1.5 if t.strategy == "torch" else s for s in g.measurement.samples_s]
    c = compare_records(a, b, ("runs/a", "runs/b"))
    lines = unstable_lines(c)
    text = assert_fits([summary_line(c), compare_table(c), *lines], width)
    assert text.startswith(f"B against A, {len(c.rows)} groups: ")
    unstable = [r for r in c.rows if r.unstable]
    assert unstable and len(lines) < len(unstable)  # one line per cause, not per group


def test_re_running_is_advised_only_while_runs_still_narrow_the_intervals(tmp_path: Path) -> None:
    """After 5 runs of ±120% the footer still said "a re-run adds a run" (issue 48, Verdict 3): from
    STALLED_RUNS runs pooled, a width that runs would narrow to the target only after more than
    STALLED_MORE more (half-width ~ 1/sqrt(runs)) says the load dominates, and what to do instead."""
    from harness.report.terminal import warning_lines
    from harness.report.unresolved import STALLED_MORE, STALLED_RUNS, more_runs

    record = real("main_job", tmp_path)
    unresolved = [t for a in record.analyses for t in a.timings if t.unresolved]
    factored = next(t for t in unresolved if t.label == "factored" and t.speedup and t.speedup > 1000)

    def footer(runs: int) -> str:
        for t in unresolved:
            t.runs = runs
        return next(line for line in warning_lines(record) if "unresolved (?)" in line)

    mixed = footer(5)  # spectrum's factored (±10%, just wider than ±10%) narrows with runs; the other 6 do not
    assert more_runs(factored, 0.10) is not None and more_runs(factored, 0.10) < STALLED_MORE  # type: ignore[operator]
    others = ", ".join(f"{a.name} {t.label}" for a in record.analyses for t in a.timings if t.unresolved and t is not factored)
    near = min(m for t in unresolved if t is not factored and (m := more_runs(t, 0.10)) is not None)
    assert (". Re-running as is should settle 1 of them (~1 more run): spectrum factored. The other 6 narrow too slowly "
            f"with runs to help after 5 or more runs pooled (the nearest would need ~{near:,.0f} more runs): {others}. ") in mixed
    assert "for those, re-run on a quieter machine" in mixed
    assert "re-run adds a run" not in mixed  # walk 12: not said of the 6 it had said stall
    factored.speedup_ci = (1000.0, 3000.0)  # ±76%: ~284 more runs to reach ±10%
    stalled = footer(5)
    assert "re-run adds a run" not in stalled
    nearest = min(more_runs(t, 0.10) or 0 for t in unresolved)
    assert nearest > STALLED_MORE
    assert (f"wider than ±10%. They narrow too slowly with runs to help after 5 or more runs pooled (the nearest "
            f"would need ~{nearest:,.0f} more runs). So the machine's load dominates: re-run") in stalled
    assert "quieter machine" in stalled and "--budget" in stalled
    assert "A re-run adds a run" in footer(STALLED_RUNS - 1)  # too few runs to tell how fast they narrow


def test_an_interval_this_runs_rounds_widened_is_said_and_no_re_run_promised_to_narrow_it(tmp_path: Path) -> None:
    """smoke's svd_topk went 2.87-19.99, 0.77-48.69, 0.46-185 over three runs while the footer said
    "a re-run adds a run (intervals narrow with runs ...)" each time (issue 48, walk-through 2)."""
    from harness.report.terminal import warning_lines
    from harness.report.unresolved import widening

    record = real("main_job", tmp_path)
    unresolved = [(a.name, t) for a in record.analyses for t in a.timings if t.unresolved and t.speedup_ci]
    for _name, t in unresolved:
        t.runs = 1  # too few runs for more_runs: only the widening can say the load dominates
        t.earlier_ci = t.speedup_ci

    def footer(verbose: bool = False) -> list[str]:
        return [line for line in warning_lines(record, verbose) if "unresolved" in line]

    (steady,) = footer()
    assert "A re-run adds a run; on a steady machine intervals narrow with runs" in steady and "widened" not in steady
    name, t = unresolved[0]
    assert t.speedup_ci is not None
    t.earlier_ci = (t.speedup_ci[0] * 2, t.speedup_ci[1] / 2)  # this run's rounds widened it
    (one,) = footer()
    others = ", ".join(f"{n} {u.label}" for n, u in unresolved[1:])
    assert (f". A re-run adds a run to {len(unresolved) - 1} of them: {others}; on a steady machine intervals narrow with runs, "
            f"not with one run's rounds. The other one widened over 10% with this run's rounds: {name} {t.label} ("
            f"{widening(t)}). So the machine's load dominates: for that one, re-run on a quieter machine") in one
    assert "))" not in one  # walk-through 8: "... and geometry factored_gram)), --verbose says why each"
    for _name, other in unresolved:
        assert other.speedup_ci is not None
        other.earlier_ci = (other.speedup_ci[0] * 2, other.speedup_ci[1] / 2)
    (every,) = footer()
    assert "re-run adds a run" not in every and "narrow with runs" not in every
    assert (f"wider than ±10%. All {len(unresolved)} widened over 10% with this run's rounds: {name} {t.label} ({widening(t)}), "
            in every and ". So the machine's load dominates: re-run" in every)
    assert all(f"{n} {u.label}" in every for n, u in unresolved)  # walk 6: "2 intervals widened" named one
    verbose = footer(verbose=True)
    assert len(verbose) == len(unresolved) and all("widened over 10% with this run's rounds" in line for line in verbose)


def test_widened_and_stalled_intervals_are_each_a_clause_of_their_own(tmp_path: Path) -> None:
    """`...: 2 intervals widened over 10% with this run's rounds, ... (and top3 torch); after 3 or more runs
    pooled, and runs narrow the others too slowly ...` was no sentence (walk-through 7, verdict 1):
    with both causes, each is a sentence naming its own speedups after a colon (walk 23: one parenthesis
    held names, advice and intervals)."""
    from harness.report.terminal import warning_lines
    from harness.report.unresolved import more_runs, widening

    record = real("main_job", tmp_path)
    unresolved = [(a.name, t) for a in record.analyses for t in a.timings if t.unresolved and t.speedup_ci]
    assert len(unresolved) >= 3
    for _name, t in unresolved:
        assert t.speedup_ci is not None and t.speedup is not None
        t.runs, t.earlier_ci = 3, None
        t.speedup_ci = (t.speedup / 4, t.speedup * 4)  # ±300%: far more runs than STALLED_MORE
    name, w = unresolved[0]
    assert w.speedup_ci is not None
    w.earlier_ci = (w.speedup_ci[0] * 2, w.speedup_ci[1] / 2)
    nearest = min(m for _n, t in unresolved[1:] if (m := more_runs(t, 0.10)) is not None)
    (line,) = [line for line in warning_lines(record) if "unresolved (?)" in line]
    assert line.startswith(f"{len(unresolved)} speedups unresolved (?): their intervals are wider than ±10%. "
                           f"1 of them widened over 10% with this run's rounds: {name} {w.label} ({widening(w)}). The "
                           f"other {len(unresolved) - 1} narrow too slowly with runs to help after 3 or more runs "
                           f"pooled (the nearest would need ~{nearest:,.0f} more runs): "
                           f"{', '.join(f'{n} {t.label}' for n, t in unresolved[1:])}. So the machine's load dominates: re-run")


def test_an_unresolved_point_this_run_did_not_time_says_so_in_one_line(tmp_path: Path) -> None:
    """`geometry dual_gram 0.45x (0.17-1.18) ? ≠ 1 reused` six runs in a row, with no line saying
    that the budget ran out before it each time (walk-through 7, verdict 2)."""
    from harness.report.terminal import untimed_lines

    record = real("main_job", tmp_path)
    assert not [line for line in untimed_lines(record) if "not timed again" in line]
    name, t = next((a.name, t) for a in record.analyses for t in a.timings if t.unresolved)
    for g in t.groups:
        g.pooled = len(g.rounds)  # every round reused: this run timed none
    assert record.bench is not None
    n = min(g.pooled for g in t.groups)
    limit = "budget" if record.bench.limit_s <= record.bench.budget_s else "floor"  # its limit named as it is
    assert [line for line in untimed_lines(record) if "not timed again" in line] == [
        f"not timed again, the {format_seconds(record.bench.limit_s)} {limit} ran out first: {name} {t.label} "
        f"({n} reused round{'s' if n != 1 else ''}); --budget 30s times it"]
    record.bench.budget_s, record.bench.limit_s = 1.0, 2.0  # walk-through 8: "the budget (2.00 s)" of a 1 s budget
    assert any("not timed again, the 2.00 s floor ran out first" in line for line in untimed_lines(record))


@pytest.mark.parametrize("settled", [("torch_lowrank",), ("torch_lowrank", "torch", "factored")])
def test_every_row_this_run_did_not_time_says_why_in_every_view(settled: tuple[str, ...], tmp_path: Path) -> None:
    """Walk 9: run 2 said `not timed again, the 19.0 s floor ran out first: top3 torch_lowrank (1
    reused round)`, and the next run's `top3 torch_lowrank ... 4 reused` and `top3 torch ... 4
    reused` had no line: settled, they were never waiting on the limit. Each row this run timed no
    round of gets one true reason, in the terminal's, the md's and the HTML's words alike."""
    import html

    from harness.report.exports import results_markdown
    from harness.report.html import render_report

    record = real("main_job", tmp_path)
    top3 = next(a for a in record.analyses if a.name == "top3")
    for t in top3.timings:
        if t.label in ("torch_lowrank", "torch") or len(settled) == 3:  # three: the baseline's every speedup settled
            for g in t.groups:
                g.pooled = len(g.rounds)  # every round reused: this run timed none
        t.settled = t.label in settled
    screen = " ".join(draw(run_screen(record, wide=True, explain=True), 160)[0].split())
    assert "not timed again" in screen
    for t in top3.timings:
        said = f"top3 {t.label} ({min(g.pooled for g in t.groups)} reused rounds)"
        reused = all(len(g.rounds) == g.pooled for g in t.groups)
        settle = "already settle every speedup" in screen.split(said)[0].rsplit("not timed again", 1)[-1]
        assert (screen.count(said) == 1) == reused and (not reused or settle == (t.settled or t.role == "baseline"))
    md = " ".join(results_markdown(record).split())
    page = " ".join(html.unescape(render_report(record, tmp_path / "main_job")).split())
    for line in screen.split("not timed again")[1:]:
        line = "not timed again" + line.split("; --")[0]
        assert line in md and line in page, line


def test_a_widened_interval_too_wide_to_read_is_said_as_the_tables_say_it(tmp_path: Path) -> None:
    """`1.67-11.62 before this run, 0.0000053-13,360,295 with it` (walk-through 3): an interval
    whose ends are too far apart to read is written as the table's cell writes it."""
    from harness.report.unresolved import widening

    record = real("main_job", tmp_path)
    t = next(t for a in record.analyses for t in a.timings if t.speedup_ci)
    t.earlier_ci, t.speedup_ci = (1.67, 11.62), (0.0000053, 13_360_295.0)
    assert widening(t) == "1.67-11.6 before this run, too wide with it"
