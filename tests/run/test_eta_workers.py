"""The run's ETA while an analysis' timing workers start (walk 21, load 7-11 on 2 cores: `geometry:
starting workers` took 8 s against the 1.5 s the ETA counted for it, and the run's row stood at `ETA
~0:00:05` for 6 s, then read `>0:00:04` with 13 s left). The next analysis' workers are counted at
the pace this run's earlier ones took (run.eta.worker_s), their start leaves the held work as it goes
up to that count (run.eta.Held), and past it the ETA is a floor (base.eta.eta_s). On a
scripted clock, as tests/run/test_eta_limit.py draws the display."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.base.eta import planned
from harness.bench.budget import PROCESSES
from harness.plan.model import allowed
from harness.run.eta import AFTER_BLOCKS, Held, counted_share, timing_left_s, work_left, worker_s
from harness.strategies.cost import TIMING_WORKER_S
from tests.run.test_eta_limit import SLOWDOWN, Scripted, _plan, _seconds, _step
from tests.run.clocked import clocked_display

SLOWER = 4.0  # the first analysis' workers took 4x the plan's


def _setting() -> tuple[SimpleNamespace, Scripted, list[float], float]:
    """spectrum done, its 2 points' workers at SLOWER times the plan's; geometry next."""
    steps = [_step("spectrum", 0.5, [1.0, 1.0]), _step("geometry", 0.4, [1.0, 1.0], chosen=False)]
    plan = _plan(steps)
    workers = PROCESSES * 2
    budget = Scripted(30.0, 30.0, {}, {}, one_off_s=SLOWER * SLOWDOWN * TIMING_WORKER_S * workers, workers=workers)
    one_worker_s = worker_s(budget.one_off_s, budget.workers, SLOWDOWN)
    finished = {"spectrum": (allowed(steps[0], None)[0], 2)}  # type: ignore[arg-type]
    units, estimate_s = work_left(plan, set(), None, one_worker_s, finished)  # type: ignore[arg-type]
    return steps[1], budget, units, estimate_s


def test_the_next_analysis_counts_its_workers_at_the_pace_the_earlier_ones_took() -> None:
    geometry, budget, units, _estimate = _setting()
    one_worker_s = worker_s(budget.one_off_s, budget.workers, SLOWDOWN)
    assert one_worker_s == pytest.approx(SLOWER * TIMING_WORKER_S)
    timing = allowed(geometry, None)[0]  # type: ignore[arg-type]
    assert units[1] == pytest.approx(SLOWDOWN * (0.4 + timing + SLOWER * TIMING_WORKER_S * PROCESSES * 2))


def test_a_workers_start_past_its_count_turns_the_eta_into_a_floor() -> None:
    """geometry's full analysis in half its plan (a second run's, cached), then its workers' start at
    4x the (already 4x) count: within the count the `~` figure falls with the clock; past it, `>` at
    once, the time its full analysis saved notwithstanding: never a `~` standing still while the
    start overruns (walk 21)."""
    geometry, budget, units, estimate_s = _setting()
    one_worker_s = worker_s(budget.one_off_s, budget.workers, SLOWDOWN)
    left_s = timing_left_s(geometry, False, None, one_worker_s)  # type: ignore[arg-type]
    share = (1 - AFTER_BLOCKS) * one_worker_s * PROCESSES * 2 / (0.4 + left_s)  # of its unit, the start's count
    now, timing = {"t": 0.0}, {"now": None}
    shown: list[tuple[float, str]] = []
    with clocked_display(lambda: now["t"]) as display:
        with display.phase("task_geometry", 2, estimate_s=estimate_s, units_s=units) as run:
            column = display.progress.columns[-1]
            scale = estimate_s / sum(units)
            now["t"] = units[0] * scale  # spectrum in its planned seconds
            run.advance()
            budget.now = now["t"]
            unit_s = units[1] * scale
            count_s = share * unit_s  # what the ETA counts for the start
            first_s, start_s = SLOWDOWN * 0.4 / 2, SLOWER * count_s  # its full analysis in half its plan (cached)
            held = Held(geometry, left_s, lambda: timing["now"], one_worker_s,  # type: ignore[arg-type]
                              unit_s, lambda: budget.one_off_live_s)
            run.within(planned(unit_s, clock=lambda: now["t"]),
                       counted=counted_share(geometry, left_s, lambda: timing["now"], one_worker_s),  # type: ignore[arg-type]
                       held=held, stalled=held.stalled)
            start = now["t"] + first_s
            while now["t"] < start:  # its full analysis
                now["t"] += 0.25
            budget.now = began = now["t"]
            with budget.outside("starting workers", PROCESSES * 2):
                while now["t"] < began + start_s:
                    budget.now = now["t"]
                    shown.append((now["t"] - began, column.render(display.progress.tasks[0]).plain))
                    now["t"] += 0.25
    within = [text for ran, text in shown if ran < count_s - 0.25]
    past = [text for ran, text in shown if ran > count_s + 0.25]
    assert within and past, shown
    assert all(text.startswith("ETA ~") for text in within), shown
    assert _seconds(within[-1]) < _seconds(within[0]), shown  # it moves with the start
    assert all(text.startswith("ETA >") for text in past), shown  # walk 21: `~0:00:05` for 6 s
    rounds_s = SLOWDOWN * (allowed(geometry, None)[0] + AFTER_BLOCKS * one_worker_s * PROCESSES * 2)  # its rounds and verifying, ahead
    assert all(_seconds(text) == int(rounds_s) for text in past), shown
