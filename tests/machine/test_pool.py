"""The rounds pool (machine.measurements) read as data from elsewhere: one row per hostile file,
each read back as nothing, said in one line, kept aside, and the run measuring afresh with its own
figures; a planted pool outvoted by what the run measures; another version's file never written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.bench.series import Round
from harness.cli.main import main
from harness.machine import measurements
from harness.machine.info import probe
from harness.machine.measurements import Item, Measurements
from harness.machine.wisdom import identity
from harness.record.run_record import load_record
from tests.conftest import CONFIGS

SMOKE = str(CONFIGS / "smoke.toml")
ITEM = Item(code="c", strategy="numpy", op="svdvals", k=None, shape=(4, 4), rank=None, dtype="float32",
            device="cpu", threads=1, width=1)


def pool_with(seconds: object) -> dict[str, object]:
    return {"version": measurements.VERSION, "machine": identity(probe()),
            "items": {ITEM.key(): [{"round": "run#a#0", "seconds": seconds}]}}


BAD = {
    "NaN seconds": (json.dumps(pool_with(float("nan"))), "seconds"),
    "zero seconds": (json.dumps(pool_with(0.0)), "seconds"),
    "negative seconds": (json.dumps(pool_with(-1.0)), "seconds"),
    "infinite seconds": (json.dumps(pool_with(float("inf"))), "seconds"),
    "1e308 seconds": (json.dumps(pool_with(1e308)), "seconds"),
    "seconds of the wrong type": (json.dumps(pool_with("x")), "seconds"),
    "items as a list": (json.dumps({**pool_with(1.0), "items": [1, 2]}), "items"),
    "a round id naming no run": (json.dumps({**pool_with(1.0), "items": {ITEM.key(): [
        {"round": "nohash", "seconds": 1.0}]}}), "round id"),
    "not JSON": ("{", "not JSON"),
    "a JSON list": ("[]", "a JSON list"),
    "another machine's identity": (json.dumps({**pool_with(1.0), "machine": {"hostname": "elsewhere"}}),
                                   "not this machine's"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_pool_is_one_line_kept_aside_and_measured_afresh(name: str, tmp_path: Path) -> None:
    text, why = BAD[name]
    path = measurements.path_for(tmp_path, probe())
    path.write_text(text)
    said: list[str] = []
    pool = measurements.load(tmp_path, probe(), say=said.append)
    assert pool.items == {} and len(said) == 1, said
    assert why in said[0] and "kept aside as" in said[0] and "measuring afresh" in said[0]
    assert not path.exists() and len(list(tmp_path.glob(path.name + ".bad-*"))) == 1


def test_a_pool_over_the_cap_is_kept_aside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(measurements, "CAP", 100)
    path = measurements.path_for(tmp_path, probe())
    path.write_text(json.dumps(pool_with(1.0)) + " " * 200)
    said: list[str] = []
    assert measurements.load(tmp_path, probe(), say=said.append).items == {}
    assert len(said) == 1 and "bytes" in said[0] and "kept aside" in said[0]


def test_another_versions_pool_is_never_read_nor_written(tmp_path: Path) -> None:
    """It has a name of its own; were one under this name, it is left as it is."""
    old = tmp_path / (measurements.path_for(tmp_path, probe()).name.replace(f"v{measurements.VERSION}-", ""))
    old.write_text('{"version": 1, "items": {}}')
    path = measurements.path_for(tmp_path, probe())
    path.write_text(json.dumps({**pool_with(1.0), "version": measurements.VERSION + 1}))
    before = path.read_bytes()
    said: list[str] = []
    measurements.keep(tmp_path, probe(), {ITEM: [Round(round="r#a#0", seconds=1.0)]}, say=said.append)
    assert path.read_bytes() == before and old.read_text() == '{"version": 1, "items": {}}'
    assert len(said) == 1 and "not kept" in said[0]


SPEC = ["--no-cache", "--set", "analysis=[{op='svdvals', strategy='numpy', compare=['torch']}]",
        "--set", "data.modules={a=[512, 512]}", "--set", "data.form='dense'", "--budget", "0.5s"]


STEADY_S = {"numpy": 0.04, "torch": 0.02}  # each timed call's seconds, in every run of a test


def first_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """SPEC's first run into tmp_path/a, timing as on a quiet machine (one shape group, numpy
    against torch), its pool in tmp_path/wisdom: the pool's file, for a test to plant in. Every
    timed call of this and later runs takes STEADY_S: on a busy machine two real runs' torch
    speedups were 6x apart, and the later run set the earlier one's rounds aside (the pool's own
    work, but not what these tests plant)."""
    from harness.bench.worker import Reply, Request, TimingWorker
    from harness.run import rounds as rounding

    monkeypatch.setenv("HARNESS_WISDOM", str(tmp_path / "wisdom"))
    monkeypatch.setattr(rounding, "condition_reasons", lambda conditions: [])
    block = TimingWorker.block

    def steady(self: TimingWorker, request: Request, deadline_s: float = 0.0) -> Reply:
        reply = block(self, request, deadline_s)
        if not request.min_time_s:  # a verifying call, not a timed block
            return reply
        call_s = STEADY_S[self.label]
        calls = [call_s] * len(reply.block.calls_s)
        return Reply(reply.block.model_copy(update={"calls_s": calls, "seconds": call_s}), reply.result, reply.notes)

    monkeypatch.setattr(TimingWorker, "block", steady)
    assert main(["run", SMOKE, "-o", str(tmp_path / "a"), *SPEC]) == 0
    return next((tmp_path / "wisdom").glob(f"rounds-v{measurements.VERSION}-*.json"))


def test_a_planted_pool_is_outvoted_by_what_the_run_measures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Five planted runs in which torch is 1,000x faster than numpy: the run measures, finds the
    pooled torch rounds far off its own, discards them with a note, and says its own figure."""
    path = first_run(tmp_path, monkeypatch)
    before = next(t for t in load_record(tmp_path / "a").analyses[0].timings if t.strategy == "torch")
    pool = Measurements.model_validate_json(path.read_text())
    assert len(pool.items) == 2  # numpy's item and torch's, one shape group
    fast = min(pool.items, key=lambda key: min(r.seconds for r in pool.items[key]))  # torch: 2 threads
    for key, rounds in pool.items.items():
        scale = 1e-3 if key == fast else 1.0
        pool.items[key] = rounds + [rounds[0].model_copy(update={"round": f"planted{i}#svdvals#0",
                                                                 "seconds": rounds[0].seconds * scale})
                                    for i in range(5)]
    path.write_text(pool.model_dump_json())
    assert main(["run", SMOKE, "-o", str(tmp_path / "b"), *SPEC]) == 0
    after = next(t for t in load_record(tmp_path / "b").analyses[0].timings if t.strategy == "torch")
    assert after.speedup is not None and before.speedup is not None
    assert after.speedup == before.speedup == STEADY_S["numpy"] / STEADY_S["torch"]  # not the planted 1,000x
    assert "pooled rounds of torch" in capsys.readouterr().err


