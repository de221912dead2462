"""The speedup chart's labels stay inside its axes, whatever side of 1 each speedup falls: a
slower strategy's "0.82x ?" was drawn across the left axis line, and the last tick label "10000"
cut at the figure's edge (issue 48's walk-through, HTML 2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from harness.record.run_record import RunRecord, load_record
from harness.report import charts


@pytest.mark.parametrize("speedups", [
    [(0.82, (0.41, 1.64)), (1661.0, (1094.0, 2520.0)), (2.08, (1.37, 3.16))],  # the main job's spectrum, one slower
    [(0.036, (0.02, 0.06)), (202.0, (127.0, 319.0)), (0.19, (0.12, 0.31))],  # top3: two far below 1
    [(0.5, (0.45, 0.55)), (0.6, (0.2, 1.8)), (0.7, (0.69, 0.71))],  # all slower
])
def test_every_speedup_label_is_inside_the_axes(smoke_run: tuple[Path, RunRecord],
                                                speedups: list[tuple[float, tuple[float, float]]]) -> None:
    record = smoke_run[1].model_copy(deep=True)
    a = next(a for a in record.analyses if len(a.timings) > 3)
    for t, (sp, ci) in zip((t for t in a.timings if t.role != "baseline"), speedups):
        t.speedup, t.speedup_ci, t.unresolved = sp, ci, True
    fig = charts.timing_figure(a)
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    ax = fig.axes[1]
    box = ax.get_window_extent(renderer)
    labels = [text for text in ax.texts if text.get_text().endswith("x ?")]
    assert len(labels) == len(speedups)
    for text in labels:
        extent = text.get_window_extent(renderer)
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1, (text.get_text(), extent, box)
    figure = fig.bbox
    for tick in ax.get_xticklabels():
        if tick.get_visible() and tick.get_text():
            extent = tick.get_window_extent(renderer)
            assert figure.x0 <= extent.x0 and extent.x1 <= figure.x1, tick.get_text()


def test_an_interval_too_wide_to_read_is_not_drawn(smoke_run: tuple[Path, RunRecord]) -> None:
    """Walk 11: a `(too wide)` speedup drew its interval, an axis of 1e-10 to 1e5 beside the note
    "neither end is a figure"; the label says what the tables say."""
    record = smoke_run[1].model_copy(deep=True)
    a = next(a for a in record.analyses if len(a.timings) > 3)
    t = next(t for t in a.timings if t.role != "baseline")
    t.speedup, t.speedup_ci, t.unresolved = 0.486, (1e-9, 2e8), True
    ax = charts.timing_figure(a).axes[1]
    assert ax.get_xlim()[0] > 1e-3 and ax.get_xlim()[1] < 1e6
    assert any(text.get_text() == "0.486x (too wide) ?" for text in ax.texts)


def test_the_two_axes_tick_labels_never_meet_between_them(smoke_run: tuple[Path, RunRecord]) -> None:
    """A busy CI run's smoke report drew the time axis' last tick "10 ms" over the speedup axis'
    first "1e-4": the axes stood 5% of an axis apart. Ticks are drawn up to an axis' edge, so the
    gap holds the half of the widest label each side: set at both inner edges, they do not meet."""
    for a in smoke_run[1].analyses:
        if not any(t.speedup is not None for t in a.timings):
            continue
        fig = charts.timing_figure(a)
        ax_t, ax_s = fig.axes[:2]
        ax_t.set_xticks([ax_t.get_xlim()[1]], ["500 µs"])
        ax_s.set_xticks([ax_s.get_xlim()[0]], ["0.0001"])
        renderer = FigureCanvasAgg(fig).get_renderer()
        fig.draw(renderer)
        (left,), (right,) = ([t.get_window_extent(renderer) for t in ax.get_xticklabels()] for ax in (ax_t, ax_s))
        assert left.x1 < right.x0, (a.name, left, right)


def test_every_sample_dot_is_drawn_over_its_bar_and_outlined(smoke_run: tuple[Path, RunRecord]) -> None:
    """Walk 12: dual_gram's one sample (n=1) sat under its median bar, a bar with no dot beside it."""
    for a in smoke_run[1].analyses:
        ax = charts.timing_figure(a).axes[0]
        dots, bars = ax.collections, ax.lines
        assert dots and bars and min(d.get_zorder() for d in dots) > max(b.get_zorder() for b in bars), a.name
        assert all(min(d.get_linewidths()) > 0 for d in dots), a.name  # seen on the dark bar


def test_a_lone_sample_shows_as_a_dot_either_side_of_its_bar() -> None:
    """Walk 13: at 1280 px an n=1 row's dot was a 1-pixel speck on its bar (3 pt across on a 1.5 pt
    bar). Drawn as the page shows it (96 px an inch), the row through each dot holds its colour
    past the bar's edge on both sides."""
    record = load_record(Path(__file__).parent / "records" / "main_job.json")
    a = next(a for a in record.analyses if a.name == "geometry")
    for t in a.timings:  # one sample each, at the bar (the table's per matrix)
        t.groups = t.groups[:1]
        m = t.groups[0].measurement
        m.samples_s, m.median_s = m.samples_s[:1], m.samples_s[0]
    fig = charts.timing_figure(a)
    fig.set_dpi(96)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    pixels = np.asarray(canvas.buffer_rgba())[:, :, :3].astype(int)
    ax = fig.axes[0]
    assert len(ax.collections) == len(ax.lines) == len(a.timings)
    for dots, bar, t in zip(ax.collections, ax.lines, a.timings):
        (x, y), = ax.transData.transform(dots.get_offsets())
        assert x == pytest.approx(ax.transData.transform((bar.get_xdata()[0], 0))[0])  # n=1: the dot is on the bar
        half = bar.get_linewidth() * 96 / 72 / 2 + 0.5  # the bar's pixels, a partly covered one included
        row = pixels[pixels.shape[0] - round(y), :, :]
        off = np.arange(len(row)) - x
        blue = (row[:, 2] - row[:, 0] > 30) & (np.abs(off) < 10)  # the sample colour, blended, near the dot
        left, right = int(np.sum(blue & (off < -half))), int(np.sum(blue & (off > half)))
        assert left >= 1 and right >= 1 and left + right >= 3, (t.label, left, right)
