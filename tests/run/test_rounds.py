"""A round's block: how many calls it times follows the calls' measured seconds, not the plan's
estimate (which, on a machine with no wisdom, is a model's guess)."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from harness.base.progress import Display
from harness.bench.budget import MEDIAN_CALL_S, MEDIAN_CALLS, Allocation
from harness.bench.measure import summarised
from harness.run import rounds as rounding
from harness.run.rounds import Rounds, Timeline
from harness.run.subjects import Subject


def subject(calls: int, repeats: int) -> Subject:
    a = Allocation(group="g", per_matrix_s=0.01, matrices=1, warmup=0, calls=calls, repeats=repeats, sample=1)
    return Subject(step=None, timed=SimpleNamespace(strategy="s", label="s"), allocation=a, strategy=None,  # type: ignore[arg-type]
                   ctx=SimpleNamespace(backend="numpy"), item=None, total=1, flops=1.0, bytes=1.0,  # type: ignore[arg-type]
                   prepare=lambda r: (lambda: None), judge=lambda result, r: None, ids=lambda r: ["m"],  # type: ignore[arg-type, return-value]
                   warm=lambda: None, checks={("m",): None})  # type: ignore[dict-item]


@pytest.mark.parametrize("seconds,repeats,before,after", [
    (2 * MEDIAN_CALL_S, 1, MEDIAN_CALLS, 1),  # estimated fast, measured slow: one call a block
    (MEDIAN_CALL_S / 10, 1, 1, MEDIAN_CALLS),  # estimated slow, measured fast: the median of three
    (2 * MEDIAN_CALL_S, 5, 5, 5),  # the spec's repeats hold either way
])
def test_a_blocks_calls_follow_its_measured_seconds(seconds: float, repeats: int, before: int, after: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def measure(fn: Any, **kwargs: Any) -> tuple[Any, None]:
        return summarised([seconds] * kwargs["repeats"], 0, None), None

    monkeypatch.setattr(rounding, "measure", measure)
    s = subject(before, repeats)
    s.allocation.warmup, line = 0, Timeline(pooled=[], warmed=True)
    display = Display(Console(file=io.StringIO()), live=False)
    r = Rounds("a", "run", {"s": [s]}, None, {id(s): line}, 0.1, 1.0, 1.0, display, 2,
               lambda subject, ids: None, lambda subject, ids, verdict: None)
    with display.phase("a") as phase:
        r._block(s, "run#a#0", 0, phase)
        assert line.calls == before  # the first block as planned
        r._block(s, "run#a#1", 1, phase)
    assert s.allocation.calls == after and line.calls == before + after


def test_a_warm_up_call_sets_the_first_blocks_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """A strategy the plan thought fast gets a warm-up; when that call is slow, its first block
    is one call, not three (torch's spectrum on a first run: 2 x 2 calls of 170 ms saved)."""
    clock = iter(range(100))
    monkeypatch.setattr(rounding.time, "perf_counter", lambda: float(next(clock)))  # every call "takes" 1 s
    s = subject(MEDIAN_CALLS, 1)
    s.allocation = s.allocation.model_copy(update={"warmup": 1})
    s.strategy = SimpleNamespace(fans_out=False)  # type: ignore[assignment]
    s.ctx.compiled = None  # type: ignore[attr-defined]
    line = Timeline(pooled=[])
    display = Display(Console(file=io.StringIO()), live=False)
    r = Rounds("a", "run", {"s": [s]}, None, {id(s): line}, 0.1, 1.0, 1.0, display, 2,
               lambda subject, ids: None, lambda subject, ids, verdict: None)
    r._first(s, 0, verify=False)
    assert s.allocation.calls == 1 and line.warmed



@pytest.mark.parametrize("warmup,verify,warm_s", [
    (1, False, 1.0),  # the floor's warm-up: spent from the budget, like a round
    (0, True, 0.0),  # a call made only to verify the answer: one-off work, said apart
])
def test_warm_up_calls_are_spent_from_the_budget_and_verifying_calls_are_not(
        warmup: int, verify: bool, warm_s: float, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(range(100))
    monkeypatch.setattr(rounding.time, "perf_counter", lambda: float(next(clock)))  # every call "takes" 1 s
    s = subject(MEDIAN_CALLS, 1)
    s.allocation = s.allocation.model_copy(update={"warmup": warmup})
    s.strategy = SimpleNamespace(fans_out=False)  # type: ignore[assignment]
    s.ctx.compiled = None  # type: ignore[attr-defined]
    display = Display(Console(file=io.StringIO()), live=False)
    r = Rounds("a", "run", {"s": [s]}, None, {id(s): Timeline(pooled=[])}, 0.1, 1.0, 1.0, display, 2,
               lambda subject, ids: None, lambda subject, ids, verdict: None)
    r._first(s, 0, verify=verify)
    assert r.warm_s == warm_s and r.first_s + r.warm_s == 3.0  # the clock read 0 at its start and 3 at its end


@pytest.mark.parametrize("busy,rounds", [([], 2), (["other processes took 60% of the 2 CPUs"], 0)])
def test_the_floor_is_never_cut_on_a_quiet_machine_and_cut_on_a_busy_one(
        busy: list[str], rounds: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its limit (here none is left at all), a floor round still runs where nothing else took
    the machine: the plan misjudged it, and every speedup must get its interval; a busy machine's
    floor stops at the limit, before its first round too, and the strategy is said not timed."""
    monkeypatch.setattr(rounding, "condition_reasons", lambda conditions: busy)
    s = subject(1, 1)
    line = Timeline(pooled=[], warmed=True)
    display = Display(Console(file=io.StringIO()), live=False)
    r = Rounds("a", "run", {"s": [s]}, None, {id(s): line}, 0.1, 0.0, 0.0, display, 2,
               lambda subject, ids: None, lambda subject, ids, verdict: None)
    r.run()
    assert r.count == rounds == len(line.new)


@pytest.mark.parametrize("pace,rounds", [(1.0, 2), (10.0, 0)])
def test_a_first_round_is_estimated_at_the_pace_the_phase_has_run(
        pace: float, rounds: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a busy machine the plan's estimate of a later analysis' first round is scaled by how
    much longer than planned the earlier rounds ran: one that would pass the limit is not begun."""
    monkeypatch.setattr(rounding, "condition_reasons", lambda conditions: ["load 18.4 on 2 cores"])
    s = subject(1, 1)
    line = Timeline(pooled=[], warmed=True)
    display = Display(Console(file=io.StringIO()), live=False)
    left = 3 * s.allocation.block_s  # room for the planned first round, not for ten times it
    r = Rounds("a", "run", {"s": [s]}, None, {id(s): line}, 0.1, 0.0, left, display, 2,
               lambda subject, ids: None, lambda subject, ids, verdict: None, paced=(1.0, pace))
    r.run()
    assert r.count == rounds and (r.planned_s > 0) == (rounds > 0)


def test_a_round_given_up_between_blocks_keeps_none_of_its_blocks() -> None:
    """On a busy machine, a round stops before a block that would end past the limit; its ratios pair
    every strategy's block, so the blocks it did time are dropped, not kept unpaired."""
    a, b = subject(1, 1), subject(1, 1)
    lines = {id(a): Timeline(pooled=[], warmed=True), id(b): Timeline(pooled=[], warmed=True)}
    display = Display(Console(file=io.StringIO()), live=False)
    r = Rounds("x", "run", {"a": [a], "b": [b]}, "a", lines, 0.1, 0.0, 10.0, display, 2,
               lambda subject, ids: None, lambda subject, ids, verdict: None)
    asked = iter([False, True])  # b's block would end past the limit
    assert r._round(["a", "b"], lambda subject: next(asked)) is False
    assert r.count == 0 and all(not line.new for line in lines.values())
    assert r._round(["a", "b"], lambda subject: False) is True
    assert r.count == 1 and all(len(line.new) == 1 for line in lines.values())


def test_rounds_wanted_read_a_spread_only_from_three_rounds() -> None:
    base = {"r0": 1.0, "r1": 1.0, "r2": 1.0}
    noisy = {"r0": 0.50, "r1": 0.55, "r2": 0.45}  # 2x faster, +-10% a round: unresolved at 10%
    (extra,) = rounding.rounds_wanted({"b": base, "s": noisy}, "b", 0.10)  # type: ignore[misc]
    assert extra >= 1
    two = {r: v for r, v in noisy.items() if r != "r2"}
    assert rounding.rounds_wanted({"b": base, "s": two}, "b", 0.10) is None  # one degree of freedom: unknown
    assert rounding.rounds_wanted({"b": base, "s": noisy}, "b", 10.0) == []  # resolved: nothing wanted
    assert rounding.rounds_wanted({"s": noisy}, None, 0.10) == []  # no baseline, but its rounds suffice
