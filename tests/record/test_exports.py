"""timings.csv and verification.csv: every run folder has them, and they read back, bit for bit,
as the record's samples and verdicts; an interrupted run exports what it finished."""

from __future__ import annotations

import csv
import shutil
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from harness.bench.noise import EARLIER
from harness.cli import main as cli
from harness.record.exports import CONDITION_FIELDS, TIMING_COLUMNS, TIMINGS, VERIFICATION, VERIFICATION_COLUMNS, main, write_exports
from harness.record.run_record import RunRecord, load_record
from harness.run.runner import Runner
from tests.conftest import CONFIGS


def read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def cell(value: object) -> str:
    """A record value as the csv module writes it."""
    return "" if value is None else str(value)


def samples(record: RunRecord) -> dict[tuple[str, str, str, int], float]:
    return {
        (a.name, t.strategy, g.group, i): s
        for a in record.analyses for t in a.timings for g in t.groups
        for i, s in enumerate(g.measurement.samples_s)
    }


def check_timings(folder: Path, record: RunRecord) -> list[dict[str, str]]:
    columns, rows = read(folder / TIMINGS)
    assert tuple(columns) == TIMING_COLUMNS
    expected = samples(record)
    assert len(rows) == len(expected)
    by_group: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for row in rows:
        key = (row["analysis"], row["strategy"], row["group"], int(row["sample"]))
        assert float(row["seconds"]) == expected.pop(key)  # repr round-trips exactly
        by_group[key[:3]].append(float(row["seconds"]))
    assert not expected
    for a in record.analyses:
        for t in a.timings:
            for g in t.groups:
                m = g.measurement
                got = [r for r in rows if (r["analysis"], r["strategy"], r["group"]) == (a.name, t.strategy, g.group)]
                # the median as harness.bench.measure computes it, from the CSV's own samples
                assert float(np.percentile(by_group[a.name, t.strategy, g.group], 50)) == m.median_s
                assert {float(r["median_s"]) for r in got} == {m.median_s}
                q1, q3 = np.percentile(m.samples_s, [25, 75])
                assert {(float(r["q1_s"]), float(r["q3_s"])) for r in got} == {(q1, q3)}
                assert {r["chosen"] for r in got} == {str(t.strategy == a.strategy)}
                assert {r["matrices"] for r in got} == {str(g.sampled)}
                assert {r["role"] for r in got} == {t.role}
                assert {r["device"] for r in got} == {t.device}
                assert {r["cached"] for r in got} == {str(t.cached)}
                assert {r["unstable"] for r in got} == {str(m.unstable)}
                for r in got:
                    per_matrix = float(r["seconds"]) / g.sampled
                    assert float(r["seconds_per_matrix"]) == per_matrix
                    if g.flops is not None:
                        assert float(r["gflops_per_s"]) == pytest.approx(g.flops / per_matrix / 1e9)
                    for pool, n in m.threads.items():
                        assert f"{pool}={n}" in r["threads"].split(";")
                    assert r["bench_threads"] == cell(record.bench.threads if record.bench else None)
                    if m.conditions is not None:
                        for name in CONDITION_FIELDS:
                            assert r[f"cond_{name}"] == cell(getattr(m.conditions, name))
    return rows


def check_verification(folder: Path, record: RunRecord) -> None:
    columns, rows = read(folder / VERIFICATION)
    assert tuple(columns) == VERIFICATION_COLUMNS
    expected = [(a, v) for a in record.analyses for v in a.verification]
    assert len(rows) == len(expected)
    for row, (a, v) in zip(rows, expected):
        assert (row["analysis"], row["op"], row["k"]) == (a.name, a.op, cell(a.k))
        assert (row["strategy"], int(row["n_checked"]), float(row["tolerance"])) == (v.strategy, v.n_checked, v.tolerance)
        assert float(row["values_error"]) == v.values_error
        assert row["vectors_error"] == cell(v.vectors_error)
        assert row["passed"] == str(v.passed)


