"""The run's numbers as the terminal table, the HTML report and its charts write them: ratios with
their significant digits, the spread as [q1, q3] (n=1 for a single sample), one label per role
everywhere, tick labels on every chart axis, and a Reproduce line that reproduces."""

from __future__ import annotations

import html as html_lib
import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from harness.base.lines import print_shown
from harness.report import charts, roofline_chart
from harness.report.artifacts import decay_bands
from harness.report.html import REPORT, render_report
from harness.bench.series import speedup, workload_totals
from harness.report.labels import COMPUTED_NOTE, ROLES_NOTE, SPREAD_NOTE, strategy_label
from harness.report.terminal import run_table
from harness.record.run_record import AnalysisRecord, RunRecord, StrategyTiming
from harness.base.units import format_seconds

from .test_roofline_chart import visible_labels


def terminal_text(record: RunRecord, explain: bool = True) -> str:
    """The wide run table as `harness run --wide --explain` prints it, without colours, wide
    enough not to fold cells."""
    console = Console(file=io.StringIO(), width=400, record=True, color_system=None)
    print_shown(console, run_table(record, wide=True, explain=explain))  # as the CLI prints it: notes whole
    return console.export_text()


def row_of(text: str, analysis: str, label: str) -> list[str]:
    """The terminal row's cells of `label` (`torch *`) in `analysis`: cells are two spaces or more
    apart, and an analysis is named on its first row only."""
    current = None
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if line.startswith(" "):
            cells = [current or "", *cells]
        else:
            current = cells[0]
        if cells[:2] == [analysis, label]:
            return cells
    raise AssertionError(f"no row {analysis} / {label} in\n{text}")


