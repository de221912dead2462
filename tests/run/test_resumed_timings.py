"""A resumed run keeps what the stopped run timed (walk-through: Ctrl-C at 26 s, then the same
command timed every analysis again, and the interruption cost a whole run): an analysis the stopped
run finished is taken over with its rounds, marked resumed; only the others are timed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.record.run_record import RECORD, load_record
from harness.run.folder import finished_analyses
from tests.conftest import CONFIGS

SMOKE = str(CONFIGS / "smoke.toml")
TWO = ["--no-cache", "--set", "analysis=[{op='svdvals', strategy='factored', compare=['numpy']}, "
                              "{op='svd', strategy='numpy', compare=['torch']}]"]


@pytest.fixture
def stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run of two analyses, its folder as a run stopped after the first leaves it."""
    from harness.run import rounds as rounding

    monkeypatch.setenv("HARNESS_WISDOM", str(tmp_path / "wisdom"))
    monkeypatch.setattr(rounding, "condition_reasons", lambda conditions: [])  # a quiet machine
    folder = tmp_path / "run"
    assert main(["run", SMOKE, "-o", str(folder), *TWO]) == 0
    raw = json.loads((folder / RECORD).read_text())
    (folder / RECORD).write_text(json.dumps(raw | {"complete": False, "analyses": raw["analyses"][:1]}))
    return folder


def test_a_resumed_run_keeps_the_finished_analysis_and_times_only_the_other(
        stopped: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.run.rounds import Rounds

    before = load_record(stopped)
    timed: list[str] = []
    run = Rounds.run
    monkeypatch.setattr(Rounds, "run", lambda self: (timed.append(self.analysis), run(self))[1])
    capsys.readouterr()
    assert main(["run", SMOKE, "-o", str(stopped), *TWO]) == 0
    said = capsys.readouterr().err
    assert "1 finished analysis is kept as timed, 1 is timed now" in " ".join(said.split())
    after = load_record(stopped)
    assert after.complete and [a.name for a in after.analyses] == [s.analysis for s in after.plan.steps]
    kept, new = after.analyses
    assert timed == [new.name]  # the finished analysis' rounds were not timed again
    assert [t.model_dump(exclude={"resumed"}) for t in kept.timings] == [
        t.model_dump(exclude={"resumed"}) for t in before.analyses[0].timings]
    assert all(t.resumed for t in kept.timings) and not any(t.resumed for t in new.timings)
    assert kept.verification == before.analyses[0].verification
    assert after.bench is not None and after.bench.run_id not in {r.split(".")[0] for t in kept.timings
                                                                  for g in t.groups for r in g.rounds}


def test_an_analysis_the_plan_now_times_otherwise_is_timed_again(stopped: Path) -> None:
    """The stopped run's wisdom may have changed this plan's points: its analysis is then timed anew,
    as is any of another workload (a record is untrusted: what it says must match this run)."""
    record = load_record(stopped)
    assert list(finished_analyses(record, record)) == [record.analyses[0].name]
    other = record.model_copy(deep=True)
    other.plan.steps[0].timed = other.plan.steps[0].timed[:1]
    assert finished_analyses(other, record) == {}
    assert finished_analyses(record.model_copy(update={"workload_fingerprint": "x"}), record) == {}
