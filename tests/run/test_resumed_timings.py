"""A resumed run keeps what the stopped run timed (walk-through: Ctrl-C at 26 s, then the same
command timed every analysis again, and the interruption cost a whole run): an analysis the stopped
run finished is taken over with its rounds, marked resumed; only the others are timed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.base.units import format_seconds
from harness.cli.main import main
from harness.record.run_record import RECORD, load_record
from harness.run.folder import finished_analyses
from tests.conftest import CONFIGS

SMOKE = str(CONFIGS / "smoke.toml")
TWO = ["--no-cache", "--set", "analysis=[{op='svdvals', strategy='factored', compare=['numpy']}, "
                              "{op='svd', strategy='numpy', compare=['torch']}]"]


OVER = ["--set", "benchmark.budget=0.1"]  # under either analysis' floor: the floor is the limit


def _stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Path:
    """A run of two analyses, its folder as a run stopped after the first leaves it."""
    from harness.run import rounds as rounding

    monkeypatch.setenv("HARNESS_WISDOM", str(tmp_path / "wisdom"))
    monkeypatch.setattr(rounding, "condition_reasons", lambda conditions: [])  # a quiet machine
    folder = tmp_path / "run"
    assert main(["run", SMOKE, "-o", str(folder), *TWO, *args]) == 0
    raw = json.loads((folder / RECORD).read_text())
    (folder / RECORD).write_text(json.dumps(raw | {"complete": False, "analyses": raw["analyses"][:1]}))
    return folder


@pytest.fixture
def stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return _stop(tmp_path, monkeypatch)


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
    assert "(--no-cache: what the stopped run computed is computed again)" in said  # not "comes back from the cache"
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


def test_a_resumed_runs_floor_clock_and_plan_sentence_count_only_what_it_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Walk 15: resumed after `spectrum` finished, the run's clock read `bench 0.0/21 s floor ·
    top3` with the floor of all three analyses, ended at `12/21 s`, and its Plan sentence said
    `planned 20.9 s`: the kept analysis' floor, which this run never times, was its own."""
    from harness.bench.budget import floors
    from harness.run import runner
    from harness.report.terminal import bench_summary

    folder = _stop(tmp_path, monkeypatch, *OVER)
    labels: list[tuple[float, str]] = []
    label = runner.BenchClockLabel
    monkeypatch.setattr(runner, "BenchClockLabel", lambda name, budget, limit_s, limit: (
        labels.append((limit_s, limit)), label(name, budget, limit_s, limit))[1])
    assert main(["run", SMOKE, "-o", str(folder), *TWO, *OVER]) == 0
    after = load_record(folder)
    assert after.bench is not None and after.plan.bench is not None
    name = after.analyses[0].name
    kept = floors({(s.analysis, t.label, a.group): a for s in after.plan.steps for t in s.timed
                   for a in t.allocations})[name][0]
    floor = after.plan.bench.floor_s - kept
    assert 0.1 < floor < after.plan.bench.floor_s
    assert after.bench.floor_s == pytest.approx(floor) and after.bench.limit_s == pytest.approx(floor)
    assert labels and all(limit_s == pytest.approx(floor) and limit == "floor" for limit_s, limit in labels)
    said = bench_summary(after) or ""
    assert f"planned {format_seconds(floor)}, without {name}, which the stopped run timed (the floor" in said, said


def test_an_analysis_the_plan_now_times_otherwise_is_timed_again(stopped: Path) -> None:
    """The stopped run's wisdom may have changed this plan's points: its analysis is then timed anew,
    as is any of another workload (a record is untrusted: what it says must match this run)."""
    record = load_record(stopped)
    assert list(finished_analyses(record, record)) == [record.analyses[0].name]
    other = record.model_copy(deep=True)
    other.plan.steps[0].timed = other.plan.steps[0].timed[:1]
    assert finished_analyses(other, record) == {}
    assert finished_analyses(record.model_copy(update={"workload_fingerprint": "x"}), record) == {}