def test_a_new_folder_on_a_known_machine_neither_probes_nor_loses_the_pool(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Wisdom and pooled rounds are the machine's (the user's cache folder), the result cache the
    project's: a run from another working folder measures no roof again and finds the rounds pooled."""
    from harness.run import calibrate

    monkeypatch.delenv("HARNESS_WISDOM")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    spec = ["--set", "analysis=[{op='svdvals', strategy='numpy', compare=['torch']}]", "--set", "data.modules={a=[64, 64]}",
            "--set", "data.form='dense'", "--budget", "0.5s"]
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
    monkeypatch.chdir(tmp_path / "one")
    assert main(["run", SMOKE, "-o", "run", *spec]) == 0
    pools = list((tmp_path / "user-cache" / "spectral-harness" / "wisdom").glob(f"rounds-v{measurements.VERSION}-*.json"))
    assert len(pools) == 1 and not (tmp_path / "one" / ".harness-cache" / "wisdom").exists()
    monkeypatch.chdir(tmp_path / "two")
    monkeypatch.setattr(calibrate, "measure_cpu", lambda *a, **k: pytest.fail("measured the roofs again"))
    assert main(["run", SMOKE, "-o", "run", *spec]) == 0
    assert (tmp_path / "two" / ".harness-cache").is_dir()  # the result cache stays the project's
    assert load_record(tmp_path / "two" / "run").roofs  # from the machine's wisdom


