"""The history page says what asv's data show of how each run was recorded: `asv run --quick`
(one sample a timing) told from asv's stats, never guessed, and why a point has no speedup, as
the suite recorded it (walk-through 6, history 2 and 3)."""

from __future__ import annotations

import json
import os
import math
import re
from pathlib import Path

import pytest

from harness.report.history import load
from harness.report.history_page import write_history

from .test_history import write_meta, write_run

pytest.importorskip("asv")

NAME = "gram.GramRoutes.time_gram"


def quick_lines(tmp_path: Path, declared: dict[str, object], samples: list[list[int]]) -> list[str]:
    """The page's --quick lines for a time benchmark declared with `declared` (asv's rounds and
    repeat) whose two points took `samples[i]` timings at commit i."""
    root = tmp_path / "asv"
    write_meta(root, "vm-cpu", {NAME: {"name": NAME, "type": "time", "unit": "seconds", "param_names": ["route"],
                                       "params": [["'numpy'", "'torch'"]], "version": "1", **declared}})
    for i, taken in enumerate(samples):
        values = [0.05, 0.06]
        write_run(root, "vm-cpu", i, {NAME: [values, [["'numpy'", "'torch'"]], "1", 0, 1.0, values, values, values,
                                             values, [1, 1], taken]})
    page = write_history(load(root), root, tmp_path / "history.html").read_text()
    return [re.sub(r"\s+", " ", line) for line in re.findall(r'<p class="causes quick">(.*?)</p>', page, re.S)]


def test_a_run_is_said_to_be_quick_where_the_data_show_it_and_only_there(tmp_path: Path) -> None:
    """One sample a point of a benchmark a plain run times twice or more: --quick, at that commit
    only; more samples at a point, a benchmark timed once anyway, or an unreadable declaration: not said."""
    lines = quick_lines(tmp_path / "quick", {"rounds": 2, "repeat": 0}, [[5, 4], [1, 1]])
    assert lines == ["On vm-cpu, the run at <code>01ababab</code> was recorded with <code>asv run --quick</code>: one "
                     "sample a timing, so each raw time below is one measurement with no spread (a plain <code>asv "
                     "run</code> takes at least 2); the speedups are alike either way: each is one <code>harness "
                     "run</code>, its interval from that run's rounds."]
    assert quick_lines(tmp_path / "more", {"rounds": 2, "repeat": 0}, [[5, 4], [3, 1]]) == []
    assert quick_lines(tmp_path / "once", {"rounds": 1, "repeat": 1}, [[1, 1]]) == []
    assert quick_lines(tmp_path / "odd", {"rounds": "2", "repeat": [1, 10, 20.0]}, [[1, 1]]) == []


def causes_page(tmp_path: Path, machine: dict[str, object] | None = None) -> str:
    """The page of one run whose svd_topk torch point a busy machine left untimed (load 6.1) and
    whose svd dual point failed, on a machine whose machine.json says `machine` (asv's own when None)."""
    root = tmp_path / "asv"
    points = ["e:svd_topk/scipy_svds", "e:svd_topk/torch", "e:svd/numpy", "e:svd/torch", "e:svd/dual"]
    # per point: time ratio, interval, busy share, cause, load
    nan = math.nan
    values = [(1.0, 1.0, 0.0, 0, 6.1), (nan, nan, nan, 1, 6.1), (1.0, 1.0, 0.0, 0, 6.1), (0.5, 1.1, 0.0, 0, 6.1),
              (nan, nan, nan, 3, 6.1)]
    tracks = ("track_time_ratio", "track_interval", "track_busy", "track_untimed", "track_load")
    names = {t: f"speedups.Dense.{t}" for t in tracks}
    params = [[repr(p) for p in points]]
    write_meta(root, "vm-cpu", {n: {"name": n, "type": "track", "unit": "x", "param_names": ["point"], "params": params,
                                    "version": "1"} for n in names.values()})
    if machine is not None:
        (root / "vm-cpu" / "machine.json").write_text(json.dumps({"machine": "vm-cpu", "version": 1, **machine}))
    write_run(root, "vm-cpu", 0, {names[t]: [[v[i] for v in values], params, "1", 0, 1.0] + [None] * 6
                                  for i, t in enumerate(tracks)})
    return re.sub(r"\s+", " ", write_history(load(root), root, tmp_path / "history.html").read_text())


def test_why_a_point_has_no_speedup_is_said_as_the_suite_recorded_it(tmp_path: Path) -> None:
    """`bench_dense: svd_topk` was empty with "asv's log says why", and asv's log said only n/a: the
    suite's track_untimed and track_load say which cause (benchmarks/speedups.py)."""
    page = causes_page(tmp_path)
    assert ("No speedup measured at any commit, on any machine, so no chart (why, at the newest commit): e: svd_topk "
            "(torch: not timed: out of time on a busy machine (load 6.1)).") in page
    assert "<li>dual: no value at 00ababab (failed: it gave no answer to time)</li>" in page


@pytest.mark.parametrize(("num_cpu", "said"), [("2", " on 2 cores"), (16, " on 16 cores"), ("two", ""), ("-2", ""),
                                               (0, ""), (True, ""), ("9" * 40, ""), ([2], ""), (None, "")])
def test_a_busy_machines_load_is_said_with_its_cores_where_asv_recorded_them(
        tmp_path: Path, num_cpu: object, said: str) -> None:
    """Walk-through 6: `(load 6.1)` alone, where a load of 6 means little without the cores it is
    shared by: asv's machine.json says them (num_cpu, a string as `asv machine` writes it); what is
    no core count there is data, never trusted: the load is said without them."""
    page = causes_page(tmp_path, {"num_cpu": num_cpu})
    assert f"(torch: not timed: out of time on a busy machine (load 6.1{said}))." in page


def test_a_machine_json_that_is_no_map_or_no_file_tells_no_cores(tmp_path: Path) -> None:
    """A list, broken JSON, or a FIFO (which would block a reader forever) in machine.json's place."""
    from harness.report.history import machine_cores

    for name, text in (("list", "[2]"), ("broken", '{"num_cpu": "2"'), ("ok", '{"num_cpu": "2"}')):
        (tmp_path / name).mkdir()
        (tmp_path / name / "machine.json").write_text(text)
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / "machine.json")
    assert {n: machine_cores(tmp_path / n) for n in ("list", "broken", "ok", "fifo", "none")} == {
        "list": None, "broken": None, "ok": 2, "fifo": None, "none": None}
