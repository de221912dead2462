"""The live display: phases with their items on a terminal, one line per phase elsewhere."""

import contextlib
import io
import os
import termios

import pytest
from rich.console import Console

from harness.base.progress import Display


def test_without_a_terminal_one_line_per_phase() -> None:
    text = io.StringIO()
    with Display(Console(file=text, width=200)) as display:
        with display.phase("spectrum: timing numpy on 3072x768", total=2) as phase:
            phase.item("1 matrix, call 1 of 2")
            phase.advance(2)
            phase.summary = "1 matrix, 2 calls, median 250.0 ms"
        with display.phase("writing results"):
            pass
        with display.phase("loading the spec") as phase:
            phase.summary = "configs/smoke.toml"
    lines = text.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("spectrum: timing numpy on 3072x768: 2/2 (1 matrix, 2 calls, median 250.0 ms) in ")
    assert lines[1].startswith("writing results in ")  # no colon before a count that is not there


def test_on_a_terminal_a_live_task_per_phase() -> None:
    text = io.StringIO()
    console = Console(file=text, width=200, force_terminal=True)
    with Display(console) as display:
        assert display.live and display.progress is not None
        with display.phase("top3: timing torch on 768x3072", total=3) as phase:
            phase.item("call 2 of 3")
            task = display.progress.tasks[0]
            assert task.description == "top3: timing torch on 768x3072" and task.fields["item"] == "call 2 of 3"
            display.progress.refresh()
        assert display.progress.tasks == []  # a finished phase leaves the display
    assert "top3: timing torch on 768x3072" in text.getvalue()


def test_a_phase_with_an_estimate_has_an_eta_before_it_has_a_pace() -> None:
    """The top-level ETA read "-:--:--" until the first analysis ended, though the plan had an
    estimate; an item whose text is read at each redraw moves while the phase counts."""
    import io

    from rich.console import Console

    from harness.base.progress import Display

    console = Console(file=io.StringIO(), width=100, force_terminal=True)
    counter = {"n": 0}

    class Live:
        def __str__(self) -> str:
            return f"counted {counter['n']}"

    with Display(console, live=True) as display, display.phase("run", 3, estimate_s=600.0,
                                                                 units_s=[200.0] * 3) as phase:
        phase.item(Live())
        assert display.progress is not None
        task = display.progress.tasks[0]
        eta = display.progress.columns[-1].render(task)  # type: ignore[union-attr]
        assert eta.plain == "ETA ~0:10:00"  # nothing under way yet: the plan's whole estimate
        counter["n"] = 7
        assert str(task.fields["item"]) == "counted 7"


def test_a_phase_of_no_count_shows_none() -> None:
    """Walk 24: `top3: features  0/?  subspace_similarity (+1)`, a count with no end read as one stuck at 0."""
    console = Console(file=io.StringIO(), width=100, force_terminal=True)
    with Display(console, live=True) as display, display.phase("top3: features"):
        assert display.progress is not None
        (task,) = display.progress.tasks
        assert str(display.progress.columns[3].render(task)).strip() == ""  # type: ignore[attr-defined]


def test_the_bar_of_a_count_moves_within_the_unit_under_way_by_its_planned_time() -> None:
    """The run's bar sat at 0/3 for its whole first analysis, half the run (issue 48, Progress 4):
    it fills within the analysis under way by the share of its planned time spent, never to its
    end before the analysis ends, while the count still says the analyses done."""
    from harness.base.eta import PLANNED_CAP, planned

    now = {"t": 100.0}
    share = planned(20.0, clock=lambda: now["t"])
    console = Console(file=io.StringIO(), width=100, force_terminal=True)
    with Display(console, live=True) as display, display.phase("task_geometry", 3) as phase:
        assert display.progress is not None
        task = display.progress.tasks[0]
        bar, count = display.progress.columns[2], display.progress.columns[3]
        phase.within(share)
        assert bar.render(task).completed == 0.0  # type: ignore[attr-defined]
        now["t"] = 110.0  # half its planned 20 s
        assert bar.render(task).completed == 0.5  # type: ignore[attr-defined]
        assert str(count.render(task)).strip() == "0/3"  # type: ignore[attr-defined]
        now["t"] = 190.0  # far over its plan: short of done
        assert bar.render(task).completed == PLANNED_CAP < 1  # type: ignore[attr-defined]
        phase.advance()
        phase.within(planned(20.0, clock=lambda: now["t"]))
        assert bar.render(task).completed == 1.0  # type: ignore[attr-defined]
        assert str(count.render(task)).strip() == "1/3"  # type: ignore[attr-defined]


