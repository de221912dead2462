"""The intervals of bench.statistics on synthetic rounds with known ratios: coverage, width,
and the marks a bimodal or drifting set of rounds gets."""

import math

import numpy as np
import pytest

from harness.bench.noise import dispersion_reasons
from harness.bench.statistics import _t, drift_reason, log_interval, paired_ratio, rounds_to_resolve, welch_ratio


@pytest.mark.parametrize("rounds", [3, 5, 10])
def test_the_paired_interval_covers_the_true_ratio_in_about_95_percent_of_trials(rounds: int) -> None:
    """Rounds share a drift (each round's load hits both sides) and carry their own noise."""
    rng = np.random.default_rng(rounds)
    true, trials, covered = 40.0, 2000, 0
    for _ in range(trials):
        drift = np.exp(rng.normal(0, 0.3, rounds))  # what both sides of a round share
        base = 0.25 * drift * np.exp(rng.normal(0, 0.08, rounds))
        fast = 0.25 / true * drift * np.exp(rng.normal(0, 0.08, rounds))
        ci = paired_ratio(base, fast)
        covered += ci.low <= true <= ci.high
    assert 0.93 <= covered / trials <= 0.97


def test_the_interval_narrows_with_rounds_and_says_when_it_meets_the_precision() -> None:
    rng = np.random.default_rng(0)
    noise = np.exp(rng.normal(0, 0.05, 40))
    few, many = paired_ratio(np.full(3, 2.0), 1.0 * noise[:3]), paired_ratio(np.full(40, 2.0), 1.0 * noise)
    assert many.half_width < few.half_width
    assert many.resolved(0.10) and not paired_ratio([2.0], [1.0]).resolved(0.10)


def test_one_round_has_no_interval_and_identical_rounds_a_point() -> None:
    one = log_interval([math.log(3.0)])
    assert one.estimate == pytest.approx(3.0) and one.high == math.inf
    same = paired_ratio([2.0, 2.0, 2.0], [1.0, 1.0, 1.0])
    assert (same.low, same.estimate, same.high) == pytest.approx((2.0, 2.0, 2.0))


def test_welch_finds_a_real_change_and_not_a_null_one() -> None:
    rng = np.random.default_rng(1)
    a = np.exp(rng.normal(0, 0.05, 8))
    b_same, b_slow = np.exp(rng.normal(0, 0.05, 8)), 1.5 * np.exp(rng.normal(0, 0.05, 8))
    _, p_same = welch_ratio(a, b_same)
    ci, p_slow = welch_ratio(a, b_slow)
    assert p_same is not None and p_same > 0.01
    assert p_slow is not None and p_slow < 1e-6 and ci.low < 1.5 < ci.high


def test_welch_aa_trials_reject_at_about_alpha() -> None:
    """Identical code, independent rounds: p < 0.01 in about 1% of trials, not in most."""
    rng = np.random.default_rng(2)
    rejected = sum(welch_ratio(np.exp(rng.normal(0, 0.1, 5)), np.exp(rng.normal(0, 0.1, 5)))[1] < 0.01
                   for _ in range(2000))
    assert rejected / 2000 < 0.03


def test_a_drifting_set_of_rounds_is_marked() -> None:
    steady = np.exp(np.random.default_rng(3).normal(0, 0.03, 10))
    assert drift_reason(steady) is None
    growing = np.linspace(1.0, 1.8, 10)
    reason = drift_reason(growing)
    assert reason is not None and reason.startswith("drifting: 10 rounds grew") and "slower" in reason


def test_a_bimodal_set_of_rounds_is_marked() -> None:
    rounds = [1.0, 1.01, 0.99, 1.02, 2.0, 2.02, 1.98, 2.01]
    assert any(r.startswith("bimodal") for r in dispersion_reasons(rounds))


def test_rounds_to_resolve_is_the_fewest_rounds_at_that_spread_within_the_precision() -> None:
    logs = [0.05, -0.05, 0.10, -0.10]  # sd 0.0913 over 4 rounds: +-15% at 95%, unresolved at 10%
    interval = log_interval(logs)
    sd = float(np.std(logs, ddof=1))
    n = rounds_to_resolve(interval, 0.10, 30)
    assert n is not None and n > 4
    assert _t(n - 1) * sd / math.sqrt(n) <= math.log1p(0.10) < _t(n - 2) * sd / math.sqrt(n - 1)
    assert rounds_to_resolve(interval, 0.10, n - 1) is None  # not within the most rounds allowed
    assert rounds_to_resolve(log_interval([0.1]), 0.10, 30) is None  # one round: no spread to read
