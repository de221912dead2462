"""From a spec file to what running it needs: the spec, its workload and this machine's plan."""

from __future__ import annotations

from pathlib import Path

from harness import wisdom
from harness.cache import locate
from harness.data.registry import build_source
from harness.data.workload import Workload
from harness.machine import probe
from harness.plan import Plan, compile_plan
from harness.spec import Spec, load_spec


def load_workload(spec: Spec, spec_path: str | Path) -> Workload:
    """The spec's workload; data paths resolve against the spec's folder."""
    source = build_source(spec.data, spec.experiment.seed, Path(spec_path).resolve().parent)
    return Workload.from_source(source)


def wisdom_folder(spec: Spec, spec_path: str | Path) -> Path | None:
    """Where this spec's runs keep the machine's wisdom: beside the result cache."""
    return wisdom.folder(locate(spec.execution.cache_dir, spec_path))


def prepare(spec_path: str | Path, overrides: list[str] | None = None) -> tuple[Spec, Workload, Plan]:
    """Shared by `harness plan/run` and the asv suites, so both see the same plan: from this
    machine's wisdom where it has measured, from the cost model elsewhere."""
    spec = load_spec(spec_path, overrides)
    workload = load_workload(spec, spec_path)
    return spec, workload, compile_plan(spec, workload, probe(), wisdom.load(wisdom_folder(spec, spec_path), probe()))
