"""`harness calibrate`: measure this machine once, so that `auto` plans from its measurements.

The roofs (GEMM peak per precision and device, memory bandwidth, file reads) and every
registered strategy on representative shapes: small, square, the reference 3072 x 768 tall and
wide, LoRA ranks 8 to 64, and a PCA. Strategies are timed by the run's own benchmark phase on
synthetic workloads, so a calibration measures exactly what a run would, verified against float64
references, and what it measures lands in the wisdom the same way a run's does.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from harness.machine import wisdom
from harness.run.phase import BenchPhase
from harness.machine.roofline import RUN_PROBE, ReadRoof, Roof, measure_cpu, measure_cuda, measure_reads, roof_device
from harness.bench.noise import group_reasons
from harness.bench.threads import pinned
from harness.data.registry import build_source
from harness.data.workload import Workload
from harness.linalg.device import cuda_available, torch_missing_reason
from harness.machine.info import MachineInfo
from harness.plan.compiler import compile_plan
from harness.base.progress import Display
from harness.specs.sections import Spec
from harness.base.units import format_bytes

TALL, WIDE = [3072, 768], [768, 3072]
READ_BYTES = {True: 128 << 20, False: 1 << 30}  # the read probe's file, quick and full


def _spec(name: str, data: dict[str, Any], analyses: list[dict[str, Any]], budget: float) -> Spec:
    return Spec.model_validate({
        "experiment": {"name": f"calibrate-{name}", "seed": 0},
        "data": {"source": "synthetic", "adapters": 2, "layers": 1, **data},
        "analysis": [{"strategy": a["compare"][0], **a} for a in analyses],  # what is named, nothing else
        "execution": {"device": "auto", "memory_budget": "2GiB", "dtype": "float32"},
        "benchmark": {"budget": budget, "warmup": 1, "repeats": 3, "sample": 2},
    })


def values_ops(quick: bool) -> list[dict[str, Any]]:
    """Values and top-k; the exact torch top-k is torch's full SVD, timed apart by a full calibration."""
    return [
        {"name": "svdvals", "op": "svdvals", "compare": ["numpy", "process_pool", "torch"]},
        {"name": "top3", "op": "svd_topk", "k": 3,
         "compare": ["scipy_svds", "torch_lowrank"] + ([] if quick else ["torch"])},
    ]


def vectors_ops(quick: bool) -> list[dict[str, Any]]:
    """Vectors; quick leaves the pool's (about numpy's over the cores) to the model."""
    return [{"name": "svd", "op": "svd", "compare": ["numpy", "torch"] + ([] if quick else ["process_pool"])}]


def lora_ops() -> list[dict[str, Any]]:
    return [
        {"name": "svdvals", "op": "svdvals", "compare": ["factored"], "baseline": "factored"},
        {"name": "svd", "op": "svd", "compare": ["factored"], "baseline": "factored"},
        {"name": "top3", "op": "svd_topk", "k": 3, "compare": ["factored"], "baseline": "factored"},
        {"name": "pca", "op": "pca", "components": 1, "compare": ["dual_gram", "factored_gram"],
         "baseline": "dual_gram"},
    ]


def specs(quick: bool) -> list[Spec]:
    """What a calibration times. Quick: values of the reference shapes tall and wide, vectors of
    the tall one, LoRA rank 16, about 30 s on 2 idle cores."""
    dense = {"small": [256, 256], "tall": TALL, "wide": WIDE} | ({} if quick else {"square": [1024, 1024]})
    vectors = {"small": [256, 256], "tall": TALL} if quick else dense
    ranks = (16,) if quick else (8, 16, 64)
    seconds = 8.0 if quick else 60.0
    without_torch = torch_missing_reason() is not None
    out = [_spec("values", {"form": "dense", "modules": dense}, _available(values_ops(quick), without_torch), seconds),
           _spec("vectors", {"form": "dense", "modules": vectors}, _available(vectors_ops(quick), without_torch), seconds)]
    for rank in ranks:
        out.append(_spec(f"lora-r{rank}", {"form": "lora", "rank": rank, "modules": {"tall": TALL, "wide": WIDE}},
                         lora_ops(), seconds / 4 / len(ranks)))
    return out


def _available(analyses: list[dict[str, Any]], without_torch: bool) -> list[dict[str, Any]]:
    """Without torch, the torch strategies are left out of what is timed, not failed."""
    if without_torch:
        for a in analyses:
            a["compare"] = [s for s in a["compare"] if s not in ("torch", "torch_lowrank")]
    return analyses


def roofs(machine: MachineInfo, quick: bool) -> list[Roof]:
    by = "harness calibrate" + (" --quick" if quick else "")
    found = [measure_cpu(machine.cores, quick, use_torch=torch_missing_reason() is None, by=by)]
    if cuda_available():
        found.append(measure_cuda(quick, by))
    return found


def reads(where: Path, quick: bool) -> ReadRoof | str:
    """The read probe, or why it was not run (not enough free disk for its file)."""
    size = READ_BYTES[quick]
    where.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(where).free
    if free < 2 * size:
        return f"file reads not measured: {format_bytes(free)} free in {where}, the probe needs {format_bytes(2 * size)}"
    return measure_reads(where, size)


