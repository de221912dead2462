"""Comparing runs: a real slowdown is flagged, noise is not, and runs of other specs are refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main as cli
from harness.report.compare import CompareOutput, compare_records, compare_samples, min_samples
from harness.report import charts
from harness.record.run_record import RECORD, RecordError, RunRecord, load_record, save_record


def with_samples(record: RunRecord, draw: "np.random.Generator", slow: str, factor: float) -> RunRecord:
    """The record with fresh lognormal samples for every group; `slow` strategy's times scaled."""
    out = record.model_copy(deep=True)
    for a in out.analyses:
        for t in a.timings:
            for g in t.groups:
                samples = 1e-3 * draw.lognormal(0.0, 0.1, size=30) * (factor if t.strategy == slow else 1.0)
                g.measurement.samples_s = samples.tolist()
                g.measurement.median_s = float(np.median(samples))
    return out


def test_slowdown_flagged_and_noise_not(smoke_run: tuple[Path, RunRecord]) -> None:
    record = smoke_run[1]
    a = with_samples(record, np.random.default_rng(1), slow="", factor=1.0)
    b = with_samples(record, np.random.default_rng(2), slow="numpy", factor=1.5)
    comparison = compare_records(a, b, ("A", "B"))
    assert comparison.rows and not comparison.unmatched
    for row in comparison.rows:
        assert row.change == ("slower" if row.strategy == "numpy" else "same"), row
        assert row.p_value is not None
    slow = [r for r in comparison.rows if r.strategy == "numpy"]
    assert all(1.3 < r.ratio < 1.7 and r.p_value < 1e-6 for r in slow)


def test_significant_but_tiny_change_is_same() -> None:
    a = [1.0 + 0.001 * i for i in range(20)]
    assert compare_samples(a, [x * 1.05 for x in a]) [1] == "same"  # p tiny, below asv's 1.1x
    assert compare_samples(a, [x / 1.5 for x in a])[1] == "faster"


def test_too_few_samples_for_the_test() -> None:
    assert compare_samples([1.0, 1.1], [3.0, 3.1]) == (None, "too few samples")


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
    folder, record = smoke_run
    slow = tmp_path / "slow"
    shutil.copytree(folder, slow)
    b = with_samples(record, np.random.default_rng(3), slow="torch", factor=3.0)
    (slow / RECORD).unlink()
    save_record(b, slow)
    html = tmp_path / "compare.html"
    assert cli.main(["compare", str(folder), str(slow), "--html", str(html)]) == 0
    assert "slower" in capsys.readouterr().out
    page = html.read_text()
    assert record.spec_hash in page and '<td class="slower">slower</td>' in page


# The CI gate: `--fail-on-regression` exits 1 on a significant slowdown beyond RATIO of a stable
# measurement, and says why it did not gate a row (unstable, too few samples).


def synthetic(record: RunRecord, seed: int, scale: dict[str, float] | None = None, n: int = 8,
              unstable: str = "") -> RunRecord:
    """The record with n fresh lognormal samples per group, `scale[strategy]` times slower, every
    measurement stable except `unstable`'s: the smoke run's own flags depend on how busy the
    machine was, which a test must not."""
    draw = np.random.default_rng(seed)
    out = record.model_copy(deep=True)
    for a in out.analyses:
        for t in a.timings:
            for g in t.groups:
                samples = 1e-3 * g.sampled * draw.lognormal(0.0, 0.1, size=n) * (scale or {}).get(t.strategy, 1.0)
                m = g.measurement
                m.samples_s, m.median_s = samples.tolist(), float(np.median(samples))
                m.unstable = t.strategy == unstable
                m.reasons = ["other processes took 48% of the 2 CPUs"] if m.unstable else []
    return out


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
    assert slow and all(f"REGRESSION {r.analysis}/numpy on {r.group}: B/A " in out for r in slow)
    assert out.count("REGRESSION") == len(slow) and "p=" in out
    assert "FAILED: " in out.splitlines()[-1]


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
    assert "unstable, not gated: svdvals/numpy on" in out and "slower): B: other processes took 48%" in out


