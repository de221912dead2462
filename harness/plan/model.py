"""The Plan and its parts as value objects: what runs, on which device, with what batches, what
the benchmark phase times, and why. Whoever reads a plan imports only this module."""

from __future__ import annotations

from typing import NamedTuple

from pydantic import AliasChoices, BaseModel, Field, computed_field

from harness.bench.budget import MIN_ROUNDS, OVERRUN, PROCESSES, Allocation
from harness.machine.cluster import ClusterInfo
from harness.machine.picks import Pick

MAX_SLOWDOWN = 4.0  # a busier machine's slowdown is no better known: the load changes as the run goes

class GroupInfo(BaseModel):
    label: str
    shape: tuple[int, int]
    rank: int | None
    count: int


class Variant(BaseModel):
    """A strategy at one numeric precision, eager or compiled: what an analysis with `precisions`
    or `compile = true` times as a point of its own. `variant` is "" where the analysis has one
    point per strategy (its label is then the strategy's name, as before precisions existed)."""

    strategy: str
    precision: str = ""  # the arithmetic (harness.linalg.precision); "" in records before it: the plan's dtype
    compiled: bool = False  # torch.compile'd kernels
    env: dict[str, str] = {}  # environment variables its worker process starts with, beyond the user's
    variant: str = ""  # "@bfloat16", "@float32+compiled", "+OPENBLAS_THREAD_TIMEOUT=18"; "" for the analysis' only point

    @property
    def label(self) -> str:
        return self.strategy + self.variant

    @property
    def point(self) -> Point:
        return Point(self.strategy, self.precision, self.compiled, tuple(sorted(self.env.items())))


class Point(NamedTuple):
    """What a timed point is within its analysis, whatever its label says: its rounds are pooled
    under it (with the machine's and the shape's part, machine.measurements.Item), and two runs'
    timings pair only on it (report.compare): plain numpy is not numpy in an environment of its own."""

    strategy: str
    precision: str
    compiled: bool
    env: tuple[tuple[str, str], ...]

    @property
    def label(self) -> str:
        """The whole point, `numpy@float64+OPENBLAS_THREAD_TIMEOUT=18`, where a variant's label
        says only what sets it apart from its analysis' other points."""
        return self.strategy + variant_suffix(self.precision, self.compiled) + env_suffix(dict(self.env))


def variant_suffix(precision: str, compiled: bool) -> str:
    return f"@{precision}" + ("+compiled" if compiled else "")


def env_suffix(env: dict[str, str]) -> str:
    """A point's label for its own environment: "+OPENBLAS_THREAD_TIMEOUT=18"."""
    return "".join(f"+{name}={value}" for name, value in sorted(env.items()))


class Candidate(Variant):
    device: str | None
    estimate_s: float | None
    batch_sizes: dict[str, int] = {}
    per_matrix_s: dict[str, float] = {}  # estimate per shape group (pca: per position)
    model_s: dict[str, float] = {}  # the cost model's own figure per group, before measurements or scaling
    scale: float | None = None  # what its modelled groups were scaled by (plan.calibration); None: not scaled
    basis: dict[str, str] = {}  # per group: measured on this machine (wisdom), or modelled
    measured: dict[str, tuple[str, int]] = {}  # per measured group: the newest measurement's date, the samples
    busy: float | None = None  # measured while busy: the largest share of the CPUs others took then (0: unknown)
    # how far apart this machine's recent runs measured it (largest over smallest, its widest group);
    # None where a group is modelled or has too few runs for one (machine.wisdom.MIN_SPREAD)
    spread: float | None = None
    reason: str | None = None  # why it cannot run, when it cannot
    reads_ahead: bool = False  # the next chunk is read while this one is computed (batches leave room)
    error: float | None = None  # the worst error this machine's wisdom measured for it, relative to sigma_1

    @property
    def available(self) -> bool:
        return self.reason is None


