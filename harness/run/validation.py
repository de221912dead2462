"""`harness validate`: every refusal at once. The spec's own problems (pydantic's, all of them)
and what the plan refuses (k beyond the matrices, more components than adapters, no CUDA) come
from two passes, and the second needs a valid spec: so the spec is validated again without the
analyses and keys it was refused for (a bad key of [data], [execution], [benchmark] or of an analysis
at its default; an analysis whose op is unknown dropped), and the plan's problems of what is left
join the spec's, under their analyses' own indices: those a key already said, or that name a key
now at its default (it would quote the default), left out."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.data.paths import PathError
from harness.plan.model import PlanError
from harness.run.prepare import RunContext, prepare, prepare_spec
from harness.specs.sections import Spec
from harness.specs.reading import SpecError, in_file_order, labels, located, problem_key, read_overridden

SECTIONS_AT_DEFAULTS = ("experiment", "execution", "benchmark")  # a bad key there falls back to its default
MAX_PASSES = 50


@dataclass
class Salvage:
    """The spec's TOML being cut down to what validates: each kept analysis' index in the file, and
    the keys set back to their defaults (a plan refusal naming one would quote the default)."""

    raw: dict[str, Any]
    kept: list[int]
    defaulted: set[str] = field(default_factory=set)

    def drop(self, error: Any, dropped: set[int]) -> bool:
        """Set the key `error` is about back to its default, or mark its analysis to be dropped;
        False when what failed is the experiment's name, the data as a whole or the analyses."""
        loc, missing = list(error["loc"]), error["type"] == "missing"
        if len(loc) > 1 and loc[0] == "analysis" and isinstance(loc[1], int):
            analysis = self.raw["analysis"][loc[1]]
            if len(loc) == 4 and not missing and isinstance(analysis, dict) and loc[3] != "op":
                analysis.pop(loc[3], None)  # a k or components it needs is then missing: the analysis goes
            else:
                dropped.add(loc[1])
            return True
        section = loc[0] if loc[0] in SECTIONS_AT_DEFAULTS or loc[0] == "data" and len(loc) == 3 else None
        if missing or len(loc) < 2 or section is None or not isinstance(self.raw.get(section), dict):
            return False
        key = str(loc[-1] if section == "data" else loc[1])
        self.raw[section].pop(key, None)
        self.defaulted.add(key)
        return True

    def worded(self, line: str) -> str:
        """A plan refusal in the spec's own terms: a shape group's label quotes its rank
        (`48x32r16`), which is the default's when the rank was refused (the spec said 100)."""
        return re.sub(r"\b(\d+x\d+)r\d+\b", r"\1", line) if "rank" in self.defaulted else line

    def said(self, line: str) -> bool:
        """Whether a plan refusal may be said: not one about a value now at its default."""
        words = set(re.findall(r"[a-z_]+", line.split(": ", 1)[-1]))
        return not any(key in words or set(key.split("_")) <= words for key in self.defaulted)


def _salvaged(raw: dict[str, Any]) -> tuple[Spec, Salvage] | None:
    """The spec without what it was refused for: a bad key at its default, an analysis with a bad
    op dropped; None when what failed is the data source, the experiment's name or every analysis."""
    salvage = Salvage(copy.deepcopy(raw), list(range(len(raw.get("analysis", []) or []))))
    for _ in range(MAX_PASSES):
        try:
            return Spec.model_validate(salvage.raw), salvage
        except ValidationError as exc:
            dropped: set[int] = set()
            if not all(salvage.drop(error, dropped) for error in exc.errors()):
                return None
            salvage.raw["analysis"] = [a for i, a in enumerate(salvage.raw["analysis"]) if i not in dropped]
            salvage.kept = [k for i, k in enumerate(salvage.kept) if i not in dropped]
            if not salvage.kept:
                return None
    return None


def _renumbered(line: str, kept: list[int]) -> str:
    return re.sub(r"analysis\[(\d+)\]", lambda m: f"analysis[{kept[int(m.group(1))]}]", line)


def validate(spec_path: str | Path, overrides: list[str]) -> RunContext:
    """The run's context when nothing is refused; else SpecError with every problem: the spec's,
    then what the plan refuses of the parts of it that are valid. `validate`, `plan`, `run` and a
    sweep's points all prepare through it, so each lists the same problems (plan once left out
    the k beyond a group that validate said)."""
    try:
        return prepare_spec(spec_path, overrides)
    except SpecError as refused:
        raise every_problem(spec_path, overrides, refused) from None


def every_problem(spec_path: str | Path, overrides: list[str], refused: SpecError) -> SpecError:
    """`refused` (the spec's own problems) with what the plan refuses of its valid parts."""
    raw, origins = read_overridden(spec_path, overrides)
    salvaged = _salvaged(raw)
    if salvaged is None:
        return refused
    spec, salvage = salvaged
    try:
        prepare(spec_path, overrides, spec=spec)
    except PlanError as plan:
        named = labels(spec_path, origins)
        said = {problem_key(line, named) for line in refused.lines}  # a key's own first
        more = [line for line in (salvage.worded(_renumbered(line, salvage.kept)) for line in plan.lines)
                if salvage.said(line) and line.split(": ")[0] not in said]
        return SpecError(in_file_order(refused.lines + located(spec_path, origins, more), raw, named))
    except PathError:
        pass  # the data paths were said with the spec's problems, or have none
    return refused
