"""The report's roofline chart: one marker per timed shape group, the measured roofs at the right
heights, readable log axes, and the notes for records without roofs or without flop counts."""

from __future__ import annotations

import html as html_lib
from pathlib import Path

import pytest
from matplotlib.axis import Axis
from matplotlib.collections import LineCollection, PathCollection

from harness.machine.roofline import Roof
from harness.report import roofline_chart
from harness.report.html import REPORT, write_report
from harness.report.labels import peak_share
from harness.record.run_record import RunRecord, save_record
from harness.base.units import format_rate, format_share

from .test_html import copy_run

CALIBRATED = "2026-11-23T00:00:00+00:00"


def cpu_roof() -> Roof:
    return Roof(device="cpu", gemm_gflops={"float32": 50.0, "float64": 25.0}, bandwidth_gbs=10.0, threads=2,
                libraries=["numpy"], measured=CALIBRATED, by="harness calibrate")


def cuda_roof() -> Roof:
    return Roof(device="cuda", gemm_gflops={"float32": 5000.0, "float64": 100.0}, bandwidth_gbs=1000.0,
                libraries=["torch"], measured=CALIBRATED, by="harness calibrate")


def report_of(record: RunRecord, run: Path, tmp_path: Path) -> str:
    """The report of `record` written from a copy of the smoke run folder, as `harness report` would."""
    folder = copy_run(run, tmp_path)
    save_record(record, folder)
    return write_report(folder).read_text()


def roofline_section(page: str) -> str:
    start = page.index('<h2 id="roofline">')
    return page[start:page.index("<h2", start + 1)]


def visible_labels(axis: Axis) -> list[str]:
    """The non-empty tick labels, major and minor, inside the axis's view."""
    lo, hi = sorted(axis.get_view_interval())
    labels = []
    for locs, formatter in ((axis.get_majorticklocs(), axis.get_major_formatter()),
                            (axis.get_minorticklocs(), axis.get_minor_formatter())):
        labels += [s for s in formatter.format_ticks([x for x in locs if lo <= x <= hi]) if s]
    return labels


def test_roof_polyline_meets_at_the_ridge() -> None:
    roof = cpu_roof()
    assert roofline_chart.roof_polyline(roof, "float32", 1.0, 100.0) == ([1.0, 5.0, 100.0], [10.0, 50.0, 50.0])
    assert roofline_chart.roof_polyline(roof, "float64", 1.0, 100.0) == ([1.0, 2.5, 100.0], [10.0, 25.0, 25.0])
    assert roofline_chart.roof_polyline(roof, "float32", 10.0, 100.0) == ([10.0, 100.0], [50.0, 50.0])  # all compute
    assert roofline_chart.roof_polyline(roof, "float16", 1.0, 100.0) is None
    assert roofline_chart.roof_label(roof, "float32") == "cpu: 50.0 GFLOP/s float32 peak, 10.0 GB/s"


def test_one_marker_per_timed_group_and_roofs_at_their_heights(smoke_run: tuple[Path, RunRecord]) -> None:
    record = smoke_run[1].model_copy(deep=True)
    record.analyses[0].timings[-1].device = "cuda"  # held against the cuda roof, the rest against the cpu's
    roofs = {"cpu": cpu_roof(), "cuda": cuda_roof()}
    points = roofline_chart.roofline_points(record)
    groups = [g for a in record.analyses for t in a.timings for g in t.groups if g.flops]
    assert len(points) == len(groups) > 0
    assert {p.device for p in points} == {"cpu", "cuda"}
    fig = roofline_chart.roofline_figure(points, roofs, "float32")
    ax = fig.axes[0]
    markers = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert sum(len(c.get_offsets()) for c in markers) == len(points)
    lines = {line.get_label(): line for line in ax.get_lines()}
    for roof in roofs.values():
        line = lines[roofline_chart.roof_label(roof, "float32")]
        for x, y in zip(line.get_xdata(), line.get_ydata()):
            assert y == pytest.approx(min(roof.gemm_gflops["float32"], roof.bandwidth_gbs * x))
    # every point's dotted headroom line ends on its own device's roof
    ceilings = {(p.intensity, p.gflops): roofs[p.device].ceiling(p.intensity, "float32") for p in points}
    segments = [s for c in ax.collections if isinstance(c, LineCollection) for s in c.get_segments()]
    assert len(segments) == len(points)
    for (x, y), (_, top) in segments:
        assert top == pytest.approx(ceilings[(x, y)])
    assert "cuda: 5,000 GFLOP/s float32 peak, 1,000 GB/s" in roofline_chart.roofline_chart(points, roofs, "float32")


