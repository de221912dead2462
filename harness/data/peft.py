"""PEFT adapter directories: each LoRA module's delta dW = scaling * B @ A, kept as factors
(LoHa and LoKr adapters: see harness.data.deltas; scaled alpha / r as PEFT does).

Scaling follows PEFT's LoraLayer: lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora, where
rank_pattern and alpha_pattern override r and alpha per module (matched like PEFT's
get_pattern_key). fan_in_fan_out layers (GPT-2's Conv1D) and embeddings store the transpose,
dW = s * (B @ A).T, which is still a LoRA product: B' = A.T, A' = B.T. Conv LoRA factors are
unfolded (see harness.data.deltas): the delta is the conv's out x (in kh kw) matrix.

Other tensors of the file are whole saved weights: modules_to_save copies (a trained `lm_head`)
and embeddings saved beside embedding LoRAs. With `base`, each weight's delta against the base is
a dense matrix of the workload; without it they are skipped and listed (Source.skipped), as are
vectors (biases, norms), which are not matrices.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.data.checkpoint import INDEX_SUFFIX, Checkpoint, resolve_base
from harness.data.deltas import FactorFileSource, Scan, Weights, full_entry, lora_entry, open_weights
from harness.data.module_keys import module_entry, module_tensors
from harness.data.paths import Entry, FileData, fingerprint_files, name_refs, resolve_paths
from harness.data.paths import unique_names
from harness.data.safetensors_io import TensorInfo, check_readable, is_float
from harness.data.workload import DataError

CONFIG_FILE = "adapter_config.json"
WEIGHTS_FILE = "adapter_model.safetensors"
BIN_FILE = "adapter_model.bin"  # older PEFT saves: read with torch.load(weights_only=True)
PREFIX = "base_model.model."

# <module path>.<kind>[.<adapter name>][.weight|.bias], after the "base_model.model." prefix.
_KINDS = "lora_A|lora_B|lora_embedding_A|lora_embedding_B|lora_magnitude_vector"
_KEY = re.compile(
    rf"(?P<module>.+)\.(?P<kind>{_KINDS})(?:\.(?!weight$|bias$)[^.]+)?(?:\.(?P<param>weight|bias))?"
)
_PARTNER = {"lora_A": "lora_B", "lora_embedding_A": "lora_embedding_B"}
_PARTNER |= {b: a for a, b in _PARTNER.items()}
_ALPHA_FIELD = {"LORA": "lora_alpha", "LOHA": "alpha", "LOKR": "alpha"}  # peft_type -> its alpha
MAX_RANK = 1 << 20  # above any layer's width: a larger rank is a corrupt config, not a LoRA


class PeftData(FileData):
    """`[data] source = "peft"`: `paths` name PEFT LoRA adapter directories (globs allowed)."""

    source: Literal["peft"] = "peft"
    base: str | None = Field(
        None,
        description="the base model's checkpoint (a .safetensors file, a sharded set's "
        f"*{INDEX_SUFFIX}, or a folder holding either): whole saved weights (modules_to_save, "
        "saved embeddings) are analysed as their delta against it; without it they are skipped",
    )


# A rank divides the alpha (its square root with rslora): 0 or a negative one is no rank. A
# non-finite alpha scales every delta to Inf or NaN, which LAPACK answers with pages of errors.
Rank = Annotated[int, Field(gt=0, le=MAX_RANK)]
Alpha = Annotated[float, Field(allow_inf_nan=False)]


class AdapterConfig(BaseModel):
    """The fields of adapter_config.json that fix the deltas; the others are ignored."""

    model_config = ConfigDict(extra="ignore")

    peft_type: str = "LORA"
    r: Rank
    lora_alpha: Alpha | None = None  # LORA's
    alpha: Alpha | None = None  # LOHA's and LOKR's
    use_rslora: bool = False
    use_dora: bool = False
    fan_in_fan_out: bool = False
    rank_pattern: dict[str, Rank] | None = None
    alpha_pattern: dict[str, Alpha] | None = None


def pattern_key(patterns: Sequence[str], module: str) -> str | None:
    """The first pattern naming `module`, as PEFT's get_pattern_key: a regex full-matching the
    module path or a '.'-separated tail of it ('q_proj' names 'model.layers.0.self_attn.q_proj')."""
    return next((p for p in patterns if re.fullmatch(rf"(?:.*\.)?(?:{p})", module)), None)


def problems(error: ValidationError) -> str:
    """A config's validation problems on one line, each as `key.path: message`."""
    return "; ".join(f"{'.'.join(map(str, p['loc']))}: {p['msg']}" for p in error.errors())


