"""`harness compare` and the verdict lines in words that agree with their numbers (issue 48):
the interval and the verdict from one test, a pooled run tested on its own rounds, groups not
judged named with the next step, "at least" for a direction the interval settles, and a reader
that leaves early answered with 141, not the regression code."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np

from harness.record.run_record import RunRecord, save_record
from harness.record.verdict import verdict
from harness.report.compare import ALPHA, FACTOR, compare_records, compare_rounds
from harness.report.compare_view import compare_table, summary_line
from tests.conftest import ROOT

from .test_compare_steps import MAIN_RUN
from .test_run_screen import draw, real


def test_the_interval_excludes_1_exactly_when_the_test_calls_it_significant() -> None:
    """"0.583 (0.394-0.861), p 1.4e-02, not significant": a 95% interval beside p < 0.01."""
    rng = np.random.default_rng(0)
    seen = 0
    for i in range(400):
        n_a, n_b = rng.integers(2, 6, size=2)
        shift = rng.normal(0, 0.4)
        a = {f"A{i % 3}#x#{j}": math.exp(rng.normal(0, 0.2)) for j in range(n_a)}
        b = {f"B{i % 2}#x#{j}": math.exp(rng.normal(shift, 0.2)) for j in range(n_b)}
        _ratio, ci, p, change = compare_rounds(a, b, factor=1.0)
        if change == "too few rounds":  # an interval over MAX_SPAN wide: none (test_a_meaningless_...)
            continue
        assert ci is not None and p is not None
        assert (ci[0] > 1 or ci[1] < 1) == (p < ALPHA) == (change != "not significant"), (ci, p, change)
        seen += ALPHA < p < 0.05
    assert seen  # the cases a 95% interval got wrong were among them


def _pooled(a: RunRecord) -> RunRecord:
    """B as a default second run makes it: A's rounds pooled in front of rounds of its own."""
    b = a.model_copy(deep=True)
    for g in (g for an in b.analyses for t in an.timings for g in t.groups):
        g.rounds = g.rounds + [r.replace("2026", "2027") for r in g.rounds]
        g.measurement.samples_s = g.measurement.samples_s * 2
        g.pooled = len(g.rounds) // 2
    return b


def test_the_tests_level_is_said_at_100_and_160_columns(tmp_path: Path) -> None:
    """Walk 12: `0.037 not significant`, right at the 99% level `--json` names (alpha 0.01), but nothing
    at 100 columns said a change needs p < 0.01: the headline, kept at every width, says it."""
    a = real("main_job", tmp_path)
    c = compare_records(a, _pooled(a), ("runs/a", "runs/b"))
    rule = f"(at 99%: a change needs p < {ALPHA:g} and B / A beyond {FACTOR:g}x)"
    for width in (100, 160):
        _text, words, _values = draw([summary_line(c), compare_table(c)], width)
        assert " ".join(words).count(rule) == 1, width
    assert summary_line(c) == f"B against A, {len(c.rows)} groups: {len(c.rows)} not significant {rule}"


def test_a_run_that_pooled_the_others_rounds_is_judged_on_its_own(tmp_path: Path) -> None:
    """Two default main-job runs gave "rounds A, B: 0, 2 (2 shared)" and judged nothing."""
    a = real("main_job", tmp_path)
    c = compare_records(a, _pooled(a), ("runs/a", "runs/b"))
    assert all((r.n_a, r.n_b, r.shared) == (2, 2, 2) and r.change != "too few rounds" for r in c.rows)
    assert c.not_judged is None
    text, _words, values = draw([summary_line(c), compare_table(c)], 160)
    assert "not judged" not in text and "too few" not in text and "2, 2+2" in values  # B's table's notation
    assert "B / A (99% CI)" in text  # the interval's level is the test's own


