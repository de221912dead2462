"""Tables drawn at the width they get without splitting a value: a cell made with `value()`
("415.1 ms !", "0.90x (0.49-1.67) ?") is never broken across lines, the others (names, headers)
wrap between words; what does not fit is shortened or leaves, optional columns first, and the caption
says so. (Lines of text wrap in harness.base.lines.)"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator, Mapping

from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Column, Table
from rich.text import Text

from harness.base.lines import wrapped_text, wraps

UNBOUNDED = 1 << 20


@dataclasses.dataclass(frozen=True)
class Fitted:
    """A table drawn at the width it gets: while its narrowest layout (every value whole, every
    other column as wide as its longest word) is wider than the terminal, the optional columns
    go, in the order given, and the caption says which (`note` off: only where a value, not the
    width, cost a column). Rich alone would fold "strategy" into
    "strate/gy" and "~120.2 ms" into "~120.2 / ms" at 100 columns. An optional column with `short`
    cells is drawn with them before it leaves. A footnote (column, line) is under the table while
    its column is drawn: it explains a mark in that column's cells. An optional entry that is a tuple
    of columns leaves as one: a pair such as A's and B's medians is drawn whole or not at all."""

    table: Table
    # columns that may leave, in order; a tuple's columns together (walk 20: `B median` drawn without `A median`)
    optional: tuple[str | tuple[str, ...], ...] = ()
    # the caption names what the width left out; off, only where the values left out a column the
    # width holds at the floors (walk 9: `3+6 resumed` widened rounds and `dtype` left unsaid)
    note: bool = True
    elsewhere: str = ""  # where else the columns left out are shown, beside a wider terminal
    footnotes: tuple[tuple[str, str], ...] = ()
    # the caption of the table as drawn, given the columns the width left out: it explains only what is shown
    explain: Callable[[tuple[str, ...]], str] | None = None
    # a column's width is never under its floor: what a width shows then hangs on the width, not on
    # the values one run happened to give (a 100-column terminal drew a run with the compute total
    # and the next run of the same spec without it, two characters apart)
    floors: Mapping[str, int] = dataclasses.field(default_factory=dict)
    # a column's cells where its own do not fit, said in the caption (walk 12: the plan's batch cell
    # `3072x768r16:1064, 768x3072r16:1064` wrapped under itself at 100 columns)
    short: Mapping[str, tuple[Text, ...]] = dataclasses.field(default_factory=dict)
    # floors the optional columns leave for, where the other columns hold them, else given up (walk 12:
    # `cache ls` wrapped what an entry holds mid-phrase beside columns that could have left for it)
    wants: Mapping[str, int] = dataclasses.field(default_factory=dict)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        """The table's lines without the blanks that pad them to its width (a copied or piped table
        carried 100 trailing spaces on its blank rows), then its caption wrapped at the terminal's
        width, not the table's (a 153-column table wrapped its notes at 153 in a 160-column terminal),
        or in a pipe without COLUMNS each whole (print it with `print_shown`, which does not crop them)."""
        table = copy.copy(self.fit(console, options.max_width))
        caption, table.caption = table.caption, None
        note = Text.from_markup(str(caption)) if caption else Text()
        wrap = wraps(console)  # a pipe without COLUMNS keeps each note whole, as every line, for `grep`
        drawn: list[Table | Text] = [table, wrapped_text(note, options.max_width)] if wrap and caption else [table]
        for line in (line for part in drawn for line in console.render_lines(part, options, pad=False)):
            yield from _trimmed(line)
            yield Segment.line()
        for whole in ([] if wrap or not caption else note.split("\n")):
            yield from _trimmed(list(whole.render(console)))
            yield Segment.line()

    def fit(self, console: Console, width: int) -> Table:
        """The table as drawn `width` columns wide: fewer columns, fixed widths."""
        floors = self._floors(console, width)
        table, left_out, shortened = self._shed(console, width, least_width, floors)
        table = copy.copy(table)
        table.columns = _laid_out(console, table, width, floors)
        shortened += [str(c.header) for c in table.columns if _cut(console, c)]
        notes = [line for column, line in self.footnotes if column not in left_out]
        if shortened and self.note:
            notes.append(self._elsewhere(console, "shortened", shortened, " whole"))
        if left_out and (self.note or left_out != self._shed(console, width, floored_width, floors)[1]):
            notes.append(self._elsewhere(console, "left out", left_out))
        caption = self.explain(tuple(left_out)) if self.explain is not None else table.caption
        table.caption = "\n".join([*([str(caption)] if caption else []), *notes]) or None
        return table

    def _floors(self, console: Console, width: int) -> Mapping[str, int]:
        """The floors, with the wanted ones where the columns that never leave hold them at `width`."""
        wanted = {**self.floors, **self.wants}
        kept = copy.copy(self.table)
        kept.columns = [c for c in kept.columns if c.header not in self._optional_names]
        return wanted if self.wants and least_width(console, kept, wanted) <= width else self.floors

    def _shed(self, console: Console, width: int, measure: Callable[[Console, Table, Mapping[str, int]], int],
              floors: Mapping[str, int]) -> tuple[Table, list[str], list[str]]:
        """The table less the optional columns that leave, in order, until it `measure`s within
        `width`, each first drawn with its short cells where it has them; (table, left out, shortened)."""
        table, left_out, shortened = self.table, [], []  # type: tuple[Table, list[str], list[str]]
        for entry in self.optional:
            if measure(console, table, floors) <= width:
                break
            table = copy.copy(table)
            names = (entry,) if isinstance(entry, str) else entry
            short = [name for name in names if name in self.short]
            if short:
                table.columns = [_with_cells(c, self.short[str(c.header)]) if c.header in short else c
                                 for c in table.columns]
                if measure(console, table, floors) <= width:
                    shortened += short
                    break
            table.columns = [c for c in table.columns if c.header not in names]
            left_out += names
        return table, left_out, shortened

    @property
    def _optional_names(self) -> set[str]:
        """Every optional column's name, those of a tuple each."""
        return {name for entry in self.optional for name in ((entry,) if isinstance(entry, str) else entry)}

    def _elsewhere(self, console: Console, done: str, names: list[str], whole: str = "") -> str:
        """The caption's note on the columns the width left out (or shortened) and the width that shows them, one
        wording in a terminal and a pipe (walk 22 met `a wider terminal shows them` and `COLUMNS=109 shows them`)."""
        them = "them" if len(names) > 1 else "it"
        full = {str(c.header): _spans(console, c)[1] for c in self.table.columns if _cuts(c)}
        width = least_width(console, self.table, {**self.floors, **self.wants, **full})
        return f"({done} at this width: {', '.join(names)}; {width} columns show {them}{whole} (COLUMNS={width}){self.elsewhere})"


