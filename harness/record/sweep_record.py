"""The record of a sweep (sweep.json beside its points' run folders): each point's values and its
timings (seconds per matrix of each timed strategy, with an interval, and what the planner's cost
model said), then the fits and crossovers over them (record.sweep_fits)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.base.atomic import write_atomic
from harness.base.bounded import TooLarge, read_capped
from harness.bench.scaling import Crossover, PowerLaw, log_variance
from harness.bench.statistics import DEFAULT_SPREAD, LEVEL, quantile, run_interval
from harness.plan.model import GroupInfo, Plan
from harness.machine.stored import first_problem
from harness.machine.wisdom import MODELLED
from harness.record.folders import SWEEP_RECORD
from harness.record.run_record import RecordError, RunRecord, StrategyTiming

SWEEP_SCHEMA_VERSION = 1
SWEEP_CAP = 64 << 20  # bytes: 64 points of a few hundred timings each
FAR = 10.0  # a crossing more than this factor beyond the swept range: the fits do not tell where they meet


def axis_name(key: str) -> str:
    """`data.rank` as `rank`, `analysis[0].k` as `k`: what a sentence calls the size."""
    return key.rsplit(".", 1)[-1]


class AxisLimit(BaseModel):
    """The largest value a swept key can take: a rank or a k, the smaller side of `shape`."""

    size: float
    shape: tuple[int, int]  # the matrix that bounds it (the smallest of the workload's)

    def said(self, key: str) -> str:
        """`the largest rank of a 512x512 delta`."""
        what = "delta" if axis_name(key) == "rank" else "matrix"
        return f"the largest {axis_name(key)} of a {self.shape[0]}x{self.shape[1]} {what}"


BOUNDED = ("rank", "k")  # keys whose largest value is a matrix's smaller side


def axis_limits(values: dict[str, Any], groups: list[GroupInfo]) -> dict[str, AxisLimit]:
    """Each swept rank or k's largest possible value at a point: the smaller side of its workload's
    smallest matrix (of a LoRA delta, for a rank)."""
    limits = {}
    for key in values:
        bounding = [g.shape for g in groups if axis_name(key) == "k" or g.rank is not None]
        if axis_name(key) in BOUNDED and bounding:
            shape = min(bounding, key=lambda shape: (min(shape), max(shape)))
            limits[key] = AxisLimit(size=float(min(shape)), shape=shape)
    return limits


class PointTiming(BaseModel):
    """One strategy (one point of its analysis: precision, compiled) at one sweep point."""

    model_config = ConfigDict(ser_json_inf_nan="constants")  # an interval without ends reads back as one

    analysis: str
    strategy: str  # its label: "factored", "torch@bfloat16"
    seconds: float  # per matrix (op pca: per position), every group's median scaled to its matrices
    low: float  # the 95% interval of the next run's seconds per matrix
    high: float
    # per matrix: the cost model's own figure, unscaled, even where the plan took the wisdom's measurement: what
    # the model's exponent is fitted over (the wisdom's figure there dropped the model's clause from a second run's
    # sentence, its points measured by the first: walk 12)
    model_s: float | None = None
    # per matrix: the plan's estimate as the planner compared it, a modelled figure scaled by the plan's
    # calibration (the model's 15.6 ms beside the plan's 73 ms read as a pick against its own figures)
    planned_s: float | None = None
    basis: str = ""  # the plan's basis ("modelled x4.7: ...", "measured on this machine, ..."), groups joined by "/"
    passed: bool = True  # its answer verified
    baseline: bool = False  # its analysis' baseline, whose seconds the others' paired intervals are over
    # the 95% interval of the baseline's seconds over its own, from the rounds' paired ratios (its run's verdict);
    # None: the baseline itself, a single round, or sweeps before it
    paired: tuple[float, float] | None = None
    speedup: float | None = None  # the baseline's seconds over its own, from the same paired rounds (its run's verdict)

    @property
    def measured(self) -> bool:
        """planned_s is this machine's wisdom's measurement (of a shape group at least), not the cost model's."""
        return bool(self.basis) and not self.basis.startswith(MODELLED)