def _read_config(path: Path) -> AdapterConfig:
    try:
        config = AdapterConfig.model_validate(json.loads(path.read_text()))
    except FileNotFoundError as e:
        raise DataError(f"{path}: file not found; expected a PEFT adapter directory") from e
    except ValidationError as e:
        raise DataError(f"{path}: {problems(e)}") from e
    except (OSError, ValueError, RecursionError) as e:
        raise DataError(f"{path}: not readable JSON ({e})") from e
    if config.peft_type not in _ALPHA_FIELD:
        raise DataError(f"{path}: peft_type is {config.peft_type!r}; expected one of {', '.join(_ALPHA_FIELD)}")
    if getattr(config, _ALPHA_FIELD[config.peft_type]) is None:
        raise DataError(f"{path}: {_ALPHA_FIELD[config.peft_type]}: required for peft_type {config.peft_type}")
    if config.use_dora:
        raise DataError(f"{path}: use_dora is true; DoRA's delta is not scaled B @ A")
    return config


def lora_scale(config: AdapterConfig, module: str, path: Path) -> tuple[int, float]:
    """(configured rank, scaling) of one module."""
    ranks, alphas = config.rank_pattern or {}, config.alpha_pattern or {}
    try:
        r_key, alpha_key = pattern_key(list(ranks), module), pattern_key(list(alphas), module)
    except re.error as e:
        raise DataError(f"{path}: rank_pattern/alpha_pattern has a bad regex ({e})") from e
    r = ranks[r_key] if r_key is not None else config.r
    alpha = alphas[alpha_key] if alpha_key is not None else getattr(config, _ALPHA_FIELD[config.peft_type])
    return r, alpha / (math.sqrt(r) if config.use_rslora else r)


@dataclass
class _Keys:
    """A file's tensors sorted: LoRA factors by module, LoRA biases, and whole saved weights."""

    lora: dict[str, dict[str, str]]
    biases: list[str]
    whole: list[str]


def _sort_keys(weights: Weights) -> _Keys:
    """Every tensor of the file placed; DoRA and a factor named twice raise."""
    keys = _Keys({}, [], [])
    for name in weights.tensors:
        match = _KEY.fullmatch(name.removeprefix(PREFIX))
        if match is None:
            keys.whole.append(name)
            continue
        if match["param"] == "bias":
            keys.biases.append(name)
            continue
        module, kind = match["module"], match["kind"]
        if kind == "lora_magnitude_vector":
            raise DataError(
                f"{weights.path}: tensor {name!r} is a DoRA magnitude vector; "
                "DoRA's delta is not scaled B @ A"
            )
        kinds = keys.lora.setdefault(module, {})
        if kind in kinds:
            raise DataError(
                f"{weights.path}: tensors {kinds[kind]!r} and {name!r} are both {kind} "
                f"of {module!r}"
            )
        kinds[kind] = name
    return keys


def _factor_names(weights: Weights, kinds: dict[str, str]) -> tuple[str, str, bool]:
    """(A name, B name, is embedding) of one module; a factor without its partner raises."""
    for kind, name in kinds.items():
        if _PARTNER[kind] not in kinds:
            raise DataError(f"{weights.path}: tensor {name!r} has no {_PARTNER[kind]} partner")
    if len(kinds) > 2:
        raise DataError(
            f"{weights.path}: both Linear and Embedding LoRA in {sorted(kinds.values())}"
        )
    if "lora_A" in kinds:
        return kinds["lora_A"], kinds["lora_B"], False
    return kinds["lora_embedding_A"], kinds["lora_embedding_B"], True


def _entry(
    adapter: str,
    module: str,
    kinds: dict[str, str],
    weights: Weights,
    config: AdapterConfig,
    config_path: Path,
) -> Entry:
    """One module's LoRA delta: shapes checked against each other and the configured rank."""
    a_name, b_name, embedding = _factor_names(weights, kinds)
    r, scale = lora_scale(config, module, config_path)
    entry = lora_entry(adapter, module, weights, a_name, b_name, scale, embedding or config.fan_in_fan_out)
    if r != entry.rank:
        raise DataError(
            f"{weights.path}: tensor {a_name!r} has rank {entry.rank}; "
            f"{config_path} configures r = {r} for {module!r}"
        )
    return entry


