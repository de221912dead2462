"""The outside timer (benchmarks.outside_timer) on a small case: every point `harness run` timed
is timed again by torch.utils.benchmark in a clean process of its own, paired with the harness's
figure, and tabled. Whether the two agree is a benchmark (python -m benchmarks.outside_timer: every
point within 15% on the main job), not a test: beside two busy processes one figure here moved 2.05x
between the two timers. What made them disagree before (the launcher's OMP_WAIT_POLICY=PASSIVE,
torch 2.4x slower than in the user's own process) is tests/cli/test_signals.py's: the launcher
leaves the user's environment as it is."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from benchmarks import outside_timer
from harness.record.run_record import load_record
from tests.conftest import CONFIGS


@pytest.mark.slow
def test_the_harness_and_an_outside_timer_agree_on_a_small_case(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    monkeypatch.setenv("HARNESS_WISDOM", str(tmp_path / "wisdom"))
    folder = tmp_path / "run"
    outside_timer.run_harness(CONFIGS / "bench_dense.toml", folder, "3s",
                              ["analysis=[{op='svdvals', strategy='numpy', compare=['torch']}]"])
    rows = outside_timer.compare_run(folder)
    assert {r["strategy"] for r in rows} == {"numpy", "torch"}
    assert {r["group"] for r in rows} == {g.group for t in load_record(folder).analyses[0].timings for g in t.groups}
    for row in rows:
        assert 0 < row["outside_ms"] < math.inf and row["ratio"] == pytest.approx(row["harness_ms"] / row["outside_ms"])
    assert rows[-1]["outside_speedup"] > 0  # the outside timer's own speedup over the baseline
    table = outside_timer.table(rows)
    assert table[0].startswith("| analysis | strategy |") and len(table) == 2 + len(rows)
