"""The spec's sections as pydantic models: what every key may hold, each number its range, each
name checked against what the harness has (data forms, features, strategies, environments)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ByteSize,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from harness.base.suggest import did_you_mean
from harness.data.registry import DataConfig
from harness.linalg.features import (
    FULL_SPECTRUM_ONLY,
    PAIRWISE_FEATURES,
    SCALAR_FEATURES,
    SUBSPACE_FEATURES,
)
from harness.linalg.precision import Precision
from harness.machine.tuning import Environment
from harness.strategies.registry import check_strategy_name, serving_text, strategy_problem
from harness.base.units import DURATION_PATTERN, parse_duration, parse_share

Op = Literal["svdvals", "svd", "svd_topk", "pca"]

# Every number a user gives has a range: past these a value is a typo or an attack, never a run
# (`threads = 100000` segfaulted libgomp; a seed beyond 64 bits has no record or cache key).
MAX_SEED = 2**63 - 1
MAX_COUNT = 1 << 20  # k, components, sample: more than any matrix has
MAX_REPEATS = 10_000  # warmup, repeats
MAX_THREADS = 1024  # BLAS / OpenMP / torch threads, workers, threads per worker
MAX_BUDGET_S = 7 * 86400.0  # a benchmark phase of a week
MEMORY_BUDGET_RANGE = (1, 1 << 50)  # bytes, to 1 PiB (tests plan with a few KiB)


FILE_NAME = r"[A-Za-z0-9_.-]+"  # names that become file or folder names


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


EXPERIMENT_NAME = r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}"  # one folder under results/, never hidden


class Experiment(_Section):
    name: str = Field(
        description="the results folder's name: letters, digits, _ . -, not starting with a dot, "
        "at most 128 characters",
        json_schema_extra={"pattern": rf"^{EXPERIMENT_NAME}$"},
    )
    seed: StrictInt = Field(0, ge=0, le=MAX_SEED)
    description: str = ""

    @field_validator("name")
    @classmethod
    def _one_safe_folder(cls, name: str) -> str:
        """The name becomes results/<name>/: "..", "a/b" or a control character would write
        elsewhere or make a folder no shell can name; a leading dot would hide the results."""
        if not re.fullmatch(EXPERIMENT_NAME, name):
            raise ValueError(
                f"{name!r} is not a safe folder name: use 1 to 128 letters, digits, _ . - "
                "(no path separators, not starting with a dot)"
            )
        return name


MAX_ANALYSIS_NAME = 128  # characters: a name is free text, printed in every table and line
MAX_ENVIRONMENTS = 4  # each one times every compared strategy once more, in a process of its own


class _AnalysisBase(_Section):
    name: str | None = Field(None, description="defaults to the op; must be unique; free text of at most "
                             f"{MAX_ANALYSIS_NAME} printable characters", max_length=MAX_ANALYSIS_NAME)
    strategy: str = Field("auto", description='"auto" or a strategy name')
    compare: list[str] = Field(default_factory=list, description="strategies timed vs baseline")
    baseline: str | None = Field(None, description="defaults to the op's baseline strategy")
    tolerance: StrictFloat = Field(1e-4, gt=0, le=1, allow_inf_nan=False,
                             description="max error relative to sigma_max (pca: of the Gram and its eigenvalues); "
                             "auto picks the fastest (strategy, precision) whose error meets it")
    precisions: list[Precision] = Field(
        default_factory=list,
        description='numeric precisions every compared strategy is timed and verified at, e.g. ["float32", '
        '"bfloat16"] ("tf32": CUDA only); default: [execution] dtype alone. Not [benchmark] target, '
        "which is the speedup intervals' target width",
    )
    compile: bool = Field(False, description="also time each torch kernel under torch.compile, beside the eager one")
    environments: list[Environment] = Field(
        default_factory=list, max_length=MAX_ENVIRONMENTS,
        description='process environments the baseline and every compared strategy are also timed in, each point '
        'in a worker process started with them, e.g. [{OPENBLAS_THREAD_TIMEOUT = "18"}]: thread-runtime and '
        "numeric-library settings only (docs/environments.md); the user's own environment is always timed, and the "
        "only one the analysis itself runs in")
    features: list[str] = Field(
        default_factory=list, description="spectral features written to features.csv"
    )
    energy_tau: StrictFloat = Field(0.9, gt=0, le=1, description="threshold of the energy_rank feature")

    @property
    def label(self) -> str:
        return self.name or self.op  # type: ignore[attr-defined]

    @classmethod
    def op_name(cls) -> str:
        (op,) = get_args(cls.model_fields["op"].annotation)
        return op

    @field_validator("name")
    @classmethod
    def _printable_name(cls, name: str | None) -> str | None:
        """Free text ("a|b" plans), but printable and not blank: a control character in a name
        reached the terminal raw, in every table and line the run prints."""
        if name is not None and (not name.strip() or not name.isprintable()):
            raise ValueError(f"{name[:40]!r} is not a name: use printable characters, not only spaces")
        return name

    @field_validator("strategy", "baseline")
    @classmethod
    def _known_strategy(cls, name: str | None) -> str | None:
        if name is not None and name != "auto":
            if (problem := check_strategy_name(name, cls.op_name())) is not None:
                raise ValueError(problem)
        return name

    @field_validator("features")
    @classmethod
    def _known_features(cls, names: list[str]) -> list[str]:
        op = cls.op_name()
        valid = [*SCALAR_FEATURES, *PAIRWISE_FEATURES]
        problems = []
        for name in names:
            if op == "pca":
                problems.append(f"{name!r}: pca analyses have no features; use an svd op")
            elif name not in valid:
                hint = f"{hint} " if (hint := did_you_mean(name, valid)) else ""
                problems.append(f"unknown feature {name!r}; {hint}valid: {', '.join(valid)}")
            elif name in SUBSPACE_FEATURES and op != "svd_topk":
                problems.append(f"{name!r} compares top-k singular vectors: use it with op svd_topk")
            elif name in FULL_SPECTRUM_ONLY and op == "svd_topk":
                problems.append(f"{name!r} needs the full spectrum: use it with op svdvals or svd")
        if problems:
            raise ValueError("; ".join(problems))
        return names

    @field_validator("environments")
    @classmethod
    def _distinct_environments(cls, environments: list[dict[str, str]]) -> list[dict[str, str]]:
        if len({tuple(sorted(e.items())) for e in environments}) < len(environments):
            raise ValueError("each environment at most once")
        return environments

    @field_validator("precisions")
    @classmethod
    def _distinct_precisions(cls, precisions: list[str]) -> list[str]:
        if len(set(precisions)) < len(precisions):
            raise ValueError(f"{precisions}: each precision at most once")
        return precisions

    @field_validator("compare")
    @classmethod
    def _known_compared(cls, names: list[str]) -> list[str]:
        problems = [p for name in names if (p := strategy_problem(name, cls.op_name())) is not None]
        if problems:  # each its own words, the strategies that would fit said once, at the end
            raise ValueError("; ".join(problems) + "; " + serving_text(cls.op_name()))
        return names


class SvdvalsAnalysis(_AnalysisBase):
    op: Literal["svdvals"]


class SvdAnalysis(_AnalysisBase):
    op: Literal["svd"]


class SvdTopkAnalysis(_AnalysisBase):
    op: Literal["svd_topk"]
    k: StrictInt = Field(ge=1, le=MAX_COUNT, description="number of leading singular triplets")


class PcaAnalysis(_AnalysisBase):
    """PCA across adapters: each adapter's deltas flattened to one vector (or one per position)."""

    op: Literal["pca"]
    components: StrictInt = Field(ge=1, le=MAX_COUNT, description="leading principal components: at most "
                                  "one fewer than the adapters (centred; uncentred: the adapters)")
    center: bool = Field(True, description="centre the adapter vectors (PCA); false: uncentred SVD")
    scope: Literal["global", "per_layer"] = Field(
        "global", description="one PCA over whole adapters, or one per (layer, module)"
    )
    axes: bool = Field(
        False,
        description="also write the principal axes in parameter space to axes-<name>.npy "
        "(components x parameters: as large as `components` adapters)",
    )

    @model_validator(mode="after")
    def _axes_file_name(self) -> PcaAnalysis:
        if self.axes and not re.fullmatch(FILE_NAME, self.label):
            raise ValueError(
                f"name {self.label!r} names the file axes-{self.label}.npy: use letters, digits, _ . -"
            )
        return self


