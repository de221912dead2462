"""The cost fits of bench.scaling on synthetic timings of known cost: a power law's exponent
interval covers the true exponent as often as it says, the class fit names the class the data
grow by (one the exponent's interval holds), and two known curves cross where the algebra says."""

import math

import numpy as np
import pytest

from harness.bench.scaling import class_fits, classes_within, crossover, log_variance, power_law

SIZES = np.array([256.0, 384.0, 512.0, 768.0, 1024.0])


def noisy(rng: np.random.Generator, exponent: float, sd: np.ndarray, c: float = 1e-9) -> np.ndarray:
    return c * SIZES**exponent * np.exp(rng.normal(0.0, sd))


def test_the_exponents_interval_covers_the_true_exponent_in_at_least_93_percent_of_200_draws() -> None:
    """Each point's own noise (log sd 0.05 to 0.2), stated to the fit as its interval."""
    rng = np.random.default_rng(49)
    sd = np.array([0.05, 0.2, 0.1, 0.15, 0.08])
    z = 1.959963984540054
    covered = 0
    for _ in range(200):
        t = noisy(rng, 3.0, sd)
        variances = [log_variance(x, x * math.exp(-z * s), x * math.exp(z * s)) for x, s in zip(t, sd)]
        covered += power_law(SIZES, t, variances).covers(3.0)
    assert covered >= 186


def test_weights_follow_each_points_interval() -> None:
    """A point stated a thousand times less certain barely moves the fit: an outlier there does
    not, where unweighted it pulls the exponent far off."""
    t = 1e-9 * SIZES**2.0
    t[-1] *= 4.0
    variances = [0.01, 0.01, 0.01, 0.01, 10.0]
    assert power_law(SIZES, t, variances).exponent == pytest.approx(2.0, abs=0.01)
    assert power_law(SIZES, t).exponent > 2.3


def test_an_exact_power_law_is_fitted_exactly_and_two_points_leave_no_interval() -> None:
    fit = power_law(SIZES, 3e-8 * SIZES**1.5)
    assert fit.exponent == pytest.approx(1.5)
    assert fit.coefficient == pytest.approx(3e-8)
    assert fit.at(2048.0) == pytest.approx(3e-8 * 2048.0**1.5)
    two = power_law([10.0, 20.0], [1.0, 4.0])
    assert two.exponent == pytest.approx(2.0) and (two.low, two.high) == (-math.inf, math.inf)
    with pytest.raises(ValueError, match="two distinct sizes"):
        power_law([10.0, 10.0], [1.0, 2.0])


@pytest.mark.parametrize(("name", "f"), [("n^2", lambda n: n**2), ("n^3", lambda n: n**3), ("n", lambda n: n),
                                         ("n log n", lambda n: n * np.log2(n)), ("1", lambda n: 0 * n + 1)])
def test_the_class_fit_picks_the_class_the_times_grow_by(name: str, f) -> None:
    rng = np.random.default_rng(2)
    t = 1e-6 * f(SIZES) * np.exp(rng.normal(0, 0.02, len(SIZES)))
    best, *_ = classes_within(SIZES, t, None, power_law(SIZES, t))
    assert best.name == name
    assert best.coefficient == pytest.approx(1e-6, rel=0.05)
    assert best.rms < 0.05 < class_fits(SIZES, t)[1].rms


def test_the_class_is_one_the_exponents_interval_holds_weighted_as_the_exponent_is() -> None:
    """Walk-through 10: `rank^1.93 (1.36 to 2.50) ... class rank^3`: Google Benchmark's unweighted
    fit in seconds follows the largest point (here 1.8x off its rank^2 line, and its interval wide),
    where rank^3 fits best; the class is rank^2, as the exponent says. A rank^2.5 law, its
    interval between the classes, has none."""
    sizes = [16.0, 32.0, 64.0, 128.0, 256.0]
    t = [1e-6 * n**2 * off for n, off in zip(sizes, [1.0, 1.25, 0.8, 0.75, 1.8])]
    variances = [log_variance(s, s / h, s * h) for s, h in zip(t, [1.1, 1.1, 1.1, 1.1, 2.5])]
    power = power_law(sizes, t, variances)
    assert power.high < 3
    [best] = classes_within(sizes, t, variances, power)  # the only one: told apart
    assert best.name == "n^2" and power.covers(best.exponent)
    rng = np.random.default_rng(3)
    between = 1e-8 * SIZES**2.5 * np.exp(rng.normal(0, 0.02, len(SIZES)))
    assert classes_within(SIZES, between, None, power_law(SIZES, between)) == []


def test_two_known_curves_cross_where_they_are_equal() -> None:
    """t_a = 1e-6 n^1 and t_b = 1e-9 n^2 meet at n = 1000; beyond it, a is the cheaper."""
    rng = np.random.default_rng(5)
    n = np.array([200.0, 400.0, 800.0, 1600.0, 3200.0])
    a = power_law(n, 1e-6 * n * np.exp(rng.normal(0, 0.03, 5)))
    b = power_law(n, 1e-9 * n**2 * np.exp(rng.normal(0, 0.03, 5)))
    found = crossover(a, b)
    assert found is not None and found.a_faster_above
    assert found.low < 1000.0 < found.high
    assert 0.8 * 1000 < found.size < 1.25 * 1000 and found.high / found.low < 1.6
    assert crossover(b, a).a_faster_above is False


def test_nearly_parallel_curves_leave_the_far_end_of_their_crossover_open() -> None:
    """Exponents whose difference the fits do not resolve: the crossing may never come."""
    rng = np.random.default_rng(6)
    a = power_law(SIZES, 2e-9 * SIZES**2.0 * np.exp(rng.normal(0, 0.2, 5)))
    b = power_law(SIZES, 1e-9 * SIZES**2.05 * np.exp(rng.normal(0, 0.2, 5)))
    found = crossover(a, b)
    assert found is not None and (math.isinf(found.high) or found.low == 0.0)
    exact = power_law(SIZES, SIZES**2.0)
    assert crossover(exact, exact) is None


def test_an_rms_interval_holds_its_rms_and_narrows_with_its_points_intervals() -> None:
    """Walk 16: a hard 25% cut on an RMS of 25.3%, then 23.1%, for one sweep run twice; its interval says how far it moves."""
    from harness.bench.scaling import rms_intervals

    seconds = 1e-3 * np.exp(np.random.default_rng(7).normal(0, 0.2, 5))
    spans = {}
    for sd in (0.02, 0.2):
        fits = class_fits(SIZES, seconds, [sd**2] * 5)
        low, high = rms_intervals(SIZES, seconds, [sd**2] * 5, fits)[fits[0].name]
        assert low <= fits[0].rms <= high
        spans[sd] = high - low
    assert spans[0.02] < spans[0.2] / 3
    assert rms_intervals(SIZES, seconds, None, fits)[fits[0].name] == (fits[0].rms, fits[0].rms)  # no variances: the RMS alone
