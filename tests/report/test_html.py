"""The HTML report: the record's numbers, self-contained, optional sections, bad input."""

from __future__ import annotations

import csv
import html as html_lib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main as cli
from harness.record.features_csv import CSV_COLUMNS
from harness.report import charts
from harness.report.html import REPORT, render_report
from harness.record.run_record import RECORD, RunRecord
from harness.base.units import format_seconds, format_speedup
from harness.bench.budget import rounds_note

FETCHED = re.compile(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?\s*(?:https?:)?//|@import""", re.I)


def key_numbers(record: RunRecord) -> list[str]:
    """Strings of record.json's numbers as the report must show them."""
    numbers = [record.spec_hash, record.command, record.machine.cpu, f"{record.machine.cores} cores"]
    for a in record.analyses:
        for t in a.timings:
            numbers.append(format_seconds(t.estimate_total_s))
            numbers.append(format_speedup(t.speedup))
        numbers += [f"{v.values_error:.1e}" for v in a.verification]
        numbers += [s.reason for s in record.plan.steps]
    return numbers


def copy_run(folder: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(folder, copy)
    (copy / REPORT).unlink(missing_ok=True)
    return copy


def test_run_report_shows_the_records_numbers(smoke_run: tuple[Path, RunRecord]) -> None:
    folder, record = smoke_run
    html = (folder / REPORT).read_text()
    text = html_lib.unescape(html)
    assert [n for n in key_numbers(record) if n not in text] == []
    assert "extrapolated from a sample" in html  # smoke times 2 of 6 matrices per group
    assert html.count(charts.TIMING_AXIS) == sum(1 for a in record.analyses if a.timings)
    assert html.count("singular values, median") == sum(1 for a in record.analyses if a.op != "pca")
    assert "FAILED" not in html


def test_optional_sections_absent(smoke_run: tuple[Path, RunRecord], tmp_path: Path) -> None:
    folder = copy_run(smoke_run[0], tmp_path)
    (folder / "pca.npz").unlink(missing_ok=True)
    html = render_report(smoke_run[1], folder)
    assert "PCA across adapters" not in html and 'id="features"' not in html


def test_report_is_self_contained(smoke_run: tuple[Path, RunRecord]) -> None:
    html = (smoke_run[0] / REPORT).read_text()
    assert FETCHED.search(html) is None
    assert "<!DOCTYPE svg" not in html and "<script" not in html


def test_failed_verification_is_marked(smoke_run: tuple[Path, RunRecord]) -> None:
    folder, record = smoke_run
    broken = record.model_copy(deep=True)
    broken.analyses[0].verification[0].passed = False
    html = render_report(broken, folder)
    assert html.count("FAILED") == 2  # the banner and the row


def test_features_and_pca_sections(smoke_run: tuple[Path, RunRecord], tmp_path: Path) -> None:
    folder = copy_run(smoke_run[0], tmp_path)
    with (folder / "features.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for adapter in ("a0", "a1"):
            for layer in (0, 1):
                writer.writerow({"analysis": "svdvals", "adapter": adapter, "other_adapter": "", "layer": layer,
                                 "module": "up", "metric": "stable_rank", "value": 1.5 + layer})
        writer.writerow({"analysis": "svdvals", "adapter": "a0", "other_adapter": "a1", "layer": 0,
                         "module": "up", "metric": "cosine", "value": 0.3})
    scores = np.array([[1.0, 0.5], [-1.0, 0.2], [0.0, -0.7]])
    np.savez(folder / "pca.npz", **{"geom:scores": scores, "geom:cosine": np.eye(3),
                                    "geom:explained_variance_ratio": np.array([0.6, 0.3, 0.1]),
                                    "geom:adapters": np.array(["x", "y", "z"])})
    assert cli.main(["report", str(folder)]) == 0
    html = (folder / REPORT).read_text()
    assert "svdvals: stable_rank (up)" in html and "cosine (up)" not in html
    assert "PCA across adapters" in html and "60.0%, 30.0%, 10.0%" in html
    assert "geom: adapters on PC1/PC2" in html and "geom: cosine similarity" in html


def test_report_output_option(smoke_run: tuple[Path, RunRecord], tmp_path: Path) -> None:
    out = tmp_path / "elsewhere.html"
    assert cli.main(["report", str(smoke_run[0]), "-o", str(out)]) == 0
    assert smoke_run[1].spec_hash in out.read_text()


def test_report_bad_input(smoke_run: tuple[Path, RunRecord], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["report", str(tmp_path)]) == 2
    assert "no record.json" in capsys.readouterr().err
    folder = copy_run(smoke_run[0], tmp_path)
    raw = json.loads((folder / RECORD).read_text())
    raw["schema_version"] = 99
    (folder / RECORD).write_text(json.dumps(raw))
    assert cli.main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "schema version 99" in err and "Traceback" not in err


def test_the_report_says_what_the_budget_cut_and_what_is_unstable(smoke_run, tmp_path: Path) -> None:
    folder, record = smoke_run
    edited = record.model_copy(deep=True)
    for t in (t for a in edited.analyses for t in a.timings):  # steady and uncut, whatever this machine did
        t.cut, t.cached = None, False
        for g in t.groups:
            g.measurement.unstable, g.measurement.reasons = False, []
    timing = edited.analyses[0].timings[0]
    planned = next(x for s in edited.plan.steps if s.analysis == edited.analyses[0].name for x in s.timed
                   if x.label == timing.label)
    measurement = timing.groups[0].measurement
    measurement.unstable, measurement.reasons = True, ["other processes took 85% of the 2 CPUs"]
    page = html_lib.unescape(render_report(edited, folder))
    assert f"<br>{rounds_note(planned.allocations)}<br>" in page  # the plan's rounds, in each of its processes
    assert f"unstable</span> {timing.groups[0].group}: other processes took 85% of the 2 CPUs" in page
    assert "<summary>steady</summary>" in page  # the other strategies
    assert edited.bench is not None
    assert f"{edited.bench.threads} thread{'s' if edited.bench.threads > 1 else ''} per timing" in page
