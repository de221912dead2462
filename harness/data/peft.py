"""PEFT LoRA adapter directories: each module's delta dW = scaling * B @ A, kept as factors.

Scaling follows PEFT's LoraLayer: lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora, where
rank_pattern and alpha_pattern override r and alpha per module (matched like PEFT's
get_pattern_key). fan_in_fan_out layers (GPT-2's Conv1D) and embeddings store the transpose,
dW = s * (B @ A).T, which is still a LoRA product: B' = A.T, A' = B.T.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.data.paths import Entry, FileData, fingerprint_files, name_refs, resolve_paths
from harness.data.paths import one_shape, unique_names
from harness.data.safetensors_io import SafetensorsFile
from harness.data.workload import DataError, Factors, MatrixRef, Source

CONFIG_FILE = "adapter_config.json"
WEIGHTS_FILE = "adapter_model.safetensors"

# <module path>.<kind>[.<adapter name>][.weight|.bias], after the "base_model.model." prefix.
_KINDS = "lora_A|lora_B|lora_embedding_A|lora_embedding_B|lora_magnitude_vector"
_KEY = re.compile(
    rf"(?P<module>.+)\.(?P<kind>{_KINDS})(?:\.(?!weight$|bias$)[^.]+)?(?:\.(?P<param>weight|bias))?"
)
_PARTNER = {"lora_A": "lora_B", "lora_embedding_A": "lora_embedding_B"}
_PARTNER |= {b: a for a, b in _PARTNER.items()}


class PeftData(FileData):
    """`[data] source = "peft"`: `paths` name PEFT LoRA adapter directories (globs allowed)."""

    source: Literal["peft"] = "peft"


class _AdapterConfig(BaseModel):
    """The fields of adapter_config.json that fix the deltas; the others are ignored."""

    model_config = ConfigDict(extra="ignore")

    peft_type: str = "LORA"
    r: int = Field(gt=0)
    lora_alpha: float
    use_rslora: bool = False
    use_dora: bool = False
    fan_in_fan_out: bool = False
    rank_pattern: dict[str, int] | None = None
    alpha_pattern: dict[str, float] | None = None


def pattern_key(patterns: Sequence[str], module: str) -> str | None:
    """The first pattern naming `module`, as PEFT's get_pattern_key: a regex full-matching the
    module path or a '.'-separated tail of it ('q_proj' names 'model.layers.0.self_attn.q_proj')."""
    return next((p for p in patterns if re.fullmatch(rf"(?:.*\.)?(?:{p})", module)), None)


def _read_config(path: Path) -> _AdapterConfig:
    try:
        config = _AdapterConfig.model_validate(json.loads(path.read_text()))
    except FileNotFoundError as e:
        raise DataError(f"{path}: file not found; expected a PEFT adapter directory") from e
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, p['loc']))}: {p['msg']}" for p in e.errors())
        raise DataError(f"{path}: {problems}") from e
    except (OSError, ValueError) as e:
        raise DataError(f"{path}: not readable JSON ({e})") from e
    if config.peft_type != "LORA":
        raise DataError(f"{path}: peft_type is {config.peft_type!r}; expected 'LORA'")
    if config.use_dora:
        raise DataError(f"{path}: use_dora is true; DoRA's delta is not scaled B @ A")
    return config


def _scale(config: _AdapterConfig, module: str, path: Path) -> tuple[int, float]:
    """(configured rank, scaling) of one module."""
    ranks, alphas = config.rank_pattern or {}, config.alpha_pattern or {}
    try:
        r_key, alpha_key = pattern_key(list(ranks), module), pattern_key(list(alphas), module)
    except re.error as e:
        raise DataError(f"{path}: rank_pattern/alpha_pattern has a bad regex ({e})") from e
    r = ranks[r_key] if r_key is not None else config.r
    alpha = alphas[alpha_key] if alpha_key is not None else config.lora_alpha
    return r, alpha / (math.sqrt(r) if config.use_rslora else r)


def _lora_keys(weights: SafetensorsFile) -> dict[str, dict[str, str]]:
    """module path -> {kind: tensor name}; tensors that are not LoRA weights are ignored."""
    modules: dict[str, dict[str, str]] = {}
    for name in weights.tensors:
        match = _KEY.fullmatch(name.removeprefix("base_model.model."))
        if match is None or match["param"] == "bias":
            continue
        module, kind = match["module"], match["kind"]
        if kind == "lora_magnitude_vector":
            raise DataError(
                f"{weights.path}: tensor {name!r} is a DoRA magnitude vector; "
                "DoRA's delta is not scaled B @ A"
            )
        kinds = modules.setdefault(module, {})
        if kind in kinds:
            raise DataError(
                f"{weights.path}: tensors {kinds[kind]!r} and {name!r} are both {kind} "
                f"of {module!r}"
            )
        kinds[kind] = name
    return modules


def _factor_names(weights: SafetensorsFile, kinds: dict[str, str]) -> tuple[str, str, bool]:
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
    weights: SafetensorsFile,
    config: _AdapterConfig,
    config_path: Path,
) -> Entry:
    """One module's matrix: shapes checked against each other and the configured rank."""
    a_name, b_name, embedding = _factor_names(weights, kinds)
    a, b = weights.info(a_name).shape, weights.info(b_name).shape
    if len(a) != 2 or len(b) != 2:
        raise DataError(
            f"{weights.path}: tensors {a_name!r} {list(a)} and {b_name!r} {list(b)} must be 2-D "
            "(only Linear and Embedding LoRA are supported)"
        )
    if a[0] != b[1]:
        raise DataError(
            f"{weights.path}: tensor {a_name!r} {list(a)} has rank {a[0]} but {b_name!r} "
            f"{list(b)} has rank {b[1]}; expected A [r, in] and B [out, r]"
        )
    r, scale = _scale(config, module, config_path)
    if r != a[0]:
        raise DataError(
            f"{weights.path}: tensor {a_name!r} has rank {a[0]}; "
            f"{config_path} configures r = {r} for {module!r}"
        )
    transpose = embedding or config.fan_in_fan_out
    shape = (a[1], b[0]) if transpose else (b[0], a[1])
    locator = {
        "file": str(weights.path),
        "A": a_name,
        "B": b_name,
        "scale": scale,
        "transpose": transpose,
    }
    return Entry(adapter, module, shape, locator, rank=r)


