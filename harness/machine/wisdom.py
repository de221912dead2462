"""What this machine has measured, kept for the planner: FFTW's wisdom for strategies.

One JSON file per machine identity (CPU, cores, memory, GPU, library versions, numpy's BLAS, the
thread variables set)
in the user's cache folder (`HARNESS_WISDOM` overrides). `harness calibrate` fills it, and every run adds what its benchmark
measured (a busy or unsteady measurement kept apart, flagged, and used only where no quiet one covers
the size); `auto` then plans from seconds measured here rather than from constants fitted elsewhere. A file written under another identity or wisdom version is
never read: another machine's or another numpy's timings say nothing about this one.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NamedTuple

import platformdirs
from pydantic import BaseModel, BeforeValidator, Field, model_validator

from harness.base.atomic import write_atomic
from harness.base.locks import held, on_stderr
from harness.base.numbers import Count, Positive
from harness.base.units import plural
from harness.machine import stored as stored_file
from harness.machine.picks import Pick, replaced
from harness.machine.roofline import MAX_GFLOPS, ReadRoof, Roof, higher
from harness.machine.info import MachineInfo

VERSION = 1
FOLDER = "wisdom"
APP = "spectral-harness"  # the user cache folder's name for this tool
ENV = "HARNESS_WISDOM"  # a folder to keep wisdom in instead, or "off" (the test suite's setting)
COVERAGE = 4.0  # a measurement speaks for work up to this factor of flops beyond the measured range
RECENT = 5  # measurements of one key whose median is its estimate
MIN_SPREAD = 3  # recent measurements of one key that tell its run-to-run spread (two say little)
MODELLED = "modelled"  # every estimate from the cost model begins so; measured ones do not
MEASURED = "measured on this machine"  # an estimate from quiet measurements begins so
BUSY = "measured while busy"  # an estimate from measurements taken on a busy machine begins so
BUSY_USE = "used until a quiet measurement exists"  # what the planner does with one, said once per plan
MAX_SECONDS = 1e6  # per matrix: eleven days; a stored figure beyond it was not measured
MISSED = 1e6  # an error no tolerance (at most 1, relative to sigma_1) accepts: what NaN or inf answers are kept as
Seconds = Annotated[float, Field(gt=0, le=MAX_SECONDS, allow_inf_nan=False)]
Share = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


def _error(value: object) -> object:
    """A non-finite or huge error (NaN answers, a bf16 overflow) as MISSED: JSON holds no NaN or
    inf, and pydantic writes them as null, which made the whole file unreadable."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not value <= MISSED:
        return MISSED
    return value


class Observation(BaseModel):
    """Seconds per matrix (op pca: per position) of one strategy on one shape, as measured."""

    strategy: str
    op: str
    k: int | None = None
    shape: tuple[Count, Count]
    rank: Count | None = None
    dtype: str
    device: str  # the backend: "numpy", "cpu" (torch) or "cuda"
    threads: Count  # the in-process threads it was timed on
    # matrices a fan-out strategy spread over its workers in one call (its time per matrix falls
    # with it until every worker is busy); 1 for every other strategy
    width: Count = 1
    precision: str = ""  # the arithmetic (bfloat16, ...); "" before precisions existed: `dtype`'s own
    compiled: bool = False  # torch.compile'd kernels
    seconds: Seconds  # the median of `recent`
    flops: Positive
    samples: Count  # timed calls behind `recent`
    when: str  # ISO date-time of the newest
    source: str  # "calibrate", or the experiment whose run measured it (the newest)
    recent: list[Seconds] = Field([], max_length=RECENT)  # the last RECENT measurements' seconds, oldest first
    # None: measured on a quiet machine. Else taken while it was busy (or the timing unsteady), with the
    # share of the CPUs other processes took (0 where unknown): on an always-busy machine the only
    # measurement there is, better than the cost model (issue 48: the plan chose a 10x slower
    # strategy after nine busy runs), used until a quiet one of the same key replaces it
    busy: Share | None = None

    @model_validator(mode="after")
    def _plausible(self) -> Observation:
        """No measurement runs faster than any device can: 1e-30 s for a matrix's SVD would make
        the planner pick its strategy for every analysis."""
        if self.flops / min([self.seconds, *self.recent]) > MAX_GFLOPS * 1e9:
            raise ValueError(f"{self.flops:.3g} flops in {min([self.seconds, *self.recent]):.3g} s is faster than "
                             f"any device ({MAX_GFLOPS:.0e} GFLOP/s)")
        return self

    def merged(self, newer: Observation) -> Observation:
        """This key measured again: one noisy run must not flip the planner's choice between
        near-equal strategies, so the estimate is the median of the last RECENT measurements."""
        if (self.busy is None) != (newer.busy is None):  # a quiet measurement replaces busy ones; never the reverse
            return self if newer.busy is not None else newer.model_copy(update={"recent": [newer.seconds]})
        recent = [*(self.recent or [self.seconds]), newer.seconds][-RECENT:]
        return newer.model_copy(update={"recent": recent, "seconds": statistics.median(recent),
                                        "samples": self.samples + newer.samples})

    @property
    def arithmetic(self) -> str:
        return self.precision or self.dtype

    @property
    def spread(self) -> float | None:
        """How far apart its recent runs measured (largest over smallest); None from too few."""
        return max(self.recent) / min(self.recent) if len(self.recent) >= MIN_SPREAD else None

    def key(self) -> tuple[object, ...]:
        return (self.strategy, self.op, self.k, self.shape, self.rank, self.dtype, self.device, self.threads,
                self.width, self.arithmetic, self.compiled)


