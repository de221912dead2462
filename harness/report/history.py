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
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from harness.base.bounded import read_capped

SIGNED_UNITS = {"exponent"}  # a fitted cost exponent: below 0 (cost blind to the work, noise) is legitimate
STEP_THRESHOLD = 0.05  # asv's default `regressions_thresholds`: smaller steps are not marked
RESULTS_CAP = 64 << 20  # bytes of benchmarks.json or a result file: asv's are kilobytes
MAX_CORES = 1 << 16  # a machine.json's num_cpu above this is no core count


class HistoryError(ValueError):
    """No asv results where they were looked for."""


class Point(BaseModel):
    commit: str
    date: int  # the commit's date, ms since the epoch: the axis' order
    value: float | None  # None: failed, skipped or not run at this commit
    q25: float | None = None
    q75: float | None = None
    samples: int | None = None  # asv's stats "repeat": timings taken; None where it keeps none (tracks)


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
    least_samples: int = 1  # the timings a run without --quick takes of a point at least (_least_samples)
    cores: int | None = None  # the machine's, from its machine.json (num_cpu); None: not told
    steps: list[Step] = []

    @property
    def line(self) -> str:
        """The machine, and its environment when it has several."""
        return self.machine if not self.env else f"{self.machine} ({self.env})"


def _count(x: object) -> int | None:
    """`x` where it is a count (a positive int, as asv writes them), else None: asv's files are data."""
    return x if isinstance(x, int) and not isinstance(x, bool) and x > 0 else None


def _least_samples(meta: dict[str, object]) -> int:
    """The timings a plain `asv run` takes of each point of a time benchmark at least: each of its
    `rounds` takes `repeat` (an int; 0, asv's default, at least 1; or (min, max, seconds)), which
    --quick makes 1 and 1. 1 where that cannot be told: then one sample is no sign of --quick."""
    if meta.get("type") != "time":
        return 1
    repeat = meta.get("repeat")
    least = repeat[0] if isinstance(repeat, list) and repeat else repeat
    return (_count(meta.get("rounds")) or 1) * (_count(least) or 1)


def _asv() -> tuple[object, object]:
    try:
        from asv import results, step_detect
    except ImportError:
        raise HistoryError("harness history reads asv's results with asv: pip install 'spectral-harness[bench]'") from None
    return results, step_detect


def machines(results_dir: Path) -> list[str]:
    return sorted(p.parent.name for p in results_dir.glob("*/machine.json"))


def machine_cores(folder: Path) -> int | None:
    """The CPU count `asv machine` wrote in the folder's machine.json (num_cpu, a string of digits
    or an int); None where the file or the value is not that: a load is then said without its cores."""
    path = folder / "machine.json"
    if _unreadable(path) is not None:
        return None
    try:
        found = json.loads(read_capped(path, RESULTS_CAP))
    except (OSError, ValueError, RecursionError):
        return None
    n = found.get("num_cpu") if isinstance(found, dict) else None
    if isinstance(n, str) and n.isascii() and n.isdigit() and len(n) <= 6:
        n = int(n)
    return n if (n := _count(n)) is not None and n <= MAX_CORES else None


def _absent(x: object) -> bool:
    """asv's "not measured": null (failed) or NaN (skipped)."""
    return x is None or isinstance(x, float) and math.isnan(x)


def _value(x: object, signed: bool = False) -> float | None:
    """`x` where it is a number the history can use, else None: finite (an infinite value grew
    asv's step fit's memory without bound), and unless `signed`, 0 or a normal float above it, so
    that it can be drawn on a log axis and inverted (a time ratio is 1 / speedup; 1e-320 inverts to inf)."""
    if not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x):
        return None
    usable = signed or x == 0 or sys.float_info.min <= x
    return float(x) if usable else None


def _unreadable(path: Path) -> str | None:
    """Why `path` must not be opened as asv's JSON: not a regular file (a FIFO blocks its reader
    forever, a device never ends), or larger than RESULTS_CAP; None when it may."""
    try:
        found = path.stat()
    except OSError as exc:
        return f"not readable ({exc.strerror})"
    if not stat.S_ISREG(found.st_mode):
        return "not a regular file"
    return f"{found.st_size:,} bytes, over {RESULTS_CAP:,}" if found.st_size > RESULTS_CAP else None


def skipped_line(skipped: list[str]) -> str:
    """The warning for everything `load` left out, as one line: how many, and the first."""
    more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
    return f"warning: {len(skipped)} asv result{'s' if len(skipped) > 1 else ''} skipped: {skipped[0]}{more}"


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
    if (why := _unreadable(path)) is not None:
        raise HistoryError(f"{path}: {why}; expected asv's benchmark metadata")
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