class PointRecord(BaseModel):
    values: dict[str, Any]
    folder: str  # the point's run folder, relative to the sweep's
    complete: bool
    passed: bool
    chosen: dict[str, str] = {}  # analysis -> the strategy the plan picked for it
    timings: list[PointTiming] = []
    measurements: int = 0  # its run's measurements (a strategy on a shape group)
    unstable: list[list[str]] = []  # each unstable measurement's reasons
    unstable_rows: list[tuple[str, str]] = []  # each one's analysis and strategy, as `unstable` (sweeps before it: none)
    limits: dict[str, AxisLimit] = {}  # a swept rank's or k's largest possible value here (sweeps before it: none)


class ScalingFit(BaseModel):
    """How one strategy's cost grows along one axis (the other axis, if any, held at `fixed`)."""

    analysis: str
    strategy: str
    axis: str
    fixed: dict[str, Any] = {}
    sizes: list[float]
    power: PowerLaw
    complexity: str | None  # the class of lowest RMS whose exponent is in power's interval; None: no class is
    rms: float | None  # its weighted RMS in log space (about a relative error)
    # every class whose exponent is in power's interval -> its RMS, best first: two or more are not told apart
    # (sweeps before it: {}, the best named)
    within: dict[str, float] = {}
    # every class's RMS interval, from the points' own intervals redrawn (sweeps before it: {}, the RMS alone)
    rms_interval: dict[str, tuple[float, float]] = {}
    # every class whose RMS interval reaches under the 25% bound, in the interval or not -> its RMS: those a fit
    # straddling the bound names (sweep_classes.straddling; sweeps before it: {}, those within)
    close: dict[str, float] = {}
    # what the text makes of them (sweep_classes.class_verdict: fits, straddles, not told apart, none): `complexity` is
    # the best within the exponent's interval whatever this says (sweeps before it: None)
    class_verdict: str | None = None
    model: PowerLaw | None = None  # the same fit of the cost model's estimates
    finding: str | None = None  # the measured exponent's interval leaves out the model's


class SweepCrossover(BaseModel):
    analysis: str
    axis: str
    fixed: dict[str, Any] = {}
    a: str  # the strategy that is cheaper above the crossing
    b: str
    crossing: Crossover
    inside: bool  # within the swept range
    limit: AxisLimit | None = None  # the axis' largest possible value along the fits
    swept: tuple[float, float] | None = None  # the two fits' smallest and largest size (sweeps before it: none)

    @property
    def distance(self) -> float:
        """How far the crossing lies beyond the swept range, as a factor of its nearer end (1: inside; a sweep
        before `swept` kept only those within 2x)."""
        if self.inside or self.swept is None:
            return 1.0
        return max(self.swept[0] / self.crossing.size if self.crossing.size > 0 else math.inf,
                   self.crossing.size / self.swept[1])

    @property
    def located(self) -> bool:
        """The fits tell where they meet: their crossing's interval does not hold all the swept range, nor does
        its estimate lie more than FAR beyond it (walk 17: two flat fits, one on two points, `meet at rank
        0.000667 (0 to past 512, ...), 23,989x below the swept range`)."""
        if self.swept is None:
            return True
        spans = self.crossing.low <= self.swept[0] and self.crossing.high >= self.swept[1]
        return not spans and self.distance <= FAR

    @property
    def high(self) -> float:
        """The interval's top, clipped to the largest value the axis can take."""
        return self.crossing.high if self.limit is None else min(self.crossing.high, self.limit.size)

    @property
    def past(self) -> bool:
        """The fits meet past the largest value the axis can take, all of the crossing's interval with them."""
        return self.limit is not None and self.crossing.low > self.limit.size

    @property
    def reaches_past(self) -> bool:
        """The crossing's interval runs from within the axis' values to past the largest: they may meet
        there or not at all (walk 16 read `meet at rank 384 (271-512, clipped ...)`, then `would meet at rank
        ~767 ...: within it they may never meet` for one sweep run twice, both intervals so)."""
        return self.limit is not None and self.crossing.low <= self.limit.size < self.crossing.high


class SweepRecord(BaseModel):
    schema_version: int = SWEEP_SCHEMA_VERSION
    experiment: str
    spec_path: str
    command: str
    started: str
    finished: str | None = None
    complete: bool = False
    axes: dict[str, list[Any]]
    points: list[PointRecord] = []
    fits: list[ScalingFit] = []
    crossovers: list[SweepCrossover] = []
    planner: list[str] = []  # per analysis: whether the plan's pick was the fastest measured at each point

    @property
    def passed(self) -> bool:
        return all(p.passed for p in self.points)


