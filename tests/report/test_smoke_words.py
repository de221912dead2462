"""The first smoke run of walk-through 14, as every output says it: a verdict whose paired point
points the other way from the per-matrix medians gives both, the JSON carries the notes every other
output has, and the Plan section says what its planned figure is beside the budget and the floor."""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path

from rich.text import Text

from harness.record.run_record import RunRecord
from harness.report.exports import results_json, results_markdown
from harness.report.html import render_report
from harness.report.labels import verdict_lines
from harness.report.terminal import warning_lines

from .test_run_screen import real

BOTH_WAYS = "svd: torch is not significantly faster or slower than numpy: 0.670x paired (interval too wide to tell), 1.28x by the per-matrix medians"


def _page(tmp_path: Path, record: RunRecord | None = None) -> tuple[str, str]:
    """The report page, and its text as a reader sees it (tags gone, spaces one)."""
    record = record or real("first_smoke", tmp_path)
    page = html_lib.unescape(render_report(record, tmp_path / "first_smoke"))
    return page, " ".join(re.sub(r"<[^>]+>", " ", page).split())


def test_a_too_wide_verdict_against_the_medians_gives_both_figures(tmp_path: Path) -> None:
    """Walk 14: `svd: torch is not significantly faster or slower than numpy: 0.670x (too wide)` beside
    numpy 257 µs, torch 201 µs: 0.670x alone read as torch slower, the medians say 1.28x faster."""
    record = real("first_smoke", tmp_path)
    (line,) = [v for v in verdict_lines(record) if v.startswith("svd: ")]
    assert line.startswith(BOTH_WAYS + "; ")
    data = json.loads(results_json(record))
    (svd,) = [v for v in data["verdicts"] if v["analysis"] == "svd"]
    assert svd["text"] == line and round(svd["medians_speedup"], 2) == 1.28 and svd["significance"] == "not significant"
    assert f"- {line}" in results_markdown(record).splitlines()
    page, _text = _page(tmp_path, record)
    assert line in page
    # where both point one way, one figure as before
    assert any(v.endswith("than numpy: 1.79x (0.661-4.87); 0 of 2 speedups resolved") for v in verdict_lines(record))


def test_the_json_carries_the_notes_under_the_table(tmp_path: Path) -> None:
    """Walk 14: md, the terminal and the HTML had `too wide (svd torch): …` and `speedups pair each
    round's two times …`; the JSON had neither, nor a `notes` key."""
    record = real("first_smoke", tmp_path)
    notes = json.loads(results_json(record))["notes"]
    assert [n.split(" (", 1)[0] for n in notes] == ["speedups pair each round's two times, so they can differ from the ratio of "
                                                    "the per-matrix column", "too wide"]
    assert notes[0].endswith("(svdvals torch: 2.43x against 2.60x)") and notes[1].startswith("too wide (svd torch): ")
    assert not any("0.670x against 1.28x" in n for n in notes)  # walk 17: svd torch's cell says both figures already
    md = results_markdown(record).splitlines()
    assert all(note in md for note in notes)
    page, _text = _page(tmp_path, record)
    assert all(note in page for note in notes)


def test_the_plans_figure_says_what_it_is_beside_the_budget(tmp_path: Path) -> None:
    """Walk 14: `Benchmark phase (planned 2.21 s): 5.62 s of warm-ups and rounds for a 4.00 s budget
    (floor 2.21 s)`: why plan 2.21 s for 4.00 s? The plan's whole rounds were its floor."""
    _page_html, text = _page(tmp_path)
    assert ("Benchmark phase: 5.62 s of warm-ups and rounds for a 4.00 s budget, planned 2.21 s (the floor, the least "
            "that gives every speedup its first interval on a quiet machine, as the rest of the budget held no whole round more), ") in text
    assert "(planned" not in text and "(floor 2.21 s)" not in text


def test_no_report_points_to_a_flag_it_cannot_take(tmp_path: Path) -> None:
    """Walk 14: the HTML and md said `--verbose says why each`, where `harness report` has no --verbose;
    the terminal keeps its pointers, a report lists why each speedup is unresolved instead."""
    record = real("main_job", tmp_path)
    for a in record.analyses:
        for p in a.placements[:1]:
            p.attempts = 2  # a chunk resubmitted after losing its worker
    terminal = [Text.from_markup(line).plain for line in warning_lines(record)]
    assert sum("--verbose says" in line for line in terminal) == 2  # the resubmitted chunks' and the unresolved ones'
    page, _text = _page(tmp_path, record)
    assert "resubmitted after losing their worker" in page and "unresolved (?)" in page
    for said in (page, results_markdown(record), results_json(record)):
        assert "--verbose" not in said
