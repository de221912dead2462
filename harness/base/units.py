"""Human-readable durations and sizes, one spelling everywhere (plans, tables, errors), and
the one timestamp format of records and wisdom."""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone

DURATION_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def now() -> str:
    """UTC, ISO 8601, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def format_seconds(s: float | None) -> str:
    """3 significant figures in ms and s, whole from 100 up (4.66 s, 46.6 s, 466 s, 1,234 s, 30.7 ms,
    1.10 ms), so a column of times reads alike (not `~466.37 s` beside `~307.0 ms`); whole µs
    below a millisecond, the timer's grain, `<1 µs` below it (a plan's `est. 0 µs` read as a bug);
    nothing at all in seconds (`--budget 0s` read back as `0 µs` named a grain the user never wrote)."""
    if s is None:
        return "-"
    if s == 0:
        return "0 s"
    if 0 < s < 1e-6:
        return "<1 µs"
    if s < 0.9995e-3:  # would round to 1,000 µs: 1.00 ms
        return f"{s * 1e6:.0f} µs"
    value, unit = (s * 1e3, "ms") if s < 0.9995 else (s, "s")
    return f"{value:,.0f} {unit}" if value >= 99.95 else f"{significant(value, 3)} {unit}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 round`, `2 rounds`, `0 rounds`: a count with its noun agreeing."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def format_speedup(x: float | None) -> str:
    """A speedup as every page writes it, an interval's ends included (format_interval): 3 significant
    figures, trailing zeros kept (9.00x, 45.4x, 0.750x, 0.0270x), whole with thousands separators from
    100 up (1,130x). One rule, so one quantity does not read `50.7x (22.5-114)` in one run and
    `45.35x (24.35-84.49)` in the next."""
    return "-" if x is None else _figure(x) + "x"


def _figure(x: float) -> str:
    return f"{x:,.0f}" if x >= 99.95 else significant(x, 3)  # 99.95 rounds to 100 at 3 figures


def format_interval(low: float | None, high: float | None) -> str:
    """A speedup's interval without its unit, its ends as format_speedup writes them ("1.42-1.60",
    "21.3-148", "1,050-1,210", "1.20-inf")."""
    if low is None or high is None:
        return "no interval"
    return f"{_end(low)}-{'inf' if high == float('inf') else _end(high)}"


def _end(x: float) -> str:
    """An interval's end, with digits enough that one off 1 never reads as 1: a significant speedup
    read `1.54x (1.00-2.36)`, its low end 1.0008, as if its interval held 1 (walk 22)."""
    text, digits = _figure(x), 3
    while x != 1.0 and float(text.replace(",", "")) == 1.0 and digits < 9:
        digits += 1
        text = significant(x, digits)
    return text


def either_way(factor: float) -> str:
    """`x2.6 either way`: an interval symmetric in log space (711-3,862 around 1,657) as the factor
    it spans each side of its estimate, never "±134%", which reads as reaching below zero; enough
    digits that a factor just above 1 does not read as 1 (`x1.05`), none from 10 up (`x12`)."""
    digits = f"{factor:.2f}" if factor < 1.1 else f"{factor:.1f}" if factor < 10 else f"{factor:,.0f}"
    return f"x{digits} either way"


def significant(x: float, figures: int) -> str:
    """`figures` significant figures in plain notation, trailing zeros kept, so both ends of an
    interval and every cell of a column read alike: 0.010 beside 0.071 (not 0.01), 3.0% beside 0.82%."""
    if not math.isfinite(x) or x <= 0:
        return f"{x:g}"
    rounded = float(f"{x:.{figures}g}")
    return f"{rounded:,.{max(0, figures - 1 - math.floor(math.log10(rounded)))}f}"


def format_ratio(x: float) -> str:
    """3 significant figures in plain notation, trailing zeros kept, so a column of ratios and their
    intervals reads alike: 0.810, 1.30, 0.000779, 2,160 (not 0.81, 1.3, 7.79e-04, 2.16e+03)."""
    return significant(x, 3)


def format_p(p: float | None) -> str:
    """A p value as a plain decimal, 2 significant figures kept: 0.33, 0.80 (not 0.8 beside 0.62),
    0.012, "<0.001" below that."""
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:#.2g}"


def p_clause(p: float | None) -> str:
    """`p=0.012`, or `p<0.001` (not `p=<0.001`), as a sentence writes it."""
    text = format_p(p)
    return f"p{text}" if text.startswith("<") else f"p={text}"


def format_rate(x: float | None) -> str:
    """GFLOP/s as format_ratio writes it, one rule wherever the column is printed: 15.0, 19.4,
    0.195, 0.0239, 118, 51,200 (not 15, 9.2 and 51234 beside 19.4 and 0.0239)."""
    return "-" if x is None else format_ratio(x)


def format_share(x: float | None) -> str:
    """A fraction as a percentage: whole percents from 10%, two significant figures below (3.0%
    beside 0.82%, not 3%)."""
    if x is None:
        return "-"
    return f"{100 * x:.0f}%" if x >= 0.1 else f"{significant(100 * x, 2)}%"


DURATION_PATTERN = r"\s*([0-9]*\.?[0-9]+)\s*(ms|s|min|m|h)?\s*"  # "20s", "500ms", "1.5m", "2h"


def parse_duration(value: str | float | int) -> float:
    """Seconds from a number (seconds) or a string like "20s", "500ms", "1.5m", "2h"."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        match = re.fullmatch(DURATION_PATTERN, str(value))
        if match is None:
            raise ValueError(f"{value!r} is not a duration; expected e.g. \"20s\", \"500ms\", \"2m\"")
        seconds = float(match.group(1)) * DURATION_UNITS[match.group(2) or "s"]
    if not seconds >= 0 or seconds == float("inf"):
        raise ValueError(f"{value!r}: a duration must be a finite number of seconds >= 0")
    return seconds


def parse_share(value: str | float | int) -> float:
    """A fraction from a number (0.1) or a percentage ("10%"), in (0, 1]."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        share = float(value)
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(%)?\s*", str(value))
        if match is None:
            raise ValueError(f"{value!r} is not a share; expected e.g. \"10%\" or 0.1")
        share = float(match.group(1)) / (100 if match.group(2) else 1)
    if not 0 < share <= 1:
        raise ValueError(f"{value!r}: expected a share above 0% and at most 100%")
    return share
