"""`harness validate`: every refusal at once. The spec's own problems (pydantic's, all of them)
and what the plan refuses (k beyond the matrices, more components than adapters, no CUDA) come
from two passes, and the second needs a valid spec: so the spec is validated again without the
analyses and keys it was refused for (a bad key of [execution] or [benchmark] at its default), and
the plan's problems of what is left join the spec's, under their analyses' own indices."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.data.paths import PathError
from harness.plan.model import PlanError
from harness.run.prepare import RunContext, prepare, prepare_spec
from harness.specs.sections import Spec
from harness.specs.reading import SpecError, read_raw

SECTIONS_AT_DEFAULTS = ("experiment", "execution", "benchmark")  # a bad key there falls back to its default
MAX_PASSES = 50


def _salvaged(raw: dict[str, Any]) -> tuple[Spec, list[int]] | None:
    """The spec without what it was refused for, and each kept analysis' index in the file; None
    when what failed is the data, the experiment or the analyses as a whole."""
    raw = copy.deepcopy(raw)
    kept = list(range(len(raw.get("analysis", []) or [])))
    for _ in range(MAX_PASSES):
        try:
            return Spec.model_validate(raw), kept
        except ValidationError as exc:
            dropped: set[int] = set()
            for error in exc.errors():
                loc = list(error["loc"])
                if len(loc) > 1 and loc[0] == "analysis" and isinstance(loc[1], int):
                    dropped.add(loc[1])
                elif (len(loc) > 1 and loc[0] in SECTIONS_AT_DEFAULTS and isinstance(raw.get(loc[0]), dict)
                      and error["type"] != "missing"):
                    raw[loc[0]].pop(loc[1], None)
                else:
                    return None
            raw["analysis"] = [a for i, a in enumerate(raw["analysis"]) if i not in dropped]
            kept = [k for i, k in enumerate(kept) if i not in dropped]
            if not kept:
                return None
    return None


def _renumbered(line: str, kept: list[int]) -> str:
    return re.sub(r"analysis\[(\d+)\]", lambda m: f"analysis[{kept[int(m.group(1))]}]", line)


def validate(spec_path: str | Path, overrides: list[str]) -> RunContext:
    """The run's context when nothing is refused; else SpecError with every problem: the spec's,
    then what the plan refuses of the parts of it that are valid."""
    try:
        return prepare_spec(spec_path, overrides)
    except SpecError as refused:
        salvaged = _salvaged(read_raw(spec_path, overrides))
        if salvaged is None:
            raise
        spec, kept = salvaged
        try:
            prepare(spec_path, overrides, spec=spec)
        except PlanError as plan:
            raise SpecError(refused.lines + [f"{spec_path}: {_renumbered(line, kept)}" for line in plan.lines]) from None
        except PathError:
            pass  # the data paths were said with the spec's problems, or have none
        raise
