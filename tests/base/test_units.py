"""Number formats: both ends of an interval, and every cell of a share column, follow one
significant-figure rule (issue 48: `0.01-0.071`, `3%` beside `0.82%`)."""

from harness.base.units import format_interval, format_share, format_speedup


def test_an_intervals_ends_keep_the_same_significant_figures() -> None:
    assert format_interval(0.01, 0.071) == "0.010-0.071"
    assert format_speedup(0.027) == "0.027x" and format_speedup(0.0999) == "0.10x"


def test_shares_below_ten_percent_keep_two_significant_figures() -> None:
    assert [format_share(x) for x in (0.03, 0.0082, 0.028, 0.41, 0.0)] == ["3.0%", "0.82%", "2.8%", "41%", "0%"]


def test_a_p_value_in_a_sentence_reads_p_below_or_p_equals() -> None:
    from harness.base.units import p_clause

    assert [p_clause(p) for p in (0.0004, 0.012, 0.33)] == ["p<0.001", "p=0.012", "p=0.33"]
