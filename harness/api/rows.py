"""A run's tidy rows as a notebook shows them: a pandas DataFrame when pandas is installed, else
Rows, a list of dicts (pandas is not a dependency) whose repr is a DataFrame's head."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from typing import Any

from harness.base.lines import wrapped


def columns() -> int:
    """The REPL's width (COLUMNS first, as shutil reads it): a repr wider than it was cut mid-word."""
    return shutil.get_terminal_size((100, 24)).columns


class Rows(list[dict[str, Any]]):
    """Tidy rows without pandas: a list of dicts, shown in a REPL as a DataFrame's head is (the
    count, the columns, the first rows), not as the ~100 KB of dicts a plain list printed; `about`
    says what the rows are beside the count (the samples' pooled ones)."""

    HEAD = 3

    def __init__(self, rows: Iterable[dict[str, Any]] = (), about: str = "") -> None:
        super().__init__(rows)
        self.about = about

    def __repr__(self) -> str:
        width = columns()
        names = list(self[0]) if self else []
        lines = [wrapped(f"{len(self)} rows{self.about} x {len(names)} columns: {', '.join(names)}", width, 4)]
        for row in self[:self.HEAD]:
            text = "  " + ", ".join(f"{k}={v!r}" for k, v in row.items())
            lines.append(text if len(text) <= width else text[:width - 3] + "...")
        if len(self) > self.HEAD:
            lines.append(wrapped(f"  ... {len(self) - self.HEAD} more (a list of dicts; with pandas installed, "
                                 "a DataFrame)", width))
        return "\n".join(lines)


def table(rows: list[dict[str, Any]], about: str = "") -> Any:
    """`rows` as a DataFrame, or as Rows (with `about`) without pandas."""
    try:
        import pandas
    except ImportError:
        return Rows(rows, about)
    return pandas.DataFrame(rows)
