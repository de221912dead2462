"""Sharing the benchmark budget in rounds: the floor, extra rounds, and one clock for the run."""

import pytest

from harness.base.units import format_seconds

from harness.bench.budget import (BLOCK_OVERHEAD_S, BLOCK_S, MIN_ROUNDS, OVERRUN, POSITIONS, PROCESSES, SLOW_CALL_S,
                                  Allocation, Budget, allocate, floor_s, rounds_note)


def want(per: float, group: str = "g", matrices: int = 1, warmup: int = 1) -> Allocation:
    return Allocation(group=group, per_matrix_s=per, matrices=matrices, warmup=warmup, calls=1, sample=4)


def test_the_floor_is_the_warm_ups_and_min_rounds_in_each_process() -> None:
    wants = {("a", "numpy", "g"): want(0.3), ("a", "factored", "g"): want(1e-4)}
    # a slow call gets no warm-up; a fast one's block is BLOCK_S; each block has its overhead
    assert floor_s(wants) == pytest.approx(PROCESSES * (1e-4 + MIN_ROUNDS * (0.3 + BLOCK_S + 2 * BLOCK_OVERHEAD_S)))


def test_a_slow_call_gets_no_warm_up_a_fast_one_does() -> None:
    slow, fast = allocate({("a", "s", "g"): want(SLOW_CALL_S)}, 0.0), allocate({("a", "f", "g"): want(1e-3)}, 0.0)
    assert slow[("a", "s", "g")].warmups == 0 and fast[("a", "f", "g")].warmups == 1


def test_a_baseline_and_a_pca_position_are_warmed_up_however_slow() -> None:
    """A cold first call of the baseline enters every ratio (numpy 1.8x the next ones on the main
    job); a position's first call allocates the streaming buffers (dual_gram 3.5x)."""
    position, baseline = want(0.2, group=POSITIONS), want(0.2).model_copy(update={"baseline": True})
    assert position.warmups == baseline.warmups == 1 and position.first_s == pytest.approx(0.2)
    assert want(0.2, group=POSITIONS, warmup=0).warmups == 0  # the spec's warmup = 0 holds
    assert want(0.2).warmups == 0  # a slow compared strategy: its cold call is its own ratio's


def test_the_budget_above_the_floor_buys_every_analysis_the_same_extra_rounds() -> None:
    wants = {("cheap", "x", "g"): want(0.1), ("dear", "y", "g"): want(0.9)}
    out = allocate(wants, floor_s(wants) + 3.5 * PROCESSES * (1.0 + 2 * BLOCK_OVERHEAD_S))  # 3.5 rounds of both
    assert {a.rounds for a in out.values()} == {MIN_ROUNDS + 3}
    assert {a.rounds for a in allocate(wants, 0.0).values()} == {MIN_ROUNDS}


def test_rounds_note_says_what_a_round_of_this_strategy_costs() -> None:
    out = allocate({("a", "x", "g"): want(0.3, matrices=2)}, 0.0)
    assert rounds_note(list(out.values())) == (
        f"1 round planned in each of {PROCESSES} processes, 2 matrices a call (est. {format_seconds(0.6)}): "
        f"~{format_seconds(PROCESSES * (0.6 + BLOCK_OVERHEAD_S))} of its timing a round")
    assert rounds_note(list(allocate({("a", "x", "g"): want(0.3, matrices=2)}, 10.0).values())).startswith("5 rounds")


def test_rounds_note_of_a_fast_call_gives_the_call_and_the_blocks_it_fills() -> None:
    """Walk 5: every fast strategy said `~210 ms a round` beside a 140 us median; the note gives the
    call's own estimate (what the table's median checks) and says why the round costs more."""
    out = allocate({("a", "x", "g"): want(1e-4, matrices=2), ("a", "x", "h"): want(1e-4, group="h")}, 0.0)
    assert rounds_note(list(out.values())) == (
        f"1 round planned in each of {PROCESSES} processes, 2 matrices a call (est. {format_seconds(2e-4)}), repeated to fill "
        f"{format_seconds(BLOCK_S)} blocks: ~{format_seconds(PROCESSES * 2 * (BLOCK_S + BLOCK_OVERHEAD_S))} "
        "of its timing a round")

    tiny = allocate({("a", "x", POSITIONS): want(2e-7, group=POSITIONS, matrices=2)}, 0.0)
    assert "2 positions a call (est. <1 µs)" in rounds_note(list(tiny.values()))  # walk 10: `est. 0 µs`