class MeasuredError(BaseModel):
    """The worst error a point (strategy at a precision, eager or compiled) made against the
    float64 references, relative to sigma_1: kept whatever the timing's conditions were (round-off
    does not depend on load), for the planner to compare with a tolerance."""

    strategy: str
    op: str
    device: str
    precision: str
    compiled: bool = False
    error: Annotated[float, BeforeValidator(_error), Field(ge=0)]
    when: str

    def key(self) -> tuple[object, ...]:
        return (self.strategy, self.op, self.device, self.precision, self.compiled)


def width(fans_out: bool, workers: int, matrices: int) -> int:
    """How many matrices a call spreads at once: a fan-out strategy one per worker, at most."""
    return min(workers, matrices) if fans_out else 1


class Estimate(NamedTuple):
    seconds: float
    basis: str  # "measured on this machine, <date>, <n> samples"
    busy: float | None = None  # measured while busy: the largest share of the CPUs other processes took (0: unknown)
    spread: float | None = None  # the widest Observation.spread of those it came from; None where one has none
    measured: tuple[str, int] | None = None  # measured: the newest measurement's date and the samples (a plan sums them up)


def widest(spreads: Iterable[float | None]) -> float | None:
    """The widest of some estimates' spreads; None where one of them has none."""
    every = list(spreads)
    return None if not every or None in every else max(s for s in every if s is not None)


def _orientation(shape: tuple[int, int]) -> int:
    m, n = shape
    return (m > n) - (m < n)


def _interpolated(near: list[Observation], flops: float, shape: tuple[int, int]) -> Estimate | None:
    """A power law between the two measured neighbours in flops (the same orientation, tall or
    wide, where there is one), a constant rate beyond them, and nothing more than COVERAGE times
    outside the measured range."""
    near = [o for o in near if _orientation(o.shape) == _orientation(shape)] or near
    if not near or not min(o.flops for o in near) / COVERAGE <= flops <= max(o.flops for o in near) * COVERAGE:
        return None
    below = max((o for o in near if o.flops <= flops), key=lambda o: o.flops, default=None)
    above = min((o for o in near if o.flops >= flops), key=lambda o: o.flops, default=None)
    if below is not None and above is not None and above.flops > below.flops:
        t = math.log(flops / below.flops) / math.log(above.flops / below.flops)
        seconds = math.exp((1 - t) * math.log(below.seconds) + t * math.log(above.seconds))
        used = [below, above]
    else:
        nearest = below or above
        assert nearest is not None
        seconds, used = nearest.seconds * flops / nearest.flops, [nearest]
    when, samples = max(o.when for o in used)[:10], sum(o.samples for o in used)
    busy = [o.busy for o in used if o.busy is not None]
    spread = widest(o.spread for o in used)
    if not busy:
        return Estimate(seconds, f"{MEASURED}, {when}, {samples} samples", None, spread, (when, samples))
    return Estimate(seconds, f"{BUSY} ({when}, {samples} samples)", max(busy), spread, (when, samples))


