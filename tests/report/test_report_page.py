"""The HTML report as a researcher reads it (issue 33): a headline first, a table of contents,
measurement details folded, device and library apart, compute-only totals labelled, a log
speedup axis whose colours mean faster and slower, every sample drawn, and an interrupted run
explained as interrupted."""

from __future__ import annotations

import html as html_lib
import re

import numpy as np
from pathlib import Path

from harness.bench.budget import estimate_parts
from harness.record.run_record import RunRecord
from harness.report import charts
from harness.report.html import render_report
from harness.report.labels import COMPUTED_MARK, PEAK_NOTE, ROLES_NOTE, SPREAD_NOTE, rounds_text


def test_headline_contents_and_folded_details(smoke_run: tuple[Path, RunRecord]) -> None:
    folder, record = smoke_run
    record = record.model_copy(deep=True)
    groups = [g for a in record.analyses for t in a.timings for g in t.groups]
    for g in groups:  # whatever the machine was doing when the fixture ran
        g.measurement.reasons, g.measurement.unstable = ["load 3.2 on 2 cores"], True
    page = render_report(record, folder)
    head = page[page.index('<section id="headline"'):page.index("</section>")]
    assert f"<li>{len(groups)} &times; load 3.2 on 2 cores</li>" in head
    assert '<code class="cmd"><span class="word">harness</span> <span class="word">system</span></code>' in head
    assert f"{len(groups)} of {len(groups)} measurements (a strategy on one shape group) unstable (!)" in head
    causes = head[head.index('<ul class="causes">'):]
    assert causes.count("<li>") == 1  # one line per cause
    unresolved = [(a.name, t.label) for a in record.analyses for t in a.timings if t.unresolved]
    if unresolved:  # walk 20: one bold paragraph per unresolved speedup before the Contents; folded, one item each
        each = head[head.index('<details class="each">'):head.index("</details>")]
        assert f"why each is unresolved ({len(unresolved)})" in each and each.count("<li>") == len(unresolved)
        assert all(f"<li>{name} {label}: " in each for name, label in unresolved)
        assert head.count('<p class="warn">unresolved ') == 0
    assert page.index('id="headline"') < page.index('id="run"') < page.index("<table>")
    for anchor in re.findall(r'<a href="#([^"]+)">', page[page.index('<nav id="contents">'):]):
        assert f'id="{anchor}"' in page, anchor
    assert "<details><summary>" in page and "compute total" in page
    assert "<th>device (library)</th>" in page and "wall time</b>, loading included" in page


def test_the_headline_says_the_terminals_verdicts_and_names_what_was_never_timed(
        smoke_run: tuple[Path, RunRecord]) -> None:
    """The verdicts in today's words (an old record's stored lines are not shown), and an analysis
    never timed says so first, not far below."""
    from harness.record.run_record import UNTIMED, Skipped
    from harness.report.labels import verdict_lines

    folder, record = smoke_run
    record = record.model_copy(deep=True)
    for a in record.analyses:
        a.verdict = "an old record's own words"
    untimed = record.analyses[-1]
    untimed.skipped = [Skipped(strategy=t.label, reason=UNTIMED) for t in untimed.timings]
    untimed.timings = []
    page = html_lib.unescape(render_report(record, folder))
    head = page[page.index('<section id="headline"'):page.index("</section>")]
    assert "an old record's own words" not in head
    lines = verdict_lines(record)
    assert len(lines) >= len(record.analyses) and all(f'<p class="verdict">{line}</p>' in head for line in lines)
    assert f"{untimed.name}: no speedup: not timed (out of time on a busy machine)" in head
    assert page.count("not timed: out of time") == 0  # the phrase is never doubled


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
    colours = {charts.speedup_color(t) for t in a.timings}
    assert colours <= {charts.GOOD, charts.BAD, charts.NEUTRAL}


