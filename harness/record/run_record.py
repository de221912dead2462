"""The versioned RunRecord and the files of a run folder, always written atomically."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ValidationError, ValidationInfo, field_validator

from harness.base.atomic import write_atomic
from harness.base.bounded import TooLarge, read_capped
from harness.base.numbers import Count, NonNegative, Positive, Tally
from harness.machine.cluster import ClusterInfo, LostWorker
from harness.machine.info import MachineInfo
from harness.machine.stored import first_problem
from harness.plan.model import Plan, Step, Variant
from harness.bench.measure import Measurement
from harness.bench.noise import reasons_text
from harness.bench.series import Speedup, settlement
from harness.bench.statistics import quartiles
from harness.machine.roofline import Roof
from harness.record.folders import RECORD, no_record
from harness.record.verification import Verification

# 2: the benchmark's budget, cuts, threads, conditions and noise verdicts; 3: flops and bytes of
# every timing, the machine's roofs; 4: rounds, pooled across runs, and an interval on every speedup;
# 5: each point timed in its own process, rounds named by a unique run id and kept under load,
# intervals with the run as the unit, the user's environment
SCHEMA_VERSION = 5
READABLE_VERSIONS = (1, 2, 3, 4, 5)  # older records read with the newer fields at their defaults
PRODUCER = "spectral-harness"  # a record says who wrote it: --force replaces only a folder this harness's record marks
SPECTRA = "spectra.npz"
FEATURES = "features.csv"


class GroupTiming(BaseModel):
    """One strategy on one shape group. From schema 4 the measurement's samples are rounds: the
    seconds of one call (of `sampled` matrices) in each round, earlier runs' first."""

    group: str
    sampled: Count
    total: Count
    measurement: Measurement
    rounds: list[str] = []  # each sample's round id ("<run>.<process>#<analysis>#<n>"), in order
    pooled: Tally = 0  # the leading samples that earlier runs measured
    busy: list[str] = []  # the round ids measured while the machine was busy (kept, and flagged)
    timed: list[str] = []  # when each round was timed (ISO 8601; "" unknown): earlier runs' too
    spread: NonNegative | None = None  # between-run log sd of its seconds, as this machine's stored runs showed it
    calls: Tally = 0  # timed calls this run made (a fast call repeats within a round)
    # per matrix (op pca: per position): operations, and the least bytes moved (cost.Work)
    flops: NonNegative | None = None
    bytes: NonNegative | None = None

    @field_validator("rounds")
    @classmethod
    def _one_per_sample(cls, rounds: list[str], info: ValidationInfo) -> list[str]:
        """A round id per sample (none before schema 4): comparing runs pairs them by id."""
        m = info.data.get("measurement")
        if rounds and m is not None and len(rounds) != len(m.samples_s):
            raise ValueError(f"{len(rounds)} round ids for {len(m.samples_s)} samples; expected one per sample")
        return rounds

    @property
    def seconds_per_matrix(self) -> float:
        return self.measurement.median_s / self.sampled

    @property
    def gflops_per_s(self) -> float | None:
        return None if self.flops is None else self.flops / self.seconds_per_matrix / 1e9

    @property
    def gbytes_per_s(self) -> float | None:
        return None if self.bytes is None else self.bytes / self.seconds_per_matrix / 1e9

    @property
    def intensity(self) -> float | None:
        """Flops per byte moved: where the timing sits on the roofline's x axis."""
        return None if self.flops is None or not self.bytes else self.flops / self.bytes


