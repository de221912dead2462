"""Names in charts come from files (adapters, modules, strategies of a record): drawn as typed,
never parsed as mathtext, where `$\\fakecmd{x}$` crashed matplotlib's label parser (issue 50)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.report.charts import decay_chart
from harness.report.pca_chart import pca_scatter

HOSTILE = ["$\\fakecmd{x}$", "a$b$c", "$x^{", "100$"]


@pytest.mark.parametrize("name", HOSTILE)
def test_an_adapter_name_is_drawn_as_typed(name: str) -> None:
    svg = pca_scatter(np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]]), [name, "b", "c"], np.array([0.6, 0.4]), name)
    assert name.replace("&", "&amp;").replace("<", "&lt;") in svg


@pytest.mark.parametrize("name", HOSTILE)
def test_a_module_name_is_drawn_as_typed(name: str) -> None:
    s = np.array([1.0, 0.5, 0.1])
    svg = decay_chart({name: (s, s * 0.9, s * 1.1)}, f"decay of {name}")
    assert name in svg


def test_pca_names_cover_no_point_and_the_title_counts_those_left_out() -> None:
    """The walk-through's scatter wrote adapter00 and adapter32 over the cluster at the origin: a
    name is drawn only where it covers no point and no other name, and the title says how many
    were left out."""
    from matplotlib.transforms import Bbox

    from harness.report.pca_chart import MARKER_SIZE, pca_figure
    rng = np.random.default_rng(0)
    scores = np.vstack([rng.normal(0.0, 0.3, (30, 2)), [[20.0, 0.0], [0.0, 20.0]]])
    labels = [f"adapter{i:02d}" for i in range(len(scores))]
    fig = pca_figure(scores, labels, np.array([0.03, 0.03]), "geometry")
    ax = fig.axes[0]
    shown = [t for t in ax.texts if t.get_visible()]
    r = np.sqrt(MARKER_SIZE) / 2 * fig.dpi / 72
    marks = [Bbox.from_extents(x - r, y - r, x + r, y + r) for x, y in ax.transData.transform(scores)]
    boxes = [t.get_window_extent() for t in shown]
    assert {"adapter30", "adapter31"} <= {t.get_text() for t in shown}  # the outliers are named
    assert not any(b.overlaps(m) for b in boxes for m in marks)
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    assert ax.get_title().endswith(f"({len(labels) - len(shown)} of {len(labels)} names left out where points crowd)")
