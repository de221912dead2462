"""Walk 20's compare of two runs, B having pooled A's rounds and timed a few of its own (one on some
groups: too few rounds there), every group measured while busy: the chart's caption spoke of a grey
square beside hollow grey circles and a legend's filled one; at 100 columns the table kept B's median
and dropped A's; the notes under the table ran to nested parentheses and `;` chains."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
from matplotlib.colors import to_hex
from matplotlib.lines import Line2D
from rich.console import Console

from harness.record.run_record import RunRecord
from harness.report import ratio_chart
from harness.report.compare import Comparison, compare_records
from harness.report.compare_view import TIME_A, TIME_B, compare_table, table_notes
from harness.report.html import write_compare

from .test_run_screen import draw, real


def _walk20(tmp_path: Path) -> Comparison:
    """A: the main job's record; B: its rounds pooled, then rounds of its own 30% slower, one on every
    third group and three on the rest."""
    a: RunRecord = real("main_job", tmp_path)
    b = a.model_copy(deep=True)
    for i, g in enumerate(g for an in b.analyses for t in an.timings for g in t.groups):
        own = [g.rounds[0].replace("2026", f"2027-{j}") for j in range(1 if i % 3 == 0 else 3)]
        g.rounds, g.pooled = g.rounds + own, len(g.rounds)
        base = float(np.median(g.measurement.samples_s))
        g.measurement.samples_s = g.measurement.samples_s + [base * (1.25 + 0.05 * j) for j in range(len(own))]
        g.measurement.median_s = float(np.median(g.measurement.samples_s))
    c = compare_records(a, b, ("runs/a", "runs/b"))
    assert any(r.change == "too few rounds" for r in c.rows) and any(r.ratio_ci for r in c.rows)
    assert all(r.unstable for r in c.rows)  # the main job ran busy: every point hollow, as walk 20's
    return c


def _look(line: Line2D) -> tuple[str, str, str]:
    """A marker as drawn: its shape, its fill and its edge."""
    return str(line.get_marker()), to_hex(line.get_markerfacecolor()), to_hex(line.get_markeredgecolor())


def test_the_legend_draws_each_kind_of_point_as_the_chart_does_and_the_caption_names_it(tmp_path: Path) -> None:
    c = _walk20(tmp_path)
    ax = ratio_chart.ratio_figure(c).axes[0]
    drawn = {_look(line) for line in ax.lines if line.get_marker() in ("o", "s", "D")}
    legend = ax.get_legend()
    assert legend is not None
    entries = {_look(h): t.get_text() for h, t in zip(legend.legend_handles, legend.get_texts()) if isinstance(h, Line2D)}
    assert set(entries) == drawn  # no entry drawn otherwise than its points, none missing
    assert all(fill == "#ffffff" for _, fill, _ in drawn)  # hollow: unstable
    page = html.unescape(write_compare([c], tmp_path / "c.html").read_text())
    caption = re.search(r'<p class="muted">(B / A per matrix on a log scale.*?)</p>', page, re.S)
    assert caption is not None
    for kind in ratio_chart.point_kinds(c):
        assert f"{kind.described}: {kind.label}." in caption[1] and kind.label in entries.values()
    assert "Hollow grey circle, no bar: too few rounds for the test, unstable." in caption[1]
    assert "square" not in caption[1]  # no row too wide: none drawn


def test_the_medians_leave_together_and_the_note_names_both(tmp_path: Path) -> None:
    fitted = compare_table(_walk20(tmp_path))
    console = Console(width=200, force_terminal=True)
    shown = {w: {str(col.header) for col in fitted.fit(console, w).columns} for w in (100, 160)}
    assert {TIME_A, TIME_B} <= shown[160] and not {TIME_A, TIME_B} & shown[100]
    narrow, wide = draw([fitted], 100)[0], draw([fitted], 160)[0]
    assert re.search(r"\(left out at this width: A median, B median; (\d+) columns show them \(COLUMNS=\1\)\)", narrow)
    assert "left out" not in wide and re.search(r"A median +B median", wide)


def test_the_notes_under_the_table_are_short_sentences(tmp_path: Path) -> None:
    """Each note is sentences: none over 20 words once the rows it names are set aside, no parentheses
    within parentheses, no `;` chains."""
    c = _walk20(tmp_path)
    notes = [line for _, line in table_notes(c)]
    assert len(notes) == 2 and notes[0].startswith("≠ marks ") and notes[1].startswith("rounds A, B: each row's own")
    for note in notes:
        depth = 0
        for ch in note:
            depth += {"(": 1, ")": -1}.get(ch, 0)
            assert depth <= 1, note
        bare = re.sub(r" \([^)]*\)", "", note)
        for label in sorted((r.label for r in c.rows), key=len, reverse=True):
            bare = bare.replace(label, "ROW")
        assert ";" not in bare, note
        for sentence in bare.split(". "):
            assert len(sentence.split()) <= 20, sentence
