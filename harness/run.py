"""Executing a plan: the full analysis with the chosen strategy, then timing and verification of
every compared strategy on the same sample of matrices, recorded step by step."""

from __future__ import annotations

import time
from functools import partial
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from harness.cache import Keys, ResultCache, StepEntry, TimingEntry
from harness.data.layout import AdapterLayout
from harness.data.workload import MatrixRef, ShapeGroup, Source, Workload, chunks
from harness.axes_step import axes_backend, write_axes
from harness.chunk_task import ChunkOutcome, ChunkTask, GramTask, run_chunk, run_gram_task
from harness.executors import dask_executor, process_pool
from harness.feature_step import feature_rows
from harness.features import csv_rows, write_features_csv
from harness.pca_step import run_pca_step, save_pca
from harness.plan import Plan, Step
from harness.spec import PcaAnalysis
from harness.results import (
    SPECTRA,
    ChunkPlacement,
    FEATURES,
    AnalysisRecord,
    GroupTiming,
    RunRecord,
    StrategyTiming,
    analysis_record,
    apply_speedups,
    save_record,
    save_spectra,
)
from harness.strategies.base import ExecContext, OpRequest, OpResult, Strategy
from harness.strategies.numpy_lapack import stack_results
from harness.strategies.registry import STRATEGIES
from harness.timing import measure
from harness.verify import Verification, reference_values, verify


Item = tuple[str, str, ChunkTask]  # shape group label, cache key, the chunk's task
Task = ChunkTask | GramTask
MAX_ATTEMPTS = 3


