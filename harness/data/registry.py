"""The `[data]` sources by name: their config models and how each becomes a Source."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from harness.data.synthetic import SyntheticData, SyntheticSource
from harness.data.workload import Source

DataConfig = Annotated[SyntheticData, Field(discriminator="source")]

DATA_MODELS: dict[str, type[BaseModel]] = {"synthetic": SyntheticData}

_BUILDERS: dict[str, Callable[[BaseModel, int, Path], Source]] = {
    "synthetic": lambda config, seed, _base: SyntheticSource(config, seed),  # type: ignore[arg-type]
}


def build_source(config: BaseModel, seed: int, base_dir: Path) -> Source:
    """The Source for a validated `[data]` table; file paths resolve against base_dir."""
    return _BUILDERS[config.source](config, seed, base_dir)  # type: ignore[attr-defined]
