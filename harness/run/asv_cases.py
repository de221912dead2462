"""The harness as asv sees it: a machine name that keeps GPU and CPU results apart, and benchmark
cases prepared from specs along the very code path `harness run` takes (prepare, plan, load,
compute, verify), so that what asv tracks is what users run."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.machine.info import MachineInfo
from harness.run.prepare import load_workload, prepare
from harness.data.workload import chunks
from harness.run.subjects import compute_batches, load_batches, sample_refs
from harness.compute.references import References, checked
from harness.run.context import exec_context, local_executor
from harness.specs.reading import SpecError, load_spec
from harness.strategies.base import OpRequest, OpResult, Strategy
from harness.strategies.registry import STRATEGIES


def machine_name(info: MachineInfo) -> str:
    """`<host>-<gpu model>` or `<host>-cpu`: asv's machine fields cannot hold a GPU, and results
    under one name are compared as one machine's history."""
    return re.sub(r"[^a-z0-9.]+", "-", f"{info.hostname}-{info.cuda_device or 'cpu'}".lower()).strip("-")


def strategies_for(op: str) -> list[str]:
    """Every registered strategy of `op`, whether or not it can run here: the same asv parameters
    on every machine, with what cannot run skipped."""
    return sorted(name for name, s in STRATEGIES.items() if op in s.ops)


@dataclass(frozen=True)
class CaseKey:
    """Where one asv case comes from: a spec file, one of its analyses, one shape group."""

    spec_path: Path
    analysis: str
    group: str


def case_keys(spec_paths: Sequence[Path], op: str) -> dict[str, CaseKey]:
    """asv parameter label -> case, for every analysis of `op` in the specs and every shape group.

    The label is the group's (`512x128r8`), prefixed by the analysis name when the analysis is
    named (`top8:512x128r8`); a label two specs would share is an error, not a silent overwrite.
    """
    keys: dict[str, CaseKey] = {}
    for path in spec_paths:
        spec = load_spec(path)
        groups = load_workload(spec, path).groups()
        for i, analysis in enumerate(spec.analysis):
            if analysis.op != op:
                continue
            for group in groups:
                label = group.label if analysis.name is None else f"{analysis.name}:{group.label}"
                if label in keys:
                    raise SpecError([
                        f"{path}: analysis[{i}]: asv case {label!r} is also defined by "
                        f"{keys[label].spec_path}; give this analysis a unique `name`"
                    ])
                keys[label] = CaseKey(path, analysis.label, group.label)
    return keys


class Case:
    """One strategy on the benchmark sample of one shape group, prepared as `harness run` does:
    the planned device and batch size, the spec's dtype and seed. A strategy that cannot run here
    raises NotImplementedError, which asv records as skipped."""

    def __init__(self, key: CaseKey, strategy: str) -> None:
        context = prepare(key.spec_path)
        spec, workload, plan = context.spec, context.workload, context.plan
        step = next(s for s in plan.steps if s.analysis == key.analysis)
        candidate = next((c for c in step.candidates if c.strategy == strategy), None)
        if candidate is None:
            raise NotImplementedError(f"{strategy} does not do {step.op}")
        if not candidate.available:
            raise NotImplementedError(f"{strategy} cannot run here: {candidate.reason}")
        self.name = strategy
        chosen = STRATEGIES[strategy]
        if not isinstance(chosen, Strategy):
            raise NotImplementedError(f"{strategy} is not a per-matrix strategy: no sample to time")
        self.strategy = chosen
        self.op = OpRequest(step.op, step.k)
        self.tolerance = step.tolerance
        self.source = workload.source
        self.group = next(g for g in workload.groups() if g.label == key.group)
        self.refs = sample_refs(self.group, plan.sample)
        self.batch_size = candidate.batch_sizes[key.group]
        self.dtype = np.dtype(plan.dtype)
        self._executor = local_executor(plan.workers)
        self.ctx = exec_context(plan, candidate.device or "", spec.experiment.seed, self._executor)

    def load_sample(self) -> list[Any]:
        return load_batches(self.strategy, self.source, self.refs, self.batch_size, self.dtype)

    def compute(self, batches: list[Any]) -> OpResult:
        return compute_batches(self.strategy, self.op, batches, self.ctx)

    def error(self, result: OpResult) -> float:
        """The worst of the values and vectors errors relative to sigma_1 against the float64
        references, the number `harness run` checks against the tolerance."""
        check = checked(self.name, result, self.source, self.refs, References(self.source), self.tolerance)
        return max(check.values_error, check.vectors_error or 0.0)

    def stream_group(self) -> None:
        """The full analysis of the whole group, one planned batch in memory at a time, as the
        runner's uncached chunks (`Runner._chunk`) load and compute it."""
        for chunk in chunks(self.group.refs, self.batch_size):
            self.strategy.compute(self.op, self.strategy.load(self.source, chunk, self.dtype), self.ctx)

    def close(self) -> None:
        self._executor.close()
