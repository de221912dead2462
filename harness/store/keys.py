"""The keys of one run's cache entries: what determines a chunk's numbers, a timing, a float64
reference or a step's product, down to a fingerprint of the code that computes them.

The fingerprint is derived from the packages whose code determines numbers and timings
(NUMERIC_PACKAGES): every module they contain, whatever its name, so a move or a new module
can never leave it stale. An edit there invalidates the store while harness.__version__ stays
the same (an editable install under development)."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness
from harness.machine.info import MachineInfo
from harness.plan.model import Step
from harness.store.cache import cache_key

NUMERIC_PACKAGES = ("compute", "strategies", "linalg", "data", "bench")
# timings depend on those and on how the phase takes them (run/: rounds, what a round loads)
TIMING_PACKAGES = (*NUMERIC_PACKAGES, "run")


def numeric_modules(packages: tuple[str, ...] = NUMERIC_PACKAGES) -> list[Path]:
    """Every module of `packages`, sorted; a package that is gone is an error, not a fingerprint
    over nothing."""
    root = Path(harness.__file__).parent
    found = []
    for name in packages:
        package = root / name
        if not (package / "__init__.py").is_file():
            raise RuntimeError(f"harness.{name} is listed in NUMERIC_PACKAGES but is not a package")
        found.extend(sorted(package.rglob("*.py")))
    return found


@functools.cache
def source_digest(packages: tuple[str, ...] = NUMERIC_PACKAGES) -> str:
    """SHA-256 over the modules of `packages` (path and content): NUMERIC_PACKAGES for numbers,
    TIMING_PACKAGES for the rounds pooled across runs."""
    root = Path(harness.__file__).parent
    digest = hashlib.sha256()
    for file in numeric_modules(packages):
        digest.update(str(file.relative_to(root)).encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


def versions(machine: MachineInfo) -> dict[str, str | None]:
    """The software that computed an entry; any change is a miss."""
    return {
        "harness": machine.harness,
        "harness_source": source_digest(),
        "numpy": machine.numpy,
        "scipy": machine.scipy,
        "torch": machine.torch,
        "python": machine.python,
    }


def entry_label(problem: str, strategy: str, ids: Sequence[str]) -> str:
    """What a cached verdict checked or a chunk computed, as `cache ls` shows it beside its kind: the
    matrix it names first and how many more (walk 14: three `verdict of svdvals by numpy on 1 of
    3072x768r16` rows read alike), short enough for a line at 100 columns (walk 16: a chunk's
    `spectrum: svdvals by factored, 1064 from adapter00/layer0/mlp_down` wrapped)."""
    more = f" +{len(ids) - 1}" if len(ids) > 1 else ""
    return f"{problem} by {strategy} on {ids[0]}{more}"


@dataclass(frozen=True)
class Keys:
    """The keys of one run's entries: each covers what determines its numbers. Timings are not
    cached here: their rounds are pooled per machine (machine.measurements)."""

    dtype: str
    seed: int
    workload: str  # Workload.fingerprint()
    machine: MachineInfo

    def _base(self, step: Step) -> dict[str, Any]:
        return {"op": step.op, "k": step.k, "dtype": self.dtype, "seed": self.seed,
                "workload": self.workload, "versions": versions(self.machine)}

    def chunk(self, step: Step, ids: Sequence[str]) -> str:
        return cache_key({**self._base(step), "entry": "chunk", "strategy": step.strategy,
                          "device": step.device, "precision": step.precision, "ids": list(ids)})

    def verification(self, step: Step, strategy: str, device: str, group: str, ids: Sequence[str],
                     precision: str = "", compiled: bool = False) -> str:
        """A strategy's verdict (at a numeric precision, eager or compiled) on the matrices `ids`
        of one group: its numbers, not its timing, so neither the budget, the threads nor the
        wisdom are in the key."""
        return cache_key({**self._base(step), "entry": "verification", "strategy": strategy, "device": device,
                          "precision": precision, "compiled": compiled, "tolerance": step.tolerance,
                          "group": group, "ids": list(ids)})

    def reference(self, kind: str, name: str) -> str:
        """A float64 reference (`values` of a matrix, `gram` of a position): only the data and
        the code that computed it matter, not the step."""
        return cache_key({"entry": "reference", "kind": kind, "name": name, "workload": self.workload,
                          "seed": self.seed, "versions": versions(self.machine)})

    def arrays(self, key: str) -> str:
        """The key of the arrays stored beside the entry `key` (a PCA's): a hash of its own, so that
        no key begins another and `cache ls` tells every entry apart by a prefix (walk 16: a PCA and
        its arrays, keyed `key` and `key-arrays`, both shortened to the same 8 digits)."""
        return cache_key({"entry": "arrays", "beside": key})

    def step(self, step: Step, entry: str, **settings: Any) -> str:
        """A whole step's product (features, a PCA's arrays): the step as planned, less what
        only the benchmark, the plan's wording or how the work is spread over workers depends on,
        plus the settings."""
        planned = step.model_dump(mode="json", exclude={"timed", "skipped", "candidates", "reason", "estimate_s",
                                                        "tasks"})
        return cache_key({**self._base(step), "entry": entry, "step": planned, "settings": settings})
