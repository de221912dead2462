"""Number formats: both ends of an interval, and every cell of a share column, follow one
significant-figure rule (issue 48: `0.01-0.071`, `3%` beside `0.82%`)."""

import pytest

from harness.base.units import format_interval, format_seconds, format_share, format_speedup


def test_an_intervals_ends_keep_the_same_significant_figures() -> None:
    assert format_interval(0.01, 0.071) == "0.0100-0.0710"
    # issue 48: a verdict read `21.25-148` beside `13.73-95.55`
    assert format_interval(21.26, 148.0) == "21.3-148" and format_interval(13.73, 95.55) == "13.7-95.5"
    assert format_interval(1050.0, 1210.0) == "1,050-1,210" and format_interval(1.2, float("inf")) == "1.20-inf"
    assert format_speedup(0.027) == "0.0270x" and format_speedup(0.0999) == "0.0999x"


@pytest.mark.parametrize("speedup, low, high, text", [
    (45.35, 24.35, 84.49, "45.4x (24.4-84.5)"), (48.9, 18.52, 129.0, "48.9x (18.5-129)"),
    (28.74, 8.85, 93.32, "28.7x (8.85-93.3)"), (9.0, 9.0, 62.61, "9.00x (9.00-62.6)"),
    (1648.0, 1086.0, 2501.0, "1,648x (1,086-2,501)"), (0.746, 0.476, 1.18, "0.746x (0.476-1.18)"),
    (99.96, 99.94, 100.2, "100x (99.9-100)")])
def test_a_speedup_and_its_ends_have_three_significant_figures_whole_from_100(
        speedup: float, low: float, high: float, text: str) -> None:
    """Walk-through 7: one quantity read `50.7x (22.5-114)` in one run and `45.35x (24.35-84.49)`
    in the next; one rule whatever the upper end."""
    assert f"{format_speedup(speedup)} ({format_interval(low, high)})" == text


def test_shares_below_ten_percent_keep_two_significant_figures() -> None:
    assert [format_share(x) for x in (0.03, 0.0082, 0.028, 0.41, 0.0)] == ["3.0%", "0.82%", "2.8%", "41%", "0%"]


def test_a_p_value_in_a_sentence_reads_p_below_or_p_equals() -> None:
    from harness.base.units import p_clause

    assert [p_clause(p) for p in (0.0004, 0.012, 0.33)] == ["p<0.001", "p=0.012", "p=0.33"]


@pytest.mark.parametrize("seconds, text", [(466.37, "466 s"), (46.637, "46.6 s"), (4.6637, "4.66 s"), (1234.5, "1,234 s"),
                                           (0.307, "307 ms"), (0.0307, "30.7 ms"), (0.0011, "1.10 ms"),
                                           (0.000088, "88 µs"), (0.99996, "1.00 s"), (0.0009996, "1.00 ms")])
def test_times_have_three_significant_figures_whole_from_100(seconds: float, text: str) -> None:
    """Issue 48 (exports): the md wrote `~466.37 s` beside `~307.0 ms`."""
    assert format_seconds(seconds) == text


def test_no_time_at_all_is_said_in_seconds() -> None:
    """A newcomer's walk-through: `--budget 0s` was echoed as `the budget of 0 µs`, a unit they
    never wrote; a grain below 1 ms is for times that have one."""
    assert format_seconds(0) == format_seconds(0.0) == "0 s"


def test_a_time_under_the_grain_reads_less_than_one_not_zero() -> None:
    """Walk-through 10: the run report's plan said `2 positions a call (est. 0 µs)`, read as a bug."""
    assert format_seconds(4e-7) == format_seconds(1e-12) == "<1 µs"
    assert format_seconds(1e-6) == "1 µs" and format_seconds(0) == "0 s"


def test_an_interval_end_off_1_never_reads_as_1() -> None:
    """Walk 22: `1.54x (1.00-2.36)`, a significant speedup whose low end was 1.0008, read as an
    interval that holds 1; an end off 1 gets the digits that tell it apart, and 1 itself stays 1.00."""
    assert format_interval(1.0007571285081802, 2.36) == "1.001-2.36"
    assert format_interval(0.5, 0.99962) == "0.500-0.9996"
    assert format_interval(1.0, 2.0) == "1.00-2.00" and format_interval(0.98, 1.02) == "0.980-1.02"