def _runs(results: Any, folder: Path, skipped: list[str]) -> list[tuple[Path, Any]]:
    """Every result file of one machine's folder (named for the machine, as `asv run` writes
    it), read by asv, with its path; what is no regular file, or too large, is skipped (asv's
    own iterator opens every file, machine.json first, and a FIFO there blocked it forever)."""
    runs = []
    for path in sorted(folder.glob("*.json")):
        if path.name in ("machine.json", "benchmarks.json"):
            continue
        if (why := _unreadable(path)) is not None:
            skipped.append(f"{path}: {why}")
            continue
        with _malformed(path):
            try:
                run = results.Results.load(str(path), machine_name=folder.name)
            except results.util.UserError as exc:  # asv's own refusal of a file
                raise ValueError(str(exc)) from None
            if not isinstance(run.date, (int, float, type(None))):
                raise TypeError(f"date {run.date!r} is not a time")
        runs.append((path, run))
    return runs


def load(results_dir: Path, skipped: list[str] | None = None) -> list[Series]:
    """Every series of every machine under `results_dir` (asv's results_dir), commits in date order.
    asv's results are data: a file that is no regular file or too large, and a value that is no
    usable number (_value), are left out and named in `skipped` ("file: why")."""
    skipped = [] if skipped is None else skipped
    results, _step_detect = _asv()
    if not (results_dir / "benchmarks.json").exists() or not machines(results_dir):
        # plain words first, asv's file names last; what the recording costs (walk 24: asv jargon, no time)
        raise HistoryError(f"{results_dir}: no benchmark history yet: `harness history` draws the results asv "
                           "recorded, and none are here. Record this commit's (about 5 minutes on 2 busy cores; "
                           "docs/tracking.md, The workflow): `M=\"$(harness asv-machine)\"; asv machine --yes "
                           "--machine \"$M\"`, then `asv run --machine \"$M\" --python=same --quick --set-commit-hash "
                           "\"$(git rev-parse HEAD)\"` (asv writes benchmarks.json and <machine>/machine.json here)")
    meta = _meta(results_dir)
    found: dict[tuple[str, str, str, tuple[str, ...]], Series] = {}
    for machine in machines(results_dir):
        runs = sorted(_runs(results, results_dir / machine, skipped), key=lambda pr: pr[1].date or 0)
        envs = {r.env_name for _path, r in runs}
        cores = machine_cores(results_dir / machine)
        for path, r in runs:
            with _malformed(path):
                left_out = _add_run(found, meta, machine, r, several_envs=len(envs) > 1, cores=cores)
            skipped += [f"{path}: {what}" for what in left_out]
    for series in found.values():
        series.steps = steps_of(series.points)
    return sorted(found.values(), key=lambda s: (s.gpu, s.benchmark, list(s.params.values()), s.line))


def _add_run(found: dict[tuple[str, str, str, tuple[str, ...]], Series], meta: dict[str, dict[str, object]],
             machine: str, r: object, several_envs: bool, cores: int | None = None) -> list[str]:
    """One result file's points, each added to its series (made at its first point); a value
    that is no usable number is taken as not measured. What was left out, a line each."""
    left_out = []
    for name in r.get_all_result_keys():  # type: ignore[attr-defined]
        if name not in meta:
            continue
        params = r.get_result_params(name)  # type: ignore[attr-defined]
        combos = list(itertools.product(*params)) if params else [()]
        values = r.get_result_value(name, params)  # type: ignore[attr-defined]
        stats = r.get_result_stats(name, params) or [None] * len(combos)  # type: ignore[attr-defined]
        for combo, value, spread in zip(combos, values, stats):
            key = (machine, r.env_name, name, tuple(combo))  # type: ignore[attr-defined]
            if key not in found:
                names = meta[name].get("param_names", [])
                found[key] = Series(
                    machine=machine, env=r.env_name if several_envs else "",  # type: ignore[attr-defined]
                    gpu=not machine.endswith("-cpu"), benchmark=name, kind=str(meta[name].get("type", "")),
                    unit=str(meta[name].get("unit", "")),
                    params={n: str(v).strip("'") for n, v in zip(names, combo)}, points=[],  # type: ignore[call-overload]
                    least_samples=_least_samples(meta[name]), cores=cores)
            signed = found[key].unit in SIGNED_UNITS
            if _value(value, signed) is None and not _absent(value):
                expected = "a finite number" if signed else f"0 or a finite number from {sys.float_info.min:.3g} up"
                left_out.append(f"{name}({', '.join(map(str, combo))}) = {value!r}, expected {expected}")
            spread = spread or {}
            found[key].points.append(Point(commit=r.commit_hash, date=r.date or 0, value=_value(value, signed),  # type: ignore[attr-defined]
                                           q25=_value(spread.get("q_25"), signed), q75=_value(spread.get("q_75"), signed),
                                           samples=_count(spread.get("repeat"))))
    return left_out
