"""Comparing runs: a real slowdown is flagged, noise is not, and runs of other specs are refused."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main as cli
from harness.report.compare import CompareOutput, compare_records, compare_rounds
from harness.base.units import format_ratio
from harness.report import ratio_chart
from harness.report.html import prose
from harness.record.run_record import RECORD, RecordError, RunRecord, load_record, save_record


def synthetic(record: RunRecord, seed: int, scale: dict[str, float] | None = None, n: int = 8,
              unstable: str = "", run: str | None = None, spread: float = 0.1,
              between: float | None = 0.03) -> RunRecord:
    """The record with n fresh lognormal rounds per group (ids of run `run`, the seed's by
    default), `scale[strategy]` times slower, every measurement stable except `unstable`'s: the
    smoke run's own flags depend on how busy the machine was, which a test must not. `between`
    is the between-run spread the machine had shown (None: not known)."""
    draw = np.random.default_rng(seed)
    out = record.model_copy(deep=True)
    run = run or f"run{seed}"
    if out.bench is not None:
        out.bench.run_id = run  # a run of its own, as its rounds' ids say: compare refuses one run twice
    for a in out.analyses:
        for t in a.timings:
            for g in t.groups:
                samples = 1e-3 * g.sampled * draw.lognormal(0.0, spread, size=n) * (scale or {}).get(t.strategy, 1.0)
                m = g.measurement
                m.samples_s, m.median_s = samples.tolist(), float(np.median(samples))
                g.rounds, g.pooled, g.spread = [f"{run}#{a.name}#{i}" for i in range(n)], 0, between
                m.unstable = t.strategy == unstable
                m.reasons = ["other processes took 48% of the 2 CPUs"] if m.unstable else []
    return out


def test_slowdown_flagged_and_noise_not(smoke_run: tuple[Path, RunRecord]) -> None:
    record = smoke_run[1]
    a = synthetic(record, 1)
    b = synthetic(record, 2, scale={"numpy": 1.5})
    comparison = compare_records(a, b, ("A", "B"))
    assert comparison.rows and not comparison.unmatched
    for row in comparison.rows:
        assert row.change == ("slower" if row.strategy == "numpy" else "not significant"), row
        assert row.p_value is not None and row.ratio_ci is not None
        assert row.ratio_ci[0] < row.ratio < row.ratio_ci[1]
    slow = [r for r in comparison.rows if r.strategy == "numpy"]
    assert all(1.3 < r.ratio < 1.7 and r.p_value < 1e-4 and r.ratio_ci[0] > 1.1 for r in slow)  # type: ignore[index]


def rounds(run: str, values: list[float]) -> dict[str, float]:
    return {f"{run}#a#{i}": v for i, v in enumerate(values)}


def test_significant_but_tiny_change_is_not_reported() -> None:
    a = [1.0 + 0.001 * i for i in range(20)]
    runs_a = {**rounds("x", a), **rounds("y", a), **rounds("z", a)}
    runs_b = {**rounds("u", [v * 1.05 for v in a]), **rounds("v", [v * 1.051 for v in a]),
              **rounds("w", [v * 1.049 for v in a])}
    assert compare_rounds(runs_a, runs_b)[3] == "not significant"  # p tiny, below asv's 1.1x
    faster = {**rounds("u", [v / 1.5 for v in a]), **rounds("v", [v / 1.51 for v in a]), **rounds("w", [v / 1.49 for v in a])}
    assert compare_rounds(runs_a, faster)[3] == "faster"


def test_one_run_a_side_is_judged_with_the_machines_spread_between_runs() -> None:
    """Two runs' 20 alike rounds each, 1.2x apart: significant only if runs of this machine agree
    that closely; with the default spread (runs 10% apart), not."""
    a, b = rounds("x", [1.0] * 20), rounds("y", [1.2] * 20)
    assert compare_rounds(a, b, spread=0.02)[3] == "slower"
    assert compare_rounds(a, b)[3] == "not significant"


def test_too_few_rounds_for_the_test() -> None:
    ratio, ci, p, change = compare_rounds(rounds("x", [1.0]), rounds("y", [3.0, 3.1]))
    assert (ci, p, change) == (None, None, "too few rounds") and ratio == pytest.approx(math.sqrt(3.0 * 3.1))


def test_rounds_both_runs_share_are_never_tested_against_themselves(smoke_run: tuple[Path, RunRecord]) -> None:
    """A run that pooled every round of another holds the same samples: not "1x, p = 1, same"."""
    a = synthetic(smoke_run[1], 1)
    c = compare_records(a, a.model_copy(deep=True), ("A", "B"))
    assert all(r.change == "too few rounds" and (r.shared, r.n_a, r.n_b) == (8, 8, 0) for r in c.rows)
    b = synthetic(smoke_run[1], 2)  # its own rounds, and A's pooled in front of them
    for an_a, an_b in zip(a.analyses, b.analyses):
        for ta, tb in zip(an_a.timings, an_b.timings):
            for ga, gb in zip(ta.groups, tb.groups):
                gb.rounds = ga.rounds + gb.rounds
                gb.measurement.samples_s = ga.measurement.samples_s + gb.measurement.samples_s
                gb.pooled = len(ga.rounds)
    c = compare_records(a, b, ("A", "B"))  # A's rounds count for A only: B's own are tested against them
    assert all((r.shared, r.n_a, r.n_b) == (8, 8, 8) and r.change != "too few rounds" for r in c.rows), c.rows[0]
    c = compare_records(a, a.model_copy(deep=True), ("A", "B"))
    # untested, but a number: the medians' ratio, never nan (which is not even JSON)
    assert all(r.ratio == pytest.approx(r.time_b_s / r.time_a_s) and "nan" not in r.describe() for r in c.rows)
    json.loads(c.model_dump_json(), parse_constant=lambda name: pytest.fail(f"{name} in the JSON"))


def test_identical_code_is_not_significant_in_at_least_95_percent_of_groups(smoke_run: tuple[Path, RunRecord]) -> None:
    """A/A: pairs of runs of the same code, each group's rounds with their own noise and a
    run-level offset as large as the rounds' spread (a run's process state, its memory layout)."""
    record, changed = smoke_run[1], 0
    total = 0
    for seed in range(40):
        draw = np.random.default_rng(1000 + seed)
        a, b = synthetic(record, 2 * seed, n=6), synthetic(record, 2 * seed + 1, n=6)
        for an in b.analyses:
            for t in an.timings:
                for g in t.groups:
                    g.measurement.samples_s = [s * draw.lognormal(0, 0.02) for s in g.measurement.samples_s]
        rows = compare_records(a, b, ("A", "B")).rows
        changed += sum(r.change != "not significant" for r in rows)
        total += len(rows)
    assert changed / total <= 0.05


def test_different_specs_refused(smoke_run: tuple[Path, RunRecord], tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    folder, record = smoke_run
    other = record.model_copy(update={"spec_hash": "f" * 64})
    with pytest.raises(RecordError, match="compare only runs of the same spec"):
        compare_records(record, other, ("A", "B"))
    save_record(other, tmp_path)
    assert cli.main(["compare", str(folder), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert cli.main(["compare", str(folder), str(tmp_path / "missing")]) == 2


def test_cli_table_and_html(smoke_run: tuple[Path, RunRecord], tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    _, record = smoke_run
    slow = tmp_path / "slow"
    shutil.copytree(smoke_run[0], slow)
    b = synthetic(record, 3, scale={"torch": 3.0})
    a = synthetic(record, 4)
    (folder := tmp_path / "base").mkdir()
    save_record(a, folder)
    (slow / RECORD).unlink()
    save_record(b, slow)
    html = tmp_path / "compare.html"
    assert cli.main(["compare", str(folder), str(slow), "--html", str(html)]) == 0
    assert "slower" in capsys.readouterr().out
    page = html.read_text()
    assert record.spec_hash in page and '<td class="slower">slower</td>' in page
    c = compare_records(a, b, (str(folder), str(slow)))
    r = next(r for r in c.rows if r.ratio_ci)  # the terminal's interval form, not "0.883 to 9.66"
    assert f'<td class="num">{format_ratio(r.ratio_ci[0])}-{format_ratio(r.ratio_ci[1])}</td>' in page


# The CI gate: `--fail-on-regression` exits 1 on a significant slowdown beyond RATIO of a stable
# measurement, says why it did not gate a row (unstable, too few rounds), and exits 4 when it
# could judge nothing or a run did not finish.


def saved(record: RunRecord, folder: Path) -> str:
    folder.mkdir(parents=True)
    save_record(record, folder)
    return str(folder)


@pytest.fixture
def base(smoke_run: tuple[Path, RunRecord], tmp_path: Path) -> tuple[str, RunRecord]:
    """A run folder of the smoke record with 8 stable samples per group, and that record."""
    return saved(synthetic(smoke_run[1], seed=1), tmp_path / "A"), smoke_run[1]


def test_gate_fails_on_a_slowdown(base: tuple[str, RunRecord], tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    a, record = base
    b = saved(synthetic(record, seed=2, scale={"numpy": 3.0}), tmp_path / "B")
    assert cli.main(["compare", a, b]) == 0  # no gate, no failure: as before
    assert "REGRESSION" not in capsys.readouterr().out
    assert cli.main(["compare", a, b, "--fail-on-regression"]) == 1
    out = capsys.readouterr().out
    slow = [r for r in compare_records(load_record(Path(a)), load_record(Path(b)), (a, b)).rows if r.strategy == "numpy"]
    assert slow and all(f"REGRESSION {r.analysis} numpy on {r.group}: B/A " in out for r in slow)
    assert out.count("REGRESSION") == len(slow) and re.search(r"p(=0\.\d+|<0\.001)\n", out)
    assert "FAILED: " in out.splitlines()[-1]


def test_runs_timed_on_other_thread_counts_are_not_gated_and_say_so(base: tuple[str, RunRecord], tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A first run planned at load 4.5 timed with 1 thread, the next (quiet) with 2: scipy_svds
    took 26 ms against 55-195 ms, and its 3x "changes" were the thread count, not the code."""
    a, record = base
    slow = synthetic(record, seed=2, scale={"numpy": 3.0})
    assert slow.bench is not None and record.bench is not None
    slow.bench.threads = record.bench.threads + 1
    b = saved(slow, tmp_path / "B")
    page = tmp_path / "compare.html"
    assert cli.main(["compare", a, b, "--fail-on-regression", "--html", str(page)]) == 4
    out = capsys.readouterr().out
    said = (f"A timed with {record.bench.threads} thread{'s' if record.bench.threads > 1 else ''} per timing, "
            f"B with {slow.bench.threads}: each plan took the cores other processes left free")
    assert "REGRESSION" not in out and said in out
    assert f"gate INCONCLUSIVE, A and B timed with {record.bench.threads} and {slow.bench.threads} threads" in out
    assert said in page.read_text()
    assert cli.main(["compare", a, b]) == 0 and said in capsys.readouterr().out  # said without a gate too