class Timed(Variant):
    role: str  # "baseline", "compare" or "chosen"
    device: str
    batch_sizes: dict[str, int]
    allocations: list[Allocation] = []  # its share of the benchmark budget, per shape group
    cut: str | None = None  # the rounds the budget affords it, in words

    @computed_field  # type: ignore[prop-decorator]
    @property
    def estimate_s(self) -> float:
        """Seconds its allocations are estimated to take."""
        return sum(a.estimate_s for a in self.allocations)


class Step(BaseModel):
    analysis: str
    op: str
    k: int | None
    tolerance: float
    precision: str = ""  # the chosen candidate's arithmetic; "" (records before it): the plan's dtype
    features: list[str] = []
    energy_tau: float = 0.9
    strategy: str
    device: str
    batch_sizes: dict[str, int]
    reads_ahead: bool = False  # the next chunk is read while this one is computed
    tasks: int | None = None  # the tasks its full analysis is spread over on workers; None: in this process
    estimate_s: float
    reason: str
    timed: list[Timed]
    skipped: list[Candidate]
    candidates: list[Candidate]
    pick: Pick | None = None  # the `auto` pick the run keeps in this machine's wisdom for the next plan; None: named

    @property
    def problem(self) -> str:
        """The op with its k, `svd_topk k=2`, as the plan's table and the cache's labels name it."""
        return self.op + (f" k={self.k}" if self.k else "")


Limit = tuple[float, bool]  # the plan's timing seconds the phase may still spend, and whether the machine is quiet
Allowed = tuple[float, int]  # an analysis' timing: the plan's seconds of it, and its blocks
MANDATORY = ("baseline", "chosen")  # the roles a first round times whatever the limit (run.rounds' _mandatory)


def planned_blocks(step: Step) -> int:
    """The blocks its plan times: each point's rounds on each group in each process."""
    return PROCESSES * sum(a.rounds for t in step.timed for a in t.allocations)


def least(step: Step, quiet: bool) -> Allowed:
    """What the analysis times whatever the limit (bench.budget.Budget.fits): on a quiet machine
    its floor (MIN_ROUNDS of each point in each process), on a busy one its first round's mandatory
    blocks (the baseline's and the chosen point's, in one process: run.rounds)."""
    allocations = [a for t in step.timed if quiet or t.role in MANDATORY for a in t.allocations]
    processes, rounds = (PROCESSES, MIN_ROUNDS) if quiet else (1, 1)
    return (sum(processes * (a.first_s + rounds * a.block_s) for a in allocations),
            processes * rounds * len(allocations))


def allowed(step: Step, limit: Limit | None) -> Allowed:
    """Its planned timing, or what the limit leaves it (`limit`'s seconds; none: the plan's), never
    less than `least`: past the limit a round stopped after its mandatory blocks while the ETA still
    counted the 5 it cut, `~0:00:12` with 1.4 s left (walk 13)."""
    planned_s, planned_n = sum(t.estimate_s for t in step.timed), planned_blocks(step)
    if limit is None or limit[0] >= planned_s:
        return planned_s, planned_n
    least_s, least_n = least(step, limit[1])
    if limit[0] <= least_s or planned_s <= least_s:
        return min(least_s, planned_s), min(least_n, planned_n)
    return limit[0], least_n + round((planned_n - least_n) * (limit[0] - least_s) / (planned_s - least_s))


def limited(steps: list[Step], limit: Limit | None) -> list[float]:
    """Each analysis' timing seconds as the `limit` leaves them, in turn (allowed): what the run's
    first ETA counts (run.eta.work_left) and the plan's whole-run estimate with it."""
    out = []
    for step in steps:
        out.append(allowed(step, limit)[0])
        if limit is not None:
            limit = (max(limit[0] - out[-1], 0.0), limit[1])
    return out



