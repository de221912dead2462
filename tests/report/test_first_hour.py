"""A newcomer's first hour (issue 48), on the main job's real record and a busy run's, drawn at 100
and 160 columns as `harness run` draws them: the shipped default does not warn about its own budget,
the useful hint is in the terminal, `--wide` keeps the default's columns, a mark never wraps to a
line of its own, the table widens with the terminal, an interval too wide to read is said in words,
and the live display shows whole labels and no "-:--:--"."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from harness.base.progress import Display
from harness.report.fitting import Fitted
from harness.report.labels import speedup_text
from harness.report.terminal import COMPACT_COLUMNS, run_screen
from harness.report.plan_view import floor_note
from harness.run.clock import BenchClockLabel
from tests.report.test_run_screen import draw, real

RECORDS = ("main_job", "busy_run")


def columns(record: object, width: int, wide: bool) -> list[str]:
    table = next(item for item in run_screen(record, wide=wide) if isinstance(item, Fitted))  # type: ignore[arg-type]
    return [str(c.header) for c in table.fit(Console(width=width, file=io.StringIO()), width).columns]


@pytest.mark.parametrize("width", [100, 160])
@pytest.mark.parametrize("name", RECORDS)
def test_wide_keeps_every_column_of_the_default_table(name: str, width: int, tmp_path: Path) -> None:
    record = real(name, tmp_path)
    default, wide = columns(record, width, False), columns(record, width, True)
    assert set(COMPACT_COLUMNS) <= set(default) <= set(wide)


@pytest.mark.parametrize("name", RECORDS)
def test_the_table_widens_with_the_terminal(name: str, tmp_path: Path) -> None:
    record = real(name, tmp_path)
    assert len(columns(record, 160, False)) > len(columns(record, 100, False)) >= len(COMPACT_COLUMNS)


@pytest.mark.parametrize("width", [100, 160])
@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("name", RECORDS)
def test_the_chosen_mark_stays_beside_its_strategy(name: str, wide: bool, width: int, tmp_path: Path) -> None:
    text, _, _ = draw(run_screen(real(name, tmp_path), wide=wide), width)
    assert all(line.strip() != "*" for line in text.splitlines())
    assert "factored_gram *" in text


@pytest.mark.parametrize("width", [100, 160])
@pytest.mark.parametrize("name", RECORDS)
def test_the_default_run_screen_says_what_to_do_not_that_it_is_over_its_limit(
        name: str, width: int, tmp_path: Path) -> None:
    record = real(name, tmp_path)
    assert record.bench is not None
    record.bench.spent_s = record.bench.one_off_s + 2 * record.bench.limit_s  # rounds ran slower than planned
    text = " ".join(draw(run_screen(record), width)[0].split())
    assert "over its limit" not in text and "more than the" not in text
    assert "--budget 30s" in text  # the hint the HTML report gave alone
    verbose = " ".join(draw(run_screen(record, verbose=True), width)[0].split())
    assert "ran slower than the plan expected" in verbose


def test_the_default_budget_grows_to_the_floor_without_a_word(tmp_path: Path) -> None:
    """The main job's plan has a floor over the default 4 s budget: no line unless a user asked."""
    plan = real("main_job", tmp_path).plan
    assert plan.bench is not None
    plan.bench.floor_s = plan.bench.budget_s + 1.0
    assert floor_note(plan, asked=False) is None
    note = floor_note(plan, asked=True)
    assert note is not None and "floor" not in note and "is less than the least that times every strategy" in note
    plan.bench.budget_s = 0.0  # `--budget 0s`: echoed in the unit given, not as `0 µs`
    assert (floor_note(plan, asked=True) or "").startswith("the budget of 0 s is less than the least")


def test_an_interval_too_wide_to_read_is_said_in_words(tmp_path: Path) -> None:
    record = real("main_job", tmp_path)
    timing = next(t for a in record.analyses for t in a.timings if t.speedup_ci)
    timing.speedup, timing.speedup_ci, timing.unresolved = 1.17, (4.5e-05, 30147.0), True
    assert speedup_text(timing) == "1.17x (too wide) ?"
    timing.speedup_ci = (0.5, 2.5)
    assert speedup_text(timing) == "1.17x (0.500-2.50) ?"