class StrategyTiming(Variant):
    """A point (plan.model.Variant: strategy, precision, compilation, environment) as timed. Its precision
    is the arithmetic (float64, ..., bfloat16), not [benchmark] precision; "" in records before it."""

    role: str
    device: str
    groups: list[GroupTiming]
    estimate_total_s: Positive  # per-matrix medians scaled to every matrix of the workload
    iqr_total_s: NonNegative
    extrapolated: bool
    speedup: Positive | None = None  # baseline's workload total / this one's (geometric mean over rounds)
    speedup_ci: tuple[Positive, Positive] | None = None  # its 95% interval, from the rounds' paired ratios
    unresolved: bool = False  # the interval is wider than the target asked for (or missing)
    unresolved_reason: str | None = None
    rounds: Tally = 0  # rounds behind its speedup (paired with the baseline), or its own for a baseline
    rounds_pooled: Tally = 0  # of them, measured by earlier runs of the same code on this machine
    runs: Tally = 0  # the runs those rounds came from
    processes: Tally = 0  # the worker processes they came from: the replicates of its interval
    settled: bool = False  # bench.series.settlement: resolved, or only the machine's own spread left (said why)
    busy_rounds: Tally = 0  # of the rounds, measured while the machine was busy (used: quiet ones were too few)
    spread: NonNegative | None = None  # the between-run log sd its single-process interval was widened by
    pooled_since: str | None = None  # schema 4: the date of the earliest pooled round
    earlier_ci: tuple[Positive, Positive] | None = None  # the interval earlier runs' rounds gave alone, before this run's
    cached: bool = False  # every round came from earlier runs: nothing of it was timed by this run
    reused_from: str | None = None  # cached: when the newest of those rounds was timed (ISO 8601)
    resumed: bool = False  # taken over as it was from the stopped run this one resumed in its folder: not timed again
    resumed_rounds: Tally = 0  # of its rounds, those the stopped run this one resumed timed before it stopped
    cut: str | None = None  # the rounds the plan gave it, in words
    compile_s: NonNegative | None = None  # compiling it (with one call each time), never inside a timed call
    compile_note: str | None = None  # what compiling produced, and whether it was kept
    kept: bool | None = None  # compiled: faster than its eager twin

    @field_validator("groups")
    @classmethod
    def _groups_apart(cls, groups: list[GroupTiming]) -> list[GroupTiming]:
        labels = [g.group for g in groups]
        if twice := sorted({x for x in labels if labels.count(x) > 1}):
            raise ValueError(f"group {twice[0]!r} timed twice; expected one timing per shape group")
        return groups

    @field_validator("speedup_ci")
    @classmethod
    def _around(cls, ci: tuple[float, float] | None, info: ValidationInfo) -> tuple[float, float] | None:
        """low <= speedup <= high (to round-off): an interval that misses its estimate is not one."""
        estimate = info.data.get("speedup")
        if ci is not None and not ci[0] <= ci[1]:
            raise ValueError(f"low {ci[0]:g} above high {ci[1]:g}; expected low <= speedup <= high")
        if ci is not None and estimate is not None and not ci[0] * (1 - 1e-9) <= estimate <= ci[1] * (1 + 1e-9):
            raise ValueError(f"({ci[0]:g}, {ci[1]:g}) misses the speedup {estimate:g}; expected low <= speedup <= high")
        return ci

    def store(self, found: Speedup | None, target: float, baseline: str = "the baseline") -> None:
        """Its speedup as measured (bench.series.speedup), and what bench.series.settlement says of it."""
        said = settlement(found, target, (baseline, self.label))
        self.unresolved, self.unresolved_reason, self.settled = not said.resolved, said.why, said.settled
        self.speedup, self.speedup_ci = (None, None) if found is None else (found.estimate, (
            (found.low, found.high) if math.isfinite(found.high) else None))
        if found is not None:
            self.rounds, self.rounds_pooled, self.runs, self.busy_rounds = found.rounds, found.pooled, found.runs, found.busy
            self.processes, self.spread = found.processes, found.spread if found.processes == 1 else None

    def _per_sampled(self, field: str) -> float | None:
        values = [getattr(g, field) for g in self.groups]
        if not values or any(v is None for v in values):
            return None
        return sum(v * g.sampled for v, g in zip(values, self.groups))

    @property
    def seconds_per_matrix(self) -> float:
        """Its groups' median calls over the matrices they take: what the tables show per matrix."""
        return sum(g.measurement.median_s for g in self.groups) / sum(g.sampled for g in self.groups)

    @property
    def gflops_per_s(self) -> float | None:
        """Achieved over every sampled matrix of every group: their flops over their time."""
        flops = self._per_sampled("flops")
        seconds = sum(g.measurement.median_s for g in self.groups)
        return None if flops is None or seconds <= 0 else flops / seconds / 1e9

    @property
    def intensity(self) -> float | None:
        flops, moved = self._per_sampled("flops"), self._per_sampled("bytes")
        return None if flops is None or not moved else flops / moved

    @property
    def unstable(self) -> list[str]:
        """`group: reasons` of every group measured under unreliable conditions, its reasons in noise's
        CAUSE_ORDER as every other page says them (walk 16: the HTML's gave IQR first, as recorded), earlier
        runs' rounds' after their prefix said once, as timings.csv and --verbose say them (walk 22)."""
        return [f"{g.group}: {reasons_text(g.measurement.reasons)}" for g in self.groups if g.measurement.reasons]

    @property
    def quartile_totals(self) -> tuple[float, float]:
        """The 25th and 75th percentiles of the workload total: each group's sample quartiles per matrix,
        scaled to its size and summed (as estimate_total_s is); here, so the terminal needs no matplotlib."""
        scaled = [(q1 * g.total / g.sampled, q3 * g.total / g.sampled)
                  for g in self.groups for q1, _, q3 in [quartiles(g.measurement.samples_s)]]
        return sum(q for q, _ in scaled), sum(q for _, q in scaled)

    @property
    def fewest_samples(self) -> int:
        """The fewest samples of any group: below 2, the quartiles show no spread, only one call."""
        return min((len(g.measurement.samples_s) for g in self.groups), default=0)


