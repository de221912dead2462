"""Walk 23's compare of two main-job runs (rated 3.5): B reused A's rounds and both reused an earlier run's,
every group measured while busy. Under a true summary came 15 lines of one `; ` chain of causes (9 bold
orange lines on the page), a rounds note of four jargon sentences, and a `rounds A,` header over a lone `B`."""

from __future__ import annotations

import html
import re
from pathlib import Path

from rich.text import Text

from harness.record.run_record import RunRecord
from harness.report.compare import Comparison, compare_records
from harness.report.compare_view import ROUNDS, compare_table, rounds_note, unstable_lines
from harness.report.html import write_compare

from .test_run_screen import draw, real

EARLIER = "earlier runs' rounds: "


def _reasons(i: int, busy: int, load: float, bimodal: int) -> list[str]:
    """A group's reasons as a busy run flags them: the machine's on every group, the rounds' own on a few."""
    said = [f"other processes took {busy + i % 4}% of the 2 CPUs", f"{EARLIER * (i % 5 == 0)}load {load + i % 3 / 10:.1f} on 2 cores"]
    said += [f"IQR {28 + 8 * i}% of median"] * (i in (1, 2, 3))
    return said + ["bimodal: 3 samples near 131 ms, 3 near 214 ms"] * (i == bimodal)


def walk23(tmp_path: Path) -> tuple[RunRecord, RunRecord, Comparison]:
    """A: the main job, an earlier run's rounds reused before its own; B: all of A's, then 3 of its own."""
    a = real("main_job", tmp_path)
    for i, g in enumerate(g for an in a.analyses for t in an.timings for g in t.groups):
        g.rounds = [r.replace("2026", "2025") for r in g.rounds] + g.rounds
        g.pooled, g.measurement.samples_s = len(g.rounds) // 2, g.measurement.samples_s * 2
        g.measurement.unstable, g.measurement.reasons = True, _reasons(i, 58, 3.8, 4)
    b = a.model_copy(deep=True, update={"started": "2026-11-26T09:39:01+00:00"})
    for i, g in enumerate(g for an in b.analyses for t in an.timings for g in t.groups):
        own = [g.rounds[-1].replace("2026", f"2027-{j}") for j in range(3)]
        g.pooled, g.rounds = len(g.rounds), g.rounds + own
        g.measurement.samples_s = g.measurement.samples_s + [s * 1.1 for s in g.measurement.samples_s[:3]]
        g.measurement.reasons = _reasons(i, 60, 4.0, 9)
    return a, b, compare_records(a, b, ("runs/a", "runs/b"))


def test_the_unstable_groups_are_a_lead_and_a_short_line_per_cause(tmp_path: Path) -> None:
    """One lead line, then a line per cause with its runs and its count; which groups and the clusters' figures
    with --verbose alone."""
    _a, _b, c = walk23(tmp_path)
    n = len(c.rows)
    lines = unstable_lines(c)
    assert lines == [
        f"{n} of {n} groups unstable (both runs; some of A's and some of B's from earlier runs' pooled rounds):",
        f"  A: other processes took 58-61% of the 2 CPUs, B: other processes took 60-63% of the 2 CPUs ({n} groups)",
        f"  A: load 3.8-4.0 on 2 cores, B: load 4.0-4.2 on 2 cores ({n} groups)",
        "  A, B: IQR 36-52% of median (3 groups)",
        "  A, B: bimodal calls (2 groups; two clusters of times)"]
    text, _words, _values = draw(lines, 100)
    assert all(len(line) <= 100 for line in text.splitlines()) and len(text.splitlines()) <= len(lines) + 1
    assert not any(r.label in text for r in c.rows) and "131 ms" not in text  # the detail is --verbose's
    verbose = "\n".join(unstable_lines(c, verbose=True))
    assert "131 ms" in verbose and all(r.label in verbose for r in c.rows)


def test_the_rounds_note_is_plain_words_and_the_tables_rounds_verbose(tmp_path: Path) -> None:
    """`B pooled A's rounds on all 18 rows. They count for A only ... A row here gives its own group's. Their
    run's table says otherwise on ...`: four sentences of jargon."""
    _a, b, c = walk23(tmp_path)
    short = b.analyses[0].timings[0].groups[1]  # its table's rounds (the fewest over the groups) differ from the row's
    short.rounds, short.measurement.samples_s = short.rounds[:-1], short.measurement.samples_s[:-1]
    c = compare_records(_a, b, ("runs/a", "runs/b"))
    assert c.table_rounds
    assert rounds_note(c) == (f"{ROUNDS}: each row's own group's rounds in A and in B. Rounds B reused from A count "
                              "as A's alone. Rounds both reused from earlier runs count for neither, so no round is "
                              "compared with itself.")
    text, _words, _values = draw([rounds_note(c)], 100)
    assert len(text.splitlines()) <= 3
    verbose = rounds_note(c, verbose=True)
    assert verbose is not None and verbose.endswith(f"so it differs on {c.table_rounds[0]}.")


def test_the_pages_headline_is_one_line_and_a_list_of_causes(tmp_path: Path) -> None:
    """The page repeated the chain as 9 lines of bold orange in its headline box."""
    _a, _b, c = walk23(tmp_path)
    page = html.unescape(write_compare([c], tmp_path / "c.html").read_text())
    headline = page[page.index('<section id="headline"'):page.index("</section>")]
    lead, *causes = unstable_lines(c)
    assert headline.count('class="warn"') == 1 and lead in headline
    items = re.findall(r"<li>(.*?)</li>", headline)
    assert len(items) == 4 and items == [cause.strip() for cause in causes]  # one per cause, not a chain


def test_the_rounds_header_is_never_broken(tmp_path: Path) -> None:
    """`rounds A,` over a lone `B` at 100 columns (two smoke runs): the header is drawn whole, or the column
    leaves and the caption says so; task_geometry's keeps it whole at 100 columns."""
    for name in ("first_smoke", "main_job"):
        a = real(name, tmp_path / "a" if (tmp_path / "a").mkdir() is None else tmp_path)
        b = a.model_copy(deep=True, update={"started": "2030-01-01T00:00:00+00:00"})
        if b.bench is not None:
            b.bench.run_id = "another"
        c = compare_records(a, b, ("runs/first", "runs/second"))
        for width in (100, 160):
            text, _words, _values = draw([compare_table(c)], width)
            header = next(line for line in text.splitlines() if line.startswith("analysis"))
            assert not re.search(r"rounds A,\s*$", text, re.M), (name, width, text)
            assert ROUNDS in header or f"left out at this width: {ROUNDS}" in Text(text).plain.replace("\n", " "), text
            assert ROUNDS in header or name == "first_smoke", (name, width)
        (tmp_path / "a").rename(tmp_path / f"done-{name}")
