"""`harness compare` credits the rounds both runs hold to the run that timed them, whichever is
given first (walk 10: A, the newer run, had pooled B's rounds, and compare said B timed none of
its groups, "pooled from A", and a gate was inconclusive; given the other way round, 15 of 20
groups were judged), and the notes under its table name the rows they are about, a bimodal group's
clusters its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from harness.record.run_record import RunRecord
from harness.report.compare import CompareOutput, Comparison, compare_records
from harness.report.compare_view import apart_note, compare_table, summary_line, unstable_lines

from .test_run_screen import real


def _newer(b: RunRecord) -> RunRecord:
    """A as walk 10's runs/first: re-run after B (a `--fresh` run), B's rounds pooled in front of rounds
    of its own 1.3x slower, taken over by a resumed run."""
    a = b.model_copy(deep=True)
    for t in (t for an in a.analyses for t in an.timings):
        t.resumed = True
        for g in t.groups:
            g.rounds = g.rounds + [r.replace("2026", "2027") for r in g.rounds]
            g.measurement.samples_s = g.measurement.samples_s + [s * 1.3 for s in g.measurement.samples_s]
            g.pooled = len(g.rounds) // 2
    return a


def _both_ways(tmp_path: Path) -> tuple[Comparison, Comparison]:
    b = real("main_job", tmp_path)  # timed every round itself, pooled none
    a = _newer(b)
    return compare_records(a, b, ("runs/first", "runs/second")), compare_records(b, a, ("runs/second", "runs/first"))


def test_the_same_groups_are_judged_in_either_order(tmp_path: Path) -> None:
    newer_first, older_first = _both_ways(tmp_path)
    judged = [{r.label for r in c.rows if r.change != "too few rounds"} for c in (newer_first, older_first)]
    assert judged[0] == judged[1] == {r.label for r in newer_first.rows}  # each side has rounds of its own
    for r, s in zip(newer_first.rows, older_first.rows, strict=True):
        assert r.label == s.label and r.ratio == pytest.approx(1 / s.ratio, rel=1e-9)
        assert r.ratio == pytest.approx(1 / 1.3, rel=1e-6)  # B's own rounds against A's own, not B's against B's
        assert (r.n_a, r.n_b, r.shared, r.shared_a, r.shared_b) == (s.n_b, s.n_a, s.shared, s.shared_b, s.shared_a)
        assert r.shared_b == r.shared > 0 and r.n_b == r.shared  # B timed the rounds both hold: they are B's


def test_the_notes_and_the_json_say_which_run_pooled(tmp_path: Path) -> None:
    """"B's rounds pooled from A count for A only ..." and "B timed none of them itself" of a B that pooled nothing;
    in short sentences since walk 20."""
    newer_first, older_first = _both_ways(tmp_path)
    n = len(newer_first.rows)
    notes = {c.b.folder: [Text.from_markup(line).plain for line in
                          str(compare_table(c).fit(Console(width=400), 400).caption).split("\n")]
             for c in (newer_first, older_first)}
    assert n and ("rounds A, B: each row's own group's rounds in A and in B. Rounds A reused from B count as B's alone, "
                  "so no round is compared with itself.") in notes["runs/second"]
    assert ("rounds A, B: each row's own group's rounds in A and in B. Rounds B reused from A count as A's alone, "
            "so no round is compared with itself.") in notes["runs/first"]
    for c in (newer_first, older_first):
        assert c.not_judged is None
    rows = json.loads(CompareOutput(gate=None, passed=True, comparisons=[newer_first]).model_dump_json())
    assert {(r["shared_a"], r["shared_b"]) for r in rows["comparisons"][0]["rows"]} == {(0, r.shared)
                                                                                          for r in newer_first.rows}


def test_a_run_that_timed_nothing_itself_is_named_whichever_side_it_is(tmp_path: Path) -> None:
    """A that pooled all of B's rounds and timed none: "A timed none of them itself", not B."""
    b = real("main_job", tmp_path)
    a = b.model_copy(deep=True)
    for g in (g for an in a.analyses for t in an.timings for g in t.groups):
        g.pooled = len(g.rounds)
    c = compare_records(a, b, ("runs/first", "runs/second"))
    # walk 22: the next step is the command itself, A's spec and --set overrides from its record and A's folder
    assert a.command.endswith("--set=data.adapters=4 '--set=analysis[2].components=3' -o runs/main1")  # moved since
    assert c.not_judged is not None and c.not_judged.endswith(
        "A timed none of them itself, every round it holds was pooled from B; time A anew: `harness run "
        "configs/task_geometry.toml --set=data.adapters=4 '--set=analysis[2].components=3' -o runs/first-anew --fresh`, "
        "then `harness compare runs/first-anew runs/second`")
    # the gate's line gives the summary's reason, not `with too few rounds` (walk 22)
    gated = compare_records(a, b, ("runs/first", "runs/second"), factor=1.2, gate=True)
    assert gated.inconclusive == [f"none of {len(c.rows)} groups could be gated ({len(c.rows)} not judged: A timed none "
                                  "of them itself, every round it holds was pooled from B)"]
    assert f"none judged ({c.pooled_alone}, below)" in summary_line(gated)


