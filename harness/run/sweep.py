"""A sweep, run: each point an ordinary run of the engine (harness.run.session: cache, pooled
rounds, worker processes, verification) into a folder of its own under the sweep's folder, then
one record over them all (record.sweep_record) with its fits (record.sweep_fits). The engine is
given each point as a spec with overrides; it never learns it is one."""

from __future__ import annotations

import json
import shlex
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from harness.base.eta import planned
from harness.base.progress import Display
from harness.base.units import now, parse_duration, plural
from harness.machine.wisdom import Observation, taught
from harness.plan.model import PlanError
from harness.plan.sweep import SweepPoint, shared_problems, sweep_points
from harness.record.sweep_fits import fit_sweep
from harness.record.run_record import RunRecord
from harness.record.sweep_record import PointRecord, SweepRecord, point_record, write_sweep
from harness.run.prepare import RunContext
from harness.run.validation import validate
from harness.run.session import RunOptions, check_run_folder, command_line, default_folder, prepare_session
from harness.specs.reading import SpecError, load_spec


@dataclass(frozen=True)
class SweepPlan:
    """Every point's spec, planned: `overrides` are each point's (the user's, its share of a
    whole-sweep budget, its values)."""

    spec_path: Path
    points: list[SweepPoint]
    overrides: list[list[str]]
    contexts: list[RunContext]

    @property
    def estimate_s(self) -> float:
        return sum(c.plan.estimate_s for c in self.contexts)


def budget_share(budget: str | None, points: int) -> list[str]:
    """`--budget` bounds the whole sweep: each point's benchmark phase gets an equal share (a
    budget that is no duration is left for the spec's validation to name)."""
    if budget is None:
        return []
    try:
        return [f"benchmark.budget={parse_duration(budget) / points!r}"]
    except ValueError:
        return [f"benchmark.budget={json.dumps(budget)}"]


def plan_sweep(spec_path: str | Path, overrides: list[str], budget: str | None = None) -> SweepPlan | None:
    """Every point prepared as `harness plan` prepares a spec; None when the spec sweeps nothing.
    SpecError or PlanError with every point's problems at once, each a line."""
    points = sweep_points(spec_path, overrides)
    if points is None:
        return None
    share = budget_share(budget, len(points))
    sets = [[*overrides, *share, *p.overrides()] for p in points]
    contexts: list[RunContext] = []
    found: dict[str, list[SweepPoint]] = {}
    planning = False
    for point, point_sets in zip(points, sets):
        try:
            contexts.append(validate(spec_path, point_sets))
        except (SpecError, PlanError) as exc:
            planning |= isinstance(exc, PlanError)
            for line in exc.lines:
                found.setdefault(line.removeprefix(f"{spec_path}: "), []).append(point)
    if found:
        lines = shared_problems(spec_path, found, len(points))
        raise PlanError(lines) if planning else SpecError(lines)
    return SweepPlan(Path(spec_path), points, sets, contexts)


def sweep_folder(plan: SweepPlan, overrides: list[str], output: Path | None) -> Path:
    """Where the sweep runs: `output`, or a fresh results/<experiment>/<time>-<hash>; refused when it
    holds files. Known before the first point, so that a stopped sweep can say what it left there."""
    folder = output or default_folder(load_spec(plan.spec_path, overrides))
    check_run_folder(folder)
    return folder


def run_sweep(plan: SweepPlan, overrides: list[str], folder: Path, display: Display,
              options: RunOptions) -> SweepRecord:
    """Each point run in turn into `folder`/<point> (sweep_folder), the sweep's record rewritten after
    each, its fits computed at the end."""
    spec = load_spec(plan.spec_path, overrides)
    # quoted, to paste: `--set=data.modules.w=[40, 32]` unquoted split in two (compare's next step gives it, walk 24)
    command = shlex.join(["harness", "run", str(plan.spec_path), *(f"--set={s}" for s in overrides)])
    record = SweepRecord(experiment=spec.experiment.name, spec_path=str(plan.spec_path), command=command,
                         started=now(), axes={k: list(v) for k, v in _axes(plan).items()})
    folder.mkdir(parents=True, exist_ok=True)
    learned: list[Observation] = []
    # the whole sweep a row of the live display, its count the points done and its ETA the plan's
    # (it said `sweep point 1 of 5: data.ran… 0/?`), no line of its own: each point's result line
    # says it (`sweep point 1 of 5: data.rank=16` came just before `sweep point 1 of 5, data.rank=16: …`)
    units = [c.plan.estimate_s for c in plan.contexts]
    with display.phase("sweep", len(plan.points), plan.estimate_s, units) if display.live else nullcontext() as whole:
        for i, (point, sets) in enumerate(zip(plan.points, plan.overrides), 1):
            mine = RunOptions(output=folder / point.slug, no_cache=options.no_cache, fresh=options.fresh,
                              say_taught=False)
            if whole is not None:
                whole.item(f"point {i} of {len(plan.points)}: {point.label}")
                whole.within(planned(units[i - 1]))
            session = prepare_session(plan.spec_path, sets, mine, display, command_line(plan.spec_path, sets, mine))
            run = session.run()
            if whole is not None:
                whole.advance()
            learned += session.learned
            record.points.append(point_record(point.values, point.slug, run))
            display.plain(f"sweep point {i} of {len(plan.points)}, {point.label} done: "
                          f"{point_summary(run, record.points[-1])}")
            write_sweep(record, folder)
    record = fit_sweep(record).model_copy(update={"finished": now(), "complete": True})
    write_sweep(record, folder)
    if (line := taught(learned)) is not None:  # once, for every point (each point's said it again)
        display.plain(line)
    return record


def point_summary(run: RunRecord, point: PointRecord) -> str:
    """A finished point in a line: per analysis the plan's pick, then how many measurements were
    unstable. No verdict: the pick's finding is the sweep's planner line's, said once at the end (at
    rank 256 the point's line, the planner line and the picks table each said `1.9x slower than
    factored (intervals overlap)`: walk 14)."""
    said = [", ".join(f"{a.name} picked {a.strategy}" for a in run.analyses)]
    if point.unstable:
        said.append(f"{len(point.unstable)} of {plural(point.measurements, 'measurement')} unstable")
    if not run.passed:
        said.append("verification FAILED (see its run folder)")
    return "; ".join(said)


def _axes(plan: SweepPlan) -> dict[str, list[object]]:
    axes: dict[str, list[object]] = {}
    for p in plan.points:
        for key, value in p.values.items():
            if value not in axes.setdefault(key, []):
                axes[key].append(value)
    return axes