def _with_cells(column: Column, cells: tuple[Text, ...]) -> Column:
    column = copy.copy(column)
    column._cells = list(cells)
    return column


def _cuts(column: Column) -> bool:
    """Whether rich cuts the column's cells wider than it with `…`, each on one line."""
    return bool(column.no_wrap and column.overflow == "ellipsis")


def _cut(console: Console, column: Column) -> bool:
    """Whether rich draws some cell of a laid-out column cut."""
    return _cuts(column) and column.width is not None and _spans(console, column)[1] > column.width


def _trimmed(line: list[Segment]) -> list[Segment]:
    """A drawn line less its trailing blanks (unstyled ones: a coloured blank is drawn)."""
    while line and not line[-1].control and not (line[-1].style and line[-1].style.bgcolor):
        text = line[-1].text.rstrip(" ")
        if text:
            return [*line[:-1], Segment(text, line[-1].style)]
        line = line[:-1]
    return line


def _spans(console: Console, column: Column, floor: int = 0, cells: bool = True) -> tuple[int, int]:
    """(least, most) width of a column (its header alone without `cells`): a value is never narrower
    than itself, a header or a name may wrap between words; neither is under the column's floor."""
    unbounded = console.options.update_width(UNBOUNDED)  # rich clamps a measurement to the width given
    spans = [(Measurement.get(console, unbounded, cell), is_value(cell))
             for cell in [column.header, *(column._cells if cells else ())]]
    least = max(floor, *(m.maximum if whole else m.minimum for m, whole in spans))
    return least, max(least, *(m.maximum for m, _ in spans))


def rule_table(*headers: str, **options: Any) -> Table:
    """The CLI's one table style: a rule under the header, no borders, one space between columns
    (a sweep's tables were drawn in rich's default boxes, unlike every other table)."""
    return Table(*headers, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0),
                 title_justify="left", caption_justify="left", **options)


def value(markup: str) -> Text:
    """A cell that is one value: drawn whole, on one line, whatever the table's width."""
    text = Text.from_markup(markup)
    text.no_wrap = True
    return text


def is_value(cell: object) -> bool:
    return isinstance(cell, Text) and bool(cell.no_wrap)


def _chrome(table: Table) -> int:
    """Columns of a row that are not cells' text: each cell's padding, and the borders the box
    draws (rich's own accounting, so that a laid-out table is exactly as wide as computed)."""
    return table._extra_width + sum(table._get_padding_width(i) for i in range(len(table.columns)))


def least_width(console: Console, table: Table, floors: Mapping[str, int]) -> int:
    return _chrome(table) + sum(_spans(console, c, floors.get(str(c.header), 0))[0] for c in table.columns)


def floored_width(console: Console, table: Table, floors: Mapping[str, int]) -> int:
    """least_width with each floored column at its floor (or its header's longest word): the width
    the table needs where no value is wider than its column's values commonly are."""
    return _chrome(table) + sum(_spans(console, c, floors[str(c.header)], cells=False)[0] if str(c.header) in floors
                                else _spans(console, c)[0] for c in table.columns)


def _laid_out(console: Console, table: Table, width: int, floors: Mapping[str, int]) -> list[Column]:
    """Columns of fixed widths: each its least, and what the width leaves shared max-min fairly
    (a column that wants little more gets it whole; the rest share what is left). Rich narrows the
    widest columns first when a table is too wide, which splits words even where they would fit."""
    spans = [_spans(console, c, floors.get(str(c.header), 0)) for c in table.columns]
    spare = max(0, width - _chrome(table) - sum(least for least, _ in spans))
    wants = [most - least for least, most in spans]
    extra = [0] * len(spans)
    order = sorted(range(len(spans)), key=lambda i: wants[i])  # max-min fair: modest columns whole
    for left, i in enumerate(order):
        extra[i] = min(wants[i], spare // (len(order) - left))
        spare -= extra[i]
    laid = []
    for i, (column, (least, _), more) in enumerate(zip(table.columns, spans, extra, strict=True)):
        column = copy.copy(column)
        column.width = least + more
        column._index = i  # rich pads by position: the edge column is the last one left, not the last made
        laid.append(column)
    return laid
