"""asv's results across commits, read through asv's own API, for `harness history`.

asv publishes the same results as a site, but its page loads jQuery, flot and bootstrap from CDNs
and is blank offline; `harness history` draws them into one self-contained page instead. Steps
are asv's: `asv.step_detect.detect_steps` fits a piecewise-constant function to each series,
and a step is marked when its segments differ by asv's default regression threshold (5%).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from harness.base.bounded import read_capped

STEP_THRESHOLD = 0.05  # asv's default `regressions_thresholds`: smaller steps are not marked
RESULTS_CAP = 64 << 20  # bytes of benchmarks.json: asv's lists hundreds of benchmarks in kilobytes


class HistoryError(ValueError):
    """No asv results where they were looked for."""


class Point(BaseModel):
    commit: str
    date: int  # the commit's date, ms since the epoch: the axis' order
    value: float | None  # None: failed, skipped or not run at this commit
    q25: float | None = None
    q75: float | None = None


class Step(BaseModel):
    commit: str  # the first commit of the new level
    before: float
    after: float

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else math.inf


class Series(BaseModel):
    """One benchmark with one parameter combination on one machine (and environment)."""

    machine: str
    env: str
    gpu: bool  # named `<host>-<gpu model>` by `harness asv-machine`, not `<host>-cpu`
    benchmark: str
    kind: str  # asv's type: time, track, peakmemory
    unit: str
    params: dict[str, str]
    points: list[Point]
    steps: list[Step] = []

    @property
    def line(self) -> str:
        """The machine, and its environment when it has several."""
        return self.machine if not self.env else f"{self.machine} ({self.env})"


def _asv() -> tuple[object, object]:
    try:
        from asv import results, step_detect
    except ImportError:
        raise HistoryError("harness history reads asv's results with asv: pip install 'spectral-harness[bench]'") from None
    return results, step_detect


def machines(results_dir: Path) -> list[str]:
    return sorted(p.parent.name for p in results_dir.glob("*/machine.json"))


def _value(x: object) -> float | None:
    return None if x is None or not isinstance(x, (int, float)) or math.isnan(x) else float(x)


def steps_of(points: list[Point]) -> list[Step]:
    """asv's piecewise-constant fit of the series; a boundary is a step when the levels differ
    by STEP_THRESHOLD or more."""
    _results, step_detect = _asv()
    values = [p.value for p in points]
    if sum(v is not None for v in values) < 3:
        return []
    segments = step_detect.detect_steps(values)  # type: ignore[attr-defined]
    steps = []
    for (_l0, _r0, before, *_), (left, _r1, after, *_) in itertools.pairwise(segments):
        if before and abs(after / before - 1) >= STEP_THRESHOLD:
            steps.append(Step(commit=points[left].commit, before=before, after=after))
    return steps


def _meta(results_dir: Path) -> dict[str, dict[str, object]]:
    """asv's benchmarks.json: each benchmark's parameter names, type and unit."""
    path = results_dir / "benchmarks.json"
    try:
        meta = json.loads(read_capped(path, RESULTS_CAP))
    except (OSError, ValueError, RecursionError) as exc:
        raise HistoryError(f"{path}: not readable asv benchmark metadata ({exc})") from None
    if not isinstance(meta, dict):
        raise HistoryError(f"{path}: expected asv's map of benchmark name -> its metadata")
    return meta


@contextmanager
def _malformed(path: Path) -> Iterator[None]:
    """What asv's reader or ours raises on a result file that is not asv's, as one line naming it."""
    try:
        yield
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError) as exc:
        raise HistoryError(f"{path}: malformed asv results ({type(exc).__name__}: {exc}); expected a file "
                           "`asv run` wrote") from None


def _runs(results: Any, folder: Path) -> list[tuple[Path, Any]]:
    """Every result file of one machine's folder, read by asv, with its path; asv's own iterator
    skips a file it cannot read with a log line only, and lets most errors through as tracebacks."""
    runs = []
    for root, filename, machine in results.iter_results_paths(str(folder)):
        path = Path(root) / filename
        with _malformed(path):
            try:
                run = results.Results.load(str(path), machine_name=machine)
            except results.util.UserError as exc:  # asv's own refusal of a file
                raise ValueError(str(exc)) from None
            if not isinstance(run.date, (int, float, type(None))):
                raise TypeError(f"date {run.date!r} is not a time")
        runs.append((path, run))
    return runs


def load(results_dir: Path) -> list[Series]:
    """Every series of every machine under `results_dir` (asv's results_dir), commits in date order."""
    results, _step_detect = _asv()
    if not (results_dir / "benchmarks.json").exists() or not machines(results_dir):
        raise HistoryError(f"{results_dir}: no asv results here (benchmarks.json and <machine>/machine.json); "
                           "run `asv run` first (README, Tracking performance)")
    meta = _meta(results_dir)
    found: dict[tuple[str, str, str, tuple[str, ...]], Series] = {}
    for machine in machines(results_dir):
        runs = sorted(_runs(results, results_dir / machine), key=lambda pr: pr[1].date or 0)
        envs = {r.env_name for _path, r in runs}
        for path, r in runs:
            with _malformed(path):
                _add_run(found, meta, machine, r, several_envs=len(envs) > 1)
    for series in found.values():
        series.steps = steps_of(series.points)
    return sorted(found.values(), key=lambda s: (s.gpu, s.benchmark, list(s.params.values()), s.line))


def _add_run(found: dict[tuple[str, str, str, tuple[str, ...]], Series], meta: dict[str, dict[str, object]],
             machine: str, r: object, several_envs: bool) -> None:
    """One result file's points, each added to its series (made at its first point)."""
    for name in r.get_all_result_keys():  # type: ignore[attr-defined]
        if name not in meta:
            continue
        params = r.get_result_params(name)  # type: ignore[attr-defined]
        combos = list(itertools.product(*params)) if params else [()]
        values = r.get_result_value(name, params)  # type: ignore[attr-defined]
        stats = r.get_result_stats(name, params) or [None] * len(combos)  # type: ignore[attr-defined]
        for combo, value, stat in zip(combos, values, stats):
            key = (machine, r.env_name, name, tuple(combo))  # type: ignore[attr-defined]
            if key not in found:
                names = meta[name].get("param_names", [])
                found[key] = Series(
                    machine=machine, env=r.env_name if several_envs else "",  # type: ignore[attr-defined]
                    gpu=not machine.endswith("-cpu"), benchmark=name, kind=str(meta[name].get("type", "")),
                    unit=str(meta[name].get("unit", "")),
                    params={n: str(v).strip("'") for n, v in zip(names, combo)}, points=[])  # type: ignore[call-overload]
            stat = stat or {}
            found[key].points.append(Point(commit=r.commit_hash, date=r.date or 0, value=_value(value),  # type: ignore[attr-defined]
                                           q25=_value(stat.get("q_25")), q75=_value(stat.get("q_75"))))