def test_gate_passes_on_noise(base: tuple[str, RunRecord], tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    a, record = base
    b = saved(synthetic(record, seed=3), tmp_path / "B")
    assert cli.main(["compare", a, b, "--fail-on-regression"]) == 0
    out = capsys.readouterr().out
    assert "REGRESSION" not in out and out.splitlines()[-1].startswith("passed: no group slower than 1.1x")


def test_slowdown_below_the_ratio_passes(base: tuple[str, RunRecord], tmp_path: Path) -> None:
    a, record = base
    b = saved(synthetic(record, seed=4, scale={"numpy": 1.5}), tmp_path / "B")
    assert cli.main(["compare", a, b, "--fail-on-regression"]) == 1  # 1.5x beyond the default 1.1x
    assert cli.main(["compare", a, b, "--fail-on-regression", "2"]) == 0


def test_unstable_slowdown_reported_not_gated(base: tuple[str, RunRecord], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    a, record = base
    b = saved(synthetic(record, seed=5, scale={"numpy": 3.0}, unstable="numpy"), tmp_path / "B")
    assert cli.main(["compare", a, b, "--fail-on-regression"]) == 0
    out = capsys.readouterr().out
    assert "REGRESSION" not in out
    rows = compare_records(load_record(Path(a)), load_record(Path(b)), (a, b)).rows
    unstable = sum(r.strategy == "numpy" for r in rows)
    lines = out.splitlines()
    assert lines[lines.index(f"{unstable} of {len(rows)} groups unstable, not gated (B only):") + 1] == (
        f"  B: other processes took 48% of the 2 CPUs ({unstable} groups)")
    assert out.startswith(f"B against A, {len(rows)} groups: {unstable} slower (unstable), ")  # asv's summary first,
    # saying that the change it counts was measured unstably (walk 19: `1 slower` among 16 unstable groups)
    assert cli.main(["compare", a, b, "--fail-on-regression", "--verbose"]) == 0  # each group and why
    out = capsys.readouterr().out
    assert "unstable, not gated: svdvals numpy on" in out and "slower): B: other processes took 48%" in out


def test_a_gate_that_can_judge_nothing_is_inconclusive(base: tuple[str, RunRecord], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    _, record = base
    a = saved(synthetic(record, seed=6, n=1), tmp_path / "A1")
    b = saved(synthetic(record, seed=7, scale={"numpy": 3.0}, n=1), tmp_path / "B1")
    assert cli.main(["compare", a, b, "--fail-on-regression"]) == 4
    out = capsys.readouterr().out
    assert "groups have fewer than 2 rounds on a side" in out and "--budget 30s" in out
    assert out.splitlines()[0].startswith("B against A, ") and "gate INCONCLUSIVE, none of " in out.splitlines()[0]
    assert out.count("could be gated") == 1  # why, once: the first line (a line of its own said it again)
    assert out.count("INCONCLUSIVE") == 1  # ...and that it is inconclusive, once: no last line repeats it
    shaky = saved(synthetic(record, seed=8, scale={"numpy": 3.0}, n=1, unstable="numpy"), tmp_path / "B2")
    assert cli.main(["compare", a, shaky, "--fail-on-regression"]) == 4  # walk 15: `(16 unstable, 6 with too few
    first = capsys.readouterr().out.splitlines()[0]  # rounds)` of 16 groups: a group counted under both
    rows = compare_records(load_record(Path(a)), load_record(Path(shaky)), (a, shaky)).rows
    assert f"({len(rows)} with too few rounds)" in first, first  # the unstable among them are counted once: there
    sides = [synthetic(record, seed=seed, unstable="numpy") for seed in (9, 10)]  # unstable groups that have
    for t in (t for side in sides for an in side.analyses for t in an.timings if t.strategy != "numpy"):
        for g in t.groups:  # their rounds, beside groups of 1 round: each counted once, under its own cause
            g.rounds, g.measurement.samples_s = g.rounds[:1], g.measurement.samples_s[:1]
    c, d = (saved(side, tmp_path / name) for side, name in zip(sides, "CD"))
    assert cli.main(["compare", c, d, "--fail-on-regression"]) == 4
    again = capsys.readouterr().out.splitlines()[0]
    rows = compare_records(*sides, (c, d)).rows
    few, shaky = sum(r.strategy != "numpy" for r in rows), sum(r.strategy == "numpy" for r in rows)
    assert f"none of {len(rows)} groups could be gated ({few} with too few rounds, {shaky} others unstable)" in again, again
    page = tmp_path / "few.html"  # the page gives the terminal's next step too
    assert cli.main(["compare", a, b, "--fail-on-regression", "--allow-inconclusive", "--html", str(page)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "inconclusive, allowed by --allow-inconclusive: exit 0"
    step = next(line for line in out.splitlines() if "--budget 30s" in line)
    assert f'<p class="muted">{prose(step)}</p>' in page.read_text()
    assert cli.main(["compare", a, b]) == 0  # no gate: nothing to be inconclusive about
    capsys.readouterr()
    assert cli.main(["compare", a, b, "--fail-on-regression", "1.2", "--json"]) == 4
    judged = json.loads(capsys.readouterr().out)  # it said "passed": true with nothing gated
    assert (judged["passed"], judged["verdict"], judged["n_gated"]) == (False, "inconclusive", 0)
    assert judged["inconclusive"] and all(why.startswith(f"{b}: ") for why in judged["inconclusive"])


def test_a_gate_against_an_incomplete_run_is_inconclusive(base: tuple[str, RunRecord], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    a, record = base
    killed = synthetic(record, seed=13)
    killed.complete = False
    b = saved(killed, tmp_path / "killed")
    assert cli.main(["compare", a, b, "--fail-on-regression", "--json"]) == 4
    captured = capsys.readouterr()
    verdict = CompareOutput.model_validate(json.loads(captured.out))
    assert not verdict.passed and verdict.verdict == "inconclusive" and verdict.n_gated > 0  # as exit 4 says
    assert verdict.inconclusive == [f"{b}: B did not finish (its record is marked incomplete)"]
    assert captured.err.count("B did not finish") == 1 and "gate INCONCLUSIVE, B did not finish" in captured.err
    assert captured.err.count("INCONCLUSIVE") == 1
    assert cli.main(["compare", a, b]) == 0  # walk 22: without a gate nothing said B was stopped
    said = " ".join(capsys.readouterr().out.split())
    assert ("; B did not finish: its record is marked incomplete (`harness run` of its spec with -o its folder "
            "resumes it)") in said


def test_json_carries_the_verdict(base: tuple[str, RunRecord], tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    a, record = base
    noise = saved(synthetic(record, seed=8), tmp_path / "noise")
    slow = saved(synthetic(record, seed=9, scale={"torch": 3.0}), tmp_path / "slow")
    assert cli.main(["compare", a, noise, slow, "--json", "--fail-on-regression", "1.2"]) == 1
    captured = capsys.readouterr()
    verdict = CompareOutput.model_validate(json.loads(captured.out))  # stdout: the JSON alone
    assert verdict.gate == 1.2 and not verdict.passed and verdict.verdict == "regression"
    assert [c.passed for c in verdict.comparisons] == [True, False]
    assert [c.factor for c in verdict.comparisons] == [1.2, 1.2]
    rows = verdict.comparisons[1].rows
    assert all(r.regression == (r.strategy == "torch") and r.gated and not r.unstable for r in rows)
    assert verdict.comparisons[1].regressions == [r.describe() for r in rows if r.strategy == "torch"]
    assert all(r.ratio_ci is not None and r.ratio_ci[0] <= r.ratio <= r.ratio_ci[1] for r in rows)
    assert verdict.n_gated == sum(r.gated for c in verdict.comparisons for r in c.rows) and not verdict.inconclusive
    assert "REGRESSION" in captured.err and "FAILED" in captured.err
    assert cli.main(["compare", a, noise, "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["gate"] is None and plain["passed"] and plain["comparisons"][0]["gate"] is None
    assert plain["verdict"] is None  # no gate, no verdict


def test_bad_ratio_is_a_usage_error(base: tuple[str, RunRecord]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["compare", base[0], base[0], "--fail-on-regression", "0.9"])
    assert exit_info.value.code == 2


def test_compare_page_has_the_ratio_chart(base: tuple[str, RunRecord], tmp_path: Path) -> None:
    a, record = base
    b = saved(synthetic(record, seed=10, scale={"numpy": 3.0}, unstable="torch"), tmp_path / "B")
    page = tmp_path / "compare.html"
    assert cli.main(["compare", a, b, "--fail-on-regression", "--html", str(page)]) == 1
    html = page.read_text()
    assert html.count("<svg") == 1 and "<script" not in html and "<!DOCTYPE svg" not in html
    assert "99% interval" in html and "95%" not in html and "Welch" in html
    rows = compare_records(load_record(Path(a)), load_record(Path(b)), (a, b), gate=True).rows
    assert "Gate at 1.1x FAILED" in html
    assert html.count('<span class="fail">REGRESSION</span>') == sum(r.strategy == "numpy" for r in rows) > 0
    assert html.count("<td>unstable, not gated</td>") == sum(r.strategy == "torch" for r in rows) > 0


def test_ratio_chart_axes(base: tuple[str, RunRecord], tmp_path: Path) -> None:
    _, record = base
    c = compare_records(synthetic(record, seed=11), synthetic(record, seed=12, scale={"numpy": 3.0}),
                        ("A", "B"), gate=True)
    ax = ratio_chart.ratio_figure(c).axes[0]
    lo, hi = ax.get_xlim()
    assert ax.get_xscale() == "log" and lo * hi == pytest.approx(1.0)  # centred on 1
    assert all(r.ratio_ci is not None for r in c.rows)
    assert lo < min(r.ratio_ci[0] for r in c.rows) and max(r.ratio_ci[1] for r in c.rows) < hi  # type: ignore[index]
    labels = [t.get_text() for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi]
    assert "1" in labels and len([s for s in labels if s]) >= 3
    assert [t.get_text() for t in ax.get_yticklabels()] == [r.label for r in c.rows]
    assert ax.get_xlabel() and "99% interval" in ax.get_xlabel()
    red = {t.get_text() for t in ax.get_yticklabels() if t.get_color() == ratio_chart.CHANGE_COLOR["slower"]}
    assert red == {r.label for r in c.rows if r.regression} and red


def test_a_refusal_names_what_tells_the_two_specs_apart(smoke_run: tuple[Path, RunRecord]) -> None:
    """"spec hash 9fb154b2410c differs from runs/first's 92cfa7383ab4" named nothing a user wrote."""
    record = smoke_run[1]
    spec = {**record.spec, "data": {**record.spec["data"], "adapters": 38}}
    changed = record.model_copy(update={"spec_hash": "f" * 64, "spec": spec})
    with pytest.raises(RecordError) as refused:
        compare_records(record, changed, ("runs/first", "runs/second"))
    assert str(refused.value).startswith(f"runs/second: data.adapters is 38 here, {record.spec['data']['adapters']!r} in "
                                         "runs/first; compare only runs of the same spec")
    def budget(seconds: float, spec_hash: str) -> RunRecord:  # the record holds `--budget 1s` as 1.0
        spec = {**record.spec, "benchmark": {**record.spec["benchmark"], "budget": seconds}}
        return record.model_copy(update={"spec_hash": spec_hash, "spec": spec})

    with pytest.raises(RecordError) as refused:  # a budget as the spec and the CLI write it
        compare_records(budget(4.0, record.spec_hash), budget(1.0, "f" * 64), ("runs/first", "runs/nb"))
    assert str(refused.value).startswith("runs/nb: benchmark.budget is 1s here, 4s in runs/first; ")
    other = record.model_copy(update={"spec_hash": "f" * 64, "experiment": "task_geometry"})
    with pytest.raises(RecordError, match=f"runs/second: a run of 'task_geometry', runs/first of '{record.experiment}'"):
        compare_records(record, other, ("runs/first", "runs/second"))
    same = record.model_copy(update={"spec_hash": "f" * 64})  # the same TOML, another hash: an older harness's
    with pytest.raises(RecordError, match="spec hash ffffffffffff differs from runs/first's"):
        compare_records(record, same, ("runs/first", "runs/second"))