def test_log_axes_are_labelled_even_over_less_than_a_decade(smoke_run: tuple[Path, RunRecord]) -> None:
    point = roofline_chart.roofline_points(smoke_run[1])[0]
    for roofs in ({}, {"cpu": cpu_roof()}):
        fig = roofline_chart.roofline_figure([point], roofs, "float32")
        fig.draw_without_rendering()
        ax = fig.axes[0]
        assert visible_labels(ax.xaxis) and visible_labels(ax.yaxis)
        assert "flops per byte" in ax.get_xlabel() and "GFLOP/s" in ax.get_ylabel()


def test_report_with_roofs(smoke_run: tuple[Path, RunRecord], tmp_path: Path) -> None:
    run, record = smoke_run
    record = record.model_copy(deep=True)
    record.roofs = {"cpu": cpu_roof(), "cuda": cuda_roof()}  # torch's timings run on CUDA where there is one
    page = report_of(record, run, tmp_path)
    section = roofline_section(page)
    assert "<svg" in section and "memory-bound" in section and "room left" in section
    assert "cpu: 50.0 GFLOP/s float32 peak, 10.0 GB/s (harness calibrate, 2026-11-23, 2 threads)" in section
    assert "No roofs were measured" not in page
    assert "<th>GFLOP/s</th><th>% of peak</th>" in page
    text = html_lib.unescape(page)
    for t in (t for a in record.analyses for t in a.timings):
        share = peak_share(record, t)
        assert share is not None and f">{format_share(share)}<" in text
        assert t.gflops_per_s is not None and f">{format_rate(t.gflops_per_s)}<" in text


def test_report_without_roofs_draws_the_points_and_says_so(smoke_run: tuple[Path, RunRecord], tmp_path: Path) -> None:
    run, record = smoke_run
    record = record.model_copy(deep=True)
    record.roofs = {}
    section = roofline_section(report_of(record, run, tmp_path))
    assert "<svg" in section
    assert "No roofs were measured" in section and "<code>harness calibrate</code>" in section
    assert "no roofs measured: run `harness calibrate`" in html_lib.unescape(section)  # the figure's title


def test_report_without_flops_leaves_the_chart_out(smoke_run: tuple[Path, RunRecord], tmp_path: Path) -> None:
    run, record = smoke_run
    record = record.model_copy(deep=True)
    record.roofs = {"cpu": cpu_roof()}
    for g in (g for a in record.analyses for t in a.timings for g in t.groups):
        g.flops = g.bytes = None
    page = report_of(record, run, tmp_path)
    assert roofline_chart.roofline_points(record) == []
    assert "Roofline, float32" not in page
    assert page.count("No roofline chart: no timing in this record has flop and byte counts") == 1
    assert (tmp_path / "run" / REPORT).exists()