def test_a_run_folder_holds_exports_that_match_its_record(smoke_run: tuple[Path, RunRecord]) -> None:
    folder, record = smoke_run
    assert record.complete
    rows = check_timings(folder, record)
    check_verification(folder, record)
    # every timed analysis and its chosen strategy are there, the pca step's too
    assert {r["analysis"] for r in rows} == {a.name for a in record.analyses if a.timings}
    assert any(r["op"] == "pca" for r in rows)
    assert any(r["chosen"] == "True" for r in rows) and any(r["chosen"] == "False" for r in rows)


def test_an_incomplete_record_exports_what_it_has(smoke_run: tuple[Path, RunRecord], tmp_path: Path) -> None:
    _, record = smoke_run
    partial = record.model_copy(update={"analyses": record.analyses[:1], "complete": False, "finished": None})
    write_exports(partial, tmp_path)
    rows = check_timings(tmp_path, partial)
    check_verification(tmp_path, partial)
    assert rows and {r["analysis"] for r in rows} == {record.analyses[0].name}


def test_an_older_record_without_flops_or_conditions_exports(smoke_run: tuple[Path, RunRecord], tmp_path: Path) -> None:
    folder, record = smoke_run
    old = record.model_copy(deep=True)
    old.bench = None
    for a in old.analyses:
        for t in a.timings:
            for g in t.groups:
                g.flops = g.bytes = None
                g.measurement.conditions = None
                g.measurement.threads = {}
    shutil.copy(folder / "record.json", tmp_path / "record.json")
    (tmp_path / "record.json").write_text(old.model_dump_json())
    assert main([str(tmp_path)]) == 0  # python -m harness.record.exports RUN
    rows = check_timings(tmp_path, load_record(tmp_path))
    assert all(r["flops"] == r["gflops_per_s"] == r["threads"] == r["bench_threads"] == "" for r in rows)
    assert all(r[f"cond_{name}"] == "" for r in rows for name in CONDITION_FIELDS)


def test_an_interrupted_run_exports_the_analyses_it_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = Runner._step
    calls = []

    def interrupted_second(self: Runner, *args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return step(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Runner, "_step", interrupted_second)
    folder = tmp_path / "run"
    assert cli.main(["run", str(CONFIGS / "smoke.toml"), "-o", str(folder), "--no-cache"]) == 130
    record = load_record(folder)
    assert not record.complete and len(record.analyses) == 1
    rows = check_timings(folder, record)
    check_verification(folder, record)
    assert rows


def test_report_does_not_need_the_exports(smoke_run: tuple[Path, RunRecord], tmp_path: Path) -> None:
    folder, _ = smoke_run
    copy = tmp_path / "run"
    shutil.copytree(folder, copy)
    (copy / TIMINGS).unlink()
    (copy / VERIFICATION).unlink()
    assert cli.main(["report", str(copy)]) == 0
    assert (copy / "report.html").exists()


def test_earlier_runs_reasons_say_their_prefix_once(smoke_run: tuple[Path, RunRecord], tmp_path: Path) -> None:
    """Walk 22: timings.csv's `unstable_reasons` read `earlier runs' rounds: other processes took
    67-70% of the 2 CPUs; earlier runs' rounds: load 5.3-6.7 on 2 cores`; the HTML's row notes, one
    line each, the prefix as often. Both say it as --verbose does: the prefix once, its reasons after."""
    _, record = smoke_run
    busy = record.model_copy(deep=True)
    t = busy.analyses[0].timings[0]
    g = t.groups[0]
    g.measurement.unstable = True
    g.measurement.reasons = ["IQR 40% of median", f"{EARLIER}load 5.3-6.7 on 2 cores", f"{EARLIER}other processes took 67-70% of the 2 CPUs"]
    said = ("IQR 40% of median; earlier runs' rounds: other processes took 67-70% of the 2 CPUs, load 5.3-6.7 on 2 cores")
    write_exports(busy, tmp_path)
    _, rows = read(tmp_path / TIMINGS)
    got = {r["unstable_reasons"] for r in rows if (r["analysis"], r["strategy"], r["group"]) == (busy.analyses[0].name, t.strategy, g.group)}
    assert got == {said}
    assert t.unstable[0] == f"{g.group}: {said}"  # the HTML report's row note
