"""`auto` keeps its previous pick on this machine unless another candidate is clearly faster: by
more than the two estimates' spread (the wisdom's, from their recent runs, else HOLD). A walk's
smoke svd_topk went gram_eigh -> torch -> gram_eigh over consecutive plain runs of one spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.data.registry import build_source
from harness.data.workload import Workload
from harness.machine.info import probe
from harness.machine.picks import Pick
from harness.machine.wisdom import Observation, Wisdom, identity
from harness.plan.compiler import compile_plan
from harness.plan.model import Plan
from harness.specs.reading import load_spec
from harness.strategies.base import OpRequest
from harness.strategies.registry import STRATEGIES
from tests.conftest import CONFIGS

MACHINE = probe()
TOPK = 2  # smoke's svd_topk analysis: k = 2, auto
EXACT = {"torch": "cpu", "gram_eigh": "numpy", "scipy_svds": "numpy", "factored": "numpy"}  # its exact strategies
FAST = 5e-6  # seconds per matrix of the faster one


def _plan(wisdom: Wisdom | None, strategy: str = "auto") -> Plan:
    """smoke planned on one thread (the load moves the default), svd_topk's strategy `strategy`."""
    spec = load_spec(CONFIGS / "smoke.toml", ["benchmark.threads=1", f"analysis.{TOPK}.strategy='{strategy}'"])
    workload = Workload.from_source(build_source(spec.data, spec.experiment.seed, Path(".")))
    return compile_plan(spec, workload, MACHINE, wisdom)


def _wisdom(runs: dict[str, list[float]], picked: str | None = None) -> Wisdom:
    """svd_topk measured per matrix at each of `runs`' seconds in turn (its estimate their median,
    its spread the largest over the smallest), every other exact strategy far behind; `picked`:
    the previous pick, kept under the key the plan gives it."""
    w = Wisdom(machine=identity(MACHINE))
    plan = _plan(w)
    k = plan.steps[TOPK].k
    for strategy, device in EXACT.items():
        for seconds in runs.get(strategy, [100 * FAST]):
            for g in plan.groups:
                shape = type("G", (), {"shape": g.shape, "rank": g.rank, "kron": None})()
                flops = STRATEGIES[strategy].work(OpRequest("svd_topk", k), shape, 4).flops  # type: ignore[arg-type]
                w.add([Observation(strategy=strategy, op="svd_topk", k=k, shape=g.shape, rank=g.rank, dtype="float32",
                                   device=device, threads=1, seconds=seconds, flops=flops, samples=5,
                                   when="2026-11-28T10:00:00", source="test")])
    if picked is not None:
        pick = plan.steps[TOPK].pick
        assert pick is not None
        w.picks = [Pick(key=pick.key, label=picked)]
    return w


@pytest.mark.parametrize(("slower", "kept"), [(1.3, True), (3.0, False)])
def test_the_previous_pick_is_kept_unless_another_is_clearly_faster(slower: float, kept: bool) -> None:
    """gram_eigh, the previous pick, measured `slower` x torch, each once (no spread of its own:
    HOLD, 1.5x, together): at 1.3x it stays, with the reason saying so; at 3x torch takes over.
    Either way the plan carries its pick for the run to keep."""
    pytest.importorskip("torch")
    step = _plan(_wisdom({"torch": [FAST], "gram_eigh": [slower * FAST]}, picked="gram_eigh")).steps[TOPK]
    assert step.strategy == ("gram_eigh" if kept else "torch"), step.reason
    assert step.pick is not None and step.pick.label == step.strategy
    if kept:
        assert step.reason.startswith("auto: kept gram_eigh, the previous pick (est. of the whole analysis "), step.reason
        assert "): torch's estimate (60 µs, measured) is within their spread (1.5x); " in step.reason, step.reason
    else:
        assert step.reason.startswith("auto: fastest exact strategy"), step.reason


def test_without_a_previous_pick_the_fastest_runs_as_before() -> None:
    """The same measurements, no pick kept: torch, 1.3x faster (past a tie), runs; a named
    strategy runs whatever was picked before, and keeps no pick."""
    pytest.importorskip("torch")
    step = _plan(_wisdom({"torch": [FAST], "gram_eigh": [1.3 * FAST]})).steps[TOPK]
    assert step.strategy == "torch" and step.reason.startswith("auto: fastest exact strategy"), step.reason
    assert step.pick is not None and step.pick.label == "torch"
    named = _plan(_wisdom({"torch": [FAST], "gram_eigh": [1.3 * FAST]}, picked="gram_eigh"), "torch").steps[TOPK]
    assert named.strategy == "torch" and named.reason.startswith("named in the spec") and named.pick is None


@pytest.mark.parametrize(("apart", "kept"), [(2.0, True), (1.01, False)])
def test_the_wisdoms_own_spread_sets_how_clear_a_win_must_be(apart: float, kept: bool) -> None:
    """Five runs each, from half to twice their median (a spread of 4x, half of it either way for
    each estimate): a 3x faster torch is within their spread and gram_eigh stays; runs 1.01x
    apart, a 1.3x faster torch is clear of it (a tie is still 1.25x)."""
    pytest.importorskip("torch")
    slower = 3.0 if kept else 1.3
    runs = [1.0, 1.0, 1.0, apart, 1 / apart]  # median 1
    step = _plan(_wisdom({"torch": [FAST * r for r in runs], "gram_eigh": [slower * FAST * r for r in runs]},
                         picked="gram_eigh")).steps[TOPK]
    assert step.strategy == ("gram_eigh" if kept else "torch"), step.reason
    if kept:
        assert "torch's estimate (60 µs, measured) is within their spread (4x)" in step.reason, step.reason