def test_groups_not_judged_are_said_so_with_the_next_step(tmp_path: Path) -> None:
    """"B against A: 20 too few rounds (20 groups)" and nothing to do about it."""
    a = real("main_job", tmp_path)
    b = _pooled(a)
    for g in (g for an in b.analyses for t in an.timings for g in t.groups):
        g.rounds, g.measurement.samples_s = g.rounds[:3], g.measurement.samples_s[:3]  # 1 round of its own
    few = compare_records(a, b, ("runs/a", "runs/b"))
    assert few.not_judged == (f"not judged: {len(few.rows)} of {len(few.rows)} groups have fewer than 2 rounds on a "
                              "side (a round times each strategy once), too few for a test; for a verdict give each "
                              f"run more time: `{MAIN_RUN} -o runs/a-30s --fresh --budget 30s` and `{MAIN_RUN} -o "
                              "runs/b-30s --fresh --budget 30s`, then `harness compare runs/a-30s runs/b-30s`")


def test_a_gate_that_cannot_judge_says_so_in_its_first_line(tmp_path: Path) -> None:
    """`--fail-on-regression` began `8 not significantly different` and ended `INCONCLUSIVE: 0 of 11
    groups gated` (exit 4): every group was unstable, and the first line read as a pass."""
    a = real("main_job", tmp_path)  # every measurement of it unstable, as the walk-through's
    c = compare_records(a, _pooled(a), ("runs/a", "runs/b"), gate=True)
    n = len(c.rows)
    assert not c.n_gated and c.inconclusive
    assert summary_line(c).startswith(f"B against A, {n} groups: gate INCONCLUSIVE, none of {n} groups could be "
                                      f"gated ({n} unstable); ungated: ")
    assert not summary_line(compare_records(a, _pooled(a), ("runs/a", "runs/b"))).count("gate")  # no gate: as ever
    # the headline's words are the rows' (walk 12: `14 not significantly different` over rows of `not significant`)
    plain = summary_line(compare_records(a, _pooled(a), ("runs/a", "runs/b")))
    import re

    assert re.search(r"\d+ not significant( \(|,|;|$)", plain) and "significantly different" not in plain, plain


def test_an_unresolved_verdict_says_what_its_interval_settles() -> None:
    """"factored is 1,490x (565-3,932) faster than numpy (unresolved)": at least 565x is settled."""
    from .test_run_screen import RECORDS

    lines = []
    for name in ("main_job", "busy_run"):
        record = RunRecord.model_validate_json((RECORDS / f"{name}.json").read_text())
        lines += [line for a in record.analyses if (line := verdict(a))]
    assert lines[1] == ("top3: factored is at least 44.5x faster than scipy_svds (92.9x, 44.5-194: x2.1 either way); "
                        "0 of 3 speedups resolved")  # why it is wide: --verbose
    assert lines[3] == ("spectrum: factored@float32 measured 3,057x faster than numpy@float32 (1 round: no interval); "
                        "0 of 4 speedups resolved")
    assert not [line for line in lines if "(unresolved)" in line]


def test_a_reader_that_leaves_early_is_141_not_a_regression(tmp_path: Path) -> None:
    """`harness compare A B --fail-on-regression | head -1` exited 1: rich's answer to a closed pipe."""
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        record = real("main_job", tmp_path / side)
    save_record(record.model_copy(update={"started": "2026-11-25T10:39:01+00:00"}), tmp_path / "b" / "main_job")
    proc = subprocess.Popen([sys.executable, "-m", "harness", "compare", str(tmp_path / "a" / "main_job"),
                             str(tmp_path / "b" / "main_job"), "--fail-on-regression"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, text=True)
    assert proc.stdout is not None
    proc.stdout.close()  # as `| head -1` does once it has its line
    _out, err = proc.communicate(timeout=300)
    assert proc.returncode == 141 and "Traceback" not in err, err


def test_a_settled_verdict_says_what_is_left_and_leaves_why_to_verbose() -> None:
    """A speedup settled on the machine's own spread says so in its verdict, in a line a reader takes
    in at once; the rounds, processes and runs behind its width are --verbose's."""
    from .test_run_screen import RECORDS

    record = RunRecord.model_validate_json((RECORDS / "main_job.json").read_text())
    top3 = next(a for a in record.analyses if a.name == "top3")
    for t in top3.timings:
        t.settled = True
    line = verdict(top3)
    assert line is not None and "x2.1 either way; what is left is this machine's own spread)" in line
    assert "rounds" not in line.split(";")[0]
