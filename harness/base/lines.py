"""Lines of text (warnings, reasons, verdicts) as every command prints them: wrapped between words
where the reader's width is known (a terminal, or COLUMNS asked for: `COLUMNS=100 harness run ... |
tee log`), a continuation hanging under its item and a number never parted from its unit
("near 173 µs", not "near 173" / "µs"); kept whole in a pipe without COLUMNS, so `grep` finds a
phrase however long its line."""

from __future__ import annotations

import os
import re
import textwrap

from rich.console import Console, RenderableType
from rich.text import Text

NBSP = "\u00a0"  # holds a number to its unit while a line is wrapped; never printed
# "173 µs", "4.66 s", "1,234 GiB", "73 %": a space between a number and a unit a reader would not part
_UNIT_SPACE = re.compile(r"(?<=\d) (?=(?:ns|µs|us|ms|s|min|h|B|KiB|MiB|GiB|TiB|KB|MB|GB|TB|%|x|[GTM]FLOP/s)(?![\w/]))")
_COMMAND = re.compile(r"`[^`\n]+`")  # a command to paste: parted, each of its lines would run alone
_WORD = re.compile(r'"[^"\n]*"|\$\([^)\n]*\)')  # within a command: a quoted argument, a substitution
_DASH_SPACE = re.compile(r"(?<=\S) (?=-(?:\s|$))")  # before a lone "-": a line it began would read as a bullet


def _held(plain: str, width: int) -> str:
    """`plain` with the spaces a wrap must not break at held (NBSP, same length): a number's before
    its unit; the one before a lone minus (walk 12 met `(adapters` / `- 1, centred)`); every space of
    a backticked command that fits on a line, else those inside its quoted arguments and `$(...)`
    (walk 10 met `"$(harness` / `asv-machine)"` on two lines)."""
    def hold(m: re.Match[str]) -> str:
        return m.group(0).replace(" ", NBSP)

    def command(m: re.Match[str]) -> str:
        return hold(m) if len(m.group(0)) <= width - 4 else _WORD.sub(hold, m.group(0))

    return _COMMAND.sub(command, _DASH_SPACE.sub(NBSP, _UNIT_SPACE.sub(NBSP, plain)))


def asked_width() -> int | None:
    """The width COLUMNS asks for, where it holds one (a user's explicit request, honoured in a pipe)."""
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and 0 < int(columns) <= 10_000 else None


def wraps(console: Console) -> bool:
    """Whether `console`'s lines are wrapped: on a terminal, or where COLUMNS asked for a width."""
    return console.is_terminal or asked_width() is not None


def wrapped_text(text: Text, width: int, hang: int = 2) -> Text:
    """`text` (its styles kept) wrapped between words at `width`, each line's continuations
    indented `hang` columns past the line's own indent; a number stays with its unit; only a
    word longer than a line is cut; a command in backticks is kept whole where it fits a line."""
    plain = text.plain
    held = _held(plain, width)  # same length: an offset in `held` is one in `text`
    pieces: list[Text] = []
    start = 0
    for line in plain.split("\n"):
        end = start + len(line)
        own = len(line) - len(line.lstrip(" "))
        indent = " " * min(own + hang, width // 2)
        cursor = start
        parts = textwrap.wrap(held[start:end], width, subsequent_indent=indent, break_on_hyphens=False,
                              expand_tabs=False, replace_whitespace=False) or [line]
        for i, part in enumerate(parts):
            body = part if i == 0 else part[len(indent):]
            at = held.find(body, cursor, end) if body else cursor
            at = cursor if at < 0 else at
            pieces.append(Text(indent if i else "") + text[at:at + len(body)])
            cursor = at + len(body)
        start = end + 1
    return Text("\n").join(pieces)


def wrapped(text: str, width: int, hang: int = 2) -> str:
    """Plain `text` wrapped as `wrapped_text` wraps it (a REPL's repr; a terminal would cut mid-word at column 0)."""
    return wrapped_text(Text(text), width, hang).plain


def print_line(console: Console, line: str, markup: bool = False, hang: int = 2, style: str = "",
               highlight: bool = False) -> None:
    """One line (markup read only where `markup`: a user's path or key is text) on `console`:
    wrapped where `wraps(console)` (rich would part a number from its unit), else kept whole."""
    text = console.render_str(line, markup=markup, emoji=markup, highlight=highlight, style=style)
    if wraps(console):
        text = wrapped_text(text, console.width, hang)
    console.print(text, soft_wrap=True)


def print_shown(console: Console, item: str | RenderableType) -> None:
    """A line of markup as `print_line` prints it, or a table; in a pipe without COLUMNS the table's
    caption lines are kept whole too (rich would crop them at the console's width)."""
    if isinstance(item, str):
        print_line(console, item, markup=True)
    else:
        console.print(item, crop=wraps(console))
