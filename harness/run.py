"""Executing a plan: the full analysis with the chosen strategy, then timing and verification of
every compared strategy on the same sample of matrices, recorded step by step."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Executor
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from harness.data.workload import MatrixRef, ShapeGroup, Workload, chunks
from harness.executors import process_pool
from harness.plan import Step
from harness.results import (
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
        self._stack = ExitStack()
        self._pool: Executor | None = None

    def _executor(self) -> Executor:
        if self._pool is None:
            self._pool = self._stack.enter_context(process_pool(self.plan.workers))
        return self._pool

    def _context(self, device: str) -> ExecContext:
        return ExecContext(
            dtype=self.dtype,
            backend=device,  # type: ignore[arg-type]
            workers=self.plan.workers,
            seed=self.seed,
            executor=self._executor,
        )

    def run(self) -> RunRecord:
        """Run every step; on any exit the record on disk says how far it got."""
        with self._stack:
            try:
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
        save_record(self.record, self.folder)

    def _step(self, step: Step) -> AnalysisRecord:
        op = OpRequest(step.op, step.k)
        strategy = STRATEGIES[step.strategy]
        groups = self.workload.groups()
        wall = self._full(step, op, strategy, groups)
        timings, checks = self._benchmark(step, op, groups)
        return AnalysisRecord(
            name=step.analysis,
            op=step.op,
            k=step.k,
            strategy=step.strategy,
            device=step.device,
            reason=step.reason,
            n_matrices=len(self.workload),
            wall_s=wall,
            timings=timings,
            verification=checks,
            skipped=[Skipped(strategy=c.strategy, reason=c.reason or "") for c in step.skipped],
        )

    def _full(
        self, step: Step, op: OpRequest, strategy: Strategy, groups: list[ShapeGroup]
    ) -> float:
        """The analysis itself over every matrix, chunked to the planned batch sizes."""
        ctx = self._context(step.device)
        source = self.workload.source
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
                    result = strategy.compute(op, strategy.load(source, chunk, self.dtype), ctx)
                    for ref, values in zip(chunk, result.S):
                        self.spectra[f"{step.analysis}:{ref.id}"] = values.astype(np.float64)
                    progress.advance(task, len(chunk))
        return time.perf_counter() - start

    def _benchmark(
        self, step: Step, op: OpRequest, groups: list[ShapeGroup]
    ) -> tuple[list[StrategyTiming], list[Verification]]:
        """Time and verify each compared strategy on the same sample of every group."""
        source = self.workload.source
        samples = {g.label: sample_refs(g, self.plan.sample) for g in groups}
        refs64 = {label: source.load_dense(refs, np.dtype(np.float64)) for label, refs in samples.items()}
        S_ref = {label: reference_values(W) for label, W in refs64.items()}
        timings: list[StrategyTiming] = []
        checks: list[Verification] = []
        for timed in step.timed:
            strategy = STRATEGIES[timed.strategy]
            ctx = self._context(timed.device)
            group_timings = []
            results: list[OpResult] = []
            for group in groups:
                refs = samples[group.label]
                batches = [
                    strategy.load(source, chunk, self.dtype)
                    for chunk in chunks(refs, timed.batch_sizes[group.label])
                ]
                measurement, result = measure(
                    lambda: stack_results([strategy.compute(op, b, ctx) for b in batches]),
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