class Clock:
    """A clock the test moves by hand: the Budget reads time only through Budget.clock."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(Budget, "clock", staticmethod(c))
    return c


def test_rounds_beyond_the_floors_spend_the_budget_shared_by_the_cost_of_a_round(clock: Clock) -> None:
    budget = Budget(10.0, 12.0, floors={"a": 2.0, "b": 4.0}, weights={"a": 1.0, "b": 3.0})
    assert budget.extra_s("a") == pytest.approx(4.0 / 4)  # a quarter of what the floors leave of the budget
    budget.open("a")
    assert budget.fits(3.0, floor=False, quiet=True) and not budget.fits(3.1, floor=False, quiet=True)
    clock.now = 7.0  # it overran: b keeps its floor (the phase's hard limit), no extra
    budget.close("a")
    assert budget.spent_s == 7.0 and budget.extra_s("b") == 0.0


def test_a_floor_runs_on_a_quiet_machine_past_the_limit_and_not_on_a_busy_one(clock: Clock) -> None:
    budget = Budget(4.0, 8.0, floors={"a": 8.0}, weights={"a": 1.0})
    budget.open("a")
    clock.now = 8.0 * (1 + OVERRUN)
    assert budget.fits(1.0, floor=True, quiet=True)
    assert not budget.fits(1.0, floor=True, quiet=False) and not budget.fits(1.0, floor=False, quiet=True)


def test_asking_whether_work_fits_changes_nothing_what_the_rounds_saw_is_kept_apart(clock: Clock) -> None:
    """Review: `fits` kept the machine's quiet as a side effect, so asking changed the ETA's limit."""
    budget = Budget(4.0, 8.0, floors={"a": 8.0}, weights={"a": 1.0})
    budget.open("a")
    assert budget.fits(1.0, floor=True, quiet=False) and budget.quiet is None
    assert budget.seen(False) is False and budget.quiet is False
    assert budget.fits(1.0, floor=True, quiet=True) and budget.quiet is False


def test_one_off_work_is_outside_the_budget_once_however_nested(clock: Clock) -> None:
    budget = Budget(4.0, 4.0, floors={"a": 1.0}, weights={"a": 1.0})
    budget.open("a")
    with budget.outside():
        with budget.outside():
            clock.now = 2.0
    clock.now = 2.5
    assert budget.elapsed_s == pytest.approx(0.5) and budget.one_off_s == pytest.approx(2.0)
    assert budget.live_s == pytest.approx(0.5)


def test_one_off_work_counts_the_workers_it_started_once_it_ends(clock: Clock) -> None:
    """What each timing worker costs this run, for the ETA (run.eta.worker_s): walk 12's first run
    took 0.34 s a worker against the plan's 0.24."""
    budget = Budget(4.0, 4.0, floors={"a": 1.0}, weights={"a": 1.0})
    budget.open("a")
    with budget.outside("starting workers", 4):
        assert budget.workers == 0  # not yet: their seconds are not counted either
        clock.now = 2.0
    with budget.outside("verifying answers"):
        clock.now = 3.0
    assert budget.workers == 4 and budget.one_off_s == pytest.approx(3.0)


def test_a_floor_over_the_budget_buys_no_extra_rounds_and_a_covered_floor_reserves_nothing() -> None:
    """The plan's floor (from the model on a first run) may be an overestimate: the rounds after
    the floor spend the budget, never the estimate's slack; a floor pooled rounds cover is 0."""
    assert Budget(4.0, 8.0, floors={"a": 5.0, "b": 3.0}, weights={"a": 1.0, "b": 1.0}).extra_s("a") == 0.0
    covered = Budget(4.0, 4.0, floors={"a": 0.0, "b": 0.0}, weights={"a": 1.0, "b": 1.0})
    assert covered.extra_s("a") == pytest.approx(2.0)


def test_a_fast_call_is_timed_three_times_a_block_and_the_median_kept() -> None:
    from harness.bench.budget import MEDIAN_CALL_S, MEDIAN_CALLS, calls_for

    assert calls_for(MEDIAN_CALL_S / 2, 1) == MEDIAN_CALLS and calls_for(MEDIAN_CALL_S, 1) == 1
    assert calls_for(MEDIAN_CALL_S / 2, 5) == 5 and calls_for(1.0, 2) == 2
