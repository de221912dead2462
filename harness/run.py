"""Executing a plan: the full analysis with the chosen strategy, then timing and verification of
every compared strategy on the same sample of matrices, recorded step by step."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from harness.cache import Keys, ResultCache, TimingEntry
from harness.data.workload import MatrixRef, ShapeGroup, Source, Workload, chunks
from harness.executors import process_pool
from harness.feature_step import feature_rows
from harness.features import FeatureRow, write_features_csv
from harness.pca_step import run_pca_step
from harness.plan import Plan, Step
from harness.results import (
    FEATURES,
    AnalysisRecord,
    GroupTiming,
    RunRecord,
    Skipped,
    StrategyTiming,
    save_record,
    save_spectra,
)
from harness.strategies.base import ExecContext, OpRequest, OpResult, Strategy
from harness.strategies.numpy_lapack import stack_results
from harness.strategies.registry import STRATEGIES
from harness.timing import measure
from harness.verify import Verification, reference_values, verify


def sample_refs(group: ShapeGroup, sample: int) -> tuple[MatrixRef, ...]:
    """`sample` matrices spread evenly over the group (all of them for 0)."""
    if sample == 0 or sample >= len(group):
        return group.refs
    picks = np.unique(np.linspace(0, len(group) - 1, sample).round().astype(int))
    return tuple(group.refs[i] for i in picks)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def exec_context(plan: Plan, device: str, seed: int, executor: Callable[[], Executor]) -> ExecContext:
    """What a strategy computes with on `device`; the runner and benchmarks/ build it alike."""
    return ExecContext(
        dtype=np.dtype(plan.dtype),
        backend=device,  # type: ignore[arg-type]
        workers=plan.workers,
        seed=seed,
        executor=executor,
    )


def load_batches(
    strategy: Strategy, source: Source, refs: Sequence[MatrixRef], batch_size: int, dtype: np.dtype
) -> list[Any]:
    """The strategy's inputs for `refs` in planned chunks; loading is never timed."""
    return [strategy.load(source, chunk, dtype) for chunk in chunks(refs, batch_size)]


def compute_batches(strategy: Strategy, op: OpRequest, batches: list[Any], ctx: ExecContext) -> OpResult:
    """The timed unit of work (here and in benchmarks/): every batch, results stacked."""
    return stack_results([strategy.compute(op, b, ctx) for b in batches])