class ChunkPlacement(BaseModel):
    """Where and when one chunk of a full analysis ran."""

    group: str
    first: str  # id of its first matrix
    count: Count
    worker: str
    started: NonNegative  # seconds since the epoch, on the worker
    seconds: NonNegative  # loading and computing, on the worker
    attempts: Count = 1  # more than one: its worker was lost and it was submitted again


class Skipped(BaseModel):
    strategy: str  # or a strategy's point, "torch@bfloat16", where its analysis has several
    reason: str


UNTIMED = "not timed: out of time on a busy machine"  # a Skipped's reason: the limit came before its first round


class AxesRecord(BaseModel):
    """op pca with axes = true: where the principal axes went, and how well they check out."""

    file: str  # in the run folder: a (components, parameters) .npy
    components: int
    parameters: int
    dtype: str
    seconds: float  # streaming every delta once and writing the file
    # max |A A^T - I| over the nonzero components of every PCA, read back from the file: it
    # fails when the streamed deltas are not the vectors whose Gram gave the PCA
    orthonormality_error: float


class AnalysisRecord(BaseModel):
    name: str
    op: str
    k: int | None
    strategy: str
    device: str
    reason: str
    n_matrices: Tally
    precision: str = ""  # the chosen strategy's numeric precision; "" in records before it: the plan's dtype
    wall_s: NonNegative  # the full analysis with the chosen strategy, loading included
    bench_s: NonNegative = 0.0  # timing and verifying the compared strategies (references included)
    # chunks of the full analysis read from the result cache / computed by this run; when all
    # came from the cache, wall_s is the time to read them, not to compute them
    placements: list[ChunkPlacement] = []
    cached_chunks: Tally = 0
    computed_chunks: Tally = 0
    timings: list[StrategyTiming] = []
    verification: list[Verification] = []
    skipped: list[Skipped] = []
    verdict: str | None = None  # the analysis' speedups in one line, the best first
    # how the plan's choice fared against the measurements: a line when it lost, else None
    choice_check: str | None = None
    findings: list[str] = []  # what an environment of its own did to a strategy, when it made a difference
    # op pca: explained-variance ratio of the components per PCA ("global" or "layer3/mlp_up")
    explained_variance_ratio: dict[str, list[float]] | None = None
    axes: AxesRecord | None = None

    @field_validator("timings")
    @classmethod
    def _points_apart(cls, timings: list[StrategyTiming]) -> list[StrategyTiming]:
        """One timing per point: two would be compared, charted and listed as one."""
        points = [t.point for t in timings]
        if twice := [p for i, p in enumerate(points) if p in points[:i]]:
            raise ValueError(f"{twice[0].label} timed twice; expected one timing per point")
        return timings

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verification)

    def computed(self, t: Variant) -> bool:
        """Whether `t` (timed or planned) is the point that computed the analysis' results (eager, at its precision)."""
        return t.strategy == self.strategy and (not t.variant or (t.precision == self.precision and not t.compiled))


def analysis_record(step: Step, n_matrices: int, wall_s: float, timings: list[StrategyTiming],
                    verification: list[Verification], **extra: Any) -> AnalysisRecord:
    """The record of a planned step: what the plan said, and what running it measured."""
    return AnalysisRecord(
        name=step.analysis, op=step.op, k=step.k, strategy=step.strategy, device=step.device, reason=step.reason,
        n_matrices=n_matrices, precision=step.precision, wall_s=wall_s, timings=timings, verification=verification,
        skipped=[Skipped(strategy=c.label, reason=c.reason or "") for c in step.skipped],
        **extra,
    )


class BenchRecord(BaseModel):
    """The benchmark phase of a run, over every analysis (a resumed run's: the analyses it timed)."""

    budget_s: NonNegative
    floor_s: NonNegative = 0.0  # the least benchmarking that answers every strategy, when measured cold
    limit_s: NonNegative = 0.0  # what the phase allowed itself: max(budget, floor), its own floor as found
    kept_s: NonNegative = 0.0  # a resumed run: the plan's seconds of the analyses its stopped run timed, not in the above
    precision: Positive = 0.10  # the speedups' interval half-width aimed at ([benchmark] target)
    run_id: str = ""  # the id this run's rounds carry
    rounds: Tally = 0  # rounds this run timed, over every analysis
    busy_rounds: Tally = 0  # of the blocks this run timed, those in rounds the machine was busy around
    rounds_pooled: Tally = 0  # rounds earlier runs had timed, taken into this run's intervals
    resolved: Tally = 0  # speedups whose interval met the precision
    unresolved: Tally = 0
    spent_s: NonNegative = 0.0  # the whole phase: warm-up calls and rounds (the budget's), and the one-off work below
    one_off_s: NonNegative = 0.0  # imports, a pool's start, verifying answers: outside the budget
    threads: Count
    references_computed: Tally = 0
    references_cached: Tally = 0
    references_s: NonNegative = 0.0
    unstable: Tally = 0  # measurements flagged unstable


