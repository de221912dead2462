"""From a spec file to what running it needs: the spec, its workload and this machine's plan."""

from __future__ import annotations

from pathlib import Path

from harness import wisdom
from harness.cache import locate
from harness.data.registry import build_source
from harness.data.workload import Census, Workload
from harness.footprint import check_memory
from harness.machine import MachineInfo, probe
from harness.plan import Plan, compile_plan
from harness.spec import Spec, load_spec


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


def wisdom_folder(spec: Spec, spec_path: str | Path) -> Path | None:
    """Where this spec's runs keep the machine's wisdom: beside the result cache."""
    return wisdom.folder(locate(spec.execution.cache_dir, spec_path))


def prepare(spec_path: str | Path, overrides: list[str] | None = None) -> tuple[Spec, Workload, Plan]:
    """Shared by `harness plan/run` and the asv suites, so both see the same plan: from this
    machine's wisdom where it has measured, from the cost model elsewhere."""
    spec = load_spec(spec_path, overrides)
    machine = probe()
    workload = load_workload(spec, spec_path, machine)
    return spec, workload, compile_plan(spec, workload, machine, wisdom.load(wisdom_folder(spec, spec_path), machine))


def skipped_warning(skipped: list[str]) -> str:
    """The one line that says which input tensors the run leaves out; the plan lists them too."""
    count = f"{len(skipped)} input tensor" + ("s are" if len(skipped) > 1 else " is")
    return f"warning: {count} not analysed (plan.skipped_inputs): " + "; ".join(skipped)