Analysis = Annotated[
    SvdvalsAnalysis | SvdAnalysis | SvdTopkAnalysis | PcaAnalysis, Field(discriminator="op")
]
ANALYSIS_MODELS: dict[str, type[BaseModel]] = {
    "svdvals": SvdvalsAnalysis,
    "svd": SvdAnalysis,
    "svd_topk": SvdTopkAnalysis,
    "pca": PcaAnalysis,
}


class Execution(_Section):
    device: Literal["auto", "cpu", "cuda"] = "auto"
    workers: StrictInt | None = Field(None, ge=1, le=MAX_THREADS, description="process workers; default: all cores")
    executor: Literal["local", "process_pool", "dask"] = Field(
        "local",
        description="where full analyses run, chunk by chunk: in this process, a local process "
        "pool, or Dask (dask_address, else a LocalCluster of `workers` processes)",
    )
    dask_address: str | None = Field(None, description='an existing scheduler, "tcp://host:8786"')
    threads_per_worker: StrictInt = Field(1, ge=1, le=MAX_THREADS, description="BLAS threads per worker process")
    memory_budget: ByteSize = Field(ByteSize(4 * 2**30), ge=MEMORY_BUDGET_RANGE[0], le=MEMORY_BUDGET_RANGE[1],
                                    description='e.g. "4GiB"; at most 1 PiB')
    dtype: Literal["float32", "float64"] = "float32"
    read_ahead: bool = Field(
        True,
        description="with the local executor and a file source (checkpoint, arrays), read the next "
        "chunk's matrices while this chunk is computed; the plan's batches then leave room in "
        "memory_budget for two chunks' inputs",
    )
    cache_dir: str | None = Field(
        None,
        description="result cache folder (relative: to the spec's folder); default "
        "./.harness-cache in the working directory",
    )


    @model_validator(mode="after")
    def _address_needs_dask(self) -> Execution:
        if self.dask_address is not None and self.executor != "dask":
            raise ValueError('dask_address is set but executor is not "dask"')
        return self