class Wisdom(BaseModel):
    version: int = VERSION
    machine: dict[str, str]
    roofs: dict[str, Roof] = {}  # by device: "cpu", "cuda"; each Roof checks its own figures
    reads: ReadRoof | None = None
    observations: list[Observation] = []
    errors: list[MeasuredError] = []  # the worst error measured per point
    picks: list[Pick] = []  # what `auto` last picked per problem (machine.picks)

    @model_validator(mode="after")
    def _roofs_by_device(self) -> Wisdom:
        for key, roof in self.roofs.items():
            if key != roof.device:
                raise ValueError(f"roofs.{key} holds the roof of device {roof.device!r}")
        return self

    def add_errors(self, errors: Iterable[MeasuredError]) -> None:
        """Each point's worst error so far: a later, smaller one does not hide an earlier miss."""
        index = {e.key(): i for i, e in enumerate(self.errors)}
        for e in errors:
            if (i := index.get(e.key())) is None:
                index[e.key()] = len(self.errors)
                self.errors.append(e)
            elif e.error > self.errors[i].error:
                self.errors[i] = e

    def unmeasured(self, strategy: str, op: str, device: str, dtype: str, threads: int, precision: str = "",
                   compiled: bool = False) -> str:
        """Why a point's estimate is the model's: measured only at sizes too far from this one, or
        never measured here."""
        point = (strategy, op, device, dtype, threads, precision or dtype, compiled)
        if any((o.strategy, o.op, o.device, o.dtype, o.threads, o.arithmetic, o.compiled) == point
               for o in self.observations):
            return f"{MODELLED}: no measurement within {COVERAGE:g}x of this size"
        return f"{MODELLED}: never measured on this machine"

    def add(self, observations: Iterable[Observation]) -> None:
        """One entry per (strategy, op, shape, dtype, device, threads), merged with what it measured before."""
        index = {o.key(): i for i, o in enumerate(self.observations)}
        for o in observations:
            if (i := index.get(o.key())) is not None:
                self.observations[i] = self.observations[i].merged(o)
            else:
                index[o.key()] = len(self.observations)
                self.observations.append(o.model_copy(update={"recent": [o.seconds]}))

    def estimate(
        self, strategy: str, op: str, device: str, dtype: str, threads: int, flops: float, shape: tuple[int, int],
        width: int = 1, precision: str = "", compiled: bool = False,
    ) -> Estimate | None:
        """Seconds for `flops` of work, from measurements of the same strategy, op, device, dtype,
        threads and width: the quiet ones where they cover the size, else those taken while the
        machine was busy (slower than quiet, but this machine's, where the model is a guess)."""
        point = (strategy, op, device, dtype, threads, width, precision or dtype, compiled)
        near = [o for o in self.observations
                if (o.strategy, o.op, o.device, o.dtype, o.threads, o.width, o.arithmetic, o.compiled) == point]
        return (_interpolated([o for o in near if o.busy is None], flops, shape)
                or _interpolated([o for o in near if o.busy is not None], flops, shape))

    def picked(self, key: str) -> str | None:
        """The label of the point `auto` last picked for the problem `key`, or None."""
        return next((p.label for p in self.picks if p.key == key), None)

    def error(self, strategy: str, op: str, device: str, precision: str, compiled: bool = False) -> float | None:
        """The worst error measured for a strategy at a precision on this machine (any shape,
        threads or width: round-off does not depend on them), or None where none was."""
        key = (strategy, op, device, precision, compiled)
        errors = [e.error for e in self.errors if e.key() == key]
        return max(errors) if errors else None


def taught(observations: Sequence[Observation]) -> str | None:
    """What a run taught the next plan, when some of it was measured while the machine was busy
    (None otherwise: quiet measurements are simply used): one line, since it comes before the
    verdicts (it said "the next plan uses this run's 14 measurements taken while the machine was
    busy ..." over three lines at 100 columns, above every busy run's verdicts)."""
    busy: dict[str, list[str]] = {}
    for o in observations:
        if o.busy is not None and o.strategy not in (names := busy.setdefault(o.op, [])):
            names.append(o.strategy)
    if not (n_busy := sum(o.busy is not None for o in observations)):
        return None
    named = "; ".join(f"{op}: {', '.join(names)}" for op, names in busy.items())
    return (f"wisdom: {plural(n_busy, 'measurement')} taken while busy ({named}) inform the next plan until "
            "quiet ones replace them")


def identity(machine: MachineInfo) -> dict[str, str]:
    """What a measurement depends on; a change of any of it starts a new wisdom file."""
    gib = round(machine.memory_total / 2**30)
    return {
        "cpu": machine.cpu,
        "cores": str(machine.cores),
        "memory": f"{gib} GiB",
        "gpu": machine.cuda_device or "none",
        "python": machine.python,
        "harness": machine.harness,
        "numpy": machine.numpy,
        "scipy": machine.scipy,
        "torch": machine.torch or "none",
        # numpy's BLAS as built, not the pools loaded when the machine was probed: those change
        # as torch and scipy.linalg are imported
        "blas": machine.numpy_blas or "unknown",
        "threads": ", ".join(f"{k}={v}" for k, v in sorted(machine.thread_env.items())) or "library defaults",
    }