def test_too_few_samples_cannot_gate(base: tuple[str, RunRecord], tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    _, record = base
    a = saved(synthetic(record, seed=6, n=1), tmp_path / "A1")
    b = saved(synthetic(record, seed=7, scale={"numpy": 3.0}, n=1), tmp_path / "B1")
    assert cli.main(["compare", a, b, "--fail-on-regression"]) == 0
    out = capsys.readouterr().out
    assert "have too few samples for Mann-Whitney to reach p < 0.01 (fewest 1 a side, it needs 5 a side" in out
    assert "vacuously" in out.splitlines()[-1]


def test_json_carries_the_verdict(base: tuple[str, RunRecord], tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    a, record = base
    noise = saved(synthetic(record, seed=8), tmp_path / "noise")
    slow = saved(synthetic(record, seed=9, scale={"torch": 3.0}), tmp_path / "slow")
    assert cli.main(["compare", a, noise, slow, "--json", "--fail-on-regression", "1.2"]) == 1
    captured = capsys.readouterr()
    verdict = CompareOutput.model_validate(json.loads(captured.out))  # stdout: the JSON alone
    assert verdict.gate == 1.2 and not verdict.passed
    assert [c.passed for c in verdict.comparisons] == [True, False]
    assert [c.factor for c in verdict.comparisons] == [1.2, 1.2]
    rows = verdict.comparisons[1].rows
    assert all(r.regression == (r.strategy == "torch") and r.gated and not r.unstable for r in rows)
    assert verdict.comparisons[1].regressions == [r.describe() for r in rows if r.strategy == "torch"]
    assert all(r.ratio_low <= r.ratio <= r.ratio_high for r in rows)
    assert "REGRESSION" in captured.err and "FAILED" in captured.err
    assert cli.main(["compare", a, noise, "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["gate"] is None and plain["passed"] and plain["comparisons"][0]["gate"] is None


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
    assert "q1(B)/q3(A) to q3(B)/q1(A)" in html and "no bootstrap" in html
    rows = compare_records(load_record(Path(a)), load_record(Path(b)), (a, b), gate=True).rows
    assert "Gate at 1.1x FAILED" in html
    assert html.count('<span class="fail">REGRESSION</span>') == sum(r.strategy == "numpy" for r in rows) > 0
    assert html.count("<td>unstable, not gated</td>") == sum(r.strategy == "torch" for r in rows) > 0


def test_ratio_chart_axes(base: tuple[str, RunRecord], tmp_path: Path) -> None:
    _, record = base
    c = compare_records(synthetic(record, seed=11), synthetic(record, seed=12, scale={"numpy": 3.0}),
                        ("A", "B"), gate=True)
    ax = charts.ratio_figure(c).axes[0]
    lo, hi = ax.get_xlim()
    assert ax.get_xscale() == "log" and lo * hi == pytest.approx(1.0)  # centred on 1
    assert lo < min(r.ratio_low for r in c.rows) and max(r.ratio_high for r in c.rows) < hi
    labels = [t.get_text() for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi]
    assert "1" in labels and len([s for s in labels if s]) >= 3
    assert [t.get_text() for t in ax.get_yticklabels()] == [r.label for r in c.rows]
    assert ax.get_xlabel() and "q1(B)/q3(A)" in ax.get_xlabel()
    red = {t.get_text() for t in ax.get_yticklabels() if t.get_color() == charts.CHANGE_COLOR["slower"]}
    assert red == {r.label for r in c.rows if r.regression} and red


def test_min_samples_is_where_the_test_can_first_reject() -> None:
    n = min_samples(0.01)
    assert n == 5 and compare_samples([1.0] * 4, [2.0] * 4)[1] == "too few samples"
    assert compare_samples([1.0 + 0.01 * i for i in range(n)], [2.0 + 0.01 * i for i in range(n)])[1] == "slower"
