"""What the user sees while a run works: a live rich display of every phase on a terminal (the
current item, counts, elapsed time and ETA, redrawn several times a second), and one line per
finished phase when stderr is not a terminal (a log, CI)."""

from __future__ import annotations

import time
import termios
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from types import TracebackType

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressBar, ProgressColumn, SpinnerColumn, Task,
                           TaskID, TextColumn, TimeElapsedColumn, TimeRemainingColumn)
from rich.table import Column, Table
from rich.text import Text

from harness.base.eta import Eta, eta_s
from harness.base.lines import print_line
from harness.base.units import format_seconds

REFRESH_PER_S = 4
COUNTED_CAP = 0.99  # of a unit its counted work may fill: only its end counts it done (and takes its pace)
# the live rows' columns but the phase's and its item's have one width in every frame (the first, with
# an inner phase's `   0/2128`, was a column off the next); those two share the rest 29:32, at 100
# columns 29 and 32: a step's "spectrum: svdvals by factored" and the clock label for the shipped
# configs' longest analysis names (`bench 13/14 s budget · svd_topk`, 31) both whole (at 23 and 34 the
# step lost its strategy); a longer phase name takes the item's room down to ITEM_FLOOR (the clock's
# `bench 13/14 s budget`), all of it where no row has an item
PHASE_RATIO, ITEM_RATIO, ITEM_FLOOR = 29, 32, 20


@dataclass
class Phase:
    """A phase in progress: advance its count, say what it is working on."""

    display: Display
    description: str
    total: int | None
    task: TaskID | None
    done: int = 0
    current: str = ""
    summary: str = ""  # what the one line of a finished phase says, when set

    def advance(self, n: int = 1) -> None:
        """Count `n` units done, noting when (the ETA's pace is that of finished units: eta_s)."""
        self.done += n
        if self.task is not None and self.display.progress is not None:
            task = next(t for t in self.display.progress.tasks if t.id == self.task)
            self.display.progress.update(self.task, advance=n, finished_s=task.elapsed or 0.0)

    def replan(self, estimate_s: float, units_s: Sequence[float]) -> None:
        """The plan's estimate and its units' seconds anew (the run's, once its first analysis
        measured what its timing workers take: run.eta), for the ETA from the next redraw on."""
        if self.task is not None and self.display.progress is not None:
            self.display.progress.update(self.task, estimate_s=estimate_s, units_s=list(units_s))

    def within(self, share: Callable[[], float], counted: Callable[[], float] | None = None,
               held: Callable[[], float] | None = None, stalled: Callable[[], bool] | None = None) -> None:
        """How far into the next unit of the count the phase is (0 to 1, read at every redraw):
        `share` by its planned time, `counted` by the work it counted (0 until it counts), `held` the
        share of the unit no time alone counts done (its work not yet begun: eta_s). The bar
        moves by whichever is further while the count says the units done (the run's bar sat at
        0/3 for the whole first analysis, half the run); the ETA goes by the work once counted,
        the time alone held at PLANNED_CAP while an analysis ran twice its plan (eta_s); `stalled`, whether
        the work under way has run past what was counted for it (eta_s: a floor)."""
        if self.task is not None and self.display.progress is not None:
            self.display.progress.update(self.task, within=share, counted=counted, held=held, stalled=stalled)

    def item(self, text: object) -> None:
        """What the phase works on: a string, or an object whose str() is read at every redraw (a
        counter that moves while the phase counts, not only when the next item starts)."""
        self.current = text  # type: ignore[assignment]
        if self.task is not None and self.display.progress is not None:
            self.display.progress.update(self.task, item=text)