def _whole_entries(
    adapter: str, weights: Weights, keys: _Keys, base: Checkpoint | None, infos: dict[str, TensorInfo],
    skipped: list[str],
) -> list[Entry]:
    """Deltas of the whole saved weights against the base (whose tensors are `infos`); the
    rest goes to `skipped`."""
    entries = []
    skipped += [f"{weights.path}: {name} (a LoRA bias: a vector, not a matrix)" for name in keys.biases]
    for name in keys.whole:
        info, tensor = weights.tensors[name], name.removeprefix(PREFIX)
        if len(info.shape) < 2 or not is_float(info.dtype):
            skipped.append(f"{weights.path}: {name} ({info.dtype} {list(info.shape)}: not a matrix)")
        elif base is None:
            skipped.append(f"{weights.path}: {name} (a whole saved weight; set `base` to analyse its delta)")
        elif tensor not in infos:
            raise DataError(f"{base.path}: no tensor {tensor!r}, which {weights.path} saves as {name!r}")
        elif infos[tensor].shape != info.shape:
            raise DataError(
                f"{weights.path}: tensor {name!r} has shape {list(info.shape)}, but in the base "
                f"{base.weight_map[tensor]} {tensor!r} has {list(infos[tensor].shape)}"
            )
        else:
            check_readable(base.weight_map[tensor], tensor, infos[tensor])
            module = tensor.removesuffix(".weight")
            module = tensor if module in keys.lora else module  # beside a LoRA of the same layer
            entries.append(full_entry(adapter, module, weights, name, base.weight_map[tensor], tensor))
    return entries


def _configured_scale(config: AdapterConfig, module: str, path: Path, _kind: str, _dim: int | None) -> float:
    """A module's scaling as its config sets it, whatever its kind and dimension (a `Scale`)."""
    return lora_scale(config, module, path)[1]


def _lycoris_entries(
    folder: Path, weights: Weights, config: AdapterConfig, skipped: list[str]
) -> tuple[_Keys, list[Entry]]:
    """A LOHA or LOKR adapter's modules (hada_* / lokr_* tensors), scaled alpha / r as PEFT
    scales them (rank_pattern, alpha_pattern), and its other tensors as whole saved weights."""
    whole: list[str] = []
    modules = module_tensors(weights, skipped, PREFIX, unknown=whole)
    entries = [
        module_entry(folder.name, module, roles, weights,
                     partial(_configured_scale, config, module, folder / CONFIG_FILE))
        for module, roles in modules.items()
    ]
    return _Keys(modules, [], whole), entries


class PeftSource(FactorFileSource):
    """LoRA factors from PEFT adapter directories; the adapter name is the directory name.
    Whole saved weights, analysed against `base`, make the workload dense (has_factors false)."""

    def __init__(self, config: PeftData, base_dir: Path) -> None:
        self.config = config
        self.base_dir = base_dir

    def _dirs(self) -> list[Path]:
        dirs = resolve_paths(self.config.paths, self.base_dir)
        for path in dirs:
            if not path.is_dir():
                raise DataError(
                    f"{path}: not a directory; expected a PEFT adapter directory "
                    f"({CONFIG_FILE} + {WEIGHTS_FILE})"
                )
        unique_names([(path.name, path) for path in dirs])
        return dirs

    def _base(self) -> Checkpoint | None:
        return None if self.config.base is None else resolve_base(self.config.base, self.base_dir)

    def read_headers(self) -> Scan:
        """Every adapter's headers: the refs the filters keep, and what is skipped."""
        entries: list[Entry] = []
        skipped: list[str] = []
        base = self._base()
        infos = base.tensors() if base is not None else {}  # the base's headers, read once
        for folder in self._dirs():
            config = _read_config(folder / CONFIG_FILE)
            weights = open_weights(_weights_file(folder))
            if config.peft_type == "LORA":
                keys = _sort_keys(weights)
                entries += [
                    _entry(folder.name, module, kinds, weights, config, folder / CONFIG_FILE)
                    for module, kinds in keys.lora.items()
                ]
            else:
                keys, lyco = _lycoris_entries(folder, weights, config, skipped)
                entries += lyco
            if not keys.lora:
                raise DataError(f"{weights.path}: no {config.peft_type} factor tensors found")
            entries += _whole_entries(folder.name, weights, keys, base, infos, skipped)
        return Scan(self.config.select(name_refs(entries)), skipped)

    def fingerprint(self) -> str:
        files = [folder / name for folder in self._dirs() for name in (CONFIG_FILE, _weights_file(folder).name)]
        base = self._base()
        return fingerprint_files(self.config, files + (base.files if base is not None else []))


def _weights_file(folder: Path) -> Path:
    """adapter_model.safetensors, else an older save's adapter_model.bin."""
    if not (folder / WEIGHTS_FILE).exists() and (folder / BIN_FILE).exists():
        return folder / BIN_FILE
    return folder / WEIGHTS_FILE
