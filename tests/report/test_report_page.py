"""The HTML report as a researcher reads it (issue 33): a headline first, a table of contents,
measurement details folded, device and library apart, compute-only totals labelled, a log
speedup axis whose colours mean faster and slower, every sample drawn, and an interrupted run
explained as interrupted."""

from __future__ import annotations

import re
from pathlib import Path

from harness.record.run_record import RunRecord
from harness.report import charts
from harness.report.html import render_report


def test_headline_contents_and_folded_details(smoke_run: tuple[Path, RunRecord]) -> None:
    folder, record = smoke_run
    record = record.model_copy(deep=True)
    groups = [g for a in record.analyses for t in a.timings for g in t.groups]
    for g in groups:  # whatever the machine was doing when the fixture ran
        g.measurement.reasons = ["load 3.2 on 2 cores"]
    page = render_report(record, folder)
    head = page[page.index('<section id="headline"'):page.index("</section>")]
    assert f"<li>{len(groups)} &times; load 3.2 on 2 cores</li>" in head and "harness system" in head
    assert head.count("<li>") == 1  # one line per cause
    assert page.index('id="headline"') < page.index('id="run"') < page.index("<table>")
    for anchor in re.findall(r'<a href="#([^"]+)">', page[page.index('<nav id="contents">'):]):
        assert f'id="{anchor}"' in page, anchor
    assert "<details><summary>" in page and "workload total (compute only)" in page
    assert "<th>device</th><th>library</th>" in page and "wall time</b>, loading included" in page


def test_the_headline_shows_the_records_verdicts_when_it_has_them(smoke_run: tuple[Path, RunRecord]) -> None:
    folder, record = smoke_run
    record = record.model_copy(deep=True)
    for a in record.analyses:
        a.verdict = a.choice_check = None
    assert '<p class="verdict">' not in render_report(record, folder)  # none in this record: nothing
    record.analyses[0].verdict = "factored is 1,130x (1,050-1,210) faster than numpy"
    page = render_report(record, folder)
    head = page[page.index('<section id="headline"'):page.index("</section>")]
    assert '<p class="verdict">factored is 1,130x (1,050-1,210) faster than numpy</p>' in head


def test_an_interrupted_run_is_explained_as_interrupted(smoke_run: tuple[Path, RunRecord]) -> None:
    folder, record = smoke_run
    record = record.model_copy(deep=True)
    record.complete = False
    for a in record.analyses:
        a.timings = []
    page = render_report(record, folder)
    assert "interrupted before any strategy was timed" in page and "schema 3" not in page
    assert "This run was interrupted before it finished" in page


def test_speedups_on_a_log_axis_coloured_by_meaning_and_samples_as_dots(smoke_run: tuple[Path, RunRecord]) -> None:
    _folder, record = smoke_run
    a = next(a for a in record.analyses if len(a.timings) > 1)
    fig = charts.timing_figure(a)
    samples, speedups = fig.axes
    assert speedups.get_xscale() == "log" and samples.get_xscale() == "log"
    dots = sum(len(c.get_offsets()) for c in samples.collections)
    assert dots == sum(len(g.measurement.samples_s) for t in a.timings for g in t.groups)
    colours = {charts.speedup_color(t.speedup or 1, t.role == "baseline") for t in a.timings}
    assert charts.BAD not in {charts.speedup_color(2.0, False), charts.speedup_color(1.0, True)}
    assert charts.speedup_color(0.5, False) == charts.BAD and colours <= {charts.GOOD, charts.BAD, charts.NEUTRAL}
