"""Stable Diffusion LoRA files: the kohya-ss / sd-scripts layout (LoRA, LoCon, and LyCORIS's
LoHa, LoKr and full `diff`) and diffusers' own layouts, read from one .safetensors per adapter.

kohya-ss: `lora_unet_<path>.lora_down.weight`, `.lora_up.weight` and `.alpha` (`lora_te_`,
`lora_te1_`, `lora_te2_` for text encoders); scale alpha / rank, 1 without an alpha. LyCORIS adds
`.hada_w{1,2}_{a,b}` (LoHa), `.lokr_w{1,2}[_a|_b]` (LoKr) and `.diff` (the delta itself).
diffusers: `unet.<path>.lora_A.weight` / `.lora_B.weight` (older: `.lora.down.weight`,
`.lora_linear_layer.down.weight`, and `.up`); the scale is lora_alpha / r (rank_pattern,
alpha_pattern and use_rslora as PEFT) from the `lora_adapter_metadata` diffusers saves, else 1.
Which layout a module uses is read from its keys; a key of neither layout is an error naming it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from harness.data.checkpoint import find_index, single_file
from harness.data.deltas import FactorFileSource, Scan, Weights
from harness.data.module_keys import module_entry, module_tensors
from harness.data.paths import Entry, FileData, fingerprint_files, name_refs, resolve_paths, unique_names
from harness.data.peft import AdapterConfig, lora_scale, problems
from harness.data.safetensors_io import SafetensorsFile
from harness.data.workload import DataError

METADATA_KEY = "lora_adapter_metadata"  # diffusers: "<component>.lora_alpha" etc., JSON


class KohyaData(FileData):
    """`[data] source = "kohya"`: `paths` name LoRA .safetensors files (kohya-ss or diffusers
    layout), or folders holding one; the adapter name is the file's stem or the folder's name."""

    source: Literal["kohya"] = "kohya"


def _alpha(weights: Weights, roles: dict[str, str]) -> float | None:
    if "alpha" not in roles:
        return None
    value = weights.read(roles["alpha"])
    if value.size != 1:
        raise DataError(f"{weights.path}: tensor {roles['alpha']!r} has shape {list(value.shape)}; expected a scalar")
    return float(value.reshape(()))


def _metadata_configs(weights: SafetensorsFile) -> dict[str, AdapterConfig]:
    """diffusers' saved LoRA configs by component (unet, text_encoder, ...), if the file has them."""
    path, metadata = weights.path, weights.metadata or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise DataError(f"{path}: not a readable safetensors file (__metadata__ is not a map of strings)")
    text = metadata.get(METADATA_KEY)
    if text is None:
        return {}
    try:
        flat = json.loads(text)
        by_component: dict[str, dict[str, object]] = {}
        for key, value in flat.items():
            component, _, field = key.rpartition(".")
            by_component.setdefault(component, {})[field] = value
        return {c: AdapterConfig.model_validate(fields) for c, fields in by_component.items()}
    except ValidationError as e:
        raise DataError(f"{path}: metadata {METADATA_KEY!r}: {problems(e)}") from e
    except (ValueError, AttributeError, RecursionError) as e:
        raise DataError(f"{path}: metadata {METADATA_KEY!r} is not diffusers' LoRA config JSON ({e})") from e


def lyco_scale(alpha: float | None, dim: int | None) -> float:
    """alpha / dim, dim the rank of the factored part; 1 without an alpha or with no factored
    part, as sd-scripts, LyCORIS and ComfyUI apply a file."""
    return alpha / dim if alpha and dim else 1.0


def _entry(adapter: str, module: str, roles: dict[str, str], weights: Weights,
           configs: dict[str, AdapterConfig]) -> Entry:
    """One module's delta; a diffusers LoRA without an alpha tensor takes its component's
    saved lora_alpha / r."""
    alpha = _alpha(weights, roles)
    component, _, inner = module.partition(".")

    def scale(kind: str, dim: int | None) -> float:
        if kind == "lora" and alpha is None and component in configs:
            return lora_scale(configs[component], inner, weights.path)[1]
        return lyco_scale(alpha, dim)

    return module_entry(adapter, module, roles, weights, scale)


class KohyaSource(FactorFileSource):
    """LoRA, LoCon and LoHa deltas as factors, LoKr as Kronecker factors, `diff` dense."""

    def __init__(self, config: KohyaData, base_dir: Path) -> None:
        self.config = config
        self.base_dir = base_dir

    def _files(self) -> list[tuple[str, Path]]:
        """(adapter name, file) of each path: a .safetensors file, or a folder holding one."""
        found = []
        for path in resolve_paths(self.config.paths, self.base_dir):  # no header read here
            if find_index(path) is not None:
                raise DataError(f"{path}: a sharded set; expected one LoRA .safetensors file")
            found.append((path.stem, path) if path.is_file() else (path.name, single_file(path)))
        unique_names(found)
        return found

    def read_headers(self) -> Scan:
        entries: list[Entry] = []
        skipped: list[str] = []
        for adapter, path in self._files():
            weights = SafetensorsFile(path)
            modules = module_tensors(weights, skipped)
            if not modules:
                raise DataError(f"{path}: no LoRA, LoHa, LoKr or diff tensors found")
            configs = _metadata_configs(weights)
            entries += [_entry(adapter, module, roles, weights, configs) for module, roles in modules.items()]
        return Scan(self.config.select(name_refs(entries)), skipped)

    def fingerprint(self) -> str:
        return fingerprint_files(self.config, [path for _, path in self._files()])

