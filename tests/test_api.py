"""harness.api for notebooks: run a spec with overrides, open a run folder, tidy rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import api
from tests.conftest import CONFIGS


def test_run_with_overrides_and_open_it_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_WISDOM", "off")
    done = api.run(CONFIGS / "smoke.toml", tmp_path / "run", data__adapters=2,
                   **{"analysis[0].strategy": "numpy"})
    assert done.record.plan.n_matrices == 8 and done.record.analyses[0].strategy == "numpy"
    again = api.open_run(tmp_path / "run")
    assert again.record == done.record
    rows = again.rows
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    assert {r["analysis"] for r in rows} == {a.name for a in done.record.analyses}
    assert all({"strategy", "device", "library", "speedup", "passed"} <= set(r) for r in rows)
    assert len(again.samples) >= len(rows)


def test_a_failed_run_raises(tmp_path: Path) -> None:
    with pytest.raises(api.RunFailed):
        api.run(CONFIGS / "smoke.toml", tmp_path / "run", data__adapters=0)