def test_a_pooled_round_set_aside_stays_aside_in_every_later_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Walk 8: a pool holding one round 14x off was discarded in one run, then pooled again in the
    next, where that run's own rounds outvoted it in the median, and the verdict swung. The pool
    marks it set aside: neither run pools it, and only the first says so."""
    path = first_run(tmp_path, monkeypatch)
    pool = Measurements.model_validate_json(path.read_text())
    for key, rounds in pool.items.items():  # each point's only pooled round: 14x slower than its own
        slowest = max(r.seconds for r in rounds)
        pool.items[key] = [rounds[0].model_copy(update={"round": "planted#svdvals#0", "seconds": 14 * slowest})]
    path.write_text(pool.model_dump_json())
    capsys.readouterr()
    for run in ("b", "c"):
        assert main(["run", SMOKE, "-o", str(tmp_path / run), *SPEC]) == 0
        timings = load_record(tmp_path / run).analyses[0].timings
        assert not any("planted" in r for t in timings for g in t.groups for r in g.rounds), run
        said = capsys.readouterr().err
        assert ("1 round at" in said) == (run == "b"), said
    pool = Measurements.model_validate_json(path.read_text())
    assert pool.set_aside == {key: ["planted#svdvals#0"] for key in pool.items}


@pytest.mark.parametrize("apart", [False, True], ids=["own rounds agree", "own rounds 28x apart"])
def test_a_pool_off_what_the_run_measures_is_set_aside_only_beside_own_rounds_that_agree(
        apart: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Walk 12 never met the set-aside, walk 11 met it the wrong way round (2 own rounds 14x apart
    discarded 6 pooled ones that agreed). End to end: torch's pooled rounds, planted 14x slower than
    it runs, are discarded with the note beside own rounds that agree, and kept in the record beside
    own rounds that are WILD_RUN apart themselves (here the first 14x, the second 0.5x, the rest 1x)."""
    from harness.bench.worker import Reply, Request, TimingWorker
    from harness.run.items import WILD_RUN

    path = first_run(tmp_path, monkeypatch)
    torch = next(t for t in load_record(tmp_path / "a").analyses[0].timings if t.label == "torch")
    measured = {(r, s) for g in torch.groups for r, s in zip(g.rounds, g.measurement.samples_s, strict=True)}
    pool = Measurements.model_validate_json(path.read_text())
    (key,) = [k for k, rounds in pool.items.items() if {(r.round, r.seconds) for r in rounds} == measured]
    planted = {r.round for r in pool.items[key]}  # they pair with numpy's pooled rounds, as a real run's do
    pool.items[key] = [r.model_copy(update={"seconds": 14 * r.seconds}) for r in pool.items[key]]
    path.write_text(pool.model_dump_json())
    block, scales = TimingWorker.block, [14.0, 0.5] if apart else []

    def timed(self: TimingWorker, request: Request, deadline_s: float = 0.0) -> Reply:
        reply = block(self, request, deadline_s)
        if self.label != "torch" or not request.min_time_s:  # a timed block of torch's, not a verifying call
            return reply
        scale = scales.pop(0) if scales else 1.0
        return Reply(reply.block.model_copy(update={"seconds": scale * reply.block.seconds}), reply.result, reply.notes)

    monkeypatch.setattr(TimingWorker, "block", timed)
    capsys.readouterr()
    assert main(["run", SMOKE, "-o", str(tmp_path / "b"), *SPEC]) == 0
    said = " ".join(capsys.readouterr().err.split())
    torch = next(t for t in load_record(tmp_path / "b").analyses[0].timings if t.label == "torch")
    kept = {r for g in torch.groups for r in g.rounds} & planted
    own = [s for g in torch.groups for s in g.measurement.samples_s[g.pooled:]]
    assert len(own) >= 3 and (max(own) > WILD_RUN * min(own)) == apart  # the case asked for
    discarded = "svdvals: pooled rounds of torch on 512x512 discarded: "
    assert (discarded in said) != apart and (kept == planted) == apart, said
    if not apart:
        assert said.split(discarded)[1].split(" rounds at ")[0] == str(len(planted))
        assert "this run's own rounds measured" in said.split(discarded)[1]