class BenchPlan(BaseModel):
    """The benchmark phase as planned: its budget and floor, the precision it samples to, the
    threads of every in-process timing, and the estimated seconds of it all."""

    budget_s: float
    floor_s: float = 0.0  # the least benchmarking that answers every compared strategy
    target: float = Field(0.10, validation_alias=AliasChoices("target", "precision"))  # the half-width of each speedup's 95% interval it aims for (plans before it: "precision")
    warmup: int
    repeats: int = 1  # schema 3 and earlier: timed calls per strategy
    sample: int
    threads: int
    threads_reason: str = ""  # the spec's, or the cores other processes left free
    references_s: float  # float64 references of the sampled matrices, once per run
    estimate_s: float  # every allocation, and the references

    @computed_field  # type: ignore[prop-decorator]
    @property
    def limit_s(self) -> float:
        """What the phase may spend: the budget, or the floor when that is more."""
        return max(self.budget_s, self.floor_s)

    @property
    def limit(self) -> str:
        """What limit_s is, in the run's words: "budget", or "floor" when the floor is more."""
        return "floor" if self.floor_s > self.budget_s else "budget"


class Plan(BaseModel):
    device_requested: str
    dtype: str
    memory_budget: int
    workers: int
    executor: str = "local"
    threads_per_worker: int = 1
    dask_address: str | None = None
    cluster: ClusterInfo | None = None  # the Dask cluster the work was sized for
    sample: int
    n_matrices: int
    groups: list[GroupInfo]
    steps: list[Step]
    bench: BenchPlan | None = None  # None only in records of schema version 1
    # estimated seconds of the work around the analyses: loading every matrix once, features,
    # importing torch, starting workers
    overheads: dict[str, float] = {}
    skipped_inputs: list[str] = []  # input tensors not analysed, `file: tensor (why)` each
    # how much slower than on an idle machine the run is expected to go: the cores over those other
    # processes left free when the plan was made (the estimates above are an idle machine's: a busy
    # 2-core machine took 27 s over an estimate of 13.5 s); 1 when idle, or when the spec set the threads
    slowdown: float = Field(1.0, ge=1.0, le=MAX_SLOWDOWN, allow_inf_nan=False)

    @property
    def idle_s(self) -> float:
        """The whole run on an idle machine: full analyses, the work around them, the benchmark phase."""
        bench = self.bench.estimate_s if self.bench is not None else 0.0
        return sum(s.estimate_s for s in self.steps) + sum(self.overheads.values()) + bench

    @property
    def start_limit(self) -> Limit | None:
        """What the benchmark phase may spend, in this plan's seconds of an idle machine (run.eta.limit_of
        of the run's fresh Budget): its limit less the references, with its overrun, over the slowdown
        (the limit counts the clock's seconds); quiet when the plan found the machine idle."""
        if self.bench is None:
            return None
        return (max(self.bench.limit_s - self.bench.references_s, 0.0) * (1 + OVERRUN) / self.slowdown,
                self.slowdown <= 1.0)

    @property
    def timings_s(self) -> list[float]:
        """Each analysis' timing seconds on an idle machine as the phase's limit leaves them (limited)."""
        return limited(self.steps, self.start_limit)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def estimate_s(self) -> float:
        """The whole run as this machine was when the plan was made: idle_s slowed by its load, but
        for the rounds the phase's limit cuts (a clock's seconds: load slows the rest of the run, not
        how long the phase may time). Counted all at twice their seconds, the plan read 60.9 s for
        runs of 35-41 s, whose live ETA began near 29 s (walk 20); the run's first ETA is this less
        the torch import done before the display opens (run.eta.work_left)."""
        planned = sum(t.estimate_s for s in self.steps for t in s.timed)
        return self.busy_s(self.idle_s - planned + sum(self.timings_s))

    def busy_s(self, idle_s: float) -> float:
        """Seconds estimated on an idle machine as they are expected to go on this one."""
        return idle_s * self.slowdown


class PlanError(Exception):
    """The spec asks for something this machine or workload cannot do; one line per problem."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def backends(steps: list[Step]) -> set[str]:
    """Every backend the analyses and their timings use."""
    return {s.device for s in steps} | {t.device for s in steps for t in s.timed}