def test_a_speedup_is_drawn_faster_or_slower_only_beyond_its_interval() -> None:
    """Red "slower" bars were drawn for 0.92x (0.85-1.01) and 0.90x (0.49-1.67): an interval that
    holds 1 is not significant, drawn neutral."""
    from tests.record.test_verdict import timing

    assert charts.speedup_color(timing("t", "compare", 0.92, (0.85, 1.01))) == charts.NEUTRAL
    assert charts.speedup_color(timing("t", "compare", 0.90, (0.49, 1.67))) == charts.NEUTRAL
    assert charts.speedup_color(timing("t", "compare", 0.90, (0.85, 0.95))) == charts.BAD
    assert charts.speedup_color(timing("t", "compare", 2.0, (1.5, 2.5))) == charts.GOOD
    assert charts.speedup_color(timing("t", "baseline", 1.0, None)) == charts.NEUTRAL
    assert charts.speedup_color(timing("t", "compare", 4.4, None)) == charts.PALE_GOOD  # one round: no interval


def test_the_plans_benchmark_estimate_is_said_of_the_phase_not_of_the_references(
        smoke_run: tuple[Path, RunRecord]) -> None:
    """"float64 references: 1 computed, 2 from the cache, 67.0 ms (planned 13.86 s)" read as the
    references' plan; 13.86 s was the benchmark phase's."""
    folder, record = smoke_run
    assert record.plan.bench is not None
    text = " ".join(re.sub(r"<[^>]+>", " ", html_lib.unescape(render_report(record, folder))).split())
    assert "Benchmark phase: " in text and f", planned {charts.format_seconds(record.plan.bench.estimate_s)} (" in text
    assert "(planned" not in text[text.index("float64 references:"):][:120]


def test_the_benchmark_sentence_counts_rounds_as_the_tables_do(smoke_run: tuple[Path, RunRecord]) -> None:
    """"3 rounds timed (44 blocks of them while the machine was busy), 100 pooled" beside tables
    saying 3+9 and 1+3: the sentence now says each analysis' rounds in the tables' words, and
    counts the busy blocks among this run's blocks."""
    folder, record = smoke_run
    record = record.model_copy(deep=True)
    assert record.bench is not None
    a = next(a for a in record.analyses if a.timings)
    for t in a.timings:
        for g in t.groups:
            g.rounds = [f"old#{i}" for i in range(9)] + g.rounds
            g.pooled = 9
    record.bench.busy_rounds, record.bench.rounds_pooled = 5, 4321  # a count no busy-load figure reads
    text = " ".join(re.sub(r"<[^>]+>", " ", html_lib.unescape(render_report(record, folder))).split())
    sentence = text[text.index("Benchmark phase"):]
    assert f"{a.name} {rounds_text(a.timings[0])}" in sentence and "+9" in rounds_text(a.timings[0])
    blocks = sum(len(g.rounds) - g.pooled for b in record.analyses for t in b.timings for g in t.groups)
    assert f"5 of this run's {blocks} timed blocks" in sentence
    assert not {"4321", "4,321"} & set(re.findall(r"[\d,]+", sentence)), "the pooled total stands beside the tables' rounds"


def test_the_spectra_title_says_the_band_only_where_it_shows_and_coinciding_lines_are_named() -> None:
    """The walk-through's spectrum chart promised 'median and 10-90%' with no band in sight (5%
    wide over three decades), and its legend listed mlp_up, hidden under mlp_down."""
    s = np.geomspace(2.0, 0.002, 16)
    narrow = {"mlp_down": (s, s * 0.98, s * 1.02), "mlp_up": (s * 1.001, s * 0.98, s * 1.02)}
    ax = charts.decay_figure(narrow, "spectrum: singular values").axes[0]
    assert ax.get_title() == "spectrum: singular values, median (10-90% band too thin to show)"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["mlp_down", "mlp_up (coincides with mlp_down)"]
    styles = [line.get_linestyle() for line in ax.get_lines()]
    assert styles[0] == "-" and styles[1] != "-"  # the second drawn dashed, the first showing through
    k = np.array([2.0, 1.3])
    wide = {"up": (k, k * 0.8, k * 1.25), "down": (k * 0.7, k * 0.6, k * 0.8)}
    ax = charts.decay_figure(wide, "svd_topk: singular values").axes[0]
    assert ax.get_title() == "svd_topk: singular values, median and 10-90% band"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["up", "down"]


