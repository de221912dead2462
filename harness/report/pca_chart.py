"""The PCA scatter: adapters on the first two principal components, each name placed beside its
point where it covers no point and no other name (a pure figure builder, like charts)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from harness.report.charts import SAMPLE, _figure, literal, set_title, to_svg

MARKER_SIZE = 18  # points squared, as scatter takes it
# where a name may go, in points from its point, with the alignment that keeps it clear of it
PLACES: tuple[tuple[int, int, Literal["left", "right"], Literal["bottom", "top", "center"]], ...] = (
    (4, 4, "left", "bottom"), (-4, 4, "right", "bottom"), (4, -4, "left", "top"),
    (-4, -4, "right", "top"), (6, 0, "left", "center"), (-6, 0, "right", "center"))


@literal
def pca_figure(scores: np.ndarray, labels: Sequence[str], ratio: np.ndarray | None, title: str) -> Figure:
    """Adapters on the first two principal components (the second is 0 if there is one). A name
    that fits nowhere beside its point is left out, and the title says how many: in a cluster
    every name covered its neighbours' points (adapter00 and adapter32 over the origin's)."""
    x = scores[:, 0]
    y = scores[:, 1] if scores.shape[1] > 1 else np.zeros_like(x)
    fig = _figure(4.5, 3.5)
    ax = fig.subplots()
    ax.scatter(x, y, s=MARKER_SIZE, color=SAMPLE)
    pct = [f" ({100 * r:.0f}%)" for r in ratio[:2]] if ratio is not None and len(ratio) >= 2 else ["", ""]
    ax.set_xlabel("PC1" + pct[0])
    ax.set_ylabel("PC2" + pct[1])
    set_title(ax, title)
    centre = np.median(np.column_stack([x, y]), axis=0)
    order = np.argsort(-np.hypot(x - centre[0], y - centre[1]), kind="stable")  # outliers first: they have room
    names = [ax.annotate(labels[i], (x[i], y[i]), xytext=(4, 4), textcoords="offset points", fontsize=7,
                         in_layout=False) for i in order]
    left = 0
    for _ in range(2):  # once more when the title's second line moved the axes
        fig.set_layout_engine("constrained")
        fig.draw_without_rendering()  # the layout settles here; then the names are placed in it
        fig.set_layout_engine("none")
        for name in names:
            name.set_visible(True)
        left = _place(fig, names, ax.transData.transform(np.column_stack([x, y])), ax.get_window_extent())
        if not left:
            break
        set_title(ax, f"{title}\n({left} of {len(labels)} names left out where points crowd)")
    return fig


def _place(fig: Figure, names: Sequence[Text], points: np.ndarray, inside: Bbox) -> int:
    """Put each name at the first of PLACES where it covers no point, no name placed before it,
    and stays in the axes; hide it where there is none. The number hidden."""
    r = np.sqrt(MARKER_SIZE) / 2 * fig.dpi / 72 + 1  # a marker's radius in pixels, and a pixel to spare
    marks = [Bbox.from_extents(px - r, py - r, px + r, py + r) for px, py in points]
    kept: list[Bbox] = []
    for name in names:
        for dx, dy, ha, va in PLACES:
            name.set_position((dx, dy))
            name.set_horizontalalignment(ha)
            name.set_verticalalignment(va)
            box = name.get_window_extent()
            if (inside.contains(box.x0, box.y0) and inside.contains(box.x1, box.y1)
                    and not any(box.overlaps(b) for b in marks + kept)):
                kept.append(box)
                break
        else:
            name.set_visible(False)
    return len(names) - len(kept)


def pca_scatter(scores: np.ndarray, labels: Sequence[str], ratio: np.ndarray | None, title: str) -> str:
    return to_svg(pca_figure(scores, labels, ratio, title))
