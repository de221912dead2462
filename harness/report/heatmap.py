"""Heatmaps as HTML tables: one coloured cell per value, its number in the cell when there are few
enough to read and in its tooltip always, a colour bar under it. A table costs nothing to draw,
where matplotlib took ~0.3 s a heatmap (nine of them were most of the main job's report), and it
never clips a label: long adapter names wrap in their own column."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from markupsafe import Markup, escape

# viridis at 11 stops (matplotlib's): a perceptually uniform map that stays readable in grey
VIRIDIS = ("#440154", "#482475", "#414487", "#355f8d", "#2a788e", "#21918c", "#22a884", "#44bf70", "#7ad151",
           "#bddf26", "#fde725")
ANNOTATED = 100  # cells: more than this, the numbers are in the tooltips only
NAMED_COLUMNS = 12  # more columns with long names: numbered, the name in the header's tooltip


def _rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)], dtype=float)


STOPS = np.stack([_rgb(c) for c in VIRIDIS])


def colour(share: float) -> str:
    """The viridis colour at `share` in [0, 1], interpolated between its stops."""
    x = min(max(share, 0.0), 1.0) * (len(VIRIDIS) - 1)
    i = min(int(x), len(VIRIDIS) - 2)
    rgb = STOPS[i] + (x - i) * (STOPS[i + 1] - STOPS[i])
    return "#" + "".join(f"{round(v):02x}" for v in rgb)


def _ink(share: float) -> str:
    return "#000" if share > 0.6 else "#fff"  # dark text on viridis' light yellows


def heatmap_table(values: np.ndarray, rows: Sequence[str], cols: Sequence[str], title: str, xlabel: str = "",
                  ylabel: str = "") -> Markup:
    """`values` (rows x cols, NaN: no value) as a table under `title`, `ylabel` over the row
    names, `xlabel` over the column names; many long column names are numbered (as the rows, when
    they are the same names); a constant is one sentence, not a map of one colour."""
    finite = values[np.isfinite(values)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if finite.size == values.size > 1 and low == high:  # one flat colour says less than the number
        return Markup(f'<p class="heatmap"><b>{escape(title)}</b>: {low:.4g} for every {escape(ylabel or "row")} '
                      f'and {escape(xlabel or "column")} ({len(rows)} x {len(cols)}): nothing to map</p>')
    span = high - low or 1.0
    annotate = values.size <= ANNOTATED
    numbered = len(cols) > NAMED_COLUMNS and max(map(len, cols)) > 3  # 38 adapter names: a header past 1280 px
    head = "".join(f'<th title="{escape(c)}">{i}</th>' if numbered else f"<th>{escape(c)}</th>"
                   for i, c in enumerate(cols))
    if numbered and list(rows) == list(cols):
        rows = [f"{i} {name}" for i, name in enumerate(rows)]
    body = []
    for name, line in zip(rows, values):
        cells = []
        for col, v in zip(cols, line):
            if not np.isfinite(v):
                cells.append('<td class="hm-none" title="no value"></td>')
                continue
            share = (float(v) - low) / span
            tip = escape(f"{name}, {xlabel or 'column'} {col}: {v:.4g}")
            text = f"{v:.2g}" if annotate else ""
            cells.append(f'<td style="background:{colour(share)};color:{_ink(share)}" title="{tip}">{text}</td>')
        body.append(f"<tr><th>{escape(name)}</th>{''.join(cells)}</tr>")
    bar = "".join(f'<span style="background:{c}"></span>' for c in VIRIDIS)
    return Markup(
        f'<figure class="heatmap"><figcaption>{escape(title)}</figcaption>'
        f'<div class="scroll"><table><tr><th class="hm-axis">{escape(ylabel)} \\ {escape(xlabel)}</th>{head}</tr>'
        f'{"".join(body)}</table></div>'
        f'<div class="hm-bar">{low:.3g} {bar} {high:.3g}</div></figure>')