def test_an_item_drops_whole_phrases_to_fit_100_columns() -> None:
    """Issue 48: `torch on 768x3072r16 in proc…` and `subspace_similarity, delta_c…` at 100
    columns: the last phrases go first, and the words left stay whole."""
    from harness.base.progress import Phrases

    def line(description: str, item: object) -> str:
        console = Console(file=io.StringIO(), width=100, force_terminal=True, record=True)
        with Display(console, live=True) as display, display.phase(description, 24, estimate_s=30.0) as phase:
            phase.item(item)
            assert display.progress is not None
            console.print(display.progress.get_renderable())
        return next(text for text in console.export_text().splitlines() if description in text)

    timing = line("svd_topk: round 1", Phrases(("torch_lowrank", "on 768x3072r16", "in process 1")))
    assert "torch_lowrank on 768x3072r16" in timing and "…" not in timing and "in proc" not in timing
    features = line("task_geometry: features", Phrases(("subspace_similarity", "delta_cosine", "effective_rank"),
                                                        ", ", counted=True))
    assert "subspace_similarity" in features and "…" not in features and "(+" in features
    short = line("svdvals: round 1", Phrases(("numpy", "on 48x32r4", "in process 1")))
    assert "numpy on 48x32r4 in process 1" in short  # room enough: nothing dropped
    assert str(Phrases(("numpy", "on 48x32r4"))) == "numpy on 48x32r4"  # a log's line keeps it whole


def _scripted(units_s: list[float], took: list[float], estimate_s: float, step: float = 0.5) -> list[tuple[int, float, float]]:
    """(units finished, elapsed, ETA) at every `step` seconds of a run whose units took `took`
    seconds each, their bars moving by their planned time (capped, as the run's are)."""
    from harness.base.eta import PLANNED_CAP, eta_s

    out, start, finished = [], 0.0, 0.0
    for i, (plan, real) in enumerate(zip(units_s, took)):
        t = start
        while t < start + real:
            share = min(PLANNED_CAP, (t - start) / plan)
            out.append((i, t, eta_s(t, i + share, units_s, estimate_s, finished)))
            t += step
        start = finished = start + real
    return out


def test_the_run_eta_rises_only_while_an_analysis_overruns_smoothly_and_ends_near_the_finish() -> None:
    """Walk-through: on a busy machine the run's ETA read 0:00:34 at 10 s, 0:00:35 at 17 s and
    0:00:49 at 24 s, and the run ended at 42 s: its pace was the mean analysis so far. Walk-through
    7: `~0:00:01` held for 10 s while an analysis overran. The ETA is the plan's remaining seconds at
    the pace of the finished analyses against their plan; it rises only within an analysis slower
    than that pace, by little at each redraw, and ends near the finish."""
    units, estimate = [20.0, 6.0, 4.0], 33.0
    for took in ([30.0, 9.0, 6.0], [20.0, 6.0, 4.0], [14.0, 20.0, 12.0], [60.0, 4.0, 3.0]):
        script = _scripted(units, took, estimate)
        finish = sum(took)
        for (i, _t, before), (j, _u, after) in zip(script, script[1:]):
            if i == j and after.seconds > before.seconds + 1e-9:
                assert took[i] > units[i] and after.seconds - before.seconds <= 1.0, (took, i)
        last = [(t, eta.seconds) for i, t, eta in script if i == len(units) - 1]
        assert all(abs(t + eta - finish) <= 0.25 * finish for t, eta in last), (took, last[0], finish)
    busy = _scripted(units, [30.0, 9.0, 6.0], estimate)  # 1.5x the plan throughout, as the walk-through's
    assert all(abs(t + eta.seconds - 45.0) <= 0.15 * 45.0 for i, t, eta in busy if i >= 1)


