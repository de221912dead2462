"""Every chart title fits its chart: the longest titles the code can produce wrap inside the
figure (the walk-through's spectrum title was cut at the figure's edge, "(exact zeros not draw")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from harness.record.run_record import RunRecord
from harness.report import charts, pca_chart, ratio_chart, roofline_chart
from harness.report.compare import compare_records

LONG = "a_rather_long_analysis_name_from_a_spec"  # names are spec keys: as long as a user writes them


def assert_title_fits(fig: Figure) -> None:
    fig.draw_without_rendering()
    ax = fig.axes[0]
    box, edge = ax.title.get_window_extent(), fig.get_window_extent()
    assert edge.x0 <= box.x0 and box.x1 <= edge.x1 and box.y1 <= edge.y1, (ax.get_title(), box, edge)


def test_the_longest_spectrum_title_wraps_inside_its_figure() -> None:
    s = np.concatenate([np.geomspace(2.0, 0.002, 14), [0.0, 0.0]])  # exact zeros, a band too thin to show
    fig = charts.decay_figure({"mlp_down": (s, s * 0.99, s * 1.01)}, f"{LONG}: singular values")
    assert "zeros not drawn" in fig.axes[0].get_title() and "too thin" in fig.axes[0].get_title()
    assert_title_fits(fig)


def test_pca_roofline_frontier_and_comparison_titles_wrap_inside_their_figures(
        smoke_run: tuple[Path, RunRecord]) -> None:
    scores = np.array([[0.0, 0.0], [0.001, 0.0], [0.0, 0.001], [1.0, 1.0]])  # three crowd: names left out
    assert_title_fits(pca_chart.pca_figure(scores, ["adapter_a", "adapter_b", "adapter_c", "d"], None,
                                           f"{LONG}: adapters on PC1/PC2"))
    point = roofline_chart.roofline_points(smoke_run[1])[0]
    assert_title_fits(roofline_chart.roofline_figure([point], {}, "bfloat16"))
    record = smoke_run[1].model_copy(deep=True)
    a = next(a for a in record.analyses if a.timings)
    a.name = LONG
    assert_title_fits(charts.frontier_figure(record, a))
    folders = (f"runs/{LONG}_before_the_change", f"runs/{LONG}_after_the_change")
    assert_title_fits(ratio_chart.ratio_figure(compare_records(smoke_run[1], smoke_run[1], folders)))


def test_float_noise_past_a_lora_rank_is_not_drawn_as_spectrum() -> None:
    """Walk-through 5: the smoke spectra (rank 4 of 48x32) drew their 1e-7 to 1e-9 float noise past
    index 4 as if it were spectrum, under a title that said zeros were not drawn."""
    s = np.concatenate([[2.0, 1.5, 1.0, 0.5], np.geomspace(3e-7, 1e-9, 28)])
    fig = charts.decay_figure({"w": (s, s, s)}, "svdvals: singular values")
    drawn = fig.axes[0].lines[0].get_ydata()
    assert np.count_nonzero(np.isfinite(drawn)) == 4 and "zeros not drawn" in fig.axes[0].get_title()
    dense = np.geomspace(2.0, 2e-3, 32)  # condition 1e3: every value is spectrum
    assert np.all(np.isfinite(charts.decay_figure({"w": (dense, dense, dense)}, "t").axes[0].lines[0].get_ydata()))
