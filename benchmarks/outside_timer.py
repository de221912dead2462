"""The harness's timings checked against an outside timer: every compared strategy of a run, on
every shape group, timed again in a clean Python process of its own (the user's environment as
it is, nothing else imported or run in it) by torch.utils.benchmark.Timer with the run's thread
count (`num_threads` for torch: Timer's default is one thread; threadpoolctl for BLAS), and each per-matrix time and speedup
compared with the harness's. The inputs are the run's own: the same sampled matrices, the same
matrices per call and batch size, from the run's record and spec.

    python -m benchmarks.outside_timer [SPEC ...] [--budget 20s] [--set KEY=VALUE ...] [--json OUT]

Defaults to the main job and configs/bench_dense.toml. Prints a table per spec: strategy, group,
harness ms, outside ms, their ratio, and the speedups both give; a ratio outside 0.85-1.15 is
marked. The load average is printed beside it, before and after.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPECS = [ROOT / "configs" / "task_geometry.toml", ROOT / "configs" / "bench_dense.toml"]
AGREE = 0.15  # the harness's per-matrix time within this share of the outside timer's
MIN_RUN_S = 1.5  # the outside timer's blocked_autorange: at least this much of calls


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def run_harness(spec: Path, folder: Path, budget: str, overrides: list[str]) -> None:
    """The harness as a user runs it, in its own process: fresh, no cache."""
    command = [sys.executable, "-m", "harness", "run", str(spec), "-o", str(folder), "--fresh", "--no-cache",
               "--budget", budget, *(x for o in overrides for x in ("--set", o))]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if proc.returncode not in (0, 3):
        raise SystemExit(f"harness run {spec} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")


def measure_one(folder: str, analysis: str, label: str, group: str) -> dict[str, Any]:
    """In a clean process: the call the run timed for (analysis, label, group), on the same
    matrices in turn, timed by torch.utils.benchmark; seconds per matrix."""
    import torch.utils.benchmark as tb
    from threadpoolctl import threadpool_limits

    from harness.data.layout import AdapterLayout
    from harness.machine.info import probe
    from harness.record.run_record import load_record
    from harness.run.prepare import load_workload
    from harness.run.subjects import Context, PcaWork, matrix_subjects, pca_subjects
    from harness.specs.sections import PcaAnalysis, Spec

    record = load_record(Path(folder))
    spec = Spec.model_validate(record.spec)
    workload = load_workload(spec, record.spec_path, probe())
    plan = record.plan
    assert plan.bench is not None
    step = next(s for s in plan.steps if s.analysis == analysis)
    timed = next(t for t in step.timed if t.label == label)
    context = Context(backend=timed.device, precision=timed.precision or plan.dtype,  # type: ignore[arg-type]
                      compiled=timed.compiled, workers=plan.workers, threads_per_worker=plan.threads_per_worker,
                      seed=spec.experiment.seed)
    if step.op == "pca":
        layout = AdapterLayout.from_workload(workload)
        analysis_spec = next(a for a in spec.analysis if a.label == analysis)
        assert isinstance(analysis_spec, PcaAnalysis)
        subjects, work = pca_subjects(step, analysis_spec, timed, layout, workload.source, None,  # type: ignore[arg-type]
                                      context, plan.memory_budget, [None])  # type: ignore[list-item]
    else:
        groups = {g.label: g for g in workload.groups()}
        subjects, work = matrix_subjects(step, timed, groups, workload.source, None, context,  # type: ignore[arg-type]
                                         [None] * len(timed.allocations))  # type: ignore[list-item]
    subject = next(s for s in subjects if s.group == group)
    a = subject.allocation
    target = work.build()
    target.warm()
    # the calls the rounds rotate through: each position in turn, or the sample `matrices` at a time
    visits = work.visited if isinstance(work, PcaWork) else math.ceil(len(work.groups[subject.part][0]) / a.matrices)
    calls = itertools.cycle([target.prepare(subject.part, r) for r in range(visits)])
    for _ in range(max(a.warmup, 1)):
        next(calls)()
    timer = tb.Timer(stmt="next(calls)()", globals={"calls": calls}, num_threads=plan.bench.threads)
    with threadpool_limits(limits=plan.bench.threads):  # Timer sets torch's threads; BLAS's are set here
        m = timer.blocked_autorange(min_run_time=MIN_RUN_S)
    target.close()
    return {"per_matrix_s": m.median / a.matrices, "threads": plan.bench.threads, "calls": len(m.times) * m.number_per_run}


def outside(folder: Path, analysis: str, label: str, group: str) -> float:
    """measure_one in a fresh interpreter, the user's environment as it is."""
    code = ("import json, sys; from benchmarks.outside_timer import measure_one; "
            "print(json.dumps(measure_one(*sys.argv[1:])))")
    proc = subprocess.run([sys.executable, "-c", code, str(folder), analysis, label, group], capture_output=True,
                          text=True, timeout=900, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if proc.returncode != 0:
        raise SystemExit(f"outside timer of {analysis}/{label} on {group} failed:\n{proc.stderr[-2000:]}")
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["per_matrix_s"])