def folder() -> Path | None:
    """Where wisdom and the pooled rounds live: $HARNESS_WISDOM, else `wisdom/` in the user's cache
    folder (platformdirs); None when off. They are the machine's, not a project's: a first run in a
    new folder on a known machine neither measures the roofs again nor loses the rounds pooled."""
    setting = os.environ.get(ENV)
    if setting == "off":
        return None
    return Path(setting) if setting else platformdirs.user_cache_path(APP) / FOLDER


def path_for(where: Path, machine: MachineInfo, prefix: str = "") -> Path:
    """This machine's file in `where` (`prefix` tells the pooled rounds' file from the wisdom's)."""
    key = json.dumps(identity(machine), sort_keys=True)
    return where / f"{prefix}{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


Say = Callable[[str], None]


def _read(where: Path, machine: MachineInfo) -> stored_file.Found[Wisdom]:
    return stored_file.read(path_for(where, machine), Wisdom, VERSION, identity(machine))


def load(where: Path | None, machine: MachineInfo, say: Say = on_stderr) -> Wisdom:
    """This machine's wisdom; empty when there is none, none that is this machine's, or none of
    this version. A bad file is kept aside (under the lock, if it is still the file read) and
    said in one line, and the run measures afresh."""
    empty = Wisdom(machine=identity(machine))
    if where is None:
        return empty
    found = _read(where, machine)
    fate = ""
    if found.problem is not None and found.identity is not None:
        try:
            with locked(where, say):
                fate = stored_file.set_aside(path_for(where, machine), found)
        except OSError as exc:
            fate = f"could not be kept aside ({exc.strerror or exc})"
    stored_file.tell(path_for(where, machine), "wisdom", found, fate, say)
    return found.model or empty


class OtherVersion(OSError):
    """The machine's wisdom file holds another wisdom version: kept, never overwritten."""


def _refuse_other_version(path: Path, found: stored_file.Found[Wisdom]) -> None:
    """OtherVersion when `path` holds wisdom of another VERSION (a newer harness's, or an older
    one's kept on purpose): overwriting it silently lost every measurement in it."""
    if found.other is not None:
        raise OtherVersion(f"{path} {found.other.replace('holds version', 'holds wisdom version', 1)}; move the "
                           f"file away to keep it, or point ${ENV} elsewhere")


def check_writable(where: Path, machine: MachineInfo) -> None:
    """OSError unless this machine's wisdom can be written in `where`: a folder (made if
    missing) that takes a file, and no other version's wisdom in the way."""
    where.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=where):  # the real test: a read-only mount, permissions, a full disk
        pass
    _refuse_other_version(path_for(where, machine), _read(where, machine))


@contextmanager
def locked(where: Path, say: Say = on_stderr) -> Iterator[None]:
    """The wisdom folder's lock (wisdom and pooled rounds alike): a wait is said within 2 s and
    given up after base.locks.TIMEOUT_S with LockTimeout, an OSError every caller survives."""
    where.mkdir(parents=True, exist_ok=True)
    with held(where / ".lock", say=say):
        yield


def learn(
    where: Path | None,
    machine: MachineInfo,
    observations: Iterable[Observation] = (),
    roofs: Iterable[Roof] = (),
    reads: ReadRoof | None = None,
    errors: Iterable[MeasuredError] = (),
    picks: Iterable[Pick] = (),
    say: Say = on_stderr,
) -> Wisdom | None:
    """Add to the stored wisdom under a lock (runs may end at once) and write it atomically; a
    bad file found is kept aside first and said, another version's is refused (OtherVersion)."""
    if where is None:
        return None
    path = path_for(where, machine)
    with locked(where, say):
        found = _read(where, machine)
        _refuse_other_version(path, found)
        if found.problem is not None:
            stored_file.tell(path, "wisdom", found, stored_file.set_aside(path, found), say)
        wisdom = found.model or Wisdom(machine=identity(machine))
        wisdom.add(observations)
        wisdom.add_errors(errors)
        wisdom.picks = replaced(wisdom.picks, picks)
        for roof in roofs:
            wisdom.roofs[roof.device] = higher(wisdom.roofs.get(roof.device), roof)
        if reads is not None:
            wisdom.reads = reads
        text = wisdom.model_dump_json(indent=1).encode()
        write_atomic(path, lambda fh: fh.write(text))
    return wisdom
