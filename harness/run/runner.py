"""Executing a plan: per analysis, the full analysis with the chosen strategy, then the
benchmark phase (harness.bench) and the features, recorded step by step. The runner only
orchestrates: what a phase does lives in its own module."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from harness.machine import wisdom
from harness.compute.axes import AXES_FILE, axes_backend, write_axes
from harness.run.context import exec_context, run_executor, timing_executor, warm_chosen
from harness.run.dask_session import DaskSession
from harness.run.fanout import Outcomes, in_order, on_cluster, on_pool, spread_line
from harness.run.cached import cached_steps
from harness.run.clock import BenchClockLabel
from harness.run.phase import BenchPhase
from harness.run.interrupted import Interrupted
from harness.run.rounds import failure_reason
from harness.bench.threads import pinned
from harness.machine.roofline import roof_device
from harness.store.keys import Keys, entry_label
from harness.store.cache import ResultCache
from harness.store.entries import StepEntry
from harness.compute.chunks import ChunkOutcome, ChunkTask, GramTask, run_chunk, run_chunks_ahead, run_gram_task
from harness.data.layout import AdapterLayout
from harness.data.memo import MemoSource
from harness.data.workload import DataError, MatrixRef, Workload, chunks
from harness.record.exports import TIMINGS, VERIFICATION, write_exports
from harness.compute.feature_rows import feature_rows
from harness.linalg.features import SUBSPACE_FEATURES
from harness.record.features_csv import csv_rows, write_features_csv
from harness.compute.pca import PCA_FILE, pca_results, save_pca
from harness.plan.model import PlanError, Step
from harness.base.eta import planned
from harness.base.progress import Display, Phase, Phrases
from harness.record.run_record import FEATURES, RECORD, SPECTRA, AnalysisRecord, ChunkPlacement, RunRecord, analysis_record, save_record, save_spectra
from harness.specs.sections import PcaAnalysis
from harness.strategies.base import ExecContext, OpRequest
from harness.strategies.registry import APPROXIMATE, STRATEGIES
from harness.record.verdict import conclude
from harness.machine.measurements import Measurements
from harness.base.units import now, plural
from harness.run.output import writing
from harness.run.variants import step_dtype

Item = tuple[str, str, ChunkTask]  # shape group label, cache key, the chunk's task
Task = ChunkTask | GramTask
MEMO_SHARE = 4  # the factor memo may hold a quarter of the memory available at the start


class Runner:
    def __init__(
        self,
        record: RunRecord,
        workload: Workload,
        folder: Path,
        *,
        seed: int,
        display: Display,
        cache: ResultCache | None = None,
        wisdom_folder: Path | None = None,
        pool: Measurements | None = None,
        fresh: bool = False,
        kept: dict[str, AnalysisRecord] | None = None,
        interrupted: Interrupted | None = None,
        say_taught: bool = True,
    ) -> None:
        self.record = record
        self.plan = record.plan
        limit = min(self.plan.memory_budget, record.machine.memory_available // MEMO_SHARE)
        self.memo = MemoSource(workload.source, limit, np.dtype(self.plan.dtype))
        self.workload = Workload(source=self.memo, refs=workload.refs)
        # the last step whose own results come from factors: after it, the memo goes, before
        # its benchmark forms dense deltas
        factored = [i for i, s in enumerate(self.plan.steps) if STRATEGIES[s.strategy].needs_factors]
        self._last_factored = factored[-1] if factored else -1
        self.folder = folder
        self.seed = seed
        self.display = display
        self.spectra: dict[str, np.ndarray] = {}
        self.bases: dict[str, np.ndarray] = {}  # top-k U by matrix id, for subspace features
        self.features: list[str] = []  # features.csv lines, one string per analysis
        self._saved_spectra = 0  # how many spectra the file on disk holds
        self.cache = cache
        self.keys = Keys(self.plan.dtype, seed, record.workload_fingerprint, record.machine)
        self._executor = run_executor(self.plan, display)  # where full analyses fan out
        self._local = timing_executor(self.plan, self._executor, display)  # what this process fans out over
        self.bench = BenchPhase(self.plan, self.workload, seed, display, record.machine.cores, cache, self.keys,
                                source=record.experiment, pool=pool, fresh=fresh, kept=kept or {},
                                interrupted=interrupted, folder=folder)
        self.wisdom_folder = wisdom_folder
        self.say_taught = say_taught  # a sweep says what its points taught once, for them all
        self.learned: list[wisdom.Observation] = []  # what this run added to the machine's wisdom

    def _context(self, device: str) -> ExecContext:
        """What a strategy computes with in this process: the benchmark phase's timings and the
        features, never through a cluster (run.context.timing_executor)."""
        return exec_context(self.plan, device, self.seed, self._local)

    def run(self) -> RunRecord:
        """Run every step, this process's work on the plan's threads (its workers have their
        own); on any exit the record on disk says how far it got."""
        with self._executor, self._local, self.bench.workers:  # every timing worker ended on any exit
            try:
                self._save()  # from the start, the folder says the run is not complete
                assert self.plan.bench is not None
                if isinstance(self._executor, DaskSession):
                    self.record.cluster = self._executor().info
                warm_chosen(self.plan.steps, self._executor, self.workload.source, self.display)
                self.bench.imported()  # the timing workers' imports, beside the chosen strategies' and before any analysis
                cached = cached_steps(self.plan.steps, self.workload, self.cache, self.keys, self._analysis_spec,
                                      self.plan.memory_budget)
                units, estimate_s = self.bench.work_left(cached)
                with pinned(self.plan.bench.threads), self.display.phase(
                        self.record.experiment, len(self.plan.steps), estimate_s=estimate_s, units_s=units) as run:
                    for i, step in enumerate(self.plan.steps):
                        units, estimate_s = self.bench.work_left(cached)  # its workers' one-off work as this run's took
                        run.replan(estimate_s, units)
                        run.item(BenchClockLabel(step.analysis, self.bench.budget, self.bench.here.limit_s,
                                                 self.bench.here.limit))  # 1/3: the count
                        unit_s = units[i] * estimate_s / sum(units) if sum(units) > 0 else 0.0
                        held = self.bench.held_of(step, unit_s)
                        run.within(planned(unit_s), counted=self.bench.share_of(step), held=held,
                                   stalled=held.stalled)  # bar and ETA: within it
                        analysis = self._step(step, last_factored=i == self._last_factored)
                        if analysis.placements and self.plan.executor != "local":
                            self.display.note(spread_line(analysis.name, analysis.placements))
                        conclude(analysis, APPROXIMATE)
                        self.record.analyses.append(analysis)
                        self.record.bench = self.bench.record()
                        self._save()
                        run.advance()
                    run.summary = plural(len(self.plan.steps), "analysis", "analyses")  # walk 23: `(1 analyses)`
                self.record.complete = True
            finally:
                if isinstance(self._executor, DaskSession):
                    self.record.lost_workers = self._executor.lost
                self.record.finished = now()
                self.record.bench = self.bench.record()
                with self.display.phase("writing results") as phase:  # first: a wisdom lock held elsewhere waits
                    phase.item(str(self.folder))
                    self._save(final=True)
                self._teach()
        return self.record

    def _teach(self) -> None:
        """Add what the benchmark measured to the machine's wisdom; a run whose cache folder is
        read-only, or whose wisdom lock stays held elsewhere (base.locks), says so and ends."""
        if self.wisdom_folder is None:  # the choice check's "the next plan learns" is then untrue: said
            if any(a.choice_check for a in self.record.analyses):
                self.display.note(f"wisdom is off (${wisdom.ENV}=off): the next plan does not learn from these rounds")
            return
        try:
            wisdom.learn(self.wisdom_folder, self.record.machine, self.bench.observations, errors=self.bench.errors,
                         picks=[s.pick for s in self.plan.steps if s.pick is not None])
            self.bench.keep_rounds(self.wisdom_folder, self.record.machine)
        except OSError as exc:
            self.display.note(f"wisdom not updated: {exc}")
            return
        self.learned = list(self.bench.observations)
        if self.say_taught and (line := wisdom.taught(self.learned)) is not None:
            self.display.plain(line)

    def _save(self, final: bool = False) -> None:
        """Write the record, which says how far the run got; the spectra at the end, or after
        each step when there is no cache to get them back from after a kill (thousands of small
        arrays: ~0.4 s a write); features.csv at the end (a resumed run gets its rows back from
        the cache), and the tidy timings.csv and verification.csv of what finished."""
        wanted = final or self.cache is None or not (self.folder / SPECTRA).exists()
        if wanted and (len(self.spectra) != self._saved_spectra or not (self.folder / SPECTRA).exists()):
            with writing(self.folder, SPECTRA):
                save_spectra(self.spectra, self.folder)
            self._saved_spectra = len(self.spectra)
        if final and self.features:
            with writing(self.folder, FEATURES):
                write_features_csv(self.features, self.folder / FEATURES)
        if final:
            with writing(self.folder, f"{TIMINGS} and {VERIFICATION}"):
                write_exports(self.record, self.folder)
        with writing(self.folder, RECORD):
            save_record(self.record, self.folder)

    def _step(self, step: Step, last_factored: bool) -> AnalysisRecord:
        if step.op == "pca":
            return self._pca(step, last_factored)
        wall, cached, placements = self._full(step, OpRequest(step.op, step.k))
        self._features(step)
        if last_factored:
            self.memo.release()
        start = time.perf_counter()
        timings, checks = self.bench.time_step(step)
        bench_s = time.perf_counter() - start
        record = analysis_record(
            step, len(self.workload), wall, timings, checks, bench_s=bench_s,
            cached_chunks=cached, computed_chunks=len(placements), placements=placements,
        )
        record.skipped += self.bench.untimed.pop(step.analysis, [])
        return record

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
            with self.display.phase(f"{step.analysis}: features") as phase:
                phase.item(Phrases(tuple(step.features), ", ", counted=True))
                rows, notes = feature_rows(step, self.workload, self.spectra, self._context(step.device),
                                           self.bases)
                hit = StepEntry(csv=csv_rows(rows), notes=notes)
                phase.advance(len(rows))
            if self.cache is not None:
                self.cache.put_model(key, hit, f"{step.analysis}: features", kind="step")
        self.bases.clear()  # used: the next analysis keeps its own
        self.features.append(hit.csv)
        for note in hit.notes:
            self.display.note(f"[yellow]note:[/] {note}")

    def _pca(self, step: Step, last_factored: bool) -> AnalysisRecord:
        """A pca step: its PCA from the cache when this workload's Grams were computed before,
        then the benchmark phase and, when asked, the principal axes."""
        start = time.perf_counter()
        analysis = PcaAnalysis.model_validate(self._analysis_spec(step))
        layout = AdapterLayout.from_workload(self.workload)
        key = self.keys.step(step, "pca", analysis=self._analysis_spec(step), budget=self.plan.memory_budget)
        hit = self.cache.get_model(key, StepEntry) if self.cache is not None else None
        arrays = self.cache.get_arrays(self.keys.arrays(key)) if hit is not None and self.cache else None
        if hit is not None and hit.record is not None and arrays is not None:
            record = hit.record
            record.wall_s = time.perf_counter() - start  # reading the cache, as for other steps
            record.cached_chunks, record.computed_chunks = 1, 0
        else:
            grams, placements = self._fanned_grams(step)
            ratios, arrays = pca_results(step.analysis, analysis, layout, grams)
            record = analysis_record(step, len(self.workload), time.perf_counter() - start, [], [],
                                     explained_variance_ratio=ratios, placements=placements,
                                     computed_chunks=len(placements))
            if self.cache is not None:
                self.cache.put_arrays(self.keys.arrays(key), arrays, f"{step.analysis}: pca arrays", kind="step")
                self.cache.put_model(key, StepEntry(record=record), f"{step.analysis}: pca", kind="step")
        if last_factored:
            self.memo.release()
        bench_start = time.perf_counter()
        record.timings, record.verification = self.bench.time_pca(step, analysis)
        record.bench_s = time.perf_counter() - bench_start
        record.skipped += self.bench.untimed.pop(step.analysis, [])
        if analysis.axes:  # never cached: as large as `components` adapters
            with writing(self.folder, AXES_FILE.format(name=step.analysis)):
                record.axes, check, index = write_axes(
                    step.analysis, analysis, arrays, self.workload, self.folder, dtype=np.dtype(self.plan.dtype),
                    backend=axes_backend(self._context(step.device).backend),
                    memory_budget=self.plan.memory_budget, tolerance=step.tolerance, display=self.display,
                )
            record.verification.append(check)
            arrays = {**arrays, **index}
        with writing(self.folder, PCA_FILE):
            save_pca(arrays, self.folder)
        return record

    def _full(self, step: Step, op: OpRequest) -> tuple[float, int, list[ChunkPlacement]]:
        """The analysis itself over every matrix, chunked to the planned batch sizes: cached
        chunks first, the rest computed here or on the executor's workers, each cached as it
        completes. Returns the wall time, the chunks from the cache and where the rest ran."""
        start = time.perf_counter()
        cached = 0
        placements: list[ChunkPlacement] = []
        # `svd_topk by gram_eigh`, not `svd_topk: svd_topk by gram_e…`, cut at 100 columns (walk 10)
        what = step.analysis if step.analysis == step.op else f"{step.analysis}: {step.op}"
        with self.display.phase(f"{what} by {step.strategy}{on_device(step.device)}", len(self.workload)) as phase:
            todo: list[Item] = []
            for group in self.workload.groups():
                for chunk in chunks(group.refs, step.batch_sizes[group.label]):
                    key = self.keys.chunk(step, [ref.id for ref in chunk])
                    hit = self.cache.get_arrays(key) if self.cache is not None else None
                    if hit is not None and "S" in hit and len(hit["S"]) == len(chunk):
                        self._store(step, chunk, hit["S"], hit.get("U"))
                        cached += 1
                        phase.advance(len(chunk))
                    else:
                        todo.append((group.label, key, self._task(step, op, chunk)))
            ahead = run_chunks_ahead if step.reads_ahead else None
            for i, outcome, attempts in self._chosen(
                    step, self._outcomes(step, [t for _, _, t in todo], run_chunk, phase, ahead)):
                label, key, chunk_task = todo[i]
                self._store(step, chunk_task.refs, outcome.result, outcome.vectors)
                if self.cache is not None:
                    what = f"{step.analysis}: {entry_label(step.op, step.strategy, [r.id for r in chunk_task.refs])}"
                    kept = {"U": outcome.vectors} if outcome.vectors is not None else {}
                    self.cache.put_arrays(key, {"S": outcome.result, **kept}, what)
                placements.append(ChunkPlacement(
                    group=label, first=chunk_task.refs[0].id, count=len(chunk_task.refs),
                    worker=outcome.worker, started=outcome.started, seconds=outcome.seconds,
                    attempts=attempts,
                ))
                phase.advance(len(chunk_task.refs))
        return time.perf_counter() - start, cached, placements

    def _chosen(self, step: Step, outcomes: Outcomes) -> Outcomes:
        """The chosen strategy's outcomes; its failure ends the run as a PlanError (one line, exit
        2): the analysis has no results and later ones never run, so there is no verdict to give
        (exit 3), and the remedy is the user's: another strategy for this analysis. The record on
        disk stays marked incomplete (Runner.run saves it on the way out)."""
        try:
            yield from outcomes
        except (MemoryError, DataError, PlanError):
            raise  # the machine's or the cluster's trouble, or a bad input file (each has its own line)
        except Exception as exc:
            raise PlanError([f"{step.analysis}: the chosen strategy {step.strategy} failed: {failure_reason(exc)}; "
                             f"choose another (analysis.strategy); {self.folder} holds a record marked "
                             "incomplete"]) from exc

    def _task(self, step: Step, op: OpRequest, chunk: Sequence[MatrixRef]) -> ChunkTask:
        """Top-k bases come back too when subspace features will compare them (m x k each)."""
        keep = step.op == "svd_topk" and any(f in SUBSPACE_FEATURES for f in step.features)
        return ChunkTask(
            source=self.workload.source, refs=tuple(chunk), strategy=step.strategy, op=op,
            dtype=step_dtype(step, self.plan), device=step.device, seed=self.seed, threads=self._threads(),
            keep_vectors=keep, precision=step.precision,
        )

    def _threads(self) -> int | None:
        """BLAS threads for a task: as they are in this process, or the workers' setting."""
        return None if self.plan.executor == "local" else self.plan.threads_per_worker

    def _store(self, step: Step, refs: Sequence[MatrixRef], S: np.ndarray, U: np.ndarray | None = None) -> None:
        for ref, values in zip(refs, S):
            self.spectra[f"{step.analysis}:{ref.id}"] = values
        if U is not None:
            self.bases.update((ref.id, u) for ref, u in zip(refs, U))

    def _outcomes(
        self, step: Step, tasks: Sequence[Task], run_task: Callable[..., ChunkOutcome], phase: Phase,
        ahead: Callable[..., Iterator[ChunkOutcome]] | None = None,
    ) -> Outcomes:
        """(index, outcome, attempts) of each task, in order of completion (harness.run.fanout)."""
        if isinstance(self._executor, DaskSession):
            return on_cluster(tasks, run_task, phase, self._executor, step.analysis, step.device)
        if self.plan.executor == "local":
            return in_order(tasks, run_task, phase, self._executor, ahead)
        return on_pool(tasks, run_task, phase, self._executor, self.plan.workers)

    def _fanned_grams(self, step: Step) -> tuple[np.ndarray, list[ChunkPlacement]]:
        """The chosen strategy's Grams of every position, split into position ranges over the
        executor's workers (or computed here for `local`), in position order."""
        layout = AdapterLayout.from_workload(self.workload)
        parts = step.tasks or 1
        bounds = np.linspace(0, len(layout.positions), parts + 1).round().astype(int)
        tasks = [
            GramTask(
                source=self.workload.source,
                layout=replace(layout, positions=layout.positions[a:b]),
                strategy=step.strategy, dtype=step_dtype(step, self.plan), device=step.device, seed=self.seed,
                threads=self._threads(), memory_budget=self.plan.memory_budget, precision=step.precision,
            )
            for a, b in zip(bounds[:-1], bounds[1:])
        ]
        results: dict[int, np.ndarray] = {}
        placements = []
        with self.display.phase(f"{step.analysis}: Grams by {step.strategy}{on_device(step.device)}",
                                len(layout.positions)) as phase:
            for i, outcome, attempts in self._chosen(step, self._outcomes(step, tasks, run_gram_task, phase)):
                results[i] = outcome.result
                first = tasks[i].layout.positions[0]
                placements.append(ChunkPlacement(
                    group="positions", first=first.label, count=len(tasks[i].layout.positions),
                    worker=outcome.worker, started=outcome.started, seconds=outcome.seconds,
                    attempts=attempts,
                ))
                phase.advance(len(tasks[i].layout.positions))
        return np.concatenate([results[i] for i in range(len(tasks))]), placements


def on_device(backend: str) -> str:
    """` on cuda` where a step runs on a GPU; nothing on the CPU, the default (numpy's arrays were
    shown as "on numpy", a library where a device belongs)."""
    device = roof_device(backend)
    return "" if device == "cpu" else f" on {device}"