def compare_run(folder: Path) -> list[dict[str, Any]]:
    """One row per (analysis, strategy, group) the run timed this run."""
    from harness.record.run_record import load_record

    record = load_record(folder)
    rows = []
    for a in record.analyses:
        base = next((t for t in a.timings if t.role == "baseline"), None)
        totals: dict[str, float] = {}
        for t in a.timings:
            for g in t.groups:
                if not g.rounds:
                    continue
                out = outside(folder, a.name, t.label, g.group)
                totals[t.label] = totals.get(t.label, 0.0) + out * g.total
                rows.append({"analysis": a.name, "strategy": t.label, "group": g.group, "shape": g.group,
                             "harness_ms": 1e3 * g.seconds_per_matrix, "outside_ms": 1e3 * out,
                             "ratio": g.seconds_per_matrix / out, "harness_speedup": t.speedup,
                             "interval": t.speedup_ci})
        for row in rows:
            if row["analysis"] == a.name and base is not None and row["strategy"] in totals:
                row["outside_speedup"] = totals[base.label] / totals[row["strategy"]]
    return rows


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| analysis | strategy | shape | harness ms | outside ms | ratio | speedup: harness (95%) | outside |",
             "| --- | --- | --- | ---: | ---: | ---: | --- | ---: |"]
    for r in rows:
        mark = "" if abs(r["ratio"] - 1) <= AGREE else " **!**"
        ci = f" ({r['interval'][0]:.3g}-{r['interval'][1]:.3g})" if r.get("interval") else ""
        hs = f"{r['harness_speedup']:.3g}x{ci}" if r.get("harness_speedup") else "-"
        os_ = f"{r['outside_speedup']:.3g}x" if r.get("outside_speedup") else "-"
        lines.append(f"| {r['analysis']} | {r['strategy']} | {r['shape']} | {r['harness_ms']:.3g} | "
                     f"{r['outside_ms']:.3g} | {r['ratio']:.2f}{mark} | {hs} | {os_} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", type=Path, default=SPECS)
    parser.add_argument("--budget", default="20s")
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    found: dict[str, list[dict[str, Any]]] = {}
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.specs:
            before = loadavg()
            folder = Path(tmp) / spec.stem
            run_harness(spec, folder, args.budget, args.overrides)
            rows = compare_run(folder)
            found[str(spec)] = rows
            print(f"\n{spec.name} (load average {before} before, {loadavg()} after)")
            print("\n".join(table(rows)))
            worst = max([worst, *(abs(r["ratio"] - 1) for r in rows)])
    if args.json:
        args.json.write_text(json.dumps(found, indent=2))
    print(f"\nworst disagreement: {100 * worst:.0f}% (target: within {100 * AGREE:.0f}%)")
    return 0 if worst <= AGREE else 1


if __name__ == "__main__":
    raise SystemExit(main())