def html_row(page: str, label: str) -> str:
    """The first HTML table row whose first cell is `label`, tags and whitespace collapsed."""
    for row in re.findall(r"<tr>(.*?)</tr>", page, re.S):
        cells = [html_lib.unescape(c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        if cells and cells[0] == label:
            return " | ".join(cells)
    raise AssertionError(f"no row {label}")


def flat(text: str) -> str:
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", text)).split())


def line(t: StrategyTiming) -> dict[str, float]:
    return workload_totals((g.rounds, g.measurement.samples_s, g.sampled, g.total) for g in t.groups)


def first_timed(record: RunRecord) -> tuple[AnalysisRecord, StrategyTiming]:
    a = next(a for a in record.analyses if len(a.timings) > 1)
    return a, next(t for t in a.timings if t.role != "baseline")


def test_a_tiny_speedup_keeps_its_significant_digits(smoke_run: tuple[Path, RunRecord]) -> None:
    record = smoke_run[1].model_copy(deep=True)
    a, t = first_timed(record)
    baseline = next(b for b in a.timings if b.role == "baseline")
    for g, b in zip(t.groups, baseline.groups):  # three rounds, 909 times slower than the baseline in each
        b.rounds = g.rounds = ["r#a#0", "r#a#1", "r#a#2"]
        b.measurement.samples_s = [1e-3 * f for f in (1.0, 1.02, 0.98)]
        g.measurement.samples_s = [s / g.total * g.sampled / 0.0011 * b.total / b.sampled for s in b.measurement.samples_s]
    t.estimate_total_s = baseline.estimate_total_s / 0.0011
    t.store(speedup(line(baseline), line(t), spread=0.0), 0.1)
    text = terminal_text(record)
    assert t.speedup == pytest.approx(0.0011 / len(t.groups) * len(t.groups))
    assert row_of(text, a.name, strategy_label(a, t.strategy))[7].startswith("0.00110x (0.00104-0.00116)")
    assert " 0.0x" not in text
    page = html_lib.unescape(render_report(record, smoke_run[0]))
    assert "| 0.00110x (0.00104-0.00116) |" in html_row(page, strategy_label(a, t.strategy))


def test_the_spread_is_the_interval_of_quartiles_or_n_1(smoke_run: tuple[Path, RunRecord]) -> None:
    record = smoke_run[1].model_copy(deep=True)
    a, t = first_timed(record)
    single = next(s for s in a.timings if s is not t)
    for g in single.groups:  # timed once per group: no spread to show
        g.measurement.samples_s = g.measurement.samples_s[:1]
    for g in t.groups:  # a known spread: 1, 2, 3, 4, 5 ms per call
        g.measurement.samples_s = [1e-3, 2e-3, 3e-3, 4e-3, 5e-3]
    q1 = sum(2e-3 * g.total / g.sampled for g in t.groups)
    q3 = sum(4e-3 * g.total / g.sampled for g in t.groups)
    assert t.quartile_totals == pytest.approx((q1, q3))
    interval = f"[{format_seconds(q1)}, {format_seconds(q3)}]"

    text = terminal_text(record)  # the terminal shows the speedup's interval instead (test_compare, test_phase)
    words = " ".join(text.split())  # the caption wraps wherever the table's width puts its lines
    assert "[q1, q3]" not in words and "with its 95% interval (low-high)" in words

    page = render_report(record, smoke_run[0])
    assert f"| {interval} |" in html_row(page, strategy_label(a, t.strategy))
    assert "| n=1 |" in html_row(page, strategy_label(a, single.strategy))
    assert "<th>compute total [q1, q3]</th>" in page and SPREAD_NOTE in flat(page)  # it holds the total's quartiles


def test_the_terminal_table_does_not_import_matplotlib() -> None:
    """The quartiles live with the record, so `harness run` without --report stays light."""
    code = ("import sys, harness.report.terminal, harness.report.labels, harness.record.run_record; "
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_one_label_per_role_in_the_terminal_the_html_and_the_charts(smoke_run: tuple[Path, RunRecord]) -> None:
    record = smoke_run[1].model_copy(deep=True)
    a, t = first_timed(record)
    t.role, a.strategy = "compare", t.strategy  # a compared strategy computed the results
    label = f"{t.strategy} *"
    assert strategy_label(a, t.strategy) == label

    assert row_of(terminal_text(record), a.name, label)[2] == "compare"
    page = render_report(record, smoke_run[0])
    section = page[page.index(f'<h2 id="analysis-{a.name}">{a.name} '):]
    assert html_row(section, label).startswith(f"{label} | compare |")
    assert "<b>(chosen)</b>" not in page  # the old marker, which read as a role
    text = flat(page)
    assert ROLES_NOTE in text and f"{COMPUTED_NOTE}. References" in text
    caption = " ".join(terminal_text(record).split())
    assert ROLES_NOTE in caption

    fig = charts.timing_figure(a)
    names = [tick.get_text() for tick in fig.axes[0].get_yticklabels()]
    assert f"{label} (compare)" in names
    assert all(n == f"{strategy_label(a, s.strategy)} ({s.role})" for n, s in zip(names, a.timings))
    assert COMPUTED_NOTE in flat(page[page.index(f'id="analysis-{a.name}"'):])  # below the chart
    points = roofline_chart.roofline_points(record)
    legend = [text.get_text() for text in roofline_chart.roofline_figure(points, {}, "float32").axes[0].get_legend().get_texts()]

    def entry(strategy: str, shown: str) -> str:
        """The legend's label: a point off the host's CPU (torch on CUDA) names its device."""
        device = next(p.device for p in points if p.analysis == a.name and p.strategy == strategy)
        return f"{a.name}: {shown}" + (f" on {device}" if device != "cpu" else "")

    assert entry(t.strategy, label) in legend
    other = next(s.strategy for s in a.timings if s is not t)
    assert entry(other, other) in legend


def test_every_run_chart_has_tick_labels_on_its_axes(smoke_run: tuple[Path, RunRecord]) -> None:
    folder, record = smoke_run
    bands = decay_bands(folder)
    assert "svd_topk" in bands  # two singular values: less than a decade, no labels by default
    for name, band in bands.items():
        fig = charts.decay_figure(band, name)
        fig.draw_without_rendering()
        ax = fig.axes[0]
        assert visible_labels(ax.yaxis), name
        assert visible_labels(ax.xaxis) and ax.get_xlabel() and ax.get_ylabel()
    topk = charts.decay_figure({"up": (np.array([2.0, 1.6]), np.array([1.9, 1.5]), np.array([2.1, 1.7]))}, "k=2")
    topk.draw_without_rendering()
    assert visible_labels(topk.axes[0].yaxis)
    for a in (a for a in record.analyses if a.timings):
        fig = charts.timing_figure(a)
        fig.draw_without_rendering()
        for ax in fig.axes:
            assert visible_labels(ax.xaxis) and ax.get_xlabel(), a.name
        assert [tick.get_text() for tick in fig.axes[0].get_yticklabels()]


def test_the_reproduce_line_is_the_command_that_made_the_run(smoke_run: tuple[Path, RunRecord]) -> None:
    """Without -o: as shown it writes a fresh folder, where `-o` the run's own would be refused."""
    folder, record = smoke_run
    assert record.command.endswith("--report") and str(folder) not in record.command
    page = (folder / REPORT).read_text()
    assert f'<h2 id="reproduce">Reproduce</h2>\n<pre>{html_lib.escape(record.command)}</pre>' in page


@pytest.mark.parametrize("width", [100, 160])
def test_the_run_and_compare_tables_fit_the_terminal_without_splitting_a_speedup(
        smoke_run: tuple[Path, RunRecord], width: int) -> None:
    from harness.report.compare import compare_records
    from harness.report.compare_view import compare_table
    from harness.report.labels import speedup_text

    record = smoke_run[1]
    console = Console(file=io.StringIO(), width=width, record=True, color_system=None)
    console.print(run_table(record, wide=True))
    text = console.export_text()
    assert max(map(len, text.splitlines())) <= width
    for a in record.analyses:  # a cell may wrap between words, never inside one
        for t in a.timings:
            assert all(word in text for word in speedup_text(t).split()), (width, speedup_text(t))
    console = Console(file=io.StringIO(), width=width, record=True, color_system=None)
    console.print(compare_table(compare_records(record, record, ("A", "B"))))
    compared = console.export_text()
    assert max(map(len, compared.splitlines())) <= width
    assert all(word in compared.split() for word in ("too", "few", "rounds"))