class Runner:
    def __init__(
        self,
        record: RunRecord,
        workload: Workload,
        folder: Path,
        *,
        seed: int,
        warmup: int,
        repeats: int,
        console: Console | None = None,
        cache: ResultCache | None = None,
    ) -> None:
        self.record = record
        self.plan = record.plan
        self.workload = workload
        self.folder = folder
        self.seed = seed
        self.warmup = warmup
        self.repeats = repeats
        self.console = console or Console(stderr=True)
        self.dtype = np.dtype(self.plan.dtype)
        self.spectra: dict[str, np.ndarray] = {}
        self.features: list[FeatureRow] = []
        self.cache = cache
        self.keys = Keys(self.plan.dtype, seed, record.workload_fingerprint, record.machine)
        self._stack = ExitStack()
        self._pool: Executor | None = None

    def _executor(self) -> Executor:
        if self._pool is None:
            self._pool = self._stack.enter_context(process_pool(self.plan.workers))
        return self._pool

    def _context(self, device: str) -> ExecContext:
        return exec_context(self.plan, device, self.seed, self._executor)

    def run(self) -> RunRecord:
        """Run every step; on any exit the record on disk says how far it got."""
        with self._stack:
            try:
                self._save()  # from the start, the folder says the run is not complete
                for step in self.plan.steps:
                    self.record.analyses.append(self._step(step))
                    self._save()
                self.record.complete = True
            finally:
                self.record.finished = now()
                self._save()
        return self.record

    def _save(self) -> None:
        save_spectra(self.spectra, self.folder)
        if self.features:
            write_features_csv(self.features, self.folder / FEATURES)
        save_record(self.record, self.folder)

    def _step(self, step: Step) -> AnalysisRecord:
        if step.op == "pca":
            return run_pca_step(step, self.record, self.workload, self.folder, self._context,
                                warmup=self.warmup, repeats=self.repeats)
        op = OpRequest(step.op, step.k)
        strategy = STRATEGIES[step.strategy]
        groups = self.workload.groups()
        wall, cached, computed = self._full(step, op, strategy, groups)
        timings, checks = self._benchmark(step, op, groups)
        rows, notes = feature_rows(step, self.workload, self.spectra, self._context(step.device))
        self.features += rows
        for note in notes:
            self.console.print(f"[yellow]note:[/] {note}")
        return AnalysisRecord(
            name=step.analysis,
            op=step.op,
            k=step.k,
            strategy=step.strategy,
            device=step.device,
            reason=step.reason,
            n_matrices=len(self.workload),
            wall_s=wall,
            cached_chunks=cached,
            computed_chunks=computed,
            timings=timings,
            verification=checks,
            skipped=[Skipped(strategy=c.strategy, reason=c.reason or "") for c in step.skipped],
        )

    def _full(
        self, step: Step, op: OpRequest, strategy: Strategy, groups: list[ShapeGroup]
    ) -> tuple[float, int, int]:
        """The analysis itself over every matrix, chunked to the planned batch sizes; returns
        the wall time and how many chunks came from the cache and how many were computed."""
        ctx = self._context(step.device)
        counts = [0, 0]
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
        )
        start = time.perf_counter()
        with Progress(*columns, console=self.console, transient=True) as progress:
            task = progress.add_task(f"{step.analysis} [{step.strategy}]", total=len(self.workload))
            for group in groups:
                for chunk in chunks(group.refs, step.batch_sizes[group.label]):
                    S, cached = self._chunk(step, op, strategy, chunk, ctx)
                    counts[not cached] += 1
                    for ref, values in zip(chunk, S):
                        self.spectra[f"{step.analysis}:{ref.id}"] = values
                    progress.advance(task, len(chunk))
        return time.perf_counter() - start, counts[0], counts[1]

    def _chunk(
        self, step: Step, op: OpRequest, strategy: Strategy, chunk: Sequence[MatrixRef], ctx: ExecContext
    ) -> tuple[np.ndarray, bool]:
        """One chunk's singular values in float64, from the cache when it holds them."""
        key = self.keys.chunk(step, [ref.id for ref in chunk])
        hit = self.cache.get_arrays(key) if self.cache is not None else None
        if hit is not None and "S" in hit and len(hit["S"]) == len(chunk):
            return hit["S"], True
        data = strategy.load(self.workload.source, chunk, self.dtype)
        S = strategy.compute(op, data, ctx).S.astype(np.float64)
        if self.cache is not None:
            label = f"{step.analysis}: {step.op} by {step.strategy}, {len(chunk)} from {chunk[0].id}"
            self.cache.put_arrays(key, {"S": S}, label)
        return S, False

    def _benchmark(
        self, step: Step, op: OpRequest, groups: list[ShapeGroup]
    ) -> tuple[list[StrategyTiming], list[Verification]]:
        """Time and verify each compared strategy on the same sample of every group."""
        source = self.workload.source
        samples = {g.label: sample_refs(g, self.plan.sample) for g in groups}
        sample_ids = {label: [ref.id for ref in refs] for label, refs in samples.items()}
        refs64: dict[str, np.ndarray] = {}  # the float64 reference, loaded on the first miss
        S_ref: dict[str, np.ndarray] = {}
        timings: list[StrategyTiming] = []
        checks: list[Verification] = []
        for timed in step.timed:
            key = self.keys.timing(step, timed, sample_ids, warmup=self.warmup,
                                   repeats=self.repeats, workers=self.plan.workers)
            hit = self.cache.get_model(key, TimingEntry) if self.cache is not None else None
            if hit is not None:
                hit.timing.role, hit.timing.cached = timed.role, True
                timings.append(hit.timing)
                checks.append(hit.verification)
                continue
            if not refs64:
                refs64.update((label, source.load_dense(refs, np.dtype(np.float64))) for label, refs in samples.items())
                S_ref.update((label, reference_values(W)) for label, W in refs64.items())
            strategy = STRATEGIES[timed.strategy]
            ctx = self._context(timed.device)
            group_timings = []
            results: list[OpResult] = []
            for group in groups:
                refs = samples[group.label]
                batches = load_batches(strategy, source, refs, timed.batch_sizes[group.label], self.dtype)
                measurement, result = measure(
                    lambda: compute_batches(strategy, op, batches, ctx),
                    warmup=self.warmup,
                    repeats=self.repeats,
                    backend=ctx.backend,
                )
                group_timings.append(
                    GroupTiming(group=group.label, sampled=len(refs), total=len(group), measurement=measurement)
                )
                results.append(result)
            timings.append(_summarise(timed.strategy, timed.role, timed.device, group_timings))
            checks.append(_verify_groups(timed.strategy, results, groups, samples, refs64, S_ref, step.tolerance))
            if self.cache is not None:
                label = f"{step.analysis}: timing of {timed.strategy} on {timed.device}"
                self.cache.put_model(key, TimingEntry(timing=timings[-1], verification=checks[-1]), label)
        baseline = next((t for t in timings if t.role == "baseline"), None)
        for t in timings:
            if baseline is not None and t.estimate_total_s > 0:
                t.speedup = baseline.estimate_total_s / t.estimate_total_s
        return timings, checks


def _summarise(strategy: str, role: str, device: str, groups: Sequence[GroupTiming]) -> StrategyTiming:
    scale = [g.total / g.sampled for g in groups]
    return StrategyTiming(
        strategy=strategy,
        role=role,
        device=device,
        groups=list(groups),
        estimate_total_s=sum(g.measurement.median_s * s for g, s in zip(groups, scale)),
        iqr_total_s=sum(g.measurement.iqr_s * s for g, s in zip(groups, scale)),
        extrapolated=any(g.sampled < g.total for g in groups),
    )


def _verify_groups(
    strategy: str,
    results: list[OpResult],
    groups: list[ShapeGroup],
    samples: dict[str, tuple[MatrixRef, ...]],
    refs64: dict[str, np.ndarray],
    S_ref: dict[str, np.ndarray],
    tolerance: float,
) -> Verification:
    """One verdict over every group: the worst error of any sampled matrix."""
    per_group = [
        verify(strategy, result, refs64[g.label], S_ref[g.label], tolerance)
        for g, result in zip(groups, results)
    ]
    vectors = [v.vectors_error for v in per_group if v.vectors_error is not None]
    return Verification(
        strategy=strategy,
        n_checked=sum(len(samples[g.label]) for g in groups),
        tolerance=tolerance,
        values_error=max(v.values_error for v in per_group),
        vectors_error=max(vectors) if vectors else None,
        passed=all(v.passed for v in per_group),
    )