def test_the_live_display_shows_whole_labels_and_no_unknown_eta() -> None:
    """At 100 columns: "analysis 1 of 3: spectr..." and "ETA -:--:--" before, and the budget's
    figure cut to "spectrum: timed 12.8/13.…"."""
    budget = type("Clock", (), {"live_s": 12.8, "doing": ""})()
    console = Console(file=io.StringIO(), width=100, force_terminal=True)
    shown = Console(file=io.StringIO(), width=100, record=True, color_system=None)
    with Display(console, live=True) as display, display.phase("spectrum: svdvals by factored", 3) as phase:
        phase.item(BenchClockLabel("spectrum", budget, 13.9))  # type: ignore[arg-type]
        assert display.progress is not None
        shown.print(display.progress.make_tasks_table(display.progress.tasks))
    line = shown.export_text()
    assert "spectrum: svdvals by factored" in line and "bench 13/14 s budget · spectrum" in line
    assert "-:--:--" not in line and "…" not in line


def test_a_warning_line_during_a_run_wraps_between_words_on_a_terminal() -> None:
    """Six warning lines ran past 100 columns on a busy machine, cut mid-word by the terminal."""
    console = Console(file=io.StringIO(), width=100, force_terminal=True, record=True, color_system=None)
    line = "warning: " + " ".join(f"tensor_{i}.lora_A.weight" for i in range(12)) + " are left out [see --verbose]"
    with Display(console, live=True) as display:
        display.plain(line)
    text = console.export_text()
    assert max(map(len, text.splitlines())) <= 100 and text.split() == line.split()


def test_the_live_display_says_the_budget_ran_over_and_keeps_its_eta() -> None:
    """Issue 48: `top3: timed 14.8/11.9 s` ran past its budget with no sign, and after the first of
    three analyses the ETA vanished (rich has no pace before a second step)."""
    budget = type("Clock", (), {"live_s": 14.8, "doing": ""})()
    console = Console(file=io.StringIO(), width=100, force_terminal=True)
    shown = Console(file=io.StringIO(), width=100, record=True, color_system=None)
    with Display(console, live=True) as display, display.phase("spectrum: svdvals by factored", 3) as phase:
        phase.item(BenchClockLabel("spectrum", budget, 11.9))  # type: ignore[arg-type]
        phase.advance()
        assert display.progress is not None
        display.progress.tasks[0].start_time -= 10  # the first analysis took 10 s: two more, 20 s
        shown.print(display.progress.make_tasks_table(display.progress.tasks))
    line = shown.export_text()
    assert "bench +2.9 s budget · spectrum" in line and "…" not in line
    assert "ETA 0:00:20" in line  # its own pace (one step of three in 10 s): bare, as README says


def test_the_plan_sentence_says_what_an_overrun_cut(tmp_path: Path) -> None:
    """Walk 15: "planned 2.21 s (the floor, the least that gives every speedup its first interval …)"
    beside `geometry dual_gram` not timed: the sentence says the rounds overran and what got none."""
    import html

    from harness.report.html import render_report
    from harness.report.terminal import bench_summary

    cut = "the rounds ran slower than the plan expected (2.5x its 2.21 s) on this busy machine, and 3 got no round, " \
          "so no interval (svd_topk torch_lowrank, svd_topk torch, geometry dual_gram)"
    record = real("first_smoke", tmp_path)
    assert cut in (bench_summary(record) or "")
    assert cut in " ".join(html.unescape(render_report(record, tmp_path / "first_smoke")).split())
    verbose = " ".join(draw(run_screen(record, verbose=True), 160)[0].split())
    assert verbose.count("ran slower than the plan expected") == 1  # said once, in the benchmark's line
    main = real("main_job", tmp_path)  # nothing cut, its rounds within the plan
    assert "slower than the plan" not in (bench_summary(main) or "") and "no interval" not in (bench_summary(main) or "")