def lost_worker_errors() -> tuple[type[BaseException], ...]:
    """What a future raises when its worker process died, for every executor we hand out
    (distributed is imported only by runs that fan out)."""
    try:
        from distributed import KilledWorker
    except ImportError:
        return (BrokenProcessPool,)
    return (BrokenProcessPool, KilledWorker)


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
        self.features: list[str] = []  # features.csv lines, one string per analysis
        self._saved_spectra = 0  # how many spectra the file on disk holds
        self.cache = cache
        self.keys = Keys(self.plan.dtype, seed, record.workload_fingerprint, record.machine)
        self._stack = ExitStack()
        self._pool: Executor | None = None

    def _executor(self) -> Executor:
        """The run's one executor, started on first use and closed with the run."""
        if self._pool is None:
            plan = self.plan
            if plan.executor == "dask":
                manager = dask_executor(plan.dask_address, plan.workers, plan.threads_per_worker)
                self._pool = self._stack.enter_context(manager)
            else:
                self._pool = self._stack.enter_context(process_pool(plan.workers, plan.threads_per_worker))
        return self._pool

    def _replace_broken_pool(self, broken: Executor) -> None:
        """A process pool whose worker died refuses all work; the next call starts a new one."""
        if self._pool is broken:
            broken.shutdown(wait=False, cancel_futures=True)
            self._pool = None

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
                self._save(final=True)
        return self.record

    def _save(self, final: bool = False) -> None:
        """Write the spectra when they grew, features.csv once at the end (a resumed run gets
        its rows back from the cache), then the record, which says how far the run got."""
        if len(self.spectra) != self._saved_spectra or not (self.folder / SPECTRA).exists():
            save_spectra(self.spectra, self.folder)
            self._saved_spectra = len(self.spectra)
        if final and self.features:
            write_features_csv(self.features, self.folder / FEATURES)
        save_record(self.record, self.folder)

    def _step(self, step: Step) -> AnalysisRecord:
        if step.op == "pca":
            return self._pca(step)
        op = OpRequest(step.op, step.k)
        strategy = STRATEGIES[step.strategy]
        groups = self.workload.groups()
        wall, cached, placements = self._full(step, op, strategy, groups)
        timings, checks = self._benchmark(step, op, groups)
        self._features(step)
        return analysis_record(
            step, len(self.workload), wall, timings, checks,
            cached_chunks=cached, computed_chunks=len(placements), placements=placements,
        )

    def _analysis_spec(self, step: Step) -> dict[str, object]:
        """The resolved `[[analysis]]` table of a step: every option belongs in its cache keys."""
        return next(a for a in self.record.spec["analysis"] if (a.get("name") or a["op"]) == step.analysis)

    def _features(self, step: Step) -> None:
        """features.csv rows of one analysis, from the cache when it holds them."""
        if not step.features:
            return
        key = self.keys.step(step, "features", analysis=self._analysis_spec(step))
        hit = self.cache.get_model(key, StepEntry) if self.cache is not None else None
        if hit is None:
            rows, notes = feature_rows(step, self.workload, self.spectra, self._context(step.device))
            hit = StepEntry(csv=csv_rows(rows), notes=notes)
            if self.cache is not None:
                self.cache.put_model(key, hit, f"{step.analysis}: features", kind="step")
        self.features.append(hit.csv)
        for note in hit.notes:
            self.console.print(f"[yellow]note:[/] {note}")

    def _pca(self, step: Step) -> AnalysisRecord:
        """A pca step, whole from the cache when this machine ran it before (it holds timings)."""
        start = time.perf_counter()
        key = self.keys.step(step, "pca", analysis=self._analysis_spec(step), warmup=self.warmup, repeats=self.repeats,
                             sample=self.plan.sample, budget=self.plan.memory_budget,
                             machine=self.record.machine.identity)
        analysis = PcaAnalysis.model_validate(self._analysis_spec(step))
        hit = self.cache.get_model(key, StepEntry) if self.cache is not None else None
        arrays = self.cache.get_arrays(key + "-arrays") if hit is not None and self.cache else None
        if hit is not None and hit.record is not None and arrays is not None:
            record = hit.record
            record.wall_s = time.perf_counter() - start  # reading the cache, as for other steps
            record.cached_chunks, record.computed_chunks = 1, 0
            for t in record.timings:
                t.cached = True
        else:
            grams, placements = self._fanned_grams(step)
            record, arrays = run_pca_step(step, analysis, self.plan, self.workload, self._context,
                                          grams, time.perf_counter() - start,
                                          warmup=self.warmup, repeats=self.repeats)
            record.placements, record.computed_chunks = placements, len(placements)
            if self.cache is not None:
                self.cache.put_arrays(key + "-arrays", arrays, f"{step.analysis}: pca arrays")
                self.cache.put_model(key, StepEntry(record=record), f"{step.analysis}: pca", kind="step")
        if analysis.axes:  # never cached: as large as `components` adapters
            record.axes, check, index = write_axes(
                step.analysis, analysis, arrays, self.workload, self.folder, dtype=self.dtype,
                backend=axes_backend(self._context(step.device).backend), memory_budget=self.plan.memory_budget,
                tolerance=step.tolerance, console=self.console,
            )
            record.verification.append(check)
            arrays = {**arrays, **index}
        save_pca(arrays, self.folder)
        return record

    def _full(
        self, step: Step, op: OpRequest, strategy: Strategy, groups: list[ShapeGroup]
    ) -> tuple[float, int, list[ChunkPlacement]]:
        """The analysis itself over every matrix, chunked to the planned batch sizes: cached
        chunks first, the rest computed here or on the executor's workers, each cached as it
        completes. Returns the wall time, the chunks from the cache and where the rest ran."""
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
        )
        start = time.perf_counter()
        cached = 0
        placements: list[ChunkPlacement] = []
        with Progress(*columns, console=self.console, transient=True) as progress:
            task = progress.add_task(f"{step.analysis} [{step.strategy}]", total=len(self.workload))
            todo: list[Item] = []
            for group in groups:
                for chunk in chunks(group.refs, step.batch_sizes[group.label]):
                    key = self.keys.chunk(step, [ref.id for ref in chunk])
                    hit = self.cache.get_arrays(key) if self.cache is not None else None
                    if hit is not None and "S" in hit and len(hit["S"]) == len(chunk):
                        self._store(step, chunk, hit["S"])
                        cached += 1
                        progress.advance(task, len(chunk))
                    else:
                        todo.append((group.label, key, self._task(step, op, chunk)))
            for i, outcome, attempts in self._outcomes([t for _, _, t in todo], run_chunk):
                label, key, chunk_task = todo[i]
                self._store(step, chunk_task.refs, outcome.result)
                if self.cache is not None:
                    what = f"{step.analysis}: {step.op} by {step.strategy}, {len(chunk_task.refs)} from {chunk_task.refs[0].id}"
                    self.cache.put_arrays(key, {"S": outcome.result}, what)
                placements.append(ChunkPlacement(
                    group=label, first=chunk_task.refs[0].id, count=len(chunk_task.refs),
                    worker=outcome.worker, started=outcome.started, seconds=outcome.seconds,
                    attempts=attempts,
                ))
                progress.advance(task, len(chunk_task.refs))
        return time.perf_counter() - start, cached, placements

    def _task(self, step: Step, op: OpRequest, chunk: Sequence[MatrixRef]) -> ChunkTask:
        return ChunkTask(
            source=self.workload.source, refs=tuple(chunk), strategy=step.strategy, op=op,
            dtype=self.plan.dtype, device=step.device, seed=self.seed, threads=self._threads(),
        )

    def _threads(self) -> int | None:
        """BLAS threads for a task: as they are in this process, or the workers' setting."""
        return None if self.plan.executor == "local" else self.plan.threads_per_worker

    def _store(self, step: Step, refs: Sequence[MatrixRef], S: np.ndarray) -> None:
        for ref, values in zip(refs, S):
            self.spectra[f"{step.analysis}:{ref.id}"] = values

    def _outcomes(
        self, tasks: Sequence[Task], run_task: Callable[..., ChunkOutcome]
    ) -> Iterator[tuple[int, ChunkOutcome, int]]:
        """(index, outcome, attempts) of each task, in order of completion.

        `local` runs them here, in order; otherwise they go to the executor, and a task lost with
        its worker (a killed process) is submitted again, up to MAX_ATTEMPTS times.
        """
        if self.plan.executor == "local":
            for i, task in enumerate(tasks):
                yield i, run_task(task, self._executor), 1
            return
        attempts = dict.fromkeys(range(len(tasks)), 1)
        lost = lost_worker_errors()
        pending: dict[Future[ChunkOutcome], tuple[int, Executor]] = {}

        def submit(i: int) -> None:
            executor = self._executor()
            pending[executor.submit(run_task, tasks[i])] = (i, executor)

        for i in range(len(tasks)):
            submit(i)
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                i, executor = pending.pop(future)
                try:
                    outcome = future.result()
                except lost as exc:
                    if attempts[i] >= MAX_ATTEMPTS:
                        raise RuntimeError(f"a task was lost with its worker {attempts[i]} times: "
                                           f"{exc}") from exc
                    attempts[i] += 1
                    if isinstance(exc, BrokenProcessPool):
                        self._replace_broken_pool(executor)
                    submit(i)
                    continue
                yield i, outcome, attempts[i]

    def _fanned_grams(self, step: Step) -> tuple[np.ndarray, list[ChunkPlacement]]:
        """The chosen strategy's Grams of every position, split into position ranges over the
        executor's workers (or computed here for `local`), in position order."""
        layout = AdapterLayout.from_workload(self.workload)
        parts = 1 if self.plan.executor == "local" else min(len(layout.positions), 2 * self.plan.workers)
        bounds = np.linspace(0, len(layout.positions), parts + 1).round().astype(int)
        tasks = [
            GramTask(
                source=self.workload.source,
                layout=replace(layout, positions=layout.positions[a:b]),
                strategy=step.strategy, dtype=self.plan.dtype, device=step.device, seed=self.seed,
                threads=self._threads(), memory_budget=self.plan.memory_budget,
            )
            for a, b in zip(bounds[:-1], bounds[1:])
        ]
        results: dict[int, np.ndarray] = {}
        placements = []
        for i, outcome, attempts in self._outcomes(tasks, run_gram_task):
            results[i] = outcome.result
            first = tasks[i].layout.positions[0]
            placements.append(ChunkPlacement(
                group="positions", first=first.label, count=len(tasks[i].layout.positions),
                worker=outcome.worker, started=outcome.started, seconds=outcome.seconds,
                attempts=attempts,
            ))
        return np.concatenate([results[i] for i in range(len(tasks))]), placements

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
                    partial(compute_batches, strategy, op, batches, ctx),
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
        apply_speedups(timings)
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
