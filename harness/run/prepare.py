"""From a spec file to what running it needs, built once: the spec, its workload, this machine
and its wisdom, the plan, and the folders the run keeps its cache and wisdom in. Nothing
downstream locates a folder or probes the machine again."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.data.registry import build_source
from harness.data.workload import Census, Workload
from harness.machine import wisdom
from harness.machine.info import MachineInfo, probe
from harness.machine.wisdom import Wisdom
from harness.plan.compiler import compile_plan
from harness.plan.footprint import check_memory
from harness.plan.model import Plan, PlanError
from harness.data.paths import PathError
from harness.run.cluster import join, require_distributed
from harness.specs.sections import Spec
from harness.specs.reading import SpecError, in_file_order, load_spec, located, read_overridden
from harness.store.cache import locate


@dataclass(frozen=True)
class RunContext:
    """Everything a `harness plan/run`, a calibration's timings or an asv case starts from."""

    spec_path: Path
    spec: Spec
    workload: Workload
    machine: MachineInfo
    cache_dir: Path  # where the spec's result cache is (whether or not this run uses it)
    wisdom_folder: Path | None  # where this machine's wisdom is kept; None: wisdom is off
    wisdom: Wisdom  # empty where this machine has none (or wisdom is off)
    plan: Plan  # its `cluster`: the Dask cluster at execution.dask_address, joined before planning


def load_workload(spec: Spec, spec_path: str | Path, machine: MachineInfo | None = None) -> Workload:
    """The spec's workload; data paths resolve against the spec's folder. With `machine`, a
    workload whose results cannot stay in memory is refused (PlanError), a countable one before
    its matrices are listed."""
    source = build_source(spec.data, spec.experiment.seed, Path(spec_path).resolve().parent)
    census = source.census()
    if machine is not None and census is not None:
        check_memory(spec, census, machine)
    workload = Workload.from_source(source)
    if machine is not None and census is None:
        check_memory(spec, Census.of(workload.refs), machine)
    return workload


def prepare(spec_path: str | Path, overrides: list[str] | None = None, spec: Spec | None = None) -> RunContext:
    """Shared by `harness plan/run` and the asv suites, so both see the same plan: from this
    machine's wisdom where it has measured, from the cost model elsewhere. `spec`: one already
    loaded from the file (validate's, with its invalid parts left out)."""
    spec = spec or load_spec(spec_path, overrides)
    if spec.sweep:  # each of its points is a spec of its own (run.sweep): this one is none of them
        raise PlanError(["sweep: this spec is a sweep; `harness plan` and `harness run` take each of its points "
                         "as a run (one point alone: --set sweep={} and the point's values)"])
    if spec.execution.executor == "dask":
        require_distributed()
    address = spec.execution.dask_address if spec.execution.executor == "dask" else None
    cluster = join(address) if address is not None else None  # first: a wrong address is the whole answer
    machine = probe()
    workload = load_workload(spec, spec_path, machine)
    cache_dir = locate(spec.execution.cache_dir, spec_path)
    if cache_dir.exists() and not cache_dir.is_dir():  # every get and put would fail, each its own way
        raise PlanError([f"execution.cache_dir: {cache_dir} is a file; expected a folder (made if missing)"])
    where = wisdom.folder()
    known = wisdom.load(where, machine)
    plan = compile_plan(spec, workload, machine, known, cluster, lambda worker: wisdom.load(where, worker))
    return RunContext(Path(spec_path), spec, workload, machine, cache_dir, where, known, plan)


def prepare_spec(spec_path: str | Path, overrides: list[str] | None = None) -> RunContext:
    """`prepare`, every refusal in the words `validate`, `plan` and `run` share: `FILE: key:
    message`. A data path that matches nothing is the spec's problem (SpecError), and so is what
    the plan refuses (tf32 without CUDA, more components than adapters: PlanError)."""
    try:
        return prepare(spec_path, overrides)
    except PathError as exc:
        raise SpecError([f"{spec_path}: {line}" for line in str(exc).splitlines()]) from None
    except PlanError as exc:  # in the file's order, as the spec's own problems are
        raw, origins = read_overridden(spec_path, overrides)
        raise PlanError(located(spec_path, origins, in_file_order(exc.lines, raw))) from None


def skipped_warning(skipped: list[str]) -> str:
    """The one line that says which input tensors the run leaves out; the plan lists them too."""
    count = f"{len(skipped)} input tensor" + ("s are" if len(skipped) > 1 else " is")
    return f"warning: {count} not analysed (plan.skipped_inputs): " + "; ".join(skipped)