def test_a_point_above_its_roof_is_drawn_hollow_without_headroom(smoke_run: tuple[Path, RunRecord],
                                                                  tmp_path: Path) -> None:
    """The walk-through's roofline drew points above the roof as valid beside a caption saying no
    kernel beats it, while the tables showed their % of peak as -: they are hollow now, without a
    headroom line, and the legend and the caption say why."""
    run, record = smoke_run
    record = record.model_copy(deep=True)
    record.roofs = {"cpu": cpu_roof()}
    t = record.analyses[0].timings[0]
    for g in t.groups:
        g.measurement.median_s = g.flops / 1e9 / 500.0  # 500 GFLOP/s, over a 50 GFLOP/s peak
    assert peak_share(record, t) is None
    points = roofline_chart.roofline_points(record)
    over = [p for p in points if roofline_chart.above_roof(p, record.roofs, "float32")]
    assert over and len(over) < len(points)
    ax = roofline_chart.roofline_figure(points, record.roofs, "float32").axes[0]
    drawn = {(float(x), float(y)): c for c in ax.collections if isinstance(c, PathCollection)
             for x, y in c.get_offsets()}
    for p in points:
        faces = drawn[(p.intensity, p.gflops)].get_facecolors()
        assert (len(faces) == 0 or faces[0][3] == 0) == (p in over)  # hollow: no face
    segments = [s for c in ax.collections if isinstance(c, LineCollection) for s in c.get_segments()]
    assert len(segments) == len(points) - len(over)
    assert roofline_chart.ABOVE_NOTE in [text.get_text() for text in ax.get_legend().get_texts()]
    section = html_lib.unescape(roofline_section(report_of(record, run, tmp_path)))
    assert f"{len(over)} hollow marker" in section and "data fit in cache" in section


def test_the_hollow_markers_are_counted_and_named_by_the_tables_rows(smoke_run: tuple[Path, RunRecord],
                                                                    tmp_path: Path) -> None:
    """Walk 24: "3 hollow markers sit above their roof" beside `>100%` on 2 rows of the tables, one
    strategy's two shape groups: the caption names the strategies and how many groups each has over."""
    run, record = smoke_run
    record = record.model_copy(deep=True)
    record.roofs = {"cpu": cpu_roof()}
    many = next((a, t) for a in record.analyses for t in a.timings if len(t.groups) > 1)
    one = next((a, t) for a in record.analyses for t in a.timings if t is not many[1])
    for g in [*many[1].groups, one[1].groups[0]]:
        g.measurement.median_s = g.flops / 1e9 / 500.0  # 500 GFLOP/s, over a 50 GFLOP/s peak
    count = len(many[1].groups) + 1
    section = html_lib.unescape(roofline_section(report_of(record, run, tmp_path)))
    said = (f"{count} hollow markers (2 strategies: {many[0].name} {many[1].label} on {len(many[1].groups)} shape "
            f"groups, {one[0].name} {one[1].label}) sit above their roof")
    assert said in section


def test_the_roof_charts_names_are_set_as_large_as_the_other_charts_names(tmp_path: Path) -> None:
    """The roofline's legend and the history page's roof chart's rows (`svd/numpy`) were at 7
    points, much smaller than a timing chart's strategies and a trend chart's ticks (walk-through 7)."""
    from harness.report.charts import timing_figure
    from harness.report.history_charts import Trend, roof_figure, trend_figure

    from .test_run_screen import real

    record = real("main_job", tmp_path)
    names = {t.get_fontsize() for t in timing_figure(record.analyses[0]).axes[0].get_yticklabels()}
    roofline = roofline_chart.roofline_figure(roofline_chart.roofline_points(record), record.roofs, "float32")
    legend = roofline.axes[0].get_legend()
    assert legend is not None and {t.get_fontsize() for t in legend.get_texts()} == names
    trend = trend_figure([Trend("torch", "box", {"c1": 2.0})], ["c1"], ["box"], "speedup")
    rows = roof_figure(["svd/numpy", "svd/torch"], ["box"], {("svd/numpy", "box"): 0.02, ("svd/torch", "box"): 0.1})
    assert {t.get_fontsize() for t in rows.axes[0].get_yticklabels()} == names
    assert {t.get_fontsize() for t in trend.axes[0].get_yticklabels()} == names