class RunRecord(BaseModel):
    producer: str = PRODUCER
    schema_version: int = SCHEMA_VERSION
    harness_version: str
    experiment: str
    spec_path: str
    spec: dict[str, Any]
    spec_hash: str
    workload_fingerprint: str
    command: str
    started: str
    finished: str | None = None
    complete: bool = False
    machine: MachineInfo
    plan: Plan
    analyses: list[AnalysisRecord] = []
    bench: BenchRecord | None = None
    roofs: dict[str, Roof] = {}  # the machine's measured ceilings by device, from its wisdom
    cluster: ClusterInfo | None = None  # the Dask cluster as the run found it: every worker's machine
    lost_workers: list[LostWorker] = []  # workers the cluster lost while the run had work on it

    @property
    def passed(self) -> bool:
        return all(a.passed for a in self.analyses)

    @property
    def verdicts(self) -> list[str]:
        """Every analysis' verdict line, then the line of each plan choice that lost."""
        return ([a.verdict for a in self.analyses if a.verdict]
                + [a.choice_check for a in self.analyses if a.choice_check]
                + [line for a in self.analyses for line in a.findings])


class RecordError(ValueError):
    """A run folder without a readable record of a schema this harness knows."""


def written_by_us(raw: object) -> bool:
    """Whether `raw` (a record.json as parsed, unchecked) is a record of this harness: marked as
    its own (records before the marker carry none) and readable as a RunRecord. A file named
    record.json may be any tool's; only ours makes a folder one whose files --force may replace."""
    if not isinstance(raw, dict) or raw.get("producer", PRODUCER) != PRODUCER or (
            raw.get("schema_version") not in READABLE_VERSIONS):
        return False
    try:
        RunRecord.model_validate(raw)
    except ValidationError:
        return False
    return True


def save_record(record: RunRecord, folder: Path) -> Path:
    path = folder / RECORD
    write_atomic(path, lambda fh: fh.write(record.model_dump_json(indent=2).encode()))
    return path


def save_spectra(spectra: dict[str, np.ndarray], folder: Path) -> Path:
    path = folder / SPECTRA
    write_atomic(path, lambda fh: np.savez(fh, **spectra))  # type: ignore[arg-type]  # numpy's stub matches **arrays against allow_pickle
    return path


RECORD_CAP = 256 << 20  # bytes: a record of thousands of chunks and samples is a few MB


def load_record(folder: Path) -> RunRecord:
    """The run folder's record, checked whole before anything reads a number from it (its models'
    types: finite positive seconds and speedups, ordered intervals): a record edited or damaged
    into NaN or zero seconds made `compare` call every row faster, and a NaN or negative speedup
    printed "nanx (-5-100,000,000)". A bad one is a RecordError naming the file and the field."""
    path = folder / RECORD if folder.is_dir() else folder
    if not path.exists():
        raise RecordError(no_record(folder))
    if path.suffix == ".toml":  # walk 20: a spec where a run was meant read "not valid JSON (Expecting value ...)"
        raise RecordError(f"{path}: a spec, not a run; `harness run {path}` makes a run folder, and that folder "
                          "is what this takes")
    try:
        raw = json.loads(read_capped(path, RECORD_CAP))
    except TooLarge as exc:
        raise RecordError(f"{path}: {exc}; is this a record from `harness run`?") from None
    except IsADirectoryError:
        raise RecordError(f"{path}: is a folder; expected the run's {RECORD} file") from None
    except OSError as exc:
        raise RecordError(f"{path}: cannot read the record ({exc.strerror or exc})") from None
    except (ValueError, RecursionError) as exc:
        what = "" if path.name == RECORD else "; expected a run folder from `harness run`, or its record.json"
        raise RecordError(f"{path}: not valid JSON ({'nested too deeply' if isinstance(exc, RecursionError) else exc})"
                          + what) from None
    version = raw.get("schema_version") if isinstance(raw, dict) else None
    if version not in READABLE_VERSIONS:
        raise RecordError(
            f"{path}: record schema version {version!r}; this harness reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}"
        )
    try:
        return RunRecord.model_validate(raw)
    except ValidationError as exc:
        raise RecordError(f"{path}: {first_problem(exc)}") from None