@dataclass(frozen=True)
class Phrases:
    """An item's text as phrases, the last dropped first where its column is too narrow (with
    `counted`, the number dropped said as "(+2)"), and cut with an ellipsis only when the first
    alone does not fit: whole words at 100 columns, where rich cut `torch on 768x3072r16 in proc…`."""

    parts: tuple[str, ...]
    sep: str = " "
    counted: bool = False

    def __str__(self) -> str:
        return self.sep.join(self.parts)

    def fitted(self, width: int) -> str:
        """The longest text of whole phrases that fits `width` cells, else the first phrase."""
        for n in range(len(self.parts), 0, -1):
            text = self.sep.join(self.parts[:n]) + (f" (+{len(self.parts) - n})" if self.counted and n < len(self.parts)
                                                    else "")
            if cell_len(text) <= width:
                return text
        return self.parts[0] if self.parts else ""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(self.fitted(options.max_width), no_wrap=True, overflow="ellipsis")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(min(cell_len(self.fitted(0)), options.max_width), cell_len(str(self)))


class LivePhrases:
    """An item read as Phrases at every redraw (a counter that moves, work that changes under way)."""

    def phrases(self) -> Phrases:
        raise NotImplementedError

    def __str__(self) -> str:
        return str(self.phrases())

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.phrases().__rich_console__(console, options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return self.phrases().__rich_measure__(console, options)


@dataclass(frozen=True)
class Doing(LivePhrases):
    """An item whose one-off work under way, while `doing()` names one, leads its first phrase, as the
    row around it says it (walk 23: the run's `geometry: verifying answers` above its round's
    `dual_gram on positions in process 1`, which read as a timing under way)."""

    doing: Callable[[], str]
    parts: tuple[str, ...]

    def phrases(self) -> Phrases:
        work = self.doing()
        return Phrases((f"{work}: {self.parts[0]}", *self.parts[1:]) if work and self.parts else self.parts)


class _Item(ProgressColumn):
    """The phase's item: Phrases (or an object that renders as Phrases, read at each redraw)
    fitted to the column, any other object's str() (as text: a label's brackets are not markup)."""

    def render(self, task: Task) -> RenderableType:
        item = task.fields.get("item", "")
        fitted = hasattr(item, "__rich_console__")  # Phrases, or an object drawn as Phrases
        return item if fitted else Text(str(item), no_wrap=True, overflow="ellipsis")


class _Bar(ProgressColumn):
    """The count's bar, filled also within the unit under way by the phase's `within`; none on a
    part's row (Display.phase)."""

    def __init__(self, bar_width: int, table_column: Column) -> None:
        super().__init__(table_column=table_column)
        self._bar = BarColumn(bar_width=bar_width)

    def render(self, task: Task) -> RenderableType:
        if task.fields.get("part"):
            return Text("")
        bar: ProgressBar = self._bar.render(task)
        within, counted = task.fields.get("within"), task.fields.get("counted")
        if within is not None and task.total is not None and not task.finished:
            further = max(within(), counted() if counted is not None else 0.0)  # either only grows: the bar never falls back
            bar.completed = min(float(task.total), task.completed + min(1.0, max(0.0, further)))
        return bar


class _Count(MofNCompleteColumn):
    """`1/3`; none on a part's row (Display.phase), nor on a phase of no count (walk 24: `top3: features
    0/?`, a count with no end, read as one stuck at 0)."""

    def render(self, task: Task) -> Text:
        return Text("") if task.fields.get("part") or task.total is None else super().render(task)


def _share(task: Task) -> float:
    """The share of the unit under way for its ETA: the work counted once it counts, else its
    planned time spent (Phase.within)."""
    within, counted = task.fields.get("within"), task.fields.get("counted")
    work = counted() if counted is not None else 0.0
    return work if work > 0 else (within() if within is not None else 0.0)


class _Remaining(TimeRemainingColumn):
    """`ETA ~0:00:03`: a phase of planned units (the run's analyses) has eta_s's throughout (Eta's
    text: `~` an estimate, `>` a floor past the plan); any other its own pace's, bare (`ETA 0:00:08`:
    rich's once it has a pace, and after one step of several the pace of that step: rich has none
    before a second, and the ETA vanished mid-run), never more than the planned phase around it
    (walk 12: a round's row read `ETA ~0:00:08` under the run's `ETA ~0:00:04`, the right one);
    with none, nothing (rich wrote "ETA -:--:--", which reads as a fault); on a part's row, nothing."""

    def render(self, task: Task) -> Text:
        eta = self.eta(task)
        return Text(eta.text(), style="progress.remaining") if eta is not None else Text("")

    def eta(self, task: Task) -> Eta | None:
        """What the row's ETA says, or None where it says nothing. A planned phase's floor is never
        under a row's inside it (walk 22: the run's `ETA overdue` beside its round's `ETA 0:00:07`)."""
        if task.fields.get("part") or task.finished:
            return None
        estimate, units = task.fields.get("estimate_s"), task.fields.get("units_s")
        if units and estimate and task.elapsed is not None:
            share = min(COUNTED_CAP, max(0.0, _share(task)))
            within, held, stalled = task.fields.get("within"), task.fields.get("held"), task.fields.get("stalled")
            eta = eta_s(task.elapsed, task.completed + share, units, estimate, task.fields.get("finished_s", 0.0),
                        within() if within is not None else 0.0, held() if held is not None else 0.0,
                        stalled() if stalled is not None else False)
            inner = task.fields.get("inner")
            inside = [s for t in (inner() if inner is not None else []) if (s := self._own_s(t)) is not None]
            return eta._replace(seconds=max([eta.seconds, *inside])) if eta.over else eta
        left = self._own_s(task)
        if left is None:
            return None
        outer = task.fields.get("outer")
        around = self.eta(outer) if outer is not None else None
        if around is not None and not around.over:  # the run's time left holds this row's
            left = min(left, around.seconds)
        return Eta(left, own=True)

    @staticmethod
    def _own_s(task: Task) -> float | None:
        """Seconds left at the row's own pace, or None before it has one."""
        if task.finished:
            return None
        left = task.time_remaining
        if left is None:  # rich's pace needs two steps done: after the first, its mean so far
            if not (task.completed and task.total and task.elapsed):
                return None
            left = task.elapsed / task.completed * (task.total - task.completed)
        return left


class _Progress(Progress):
    """One empty line while no phase runs, as at the end of every run: rich before 15 stops a Live
    whose last render was empty with a newline it never erases (Textualize/rich#3796), a blank line
    above the run table; a one-line render it erases in every version."""

    def get_renderables(self) -> Iterable[RenderableType]:
        if self.tasks:
            yield from super().get_renderables()
        else:
            yield Text("")

    def make_tasks_table(self, tasks: Iterable[Task]) -> Table:
        """Rich's table, the phase's column as wide as its longest name where that is more than its
        share, and the items leave room (walk 17: `measuring this machine (firs…` beside 40 empty
        columns): from the names alone, so a phase's frames keep one layout as its item changes."""
        shown = [t for t in tasks if t.visible]
        table = super().make_tasks_table(shown)
        rest = self.console.width - sum(c.width or 0 for c in table.columns) - (len(table.columns) - 1)
        share = rest * PHASE_RATIO // (PHASE_RATIO + ITEM_RATIO)
        want = max((cell_len(t.description) for t in shown), default=0)
        floor = ITEM_FLOOR if any(str(t.fields.get("item", "")) for t in shown) else 0
        if want >= share > 0:
            table.columns[1].width, table.columns[1].ratio = min(want, max(share, rest - floor)), None
        return table


def _quiet_ctrl_c(console: Console) -> Callable[[], None] | None:
    """The terminal's echo of Ctrl-C (`^C`) off while the display is live, and what turns it back:
    the live lines fill the width, so the echo wrapped to a new line and the display, erasing as
    many lines up from there as it drew, left its first line above the `interrupted:` one."""
    try:
        fd = console.file.fileno()
        mode = termios.tcgetattr(fd)
        termios.tcsetattr(fd, termios.TCSANOW, [*mode[:3], mode[3] & ~termios.ECHOCTL, *mode[4:]])
    except (AttributeError, OSError, ValueError, termios.error):  # no terminal (a recorded or captured console)
        return None

    def restore() -> None:
        with suppress(termios.error):  # the terminal gone (its window closed): nothing to restore
            termios.tcsetattr(fd, termios.TCSANOW, mode)
    return restore


class Display:
    """Live on a terminal, one line per phase elsewhere; a context manager around a run."""

    def __init__(self, console: Console, live: bool | None = None) -> None:
        self.console = console
        self.live = console.is_terminal if live is None else live
        self.progress: Progress | None = None
        self._echo: Callable[[], None] | None = None

    def __enter__(self) -> Display:
        if self.live:
            self.progress = _Progress(  # the columns' widths: PHASE_RATIO; the bar 4 cells (8 levels with its half cells)
                SpinnerColumn(table_column=Column(width=1, no_wrap=True)),
                TextColumn("{task.description}", table_column=Column(ratio=PHASE_RATIO, no_wrap=True, overflow="ellipsis")),
                _Bar(bar_width=4, table_column=Column(width=4, no_wrap=True)),
                _Count(table_column=Column(width=9, no_wrap=True)),  # `1064/2128` whole
                _Item(table_column=Column(ratio=ITEM_RATIO, no_wrap=True, overflow="ellipsis")),
                TimeElapsedColumn(table_column=Column(width=7, no_wrap=True)),
                _Remaining(table_column=Column(width=12, no_wrap=True)),
                console=self.console,
                expand=True,
                transient=True,
                refresh_per_second=REFRESH_PER_S,
            )
            self._echo = _quiet_ctrl_c(self.console)
            self.progress.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
            if self._echo is not None:
                self._echo()

    @contextmanager
    def phase(self, description: str, total: int | None = None, estimate_s: float | None = None,
              units_s: Sequence[float] | None = None) -> Iterator[Phase]:
        """A phase: a live task while it runs, or one line when it ends (`what: 3/4 in 1.2 s`, or
        `what (the item) in 1.2 s` without a count);
        `estimate_s`, the plan's, gives its ETA before it has a pace of its own; with `units_s`,
        the plan's seconds of each unit of the count, its ETA throughout is eta_s's. Such a phase
        inside another (a sweep's point, a run inside the sweep) is a part of it: the outer row's
        bar, count and ETA are the whole's, and the part's row says only what it is doing (walk 9:
        a point's own bar full at 0/1, its ETA >0:00:15 beside points of ~10 s)."""
        start = time.perf_counter()
        task = None
        if self.progress is not None:
            planned = next((t for t in self.progress.tasks if t.fields.get("units_s") and not t.fields.get("part")),
                           None)  # the run's (or the sweep's): its ETA holds every row's inside it
            task = self.progress.add_task(description, total=total, item="", estimate_s=estimate_s,
                                          units_s=list(units_s) if units_s else None,
                                          part=bool(units_s) and planned is not None,
                                          outer=None if units_s else planned)
            if units_s and planned is None:  # the planned phase: its rows are those it is the `outer` of (_Remaining)
                progress, me = self.progress, next(t for t in self.progress.tasks if t.id == task)
                progress.update(task, inner=lambda: [t for t in progress.tasks if t.fields.get("outer") is me])
        phase = Phase(self, description, total, task)
        try:
            yield phase
        finally:
            if self.progress is not None and task is not None:
                self.progress.remove_task(task)
        if not self.live:  # a failed phase says nothing: the error says what went wrong
            count = f": {phase.done}/{total}" if total is not None else ""
            said = phase.summary or phase.current
            what = f" ({said})" if said else ""
            # wrapped as every stderr line (base.lines): rich broke `rendering the sweep's report (…) in `
            # / `713 ms` at 100 columns with a trailing space and no hang (walk 20)
            print_line(self.console, f"{description}{count}{what} in {format_seconds(time.perf_counter() - start)}")

    def logged(self, text: str) -> None:
        """A line only where there is no live display (a log, CI): what a terminal saw go by, such
        as why a phase's count stopped short, which a log's last line alone cannot tell."""
        if not self.live:
            self.plain(text)

    def note(self, text: str) -> None:
        """A line that stays (a warning, a note, markup read), above the live display, wrapped as
        `plain` is."""
        print_line(self.console, text, markup=True, highlight=True)

    def plain(self, text: str) -> None:
        """A line that stays, as it is: no markup read into its brackets; wrapped between words
        where the width is known (harness.base.lines), elsewhere kept whole."""
        print_line(self.console, text)
