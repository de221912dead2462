"""The `[data]` sources by name: their config models and how each becomes a Source."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field

from harness.data.arrays import ArraysData, ArraysSource
from harness.data.checkpoint import CheckpointData, CheckpointSource
from harness.data.kohya import KohyaData, KohyaSource
from harness.data.peft import PeftData, PeftSource
from harness.data.synthetic import SyntheticData, SyntheticSource
from harness.data.workload import Source

DataConfig = Annotated[
    SyntheticData | PeftData | KohyaData | CheckpointData | ArraysData, Field(discriminator="source")
]

DATA_MODELS: dict[str, type[BaseModel]] = {
    "synthetic": SyntheticData,
    "peft": PeftData,
    "kohya": KohyaData,
    "checkpoint": CheckpointData,
    "arrays": ArraysData,
}

_BUILDERS: dict[str, Callable[[Any, int, Path], Source]] = {
    "synthetic": lambda config, seed, _base: SyntheticSource(config, seed),
    "peft": lambda config, _seed, base: PeftSource(config, base),
    "kohya": lambda config, _seed, base: KohyaSource(config, base),
    "checkpoint": lambda config, _seed, base: CheckpointSource(config, base),
    "arrays": lambda config, _seed, base: ArraysSource(config, base),
}


def build_source(config: BaseModel, seed: int, base_dir: Path) -> Source:
    """The Source for a validated `[data]` table; file paths resolve against base_dir."""
    return _BUILDERS[config.source](config, seed, base_dir)  # type: ignore[attr-defined]