@pytest.fixture
def cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run of two analyses stopped (Ctrl-C) after the first round of the second: the budget
    buys no round beyond the floor (one round), so every round of either run is accounted for."""
    from harness.bench.budget import Budget
    from harness.run import rounds as rounding

    monkeypatch.setenv("HARNESS_WISDOM", str(tmp_path / "wisdom"))
    monkeypatch.setattr(rounding, "condition_reasons", lambda conditions: [])  # a quiet machine
    monkeypatch.setattr(Budget, "fits", lambda self, seconds, floor, quiet: floor)
    seen: list[str] = []
    blocks = rounding.Rounds._blocks

    def stopping(self: rounding.Rounds) -> object:
        seen.append(self.analysis) if self.analysis not in seen else None
        if len(seen) == 2 and self.count == 1:
            raise KeyboardInterrupt
        return blocks(self)

    monkeypatch.setattr(rounding.Rounds, "_blocks", stopping)
    folder = tmp_path / "run"
    assert main(["run", SMOKE, "-o", str(folder), *TWO]) == 130
    monkeypatch.setattr(rounding.Rounds, "_blocks", blocks)
    return folder


def _timed(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Rounds each analysis' Rounds timed, by analysis, filled as the run goes."""
    from harness.run.rounds import Rounds

    counts: dict[str, int] = {}
    run = Rounds.run

    def counted(self: Rounds) -> None:
        try:
            run(self)
        finally:
            counts[self.analysis] = self.count

    monkeypatch.setattr(Rounds, "run", counted)
    return counts


def test_a_resumed_run_keeps_the_rounds_of_the_analysis_it_stopped_in(
        cut: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    stopped = load_record(cut)
    assert len(stopped.analyses) == 1
    kept = json.loads((cut / "interrupted.json").read_text())
    timed = _timed(monkeypatch)
    capsys.readouterr()
    assert main(["run", SMOKE, "-o", str(cut), *TWO]) == 0
    said = " ".join(capsys.readouterr().err.split())
    after = load_record(cut)
    name = after.analyses[1].name
    assert timed == {name: 0}  # its round is not timed again: the floor is behind it
    n = max(len(s["rounds"]) for s in kept["subjects"])  # a round's id in each process, as the table counts
    assert kept["analysis"] == name and f"timed now but for {n} rounds of {name} kept from the interrupted run" in said
    seconds = {r["round"]: r["seconds"] for s in kept["subjects"] for r in s["rounds"]}
    recorded_ = {rid: s for t in after.analyses[1].timings for g in t.groups for rid in g.rounds
                 for s in [seconds.get(rid)]}
    assert recorded_ and all(s is not None for s in recorded_.values())  # the kept rounds, and no other
    assert all(t.resumed_rounds == n and not t.resumed for t in after.analyses[1].timings)
    from harness.report.labels import RESUMED_MARK, rounds_text  # walk 11: the kept rounds read `3+9`, unmarked

    assert all(rounds_text(t).endswith(f" {RESUMED_MARK}") for t in after.analyses[1].timings)
    assert after.complete and not (cut / "interrupted.json").exists()
    assert after.analyses[1].verification and after.passed


def test_rounds_of_another_run_or_a_corrupted_file_are_timed_again(
        cut: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file is untrusted: not the stopped run's (its run id), or not valid, it is ignored."""
    from harness.run.folder import interrupted_rounds
    from harness.run.interrupted import read

    stopped, rounds = load_record(cut), read(cut)
    assert rounds is not None and interrupted_rounds(stopped, stopped, rounds) == rounds
    assert interrupted_rounds(stopped, stopped, rounds.model_copy(update={"run_id": "other"})) is None
    (cut / "interrupted.json").write_text('{"run_id": 1}')
    assert read(cut) is None
    timed = _timed(monkeypatch)
    assert main(["run", SMOKE, "-o", str(cut), *TWO]) == 0
    assert list(timed.values()) == [1]  # timed from its start