def test_a_phase_of_planned_units_shows_their_eta() -> None:
    """The run's phase (units_s: each analysis' planned seconds) shows eta_s's figure, its pace
    taken when a unit is counted done."""
    console = Console(file=io.StringIO(), width=100, force_terminal=True)
    with Display(console, live=True) as display, display.phase("run", 2, estimate_s=600.0, units_s=[300.0, 100.0]) as phase:
        assert display.progress is not None
        task = display.progress.tasks[0]
        phase.within(lambda: 0.0)
        assert display.progress.columns[-1].render(task).plain == "ETA ~0:10:00"  # type: ignore[union-attr]
        phase.advance()
        assert 0.0 <= display.progress.tasks[0].fields["finished_s"] < 60
        assert display.progress.columns[-1].render(display.progress.tasks[0]).plain.startswith("ETA ~0:0")  # type: ignore[union-attr]


def test_an_analysis_twice_as_slow_as_planned_raises_the_eta_to_the_true_remaining() -> None:
    """Walk-through 7: the last analysis ran past its plan and the ETA held `~0:00:01` for 10 s. Its
    rounds, counted at the pace they run, move the ETA to the true remaining within a few redraws of
    its plan's end, then past its plan it is marked a floor (`>`, never more than is left), still one once its rounds end while the
    analysis goes on (its features; walk 10: `?` took the figure away), never `~0:00:01`. A fake clock."""
    from harness.base.eta import planned

    now, rounds = {"t": 0.0}, {"done": 0.0}
    console = Console(file=io.StringIO(), width=100, force_terminal=True)
    with Display(console, live=True) as display:
        assert display.progress is not None
        display.progress.get_time = lambda: now["t"]  # the tasks' elapsed time, by the fake clock
        with display.phase("run", 3, estimate_s=30.0, units_s=[10.0] * 3) as phase:
            eta = display.progress.columns[-1]

            def seen() -> str:
                return eta.render(display.progress.tasks[0]).plain  # type: ignore[union-attr]

            for t in (10.0, 20.0):  # two analyses as planned
                now["t"] = t
                phase.advance()
            phase.within(planned(10.0, clock=lambda: now["t"]), counted=lambda: rounds["done"])
            shown = {}
            for tick in range(0, 81):  # the last takes 20 s, its rounds from its 2nd second; then 10 s more
                now["t"] = 20.0 + tick / 2
                rounds["done"] = min(1.0, tick / 2 / 20.0) if tick >= 4 else 0.0
                shown[now["t"]] = seen()
    for t, text in shown.items():
        true = 40.0 - t
        if 31.0 <= t < 36.0:  # past its plan's end: a floor, what its rounds leave at the run's pace (walk 9:
            assert text.startswith("ETA >") and 0.4 * true - 1 <= _seconds(text) <= true, (t, text)  # never more, rounded down)
        if t >= 37.0:  # a floor under a second: overdue
            assert text == "ETA overdue" or text.startswith("ETA >") and _seconds(text) <= max(true, 0.0), (t, text)
    assert shown[20.0] == "ETA ~0:00:10"


def _seconds(text: str) -> float:
    """The seconds of an ETA's text (`ETA >0:01:05`)."""
    h, m, s = text[5:].split(":")
    return int(h) * 3600 + int(m) * 60 + int(s)


def _frame(width: int, phases: list[tuple[str, int, object]]) -> list[str]:
    """The live display's lines at `width` (a recorded console, no terminal), one per phase open."""
    from contextlib import ExitStack

    with Display(Console(file=io.StringIO(), width=width), live=True) as display, ExitStack() as stack:
        for description, total, item in phases:
            stack.enter_context(display.phase(description, total, estimate_s=30.0)).item(item)
        assert display.progress is not None
        seen = Console(file=io.StringIO(), width=width, record=True)
        seen.print(display.progress.get_renderable())
        return [line for line in seen.export_text().splitlines() if line.strip()]


def test_the_clock_label_keeps_its_limit_word_and_analysis_at_100_columns_for_every_shipped_analysis() -> None:
    """Walk-through 7: `spectrum: 15.9 s > 13.9 s` beside `top3: 16.9 s > 13.9 s floor`: the item's
    column had 30 cells. Walk-through 14: at 100 columns `benchmark: 9.9 of 17.6 s floor` without the
    analysis under way, which 160 columns showed: the whole label, as at 160, for every shipped name."""
    from pathlib import Path

    from harness.run.clock import clock_text
    from harness.specs.reading import load_spec

    configs = sorted(Path(__file__).resolve().parents[2].joinpath("configs").glob("*.toml"))
    names = {a.label for path in configs for a in load_spec(path).analysis}
    assert {"spectrum", "svd_topk", "geometry", "top3"} <= names
    for name in names:
        for limit in ("floor", "budget"):
            for live_s, limit_s in ((105.9, 13.9), (12.8, 13.9), (9.9, 17.6), (21.9, 20.0), (98.7, 99.1)):
                label = clock_text(name, live_s, limit_s, limit)
                inner = ("spectrum: svdvals by factored", 2128, "")  # a step's phase open beneath the run's
                for width in (100, 160):
                    for phases in ([("task_geometry", 3, label)], [("task_geometry", 3, label), inner]):
                        assert f" {label} " in _frame(width, phases)[0], (width, name, limit, str(label))


