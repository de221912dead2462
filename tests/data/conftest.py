"""Fixtures that write tiny model files in their real on-disk layouts."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import save_file

_ST_DTYPES = {"float16": "F16", "float32": "F32", "float64": "F64", "int64": "I64"}

SafetensorsWriter = Callable[..., Path]
AdapterWriter = Callable[..., Path]


def _bf16_exact(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    bits = rng.standard_normal(shape).astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
    return bits.view(np.float32)


@pytest.fixture
def bf16_exact() -> Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]:
    """bf16_exact(rng, shape): random float32 values that bfloat16 holds exactly."""
    return _bf16_exact


def write_raw_safetensors(path: Path, tensors: dict[str, np.ndarray], bf16: bool) -> Path:
    """The safetensors layout written by hand, so float32 tensors can be stored as BF16
    (numpy has no bfloat16); values must be bf16-exact."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    chunks: list[bytes] = []
    offset = 0
    for name, array in tensors.items():
        if bf16 and array.dtype == np.float32:
            bits = array.view(np.uint32)
            assert not (bits & 0xFFFF).any(), f"{name} is not bf16-exact"
            data, dtype = (bits >> 16).astype("<u2").tobytes(), "BF16"
        else:
            data = array.astype(array.dtype.newbyteorder("<")).tobytes()
            dtype = _ST_DTYPES[array.dtype.name]
        end = offset + len(data)
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, end]}
        chunks.append(data)
        offset += len(data)
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + b"".join(chunks))
    return path


@pytest.fixture
def write_safetensors() -> SafetensorsWriter:
    """write(path, tensors, bf16=False): with safetensors' own writer, or by hand for BF16."""

    def write(path: Path, tensors: dict[str, np.ndarray], bf16: bool = False) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        if bf16:
            return write_raw_safetensors(path, tensors, bf16)
        save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(path))
        return path

    return write


@pytest.fixture
def write_adapter(write_safetensors: SafetensorsWriter) -> AdapterWriter:
    """write(folder, {module path: (A, B)}, ...) -> a PEFT LoRA adapter directory.

    Keys follow PEFT: `base_model.model.<module>.lora_A[.default].weight`, or
    `.lora_embedding_A[.default]` for modules in `embedding`; `extra` tensors are added as is;
    config overrides go into adapter_config.json.
    """

    def write(
        folder: Path,
        factors: dict[str, tuple[np.ndarray, np.ndarray]],
        *,
        bf16: bool = False,
        name_in_keys: bool = False,
        embedding: frozenset[str] = frozenset(),
        extra: dict[str, np.ndarray] | None = None,
        **config: Any,
    ) -> Path:
        name = ".default" if name_in_keys else ""
        tensors = dict(extra or {})
        for module, (a, b) in factors.items():
            if module in embedding:
                keys = (f"lora_embedding_A{name}", f"lora_embedding_B{name}")
            else:
                keys = (f"lora_A{name}.weight", f"lora_B{name}.weight")
            tensors[f"base_model.model.{module}.{keys[0]}"] = a
            tensors[f"base_model.model.{module}.{keys[1]}"] = b
        write_safetensors(folder / "adapter_model.safetensors", tensors, bf16=bf16)
        adapter_config = {
            "peft_type": "LORA",
            "task_type": "CAUSAL_LM",
            "base_model_name_or_path": "tiny-model",
            "r": 4,
            "lora_alpha": 8,
            "lora_dropout": 0.0,
            "bias": "none",
            "use_rslora": False,
            "use_dora": False,
            "fan_in_fan_out": False,
            "rank_pattern": {},
            "alpha_pattern": {},
            "target_modules": sorted({m.rsplit(".", 1)[-1] for m in factors}),
        }
        (folder / "adapter_config.json").write_text(json.dumps(adapter_config | config))
        return folder

    return write
