"""A log axis' tick labels read as the tables write numbers, and small ones as powers (issue 48)."""

from __future__ import annotations

from harness.report.charts import tick_number


def test_a_tick_below_a_thousandth_is_a_power() -> None:
    """The spectra's y axis read `0.0000001` and `0.000000001`."""
    assert [tick_number(x) for x in (1e-7, 1e-9, 5e-10, 2e-4)] == ["1e-7", "1e-9", "5e-10", "2e-4"]
    assert [tick_number(x) for x in (0.001, 0.5, 1, 20, 1000, 1e5)] == ["0.001", "0.5", "1", "20", "1,000", "100,000"]
