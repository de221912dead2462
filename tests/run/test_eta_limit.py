"""The run's ETA where the limit cuts the rounds (run.eta's allowed, least and limit_of). Walk 13, on
a busy 2-core machine: the last analysis began with the benchmark past its floor, timed its one
mandatory block of the 6 planned and ended 1.4 s after the run's row read `ETA ~0:00:12`; and at
the start the plan's rounds, counted at twice their seconds while the limit (a clock's seconds)
cut them, read `~0:00:52` with 37 s left. The live display on a scripted clock, as
tests/run/test_eta_resume.py draws it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.base.eta import planned
from harness.bench.budget import OVERRUN, PROCESSES, Allocation, Budget
from harness.plan.model import allowed, least, limited
from harness.run.eta import counted_share, limit_of, timing_left_s, work_left
from harness.strategies.cost import TIMING_WORKER_S
from tests.run.clocked import clocked_display

SLOWDOWN = 2.0  # the plan's: two busy processes on two cores


class Scripted(Budget):
    """A budget whose clock reads `now`, set by the test."""

    now: float = 0.0

    def clock(self) -> float:  # type: ignore[override]
        return self.now


def _timed(role: str, call_s: float, rounds: int = 1) -> SimpleNamespace:
    a = Allocation(group="g", per_matrix_s=call_s, matrices=1, warmup=0, sample=1, rounds=rounds)
    return SimpleNamespace(role=role, allocations=[a], estimate_s=a.estimate_s)


def _step(name: str, estimate_s: float, calls: list[float], rounds: int = 1, chosen: bool = True) -> SimpleNamespace:
    """Its baseline, then its chosen point (`chosen`; else the baseline is the chosen one), then compared ones."""
    roles = ["baseline"] + ["chosen"] * chosen + ["compare"] * (len(calls) - 1 - chosen)
    return SimpleNamespace(analysis=name, estimate_s=estimate_s,
                           timed=[_timed(r, c, rounds) for r, c in zip(roles, calls)])


def _plan(steps: list[SimpleNamespace]) -> SimpleNamespace:
    idle = sum(s.estimate_s + timing_left_s(s, False, None) for s in steps)  # type: ignore[arg-type]
    return SimpleNamespace(steps=steps, overheads={}, timings_s=limited(steps, None), estimate_s=SLOWDOWN * idle,  # type: ignore[arg-type]
                           busy_s=lambda s: SLOWDOWN * s, slowdown=SLOWDOWN)


def _seconds(text: str) -> float:
    h, m, s = text.removeprefix("ETA ").lstrip("~>").split(":")
    return int(h) * 3600 + int(m) * 60 + int(s)


def test_past_the_limit_the_last_analysis_counts_only_its_mandatory_blocks() -> None:
    """The run's row at every half second of the last analysis, which begins past the limit: its
    full analysis, its workers starting, its one mandatory block (the baseline's, in one process),
    then verifying, each at the plan's slowdown; the analyses before it went as planned. Near the
    end the ETA is within 1.5 s of the real end (it read `~0:00:12` with 1.4 s left)."""
    steps = [_step("spectrum", 0.5, [1.0, 1.0]), _step("top3", 0.5, [0.8, 0.8, 0.8]),
             _step("geometry", 0.4, [1.0, 1.0], chosen=False)]
    plan = _plan(steps)
    budget = Scripted(10.0, 21.0, {"geometry": 6.1}, {"geometry": 6.1}, spent_s=23.3, quiet=False)
    assert budget.left_s < 0  # past the floor and its overrun: only mandatory blocks start
    one_off = TIMING_WORKER_S * PROCESSES * 2
    finished = {"spectrum": (2 * PROCESSES * 1.015, 2), "top3": (3 * PROCESSES * 0.815, 3)}
    units, estimate_s = work_left(plan, set(), None, TIMING_WORKER_S, finished,  # type: ignore[arg-type]
                                  limit_of(budget, SLOWDOWN))
    geometry = steps[2]
    # as it went: full analysis and half the one-off work, one block of 1.015 s, the rest of the one-off work
    first_s, block_s, after_s = SLOWDOWN * (0.4 + one_off / 2), SLOWDOWN * 1.015, SLOWDOWN * one_off / 2
    now, timing = {"t": 0.0}, {"now": None}
    shown: list[tuple[float, float, str]] = []
    with clocked_display(lambda: now["t"]) as display:
        with display.phase("task_geometry", 3, estimate_s=estimate_s, units_s=units) as run:
            column = display.progress.columns[-1]
            scale = estimate_s / sum(units)
            for unit in units[:2]:  # the analyses before it, each in its planned seconds
                now["t"] += unit * scale
                run.advance()
            budget.now = now["t"]
            limit = lambda: limit_of(budget, SLOWDOWN)  # noqa: E731
            left_s = timing_left_s(geometry, False, None, TIMING_WORKER_S, limit())  # type: ignore[arg-type]
            run.within(planned(units[2] * scale, clock=lambda: now["t"]),
                       counted=counted_share(geometry, left_s, lambda: timing["now"],  # type: ignore[arg-type]
                                             TIMING_WORKER_S, limit))
            start, end = now["t"], now["t"] + first_s + block_s + after_s
            budget.open("geometry")
            while now["t"] < end:
                ran = now["t"] - start
                if ran >= first_s:  # its rounds: the one block counts once it ends
                    lines = {0: SimpleNamespace(new=[1] * (ran >= first_s + block_s))}
                    timing["now"] = (SimpleNamespace(analysis="geometry", lines=lines, budget=budget), 0)
                if ran >= first_s + block_s:
                    timing["now"] = None
                budget.now = now["t"]
                shown.append((now["t"], end - now["t"], column.render(display.progress.tasks[0]).plain))
                now["t"] += 0.25
    assert shown and all(not text.startswith("ETA >") for _t, _left, text in shown), shown
    for t, left, text in shown:
        if left <= 6.0:  # its last seconds: workers starting, its block, verifying
            assert abs(_seconds(text) - left) <= 1.5, (t, text, left)


def test_past_the_limit_an_analysis_has_its_mandatory_blocks_left_or_its_floor_on_a_quiet_machine() -> None:
    """Rounds._mandatory: on a busy machine, past the limit, a first round times the baseline and the
    chosen point in one process; on a quiet one the floor, every point in each process (Budget.fits)."""
    step = _step("top3", 0.3, [1.0, 0.5, 0.5, 0.5], rounds=4)
    busy, quiet = least(step, False), least(step, True)  # type: ignore[arg-type]
    assert busy == (pytest.approx(1.015 + 0.515), 2)
    assert quiet == (pytest.approx(PROCESSES * (1.015 + 3 * 0.515)), PROCESSES * 4)
    planned_s = sum(t.estimate_s for t in step.timed)
    assert allowed(step, None) == (pytest.approx(planned_s), PROCESSES * 4 * 4)  # type: ignore[arg-type]
    assert allowed(step, (0.0, False)) == busy  # type: ignore[arg-type]
    assert allowed(step, (planned_s, False)) == allowed(step, None)  # type: ignore[arg-type]
    half = allowed(step, ((planned_s + quiet[0]) / 2, True))  # type: ignore[arg-type]
    assert half[0] == pytest.approx((planned_s + quiet[0]) / 2) and quiet[1] < half[1] < PROCESSES * 16


def test_the_first_eta_counts_what_the_limit_allows_of_the_planned_rounds() -> None:
    """A plan whose rounds at its slowdown far exceed the limit (a clock's seconds): the run's first
    ETA counts the rounds the limit allows (the analyses in turn; the last past it, its mandatory
    blocks), not every planned round at twice its seconds (walk 13: `~0:00:52` with 37 s left)."""
    steps = [_step(n, 0.5, [1.0, 1.0, 1.0], rounds=3) for n in ("spectrum", "top3", "geometry")]
    plan = _plan(steps)
    budget = Budget(12.0, 12.0, {s.analysis: 1.0 for s in steps}, {s.analysis: 1.0 for s in steps}, quiet=False)
    units, estimate_s = work_left(plan, set(), None, TIMING_WORKER_S, None,  # type: ignore[arg-type]
                                  limit_of(budget, SLOWDOWN))
    _all, unlimited = work_left(plan, set(), None)  # type: ignore[arg-type]
    assert unlimited == pytest.approx(plan.estimate_s)
    one_offs = sum(SLOWDOWN * (s.estimate_s + TIMING_WORKER_S * PROCESSES * 3) for s in steps)
    last = SLOWDOWN * least(steps[2], False)[0]  # type: ignore[arg-type]
    # the rounds: what the limit lets the phase spend, its overrun in, and the later analyses' mandatory blocks
    assert estimate_s == pytest.approx(one_offs + 12.0 * (1 + OVERRUN) + 2 * last)
    assert units[2] == pytest.approx(SLOWDOWN * (0.5 + TIMING_WORKER_S * PROCESSES * 3) + last)