def test_the_columns_stand_still_from_frame_to_frame() -> None:
    """Walk-through 7: the first frame (a step's `   0/2128` beneath the run's `0/3`) had the run's
    bar a column off the next frame's: every column but the two shared ones has a fixed width."""
    from harness.run.clock import clock_text

    label = clock_text("spectrum", 5.9, 13.9, "floor")
    alone = _frame(100, [("task_geometry", 3, label)])[0]
    beside = _frame(100, [("task_geometry", 3, label), ("spectrum: svdvals by factored", 2128, "x")])
    assert len(beside) == 2 and beside[0] == alone
    assert alone.index("bench 6/14") == beside[1].index(" x ") + 1  # the items start in one column
    assert alone.index("0:00:00") == beside[1].index("0:00:00")


def test_within_its_plan_an_analysis_whose_rounds_count_slowly_keeps_the_plans_eta() -> None:
    """Walk-through 8: `ETA ~0:01:44` at 12 s of a run that took 27 s: the spectrum's first round,
    slow with its first calls, counted a tenth of its work at three quarters of its planned time,
    which alone read as a run 4x slower than planned. Within its plan the further of the two counts."""
    from harness.base.eta import eta_s

    units, estimate = [16.0, 8.0, 8.0], 32.0
    eta = eta_s(12.0, 0.1, units, estimate, 0.0, planned_share=12.0 / 16.0)
    assert not eta.over and abs(eta.seconds - 20.0) <= 0.5, eta
    past = eta_s(24.0, 0.5, units, estimate, 0.0, planned_share=0.9)  # past its plan: its rounds say how far
    assert past.over and past.seconds > 20.0, past


@pytest.mark.parametrize("stop", [None, KeyboardInterrupt])
def test_ctrl_c_is_not_echoed_under_the_live_display_and_the_terminal_is_restored(
        stop: type[BaseException] | None) -> None:
    """The live lines fill the width: the terminal's `^C` wrapped to a new line, and the display,
    erasing as many lines up from there as it drew, left its first line above `interrupted: ...`
    (walk-through 8). Its echo is off while the display is live, back as it was on any exit."""
    leader, follower = os.openpty()
    with os.fdopen(follower, "w") as tty, os.fdopen(leader, "rb", buffering=0):
        before = termios.tcgetattr(follower)[3]
        assert before & termios.ECHOCTL
        with contextlib.suppress(KeyboardInterrupt), Display(Console(file=tty, width=100)) as display:
            assert display.live
            assert not termios.tcgetattr(follower)[3] & termios.ECHOCTL
            if stop is not None:
                raise stop
        assert termios.tcgetattr(follower)[3] == before


def test_a_planned_phase_inside_another_is_a_part_without_a_bar_count_or_eta_of_its_own() -> None:
    """Walk 9: a sweep's point, a run of one analysis, drew its own bar (full at 0/1) and ETA
    (`>0:00:15` beside points of ~10 s) under the sweep's. The outermost planned phase carries
    them; a planned phase inside it says what it does; a phase of counted steps keeps its count."""
    console = Console(file=io.StringIO(), width=100, force_terminal=True)
    with Display(console, live=True) as display, display.phase("sweep", 5, 50.0, [10.0] * 5) as whole, \
            display.phase("sweep_rank", 1, 9.0, [9.0]) as point, display.phase("spectrum: round 1", 24) as rounds:
        whole.item("point 2 of 5: data.rank=32")
        point.item("spectrum: starting workers")
        rounds.item("numpy")
        rounds.advance(3)
        assert display.progress is not None
        seen = Console(file=io.StringIO(), width=100, record=True)
        seen.print(display.progress.get_renderable())
    rows = [line.split() for line in seen.export_text().splitlines() if line.strip()]
    assert [row[1:3] for row in rows] == [["sweep", "0/5"], ["sweep_rank", "spectrum:"], ["spectrum:", "round"]]
    assert "ETA" in rows[0] and "3/24" in rows[2]
    assert rows[1][3:-1] == ["starting", "workers"]  # then its elapsed time alone: no count, no ETA


