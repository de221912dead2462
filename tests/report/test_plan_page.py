"""Walk 18's HTML Plan on the main job's record: the Plan table names the device as the results tables
do, and each timed point's timing estimate is derivable from its parts and the rounds planned beside it."""

from __future__ import annotations

import html as html_lib
import re
from pathlib import Path

from harness.base.units import parse_duration
from harness.report.html import render_report
from harness.report.labels import device_text

from .test_run_screen import real


def _rows(page: str, table: str) -> list[list[str]]:
    """The text of each cell of each row of the page's table that starts with `table`."""
    body = page[page.index(table):]
    body = body[:body.index("</table>")]
    return [[html_lib.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
            for r in re.findall(r"<tr>(.*?)</tr>", body, re.S)[1:]]


def _s(text: str) -> float:
    """Seconds of a figure format_seconds wrote (`1.17 s`, `210 ms`, `869 µs`)."""
    text = text.replace(",", "")
    return float(text[:-3]) * 1e-6 if text.endswith(" µs") else parse_duration(text)


def test_the_plan_tables_device_column_is_device_and_library(tmp_path: Path) -> None:
    """Walk 18: the Plan's `device` column held `numpy` where the results tables say `cpu (numpy)`."""
    record = real("main_job", tmp_path)
    page = render_report(record, tmp_path / "main_job")
    plan = page[page.index('id="plan"'):]
    assert "<th>device (library)</th>" in plan[:plan.index("</tr>")]
    rows = _rows(plan, "<table>")
    assert [r[2] for r in rows] == [device_text(s.device) for s in record.plan.steps] == ["cpu (numpy)"] * 3


def test_each_timing_estimate_adds_up_from_its_warm_ups_and_the_rounds_planned(tmp_path: Path) -> None:
    """Walk 18: `2.32 s` beside "1 round planned … ~1.20 s of its timing a round", `2.60 s` beside
    "~2.60 s a round": the estimate now gives its parts, the rounds and a round's seconds the
    planned cell's, and they add up to it (within the figures' three digits)."""
    record = real("main_job", tmp_path)
    rows = _rows(render_report(record, tmp_path / "main_job"), '<table id="plan-timed">')
    assert len(rows) == sum(len(s.timed) for s in record.plan.steps) > 4
    warmed = 0
    for _analysis, label, _role, estimate, planned in rows:
        parts = re.fullmatch(r"(.+?) = (?:(.+?) warm-up \+ )?(\d+) rounds? × (.+)", estimate)
        assert parts, (label, estimate)
        total, warm, rounds, round_s = parts.groups()
        said = re.match(r"(\d+) rounds? planned in each of 3 processes, .*: ~(.+) of its timing a round$", planned)
        assert said and said.groups() == (rounds, round_s), (label, estimate, planned)
        added = (_s(warm) if warm else 0.0) + int(rounds) * _s(round_s)
        assert abs(added - _s(total)) <= 0.01 * _s(total), (label, estimate)
        warmed += warm is not None
    assert 0 < warmed < len(rows)  # a slow compared call has no warm-up, a baseline has
