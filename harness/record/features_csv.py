"""The tidy feature table: one FeatureRow per (analysis, adapter, layer, module, metric), and
features.csv built from CSV bodies so analyses and cached steps join under one header."""

from __future__ import annotations

import csv
import io
import operator
import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from harness.base.atomic import write_atomic


class FeatureRow(BaseModel):
    """One row of the tidy feature table; other_adapter is set for pairwise metrics only."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    analysis: str
    adapter: str
    other_adapter: str | None = None
    layer: int | None
    module: str
    metric: str
    value: float


CSV_COLUMNS: tuple[str, ...] = tuple(FeatureRow.model_fields)


class Row(NamedTuple):
    """A row as the harness makes it: FeatureRow's fields (tests/compute/test_feature_rows.py
    holds them equal), in column order, as a plain tuple. Its values come from our own code, so
    nothing needs validating (FeatureRow validates rows read back from a file): ~0.3 against 7
    microseconds a row, for the ~10^5 rows of a large analysis."""

    analysis: str
    adapter: str
    other_adapter: str | None
    layer: int | None
    module: str
    metric: str
    value: float


_row_values = operator.attrgetter(*CSV_COLUMNS)


def csv_rows(rows: Iterable[Row | FeatureRow]) -> str:
    """The rows as CSV lines without the header (None as empty, floats as repr), so the lines of
    several analyses, or of a cache, can be joined under one header."""
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(row if isinstance(row, tuple) else _row_values(row) for row in rows)
    return text.getvalue()


def write_features_csv(bodies: Iterable[str], path: str | os.PathLike[str]) -> Path:
    """features.csv from `csv_rows` bodies under one header (CSV_COLUMNS), atomically."""
    path = Path(path)
    header = ",".join(CSV_COLUMNS) + "\n"
    write_atomic(path, lambda fh: fh.write((header + "".join(bodies)).encode()))
    return path
