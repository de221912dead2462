"""What the run report claims beside its numbers (walk 6): a cached analysis is not presented as
computed, a modelled estimate far from the measurement is said to be, code in prose carries no
side padding that reads as a space, and the max error says whose matrices it is over."""

from __future__ import annotations

import html as html_lib
import io
import re
import shutil
from pathlib import Path

from rich.console import Console

from harness.base.units import format_seconds
from harness.record.run_record import RECORD, RunRecord, load_record
from harness.report.fitting import Fitted
from harness.report.html import render_report
from harness.report.labels import VERIFIED_NOTE, total_text
from harness.report.terminal import run_screen

RECORDS = Path(__file__).parent / "records"


def main_job(tmp_path: Path) -> RunRecord:
    shutil.copy(RECORDS / "main_job.json", tmp_path / RECORD)
    return load_record(tmp_path)


def text_of(page: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html_lib.unescape(page)).split())


def section(page: str, anchor: str) -> str:
    """The text of the page from the heading `anchor` to the next heading."""
    start = page.index(f'<h2 id="{anchor}">')
    end = page.find("<h2", start + 1)
    return text_of(page[start:end if end > 0 else None])


def test_an_analysis_read_from_the_result_cache_says_so(tmp_path: Path) -> None:
    """`2128 matrices computed with factored ... in 45.2 ms wall time` stood above a compute total
    of ~324 ms: every chunk had come from the result cache."""
    record = main_job(tmp_path)
    cached, partly = record.analyses[0], record.analyses[1]
    cached.cached_chunks, cached.computed_chunks = 2, 0
    partly.cached_chunks, partly.computed_chunks = 1, 1
    page = render_report(record, tmp_path)
    first = section(page, f"analysis-{cached.name}")
    assert f"{cached.n_matrices} matrices from the result cache (computed with {cached.strategy}" in first
    assert "by an earlier run)" in first and "computed with" not in first.split("(")[0]
    assert "the run's own time" not in first
    second = section(page, f"analysis-{partly.name}")
    assert f"matrices computed with {partly.strategy}" in second and "(1 of 2 chunks from the result cache)" in second
    third = section(page, f"analysis-{record.analyses[2].name}")  # computed by this run: as before
    assert "from the result cache" not in third and "the run's own time" in third


def test_the_plan_says_once_where_a_modelled_estimate_missed_the_measurement(tmp_path: Path) -> None:
    """The plan showed `est. 1 µs` for an analysis the table measured at ~409 µs, unremarked."""
    record = main_job(tmp_path)
    assert "Modelled estimates missed" not in section(render_report(record, tmp_path), "plan")  # within 3x
    geometry = next(s for s in record.plan.steps if s.analysis == "geometry")
    candidate = next(c for c in geometry.candidates if c.label == geometry.strategy)
    timing = next(t for t in record.analyses[2].timings if t.label == geometry.strategy)
    candidate.estimate_s = timing.estimate_total_s / 400
    top3 = next(s for s in record.plan.steps if s.analysis == "top3")
    next(c for c in top3.candidates if c.label == top3.strategy).estimate_s /= 10
    plan = section(render_report(record, tmp_path), "plan")
    assert plan.count("Modelled estimates missed") == 1
    assert (f"(geometry {geometry.strategy}: est. {format_seconds(candidate.estimate_s)}, "
            f"measured {total_text(timing.estimate_total_s, timing.extrapolated)}, and 1 more)") in plan
    assert "the next plan uses" in plan


def test_inline_code_has_no_side_padding() -> None:
    """`( harness system names ...)` and `( --budget 30s )`: the code spans' side padding, drawn
    beside a parenthesis, read as stray spaces in the page."""
    page = render_report(load_record(RECORDS / "main_job.json"), RECORDS)
    style = page[page.index("<style>"):page.index("</style>")]
    rules = re.findall(r"([^{}]+)\{([^}]*)\}", re.sub(r"/\*.*?\*/", "", style, flags=re.S))
    paddings = [body for selectors, body in rules
                if "code" in [s.strip() for s in selectors.split(",")] and "padding" in body]
    assert paddings, "inline code's padding is set"
    for body in paddings:
        values = re.search(r"padding\s*:\s*([^;]+)", body).group(1).split()  # type: ignore[union-attr]
        horizontal = values[1] if len(values) > 1 else values[0]
        assert float(re.sub(r"[a-z%]+$", "", horizontal)) == 0, body


def test_the_max_error_says_it_is_over_this_runs_matrices(tmp_path: Path) -> None:
    """numpy 2.7e-08 then 1.6e-08 for one spec and seed: each run checks the matrices its own rounds
    visit, which nothing said."""
    record = main_job(tmp_path)
    assert VERIFIED_NOTE in section(render_report(record, tmp_path), "reading")
    table = next(item for item in run_screen(record, explain=True) if isinstance(item, Fitted))
    caption = str(table.fit(Console(width=160, file=io.StringIO()), 160).caption)  # the --explain text as drawn
    assert "max error" in table.fit(Console(width=160, file=io.StringIO()), 160).columns[-2].header
    assert VERIFIED_NOTE in " ".join(caption.split())