def _interval(t: StrategyTiming, seconds: float) -> tuple[float, float]:
    """The interval of the next run's seconds per matrix: each group's rounds with the run as the
    unit (bench.statistics.run_interval), their log variances added by each group's share of time."""
    total = sum(g.measurement.median_s / g.sampled * g.total for g in t.groups)
    var = 0.0
    for g in t.groups:
        logs = [math.log(s / g.sampled) for s in g.measurement.samples_s]
        i = run_interval([logs], spread=g.spread or DEFAULT_SPREAD)
        share = g.measurement.median_s / g.sampled * g.total / total
        var += (share**2) * log_variance(i.estimate, i.low, i.high)
    if not math.isfinite(var):
        return 0.0, math.inf
    half = quantile(math.inf, LEVEL) * math.sqrt(var)
    return seconds * math.exp(-half), seconds * math.exp(half)


def _estimates(plan: Plan, analysis: str, t: StrategyTiming) -> tuple[float | None, float | None, str]:
    """The cost model's and the plan's estimates per matrix for the timed point, weighted as its
    measurement is, and the plan's basis for them."""
    step = next((s for s in plan.steps if s.analysis == analysis), None)
    found = next((c for c in step.candidates if c.label == t.label), None) if step else None
    if found is None or any(g.group not in found.per_matrix_s for g in t.groups):
        return None, None, ""
    matrices = sum(g.total for g in t.groups)
    basis = {found.basis.get(g.group, MODELLED) for g in t.groups}
    # the model's figure as the cost model gave it, not scaled by the plan's measurements (plan.calibration):
    # each point's plan scales by its own factor, which would bend the model's exponent; nor the wisdom's
    # measurement where the plan took that, which left a second run of a sweep without the model's exponent
    model = (sum(found.model_s[g.group] * g.total for g in t.groups) / matrices
             if all(g.group in found.model_s for g in t.groups) else None)
    return model, sum(found.per_matrix_s[g.group] * g.total for g in t.groups) / matrices, "/".join(sorted(basis))


def point_timings(record: RunRecord) -> list[PointTiming]:
    """Every timed strategy of every analysis of a point's run."""
    rows = []
    for a in record.analyses:
        failed = {v.strategy for v in a.verification if not v.passed}
        for t in a.timings:
            seconds = t.estimate_total_s / sum(g.total for g in t.groups)
            low, high = _interval(t, seconds)
            model, planned, basis = _estimates(record.plan, a.name, t)
            rows.append(PointTiming(analysis=a.name, strategy=t.label, seconds=seconds, low=low, high=high,
                                    model_s=model, planned_s=planned, basis=basis, passed=t.label not in failed,
                                    baseline=t.role == "baseline", paired=t.speedup_ci, speedup=t.speedup))
    return rows


def point_record(values: dict[str, Any], folder: str, record: RunRecord) -> PointRecord:
    """The point's timings, and how many of its measurements were unstable and why: the sweep
    says so as a run does (its fits stand on them)."""
    groups = [(a.name, t.label, g.measurement) for a in record.analyses for t in a.timings for g in t.groups]
    flagged = [(analysis, label, m) for analysis, label, m in groups if m.unstable]
    return PointRecord(values=values, folder=folder, complete=record.complete, passed=record.passed,
                       chosen={a.name: a.strategy for a in record.analyses}, timings=point_timings(record),
                       measurements=len(groups), limits=axis_limits(values, record.plan.groups),
                       unstable=[list(m.reasons) or ["flagged unstable"] for *_, m in flagged],
                       unstable_rows=[(analysis, label) for analysis, label, _ in flagged])


def write_sweep(record: SweepRecord, folder: Path) -> Path:
    path = folder / SWEEP_RECORD
    write_atomic(path, lambda fh: fh.write(record.model_dump_json(indent=2).encode()))
    return path


def load_sweep(folder: Path) -> SweepRecord:
    """The sweep in `folder`; RecordError when it holds no readable one (untrusted: validated)."""
    path = folder / SWEEP_RECORD
    try:
        return SweepRecord.model_validate_json(read_capped(path, SWEEP_CAP))
    except (OSError, TooLarge) as exc:
        raise RecordError(f"{path}: cannot read a sweep record ({exc})") from None
    except ValidationError as exc:
        raise RecordError(f"{path}: not a sweep record: {first_problem(exc)}") from None
