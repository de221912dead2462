"""The speedups the harness exists to measure, tracked per commit and machine: every compared
strategy of each analysis of the tracked specs over its baseline, as `harness run --fresh
--no-cache` measures it (each strategy in its own worker process, paired rounds, the run as the
unit of the interval). The main job at its own shapes (3072 x 768 rank-16 LoRA deltas) with fewer
adapters and layers, and the dense 256 x 256 case of configs/bench_dense.toml.

asv reads a rising value as worse, so the primary series is `track_time_ratio`: the strategy's
time over its baseline's, 1 / speedup (`harness history` draws it back as a speedup). asv keeps one
value per benchmark, so the speedup's 95% interval is a companion series, `track_interval`: the
factor f of [speedup / f, speedup * f] (log-symmetric: a t interval on the log ratios), and
`track_busy` the share of its rounds timed while the machine was busy; `track_untimed` why a run did
not time it (a code: asv keeps numbers only, and its log says only n/a) and `track_load` the run's load. Each analysis' baseline is a
point too: its speedup over itself is exactly 1 (interval x1), the reference line of its chart.
Secondary series: `track_seconds` (median seconds per matrix), `track_roof_gap` (the machine's
measured roof at the kernel's intensity over what it achieved: 1 / the roof share) and
`track_error` (verification's error against float64).

A class per spec (MainJob, Dense), each running its spec once per `asv run`, in setup_cache,
`--fresh --no-cache` with a wisdom of its own (HARNESS_WISDOM in a temporary folder): nothing
carries from one run, or commit, to the next. A strategy
a run did not time (skipped on a busy machine, or unable to run here) is a NaN: failed in asv,
"inconclusive" to `python -m benchmarks.continuous`.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from collections.abc import Callable

    from harness.record.run_record import AnalysisRecord, RunRecord

ROOT = Path(__file__).resolve().parents[1]
# experiment -> (spec, --set overrides, [benchmark] budget): the main job at its own shapes with 4
# adapters of 4 layers (32 deltas), factored_gram compared by name (the spec leaves it to `auto`),
# and the dense case. The floor (two rounds of every strategy) is timed whatever the budget; more
# rounds leave more quiet ones when the machine is busy now and then (busy rounds are then dropped).
TRACKED: dict[str, tuple[Path, list[str], str]] = {
    "task_geometry": (ROOT / "configs" / "task_geometry.toml",
                      ["data.adapters=4", "data.layers=4", "analysis[2].components=3",
                       'analysis[2].compare=["dual_gram", "factored_gram"]'], "8s"),
    "bench_dense": (ROOT / "configs" / "bench_dense.toml", [], "5s"),
}
RUN_TIMEOUT = 600
EXIT_OK, EXIT_VERIFICATION_FAILED = 0, 3  # harness.cli.exit_codes: a failed check still records its timings

Point = dict[str, float]  # speedup, interval, busy, seconds, roof_gap, error, untimed, load (NaN: not measured)


def timed_points(path: Path, sets: list[str]) -> list[str]:
    """`analysis/strategy` of every point a run of the spec times, the baseline first in each
    analysis, from the spec as the planner reads it."""
    from harness.plan.variants import points as variants
    from harness.specs.reading import load_spec
    from harness.strategies.registry import BASELINES

    spec = load_spec(path, sets)
    return [f"{analysis.label}/{v.strategy}{v.variant}" for analysis in spec.analysis
            for strategy in dict.fromkeys([analysis.baseline or BASELINES[analysis.op], *analysis.compare])
            for v in variants(strategy, analysis, spec)]


def points(experiment: str) -> list[str]:
    """asv parameters: `experiment:analysis/strategy` of every timed point of a tracked spec."""
    path, sets, _budget = TRACKED[experiment]
    return [f"{experiment}:{point}" for point in timed_points(path, sets)]


def run_spec(path: Path, sets: list[str], budget: str, folder: Path) -> Path:
    """`harness run` in a process of its own, as a user starts it (in `folder`, so that the harness
    imported is the installed one, or PYTHONPATH's), with a wisdom of its own in `folder`: a shared
    one made runs of the same code differ (a strategy it had seen fail its tolerance went untimed,
    the learned between-run spread of earlier runs, busy ones included, widened every interval);
    its run folder."""
    out = folder / "run"
    command = [sys.executable, "-m", "harness", "run", str(path), "--fresh", "--no-cache", "--budget", budget,
               "-o", str(out), *(f"--set={s}" for s in sets)]
    env = {**os.environ, "HARNESS_WISDOM": str(folder / "wisdom")}
    proc = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    if proc.returncode not in (EXIT_OK, EXIT_VERIFICATION_FAILED):
        raise RuntimeError(f"{' '.join(command)} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return out


def untimed(analysis: AnalysisRecord) -> dict[str, float]:
    """label -> why the run did not time it, a code of harness.report.regressions.CAUSES: asv keeps
    numbers only, and its log of the run says only n/a."""
    from harness.record.run_record import UNTIMED
    from harness.report.regressions import BUSY_CAUSE, ELSEWHERE_CAUSE, FAILED_CAUSE

    timed = {t.label for t in analysis.timings}
    return {**{v.strategy: FAILED_CAUSE for v in analysis.verification if v.reason and v.strategy not in timed},
            **{s.strategy: BUSY_CAUSE if s.reason == UNTIMED else ELSEWHERE_CAUSE for s in analysis.skipped}}


def peak_load(record: RunRecord) -> float:
    """The highest load average any measurement of the run saw (NaN: none recorded)."""
    loads = [x for a in record.analyses for t in a.timings for g in t.groups if (c := g.measurement.conditions)
             for x in (c.load_before, c.load_after) if x is not None]
    return max(loads, default=math.nan)


def measured(folder: Path, experiment: str) -> dict[str, Point]:
    """`experiment:analysis/label` -> what the run in `folder` measured of that point; a baseline's
    speedup over itself is exactly 1, its interval exactly x1; a point it did not time, why."""
    from harness.api import open_run
    from harness.report.labels import peak_share

    record = open_run(folder).record
    load = peak_load(record)
    found: dict[str, Point] = {f"{experiment}:{analysis.name}/{label}": {"untimed": cause, "load": load}
                               for analysis in record.analyses for label, cause in untimed(analysis).items()}
    for analysis in record.analyses:
        errors = {v.strategy: v.values_error for v in analysis.verification}
        for t in analysis.timings:
            share = peak_share(record, t)
            low, high = (1.0, 1.0) if t.role == "baseline" else t.speedup_ci or (math.nan, math.nan)
            found[f"{experiment}:{analysis.name}/{t.label}"] = {
                "speedup": t.speedup if t.speedup is not None else math.nan,
                "interval": math.sqrt(high / low) if low > 0 else math.nan,
                "busy": t.busy_rounds / t.rounds if t.rounds else math.nan,
                "seconds": t.seconds_per_matrix,
                "roof_gap": 1 / share if share else math.nan,
                "error": errors.get(t.label, math.nan),
                "untimed": 0.0,
                "load": load,
            }
    return found


def measure(experiment: str) -> dict[str, Point]:
    """The tracked spec run once, its points read from its record."""
    path, sets, budget = TRACKED[experiment]
    with tempfile.TemporaryDirectory(prefix="harness-asv-") as tmp:
        return measured(run_spec(path, sets, budget, Path(tmp)), experiment)


def _figure(cache: dict[str, Point], point: str, key: str) -> float:
    return cache.get(point, {}).get(key, math.nan)


def _series(key: str, unit: str, doc: str) -> Callable[[_Tracked, dict[str, Point], str], float]:
    """A track_* method reading one figure of a point from the cache (NaN where the run has none):
    asv finds a series by its method's name and shows its docstring and unit."""

    def track(self: _Tracked, cache: dict[str, Point], point: str) -> float:
        return _figure(cache, point, key)

    track.__doc__, track.unit = doc, unit  # type: ignore[attr-defined]
    return track


class _Tracked:
    """Each point's speedup over its baseline, what asv needs to judge it, and its raw figures.
    A subclass per tracked spec, each with its own setup_cache (asv keys a cache by where its
    function is written, so an inherited one would be shared)."""

    experiment: ClassVar[str]
    param_names = ["point"]
    timeout = 2 * RUN_TIMEOUT
    rounds = 1  # a track's value is read from the cache: asv's second round would read it again

    def track_time_ratio(self, cache: dict[str, Point], point: str) -> float:
        """The strategy's time over its baseline's (1 / speedup): rising is slower."""
        return 1 / _figure(cache, point, "speedup")

    track_time_ratio.unit = "x"  # type: ignore[attr-defined]

    track_interval = _series("interval", "x", "f of the speedup's 95% interval [s / f, s * f]: wider is worse.")
    track_busy = _series("busy", "share", "The share of the speedup's rounds timed while other processes held the CPUs.")
    track_seconds = _series("seconds", "seconds", "Median seconds per matrix: rises and falls with whatever else the machine runs.")
    track_roof_gap = _series("roof_gap", "x", "The machine's measured roof at the kernel's intensity over what it achieved.")
    track_error = _series("error", "relative error", "Verification's error against float64 (max relative to sigma_1): lower is better.")
    track_untimed = _series("untimed", "cause", "Why the run did not time it: 0 timed, else a code of harness.report.regressions.CAUSES.")
    track_load = _series("load", "load", "The highest load average the run saw: what a busy machine's skips are read with.")


class MainJob(_Tracked):
    """task_geometry at its own shapes, 32 deltas: what `python -m benchmarks.continuous` judges."""

    experiment = "task_geometry"
    params = points(experiment)

    def setup_cache(self) -> dict[str, Point]:
        return measure(self.experiment)


class Dense(_Tracked):
    """bench_dense: every op on dense 256 x 256 matrices, where the factored strategies do not apply."""

    experiment = "bench_dense"
    params = points(experiment)

    def setup_cache(self) -> dict[str, Point]:
        return measure(self.experiment)
