"""Sharing the benchmark budget: what fits, what is cut first, and that nothing is dropped."""

import pytest

from harness.bench.budget import BudgetClock, Want, allocate, cost, cut_note, fit


def want(per: float, group: str = "g", matrices: int = 4, least: int = 1) -> Want:
    return Want(group, per, matrices, least, warmup=1, repeats=3)


def test_everything_fits_a_large_budget() -> None:
    a = fit(want(0.01), 100.0)
    assert (a.matrices, a.warmup, a.repeats) == (4, 1, 3)


def test_matrices_go_first_then_warmup_then_repeats() -> None:
    w = want(0.25)  # one matrix, one call: 0.25 s
    assert (lambda a: (a.matrices, a.warmup, a.repeats))(fit(w, 1.0)) == (1, 1, 3)
    assert (lambda a: (a.matrices, a.warmup, a.repeats))(fit(w, 0.75)) == (1, 0, 3)
    assert (lambda a: (a.matrices, a.warmup, a.repeats))(fit(w, 0.5)) == (1, 0, 2)


def test_nothing_fits_still_one_timed_call_on_the_fewest_matrices() -> None:
    a = fit(want(10.0, least=2), 0.001)
    assert (a.matrices, a.warmup, a.repeats) == (2, 0, 1)


def test_a_fast_call_keeps_its_warm_up_and_samples_on_no_budget() -> None:
    a = fit(want(1e-3), 0.0)
    assert (a.matrices, a.warmup, a.repeats, a.min_samples) == (1, 1, 3, 5)
    assert fit(want(1.0), 0.0).min_samples == 1


def test_fast_calls_are_charged_their_autorange_time() -> None:
    assert cost(1e-4, 4, 0, 3, 0.1) == pytest.approx(0.1)
    assert cost(1.0, 1, 1, 2, 0.1) == pytest.approx(3.0)


def test_water_filling_gives_cheap_items_all_and_the_rest_to_expensive_ones() -> None:
    wants = {"cheap": want(1e-4), "dear": want(0.5), "mid": want(0.05)}
    out = allocate(wants, 4.0)
    assert (out["cheap"].matrices, out["cheap"].repeats) == (4, 3)
    assert (out["mid"].matrices, out["mid"].warmup, out["mid"].repeats) == (4, 1, 3)  # 0.8 s
    assert out["dear"].estimate_s <= 4.0 - out["cheap"].estimate_s - out["mid"].estimate_s + 1e-9
    assert out["dear"].matrices == 1 and out["dear"].repeats == 3


def test_cut_note_says_what_and_why() -> None:
    wants = [want(0.3, "a"), want(0.3, "b")]
    cut = [fit(w, 0.7) for w in wants]
    assert cut_note(cut, wants) == "1 matrix per group, no warm-up, 2 repeats: one call costs ~300.0 ms"
    assert cut_note([fit(w, 100) for w in wants], wants) is None
    mixed = [fit(wants[0], 0.7), fit(wants[1], 100)]
    assert cut_note(mixed, wants) == "a: 1 matrix, no warm-up, 2 repeats: one call costs ~300.0 ms"


def test_clock_shares_what_is_left_and_learns_the_estimates_error() -> None:
    clock = BudgetClock(10.0, {"x": 1.0, "y": 3.0})
    assert clock.allowance("x") == pytest.approx(2.5)
    clock.done("x", "numpy", 6.0, ratio=2.0)
    assert clock.allowance("y") == pytest.approx(4.0)
    assert clock.correction("numpy") == 2.0 and clock.correction("torch") == 2.0
    clock.done("y", "torch", 20.0, ratio=0.5)
    assert clock.correction("torch") == 0.5
    # overrun: the floor still leaves an item a quarter of an even share
    assert BudgetClock(8.0, {"z": 1.0, "w": 1.0}, spent_s=100.0).allowance("z") == pytest.approx(1.0)