def time_strategies(spec: Spec, machine: MachineInfo, display: Display) -> tuple[list[wisdom.Observation], list[str]]:
    """The spec's every strategy through the run's benchmark phase: what it would teach a run, and
    why each measurement it does not teach was dropped (its first reason, or a failed check)."""
    workload = Workload.from_source(build_source(spec.data, spec.experiment.seed, Path(".")))
    plan = compile_plan(spec, workload, machine)
    bench = BenchPhase(plan, workload, 0, display, machine.cores, source="calibrate")
    assert plan.bench is not None
    dropped: list[str] = []
    with bench.workers:
        bench.workers.ready()  # the forkserver starts before this process pins its threads
        with pinned(plan.bench.threads):
            for step, analysis in zip(plan.steps, spec.analysis, strict=True):
                if step.op == "pca":
                    timings, checks = bench.time_pca(step, analysis)  # type: ignore[arg-type]
                else:
                    timings, checks = bench.time_step(step)
                failed = {v.strategy for v in checks if not v.passed}
                for t in timings:  # one cause per measurement dropped: its first
                    dropped += [f"{t.strategy} failed verification" if t.strategy in failed else g.measurement.reasons[0]
                                for g in t.groups if t.strategy in failed or g.measurement.reasons]
    return [o for o in bench.observations if o.busy is None], dropped  # the busy ones are counted in `dropped`


def kept_note(kept: int, dropped: list[str]) -> str | None:
    """What a calibration kept and what it dropped, by cause: on a busy machine a quick
    calibration can measure for a minute and keep nothing, which must not pass in silence."""
    if not dropped:
        return None if kept else ("calibrate: kept no measurement: no strategy could be timed here; `auto` plans "
                                  "from the cost model (`harness plan` says why each strategy cannot run)")
    causes = "; ".join(f"{n}x {reason}" if n > 1 else reason for n, reason in group_reasons(dropped))
    verdict = "kept none" if not kept else f"kept {kept}"
    return (f"calibrate: {verdict} of {kept + len(dropped)} measurements; dropped {len(dropped)} as unreliable "
            f"({causes}); where nothing was kept `auto` plans from what earlier runs measured (`measured while "
            "busy`), else from the cost model: run it again on a quiet machine (`harness system` names the busiest "
            "processes)")


def calibrate(where: Path, machine: MachineInfo, display: Display, quick: bool = False,
              chosen: list[Spec] | None = None) -> tuple[wisdom.Wisdom, list[str], int]:
    """Measure the roofs, the reads and the strategies; store them as this machine's wisdom.
    Returns the wisdom, notes on what could not be measured, and how many measurements it kept."""
    notes: list[str] = []
    with display.phase("measuring the GEMM peak and memory bandwidth") as phase:
        found = roofs(machine, quick)
        phase.summary = ", ".join(f"{r.device}: {r.gemm_gflops['float32']:.0f} GFLOP/s float32, "
                                  f"{r.bandwidth_gbs:.0f} GB/s" for r in found)
    with display.phase("measuring file reads") as phase:
        read = reads(where, quick)
        if isinstance(read, str):
            notes.append(read)
        else:
            phase.summary = f"{read.cached_gbs:.1f} GB/s from the page cache" + (
                f", {read.cold_gbs:.1f} GB/s cold" if read.cold_gbs is not None else "")
    todo = chosen or specs(quick)
    measured = []
    with display.phase("timing every strategy", len(todo)) as phase:  # a minute and more: never in silence
        for spec in todo:
            phase.item(spec.experiment.name.removeprefix("calibrate-"))
            measured.append(time_strategies(spec, machine, display))
            phase.advance()
    observations = [o for kept, _ in measured for o in kept]
    if (note := kept_note(len(observations), [reason for _, dropped in measured for reason in dropped])):
        notes.append(note)
    stored = wisdom.learn(where, machine, observations, found, None if isinstance(read, str) else read)
    assert stored is not None
    return stored, notes, len(observations)


def missing_roofs(where: Path | None, learnt: wisdom.Wisdom, backends: set[str]) -> set[str]:
    """The devices whose roofs run_roofs measures: those the wisdom has none for (a machine's first
    run, or its first on a device); none when wisdom is off, which measures nothing."""
    return set() if where is None else {roof_device(b) for b in backends} - set(learnt.roofs)


def run_roofs(where: Path | None, learnt: wisdom.Wisdom, machine: MachineInfo, backends: set[str]) -> dict[str, Roof]:
    """The roofs a run's record carries: from the wisdom the run was planned with (`learnt`),
    else measured quickly now (a second or so, once per machine) and kept. None are measured
    when wisdom is off."""
    if where is None:
        return {}
    known = learnt.roofs
    devices = {roof_device(b) for b in backends}
    missing = missing_roofs(where, learnt, backends)
    if not missing:
        return {d: known[d] for d in devices}
    use_torch = bool(backends & {"cpu", "cuda"})  # a numpy-only run does not import torch for its roof
    fresh = [measure_cpu(machine.cores, True, use_torch=use_torch, by=RUN_PROBE)] if "cpu" in missing else []
    if "cuda" in missing:
        fresh.append(measure_cuda(True, RUN_PROBE))
    try:
        stored = wisdom.learn(where, machine, roofs=fresh)
    except OSError:
        stored = None
    known = stored.roofs if stored is not None else {r.device: r for r in fresh}
    return {d: known[d] for d in devices if d in known}