class PeftSource(Source):
    """LoRA factors from PEFT adapter directories; the adapter name is the directory name."""

    has_factors = True

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

    def refs(self) -> list[MatrixRef]:
        entries: list[Entry] = []
        for folder in self._dirs():
            config = _read_config(folder / CONFIG_FILE)
            if not (folder / WEIGHTS_FILE).exists() and (folder / "adapter_model.bin").exists():
                raise DataError(
                    f"{folder / 'adapter_model.bin'}: only {WEIGHTS_FILE} is read; "
                    "save the adapter with safe_serialization=True"
                )
            weights = SafetensorsFile(folder / WEIGHTS_FILE)
            modules = _lora_keys(weights)
            if not modules:
                raise DataError(f"{weights.path}: no lora_A/lora_B tensors found")
            entries += [
                _entry(folder.name, module, kinds, weights, config, folder / CONFIG_FILE)
                for module, kinds in modules.items()
            ]
        return self.config.select(name_refs(entries))

    def fingerprint(self) -> str:
        files = [folder / name for folder in self._dirs() for name in (CONFIG_FILE, WEIGHTS_FILE)]
        return fingerprint_files(self.config, files)

    def load_factors(self, refs: Sequence[MatrixRef], dtype: np.dtype) -> Factors:
        if len({ref.group_key for ref in refs}) != 1 or refs[0].rank is None:
            raise ValueError("load_factors needs refs of one (m, n, r) group")
        files: dict[str, SafetensorsFile] = {}
        pairs = [_read_pair(ref, files) for ref in refs]
        return Factors(
            B=np.stack([b for b, _ in pairs], dtype=dtype),
            A=np.stack([a for _, a in pairs], dtype=dtype),
            scale=np.array([ref.locator["scale"] for ref in refs], dtype=np.float64),
        )

    def load_dense(self, refs: Sequence[MatrixRef], dtype: np.dtype) -> np.ndarray:
        files: dict[str, SafetensorsFile] = {}
        out = np.empty((len(refs), *one_shape(refs)), dtype=dtype)
        for i, ref in enumerate(refs):
            b, a = _read_pair(ref, files)
            out[i] = ref.locator["scale"] * (b.astype(np.float64) @ a.astype(np.float64))
        return out


def _read_pair(ref: MatrixRef, files: dict[str, SafetensorsFile]) -> tuple[np.ndarray, np.ndarray]:
    """(B, A) of one ref, transposed where the delta is; each file's header is read once."""
    loc = ref.locator
    if loc["file"] not in files:
        files[loc["file"]] = SafetensorsFile(Path(loc["file"]))
    weights = files[loc["file"]]
    a, b = weights.read(loc["A"]), weights.read(loc["B"])
    if loc["transpose"]:
        a, b = b.T, a.T
    if (b.shape[0], a.shape[1]) != ref.shape or a.shape[0] != ref.rank:
        raise DataError(
            f"{weights.path}: tensors {loc['A']!r}, {loc['B']!r} changed since the workload was "
            f"built; expected {list(ref.shape)} of rank {ref.rank}"
        )
    return b, a
