"""A sweep's points: the spec's `[sweep]` table as one or two axes (a spec key over a list of
values), and each combination of their values as the overrides that make it an ordinary spec
(`--set key=value` for each, and `sweep={}`). The engine runs each point as it runs any spec; it
never learns it is one. Every point's spec is validated here, every problem at once."""

from __future__ import annotations

import copy
import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from harness.specs.reading import SpecError, key_parts, leaves, read_raw, set_key, unsettable, validate_raw

MAX_AXES = 2  # a sweep is a line or a grid: more axes multiply points past any budget
MAX_POINTS = 64
SWEEP_OFF = "sweep={}"  # the override that makes a point's spec an ordinary one


class SweepPoint(BaseModel):
    """One combination of the axes' values, in the order the axes are given."""

    values: dict[str, Any]

    @property
    def label(self) -> str:
        """`data.adapters=4, data.rank=8`: as `--set` takes it."""
        return ", ".join(f"{key}={json.dumps(value, separators=(',', ':'))}" for key, value in self.values.items())

    @property
    def slug(self) -> str:
        """The point's run folder's name: `adapters-4_rank-8`."""
        words = [f"{re.sub(r'[^A-Za-z0-9]+', '-', key.rsplit('.', 1)[-1])}-{_plain(value)}"
                 for key, value in self.values.items()]
        return "_".join(words)

    def overrides(self) -> list[str]:
        return [*(f"{key}={json.dumps(value)}" for key, value in self.values.items()), SWEEP_OFF]


def _plain(value: Any) -> str:
    return "x".join(map(str, value)) if isinstance(value, list) else re.sub(r"[^A-Za-z0-9.]+", "-", str(value))


def _value_problem(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, list)):
        return f"{value!r} is not a number or a shape"
    if isinstance(value, list) and not (value and all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                                                      for v in value)):
        return f"{value!r} is not a shape (whole numbers above 0)"
    if not isinstance(value, list) and not (math.isfinite(value) and value > 0):
        return f"{value!r}: a swept size is a positive number"
    return None


def sweep_axes(table: dict[str, Any]) -> dict[str, list[Any]]:
    """The axes of a `[sweep]` table; SpecError lines (without the file) for what it gets wrong."""
    axes, problems = leaves(table, lists=False), []  # `data.adapters = [...]` is nested tables in TOML
    for key, values in axes.items():
        if key.split(".")[0].split("[")[0] in ("sweep", "experiment"):
            problems.append(f"sweep.{key}: a sweep's points share the experiment; sweep [data], [[analysis]], "
                            "[execution] or [benchmark] keys")
        elif not isinstance(values, list) or len(values) < 2:
            problems.append(f"sweep.{key}: expected a list of two values or more, e.g. [4, 8, 16]")
        elif len({json.dumps(v) for v in values}) < len(values):
            problems.append(f"sweep.{key}: each value at most once")
        else:
            problems += [f"sweep.{key}: {p}" for p in map(_value_problem, values) if p]
    if len(axes) > MAX_AXES:
        problems.append(f"sweep: {len(axes)} keys ({', '.join(axes)}); a sweep has one or two")
    elif not problems and math.prod(len(v) for v in axes.values()) > MAX_POINTS:
        problems.append(f"sweep: {math.prod(len(v) for v in axes.values())} points; at most {MAX_POINTS}")
    if problems:
        raise SpecError(problems)
    return axes


def sweep_points(spec_path: str | Path, overrides: list[str] | None = None) -> list[SweepPoint] | None:
    """The points of the spec's sweep, each one's spec valid; None when it has no `[sweep]`.
    SpecError with every problem: one a line, and a problem only some points have names them."""
    raw = read_raw(spec_path, overrides)
    table = raw.get("sweep")
    if not table:
        return None
    if not isinstance(table, dict):
        raise SpecError([f"{spec_path}: sweep: expected a table, e.g. [sweep] data.adapters = [4, 8, 16]"])
    try:
        axes = sweep_axes(table)
    except SpecError as exc:
        raise SpecError([f"{spec_path}: {line}" for line in exc.lines]) from None
    if clashes := _swept_overrides(axes, overrides or []):
        raise SpecError([f"{spec_path}: {line}" for line in clashes])
    points = [SweepPoint(values=dict(zip(axes, combo))) for combo in itertools.product(*axes.values())]
    found: dict[str, list[SweepPoint]] = {}
    for point in points:
        for line in _point_problems(spec_path, raw, point):
            found.setdefault(line, []).append(point)
    if found:
        raise SpecError(shared_problems(spec_path, found, len(points)))
    return points


def _swept_overrides(axes: dict[str, list[Any]], overrides: list[str]) -> list[str]:
    """A line for each `--set` of a swept key (or of a table holding one): each point sets its own
    value over it, so the override would be ignored; `harness run` and `plan` refuse it alike."""
    lines = []
    for item in overrides:
        key = key_parts(item.partition("=")[0])
        for axis, values in axes.items():
            swept = key_parts(axis)
            if key[:len(swept)] == swept or swept[:len(key)] == key:
                shown = ", ".join(json.dumps(v, separators=(",", ":")) for v in values)
                lines.append(f"--set {item!r}: {axis} is swept ({shown}), each point setting its own value; for "
                             f"one point add --set {SWEEP_OFF}, or set the points with --set 'sweep.{axis}=[...]'")
    return lines


def _point_problems(spec_path: str | Path, raw: dict[str, Any], point: SweepPoint) -> list[str]:
    """`key: message` of each problem of the point's spec (its file's TOML, its values set)."""
    mine = copy.deepcopy(raw)
    mine["sweep"] = {}
    lines = [f"sweep.{key}: {unsettable(mine, key)}" for key, value in point.values.items()
             if not set_key(mine, key, value)]
    if lines:
        return lines
    try:
        validate_raw(spec_path, mine)
    except SpecError as exc:
        return [line.removeprefix(f"{spec_path}: ") for line in exc.lines]
    return []


def shared_problems(spec_path: str | Path, found: dict[str, list[SweepPoint]], total: int) -> list[str]:
    """One line a problem: plain where every point has it, else naming the first point that does."""
    return [f"{spec_path}: {line}" if len(points) == total or line.startswith("sweep.")
            else f"{spec_path}: at {points[0].label}{_others(len(points))}: {line}"
            for line, points in found.items()]


def _others(count: int) -> str:
    return f" (and {count - 1} more points)" if count > 1 else ""