def test_the_tables_notes_are_said_once_and_a_name_keeps_its_mark(smoke_run: tuple[Path, RunRecord]) -> None:
    """The walk-through's smoke report repeated the 12-line footnote (Role ... % of peak) under each
    of its 4 analyses, and wrapped `gram_eigh *` to put the mark on a line of its own."""
    folder, record = smoke_run
    page = html_lib.unescape(render_report(record, folder))
    assert sum(bool(a.timings) for a in record.analyses) >= 2
    text = re.sub(r"<[^>]+>", "", page)  # an item's lead is bold
    for note in (ROLES_NOTE, SPREAD_NOTE, PEAK_NOTE):
        assert text.count(note) == 1, note
    assert page.index('id="reading"') < page.index('id="analysis-')
    marked = re.findall(rf"<td([^>]*)>[^<]* {re.escape(COMPUTED_MARK)}</td>", page)
    assert marked and set(marked) == {' class="name"'}
    assert re.search(r"td\.name \{ white-space: nowrap; \}", page)


def test_the_plans_timed_points_say_each_strategys_own_timing_and_its_calls_estimate(
        smoke_run: tuple[Path, RunRecord]) -> None:
    """Walk 5: `numpy (baseline, est. 210 ms): ... ~210 ms a round` stood for every strategy beside
    a 140 us median; each names its own timing and its call's estimate, which the table checks.
    Walk 17: every point's plan in one narrow cell read as a wall of 12 lines: a row each."""
    folder, record = smoke_run
    page = render_report(record, folder)
    table = re.search(r'<table id="plan-timed">(.*?)</table>', page, re.S)
    assert table and "<br>" not in table.group(1)
    rows = [" ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", r)).split()) for r in re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)]
    timed = [t for s in record.plan.steps for t in s.timed]
    assert len(rows) == 1 + len(timed) > 2
    for t in (t for t in timed if t.allocations):
        a = max(t.allocations, key=lambda x: x.block_s)
        estimate = f"{charts.format_seconds(t.estimate_s)} = {estimate_parts(t.allocations)}"
        assert any(row.endswith(f"{t.label} {t.role} {estimate} {t.cut}") for row in rows), t.label
        assert f"a call (est. {charts.format_seconds(a.call_s)})" in t.cut


def test_the_headline_holds_the_terminals_warnings_in_its_order(tmp_path: Path) -> None:
    """The box held only the unstable summary; `5 speedups unresolved` and `not timed ...` were
    sections lower (walk-through 7, HTML 3): now the terminal's lines under its table, in its
    order, and the unstable measurements by cause last, as the terminal says them last."""
    from rich.text import Text

    from harness.report.terminal import warning_lines

    from .test_run_screen import real

    record = real("busy_run", tmp_path)
    page = render_report(record, tmp_path / "busy_run")
    head = page[page.index('<section id="headline"'):page.index("</section>")]
    warned = [html_lib.unescape(re.sub(r"</?code>", "`", p)) for p in re.findall(r'<p class="warn">(.*?)</p>', head)]
    terminal = [Text.from_markup(line).plain for line in warning_lines(record, report=True)]  # a report's pointers
    assert terminal[0].startswith("not timed, ") and any(" speedups unresolved " in line for line in terminal)  # each kind here
    folded = [html_lib.unescape(item) for item in re.findall(r"<li>(.*?)</li>", head[head.index('class="each"'):])]
    each = [line for line in terminal if line.startswith("unresolved ")]  # folded under their count (walk 20)
    assert [line for line in terminal[:-1] if line not in each] == warned[:-1]
    assert folded[:len(each)] == [line.removeprefix("unresolved ") for line in each]
    assert terminal[-1].startswith("12 of 12 measurements") and warned[-1].startswith("12 of 12 measurements")