# A number of seconds or a string like "20s": the schema says both, so editors and jsonschema
# accept the documented `budget = "20s"` (pydantic would otherwise publish a bare number)
Seconds = Annotated[
    float,
    BeforeValidator(parse_duration),
    WithJsonSchema({"anyOf": [{"type": "number", "minimum": 0},
                              {"type": "string", "pattern": f"^{DURATION_PATTERN}$"}]}),
]
MIN_PRECISION = 0.01  # [benchmark] target's least: finer is never resolved
Share = Annotated[  # a fraction or a percentage: `precision = "10%"` validates in editors too
    float,
    BeforeValidator(parse_share),
    WithJsonSchema({"anyOf": [{"type": "number", "minimum": MIN_PRECISION, "maximum": 1},
                              {"type": "string", "pattern": r"^\s*[0-9]*\.?[0-9]+\s*%?\s*$"}]}),
]
DEFAULT_BUDGET_S = 4.0
DEFAULT_TARGET = 0.25  # what a user reaches in about three runs of the main job (README: the run as the unit)


class Benchmark(_Section):
    """How compared strategies are timed: in rounds (the baseline and every strategy back to
    back) until each speedup's interval is within `target`, or the budget is spent."""

    budget: Seconds = Field(
        DEFAULT_BUDGET_S,
        le=MAX_BUDGET_S,
        description='time for timing every compared strategy, e.g. "20s" or "2m"; the floor (one '
        "round of every strategy) is always measured, and the plan says when it is more",
    )
    target: Share = Field(
        DEFAULT_TARGET, validation_alias=AliasChoices("target", "precision"),
        description='the half-width of each speedup\'s 95% interval to sample to, e.g. "10%", at least 1%: a run '
        'adds rounds, and re-runs add runs, until it is met ("precision" reads as the same key; the arithmetic\'s '
        "precision is [[analysis]] precisions)")
    warmup: StrictInt = Field(1, ge=0, le=MAX_REPEATS, description="untimed calls before a strategy's first round")
    repeats: StrictInt = Field(1, ge=1, le=MAX_REPEATS, description="timed calls in each round at least (fast calls "
                         "repeat until 20 ms are sampled)")
    sample: StrictInt = Field(4, ge=0, le=MAX_COUNT, description="matrices per shape group the rounds rotate through; 0 = all")
    threads: StrictInt | None = Field(
        None, ge=1, le=MAX_THREADS, description="BLAS, OpenMP and torch threads of every in-process timing; "
        "default: the cores other processes leave free when the plan is made (process pool "
        "workers: 1 each)",
    )

    @model_validator(mode="before")
    @classmethod
    def _one_name(cls, raw: object) -> object:
        if isinstance(raw, dict) and "target" in raw and "precision" in raw:
            raise ValueError("precision is the old name of target: give one of them")
        return raw

    @field_validator("target")
    @classmethod
    def _resolvable(cls, precision: float) -> float:
        """`precision = 1e-300` planned "±0%": an interval no budget reaches, since one run's is
        never narrower than the spread between runs (a few percent on a quiet machine)."""
        if precision < MIN_PRECISION:
            raise ValueError(f"{precision:.3g}: expected at least {MIN_PRECISION:.0%} (an interval narrower than the "
                             "spread between runs is never reached)")
        return precision


class Spec(_Section):
    experiment: Experiment
    data: DataConfig
    analysis: list[Analysis] = Field(min_length=1)
    execution: Execution = Field(default_factory=Execution)
    benchmark: Benchmark = Field(default_factory=Benchmark)
    sweep: dict[str, Any] = Field(
        default_factory=dict,
        description='one or two keys of this spec over lists of values, e.g. data.adapters = [4, 8, 16] or '
        '"analysis[0].k" = [1, 2, 4]: each combination is a run of its own, and the run fits how cost grows '
        "(docs/sweeps.md)")

    @field_validator("analysis")
    @classmethod
    def _unique_names(cls, analyses: list[_AnalysisBase]) -> list[_AnalysisBase]:
        seen: set[str] = set()
        for a in analyses:
            if a.label in seen:
                raise ValueError(f"two analyses are named {a.label!r}; give each a unique `name`")
            seen.add(a.label)
        return analyses


def duration_keys() -> frozenset[str]:
    """The dotted keys a spec writes as durations (`budget = "4s"`): what shows a record's spec
    writes their seconds back so (`benchmark.budget is 1.0 here` named no value a user wrote)."""
    return frozenset(f"{section}.{name}" for section, field in Spec.model_fields.items()
                     if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
                     for name, sub in field.annotation.model_fields.items()
                     if any(getattr(m, "func", None) is parse_duration for m in sub.metadata))