def test_a_floor_under_a_second_says_the_unit_is_overdue() -> None:
    """Walk 11: the sweep read `ETA >0:00:00` for 3 s, a floor that says nothing."""
    from harness.base.eta import Eta

    assert Eta(0.4, over=True).text() == "ETA overdue" and len("ETA overdue") <= 12
    assert Eta(3.7, over=True).text() == "ETA >0:00:03" and Eta(0.4).text() == "ETA ~0:00:00"


def test_a_rounds_row_never_promises_more_than_the_runs_and_says_its_own_pace_bare() -> None:
    """Walk 12: `geometry: round 1 ... ETA ~0:00:08` under the run's `ETA ~0:00:04` (the right one),
    in the `~` form README gives the plan's estimate. A row of its own pace is bare, and held to the
    run's time left, which holds it; a floor (`>`) holds nothing, and is never under the row's."""
    from harness.base.eta import Eta

    now = {"t": 0.0}
    console = Console(file=io.StringIO(), width=100, force_terminal=True)
    with Display(console, live=True) as display:
        assert display.progress is not None
        display.progress.get_time = lambda: now["t"]
        with display.phase("run", 3, estimate_s=30.0, units_s=[10.0] * 3) as run:
            for t in (10.0, 20.0):
                now["t"] = t
                run.advance()
            with display.phase("geometry: round 1", 6) as rounds:
                column = display.progress.columns[-1]
                outer, inner = display.progress.tasks
                now["t"] = 24.0
                rounds.advance()  # one block of six in 4 s: its own pace says 20 s, the run 10 s
                assert column.eta(outer) == Eta(10.0)  # type: ignore[attr-defined]
                assert column.eta(inner) == Eta(10.0, own=True)  # type: ignore[attr-defined]
                assert column.render(inner).plain == "ETA 0:00:10"
                now["t"] = 34.0  # the run past its plan: its figure a floor, the row's own pace stands,
                whole, mine = column.eta(outer), column.eta(inner)  # type: ignore[attr-defined]
                assert whole.over and mine.own and mine.seconds == 70.0  # 5 blocks left at 14 s each
                # and the floor takes it in (walk 22: the run's `ETA overdue` beside its round's `ETA 0:00:07`)
                assert whole.seconds == mine.seconds and column.render(outer).plain == "ETA >0:01:10"
            assert column.eta(outer).seconds < 70.0  # type: ignore[attr-defined]  # its round ended: its own floor again


def test_a_long_phase_name_takes_the_room_its_items_leave() -> None:
    """Walk 17: `measuring this machine (firs… ━━━━ 0/?` beside ~40 empty columns at 100, and
    `geometry: Grams by factored_…`: a phase's name is whole where the items leave room, and an item
    beside it keeps its first phrase; the bar, count and times keep their place within a phase."""
    for width in (100, 160):
        _a_long_phase_name_is_whole(width)


def _a_long_phase_name_is_whole(width: int) -> None:
    from harness.base.progress import Phrases

    def drawn(display: Display) -> list[str]:
        """The live rows as the next frame draws them."""
        seen = Console(file=io.StringIO(), width=width, force_terminal=True, record=True)
        assert display.progress is not None
        seen.print(display.progress.get_renderable())
        return seen.export_text().splitlines()

    console = Console(file=io.StringIO(), width=width, force_terminal=True)
    with Display(console, live=True) as display, display.phase("measuring this machine (first run only)"):
        (line,) = drawn(display)
    assert "measuring this machine (first run only)" in line and "…" not in line
    with Display(console, live=True) as display, display.phase("run", 3, estimate_s=30.0, units_s=[10.0] * 3) as run:
        run.item(Phrases(("bench 13/14 s budget", "geometry"), sep=" · "))
        with display.phase("geometry: Grams by factored_gram", 2) as step:
            first = drawn(display)
            step.item("3072x768r16, the longest item the step row has had so far")
            second = drawn(display)
    assert "geometry: Grams by factored_gram " in first[1] and "bench 13/14 s budget" in first[0]
    assert [line.index("0/") for line in first] == [line.index("0/") for line in second]
