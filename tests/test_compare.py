"""Comparing runs: a real slowdown is flagged, noise is not, and runs of other specs are refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from harness import cli
from harness.compare import compare_records, compare_samples
from harness.results import RECORD, RecordError, RunRecord, save_record


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