def test_notes_about_rows_name_them(tmp_path: Path) -> None:
    """`2 rows with B / A and the medians on either side of 1` named neither, and at 100 columns the
    medians were left out; `a row here its group's: 4 rows` named none."""
    c, _ = _both_ways(tmp_path)
    for i in (0, 1):
        r = c.rows[i]
        c.rows[i] = r.model_copy(update={"time_b_s": r.time_a_s * 1.02, "ratio": 0.9, "ratio_ci": (0.5, 1.6)})
    names = [f"{r.analysis} {r.strategy}{r.variant} on {r.group}" for r in c.rows[:2]]
    note = apart_note(c)
    assert note is not None and note.startswith(
        f"B / A and the medians' ratio lie on either side of 1 on {', '.join(names)}. Each lies within B / A's interval. ")
    c.table_rounds = [f"row {i} (B's table: 1+1)" for i in range(5)]
    line = next(line for _, line in compare_table(c, verbose=True).footnotes if "A run's table gives" in line)
    assert line.endswith(f"so it differs on 5 of {len(c.rows)} rows: row 0 (B's table: 1+1), row 1 (B's "
                         "table: 1+1), row 2 (B's table: 1+1) and 2 more.")


def test_rounds_both_pooled_from_an_earlier_run_count_for_neither(tmp_path: Path) -> None:
    """Runs 2 and 3 each pooled run 1's rounds: on either side alone they would be tested against themselves."""
    earlier = real("main_job", tmp_path)
    a, b = _newer(earlier), _newer(earlier)
    for g in (g for an in b.analyses for t in an.timings for g in t.groups):
        g.rounds = [r.replace("2027", "2028") for r in g.rounds]
    c, back = compare_records(a, b, ("runs/2", "runs/3")), compare_records(b, a, ("runs/3", "runs/2"))
    for r, s in zip(c.rows, back.rows, strict=True):
        assert (r.n_a, r.n_b, r.shared_a, r.shared_b) == (s.n_b, s.n_a, 0, 0) and r.shared == r.n_a == r.n_b
    assert c.rows and all(r.ratio == pytest.approx(1.0) for r in c.rows)
    line = next(line for _, line in compare_table(c).footnotes if line.startswith("rounds A, B: "))
    assert line == ("rounds A, B: each row's own group's rounds in A and in B. Rounds both reused from earlier runs "
                    "count for neither, so no round is compared with itself.")


def test_each_groups_bimodal_clusters_are_said_apart_naming_it(tmp_path: Path) -> None:
    """`2 groups unstable: B: bimodal: 2 samples near 70-123 µs, 5-7 near 125-191 µs`: two groups'
    clusters in one range, matching neither group's median."""
    c, _ = _both_ways(tmp_path)
    clusters = ["2 samples near 70.0 µs, 5 near 125 µs", "2 samples near 123 µs, 7 near 191 µs"]
    for i, r in enumerate(c.rows):
        c.rows[i] = r.model_copy(update={"unstable": [f"B: bimodal: {clusters[i]}"] if i < 2 else []})
    names = [f"{r.analysis} {r.strategy}{r.variant} on {r.group}" for r in c.rows[:2]]
    # no merged range: the kind and its count, each group's own clusters with --verbose (walk 23)
    assert unstable_lines(c) == [f"2 of {len(c.rows)} groups unstable (B only):", "  B: bimodal calls (2 groups; two "
                                 "clusters of times)"]
    verbose = unstable_lines(c, verbose=True)
    assert all(any(name in line and f"B: bimodal: {said}" in line for line in verbose) for name, said in zip(names, clusters))
