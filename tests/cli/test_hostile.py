"""Hostile inputs, round three (issue 32): each case is a file, folder, record or number a hostile
user tried; each must end in one line naming what is wrong and what was expected, exit 2, no
traceback, and nothing written. A case builds its inputs in `tmp_path` and returns the command
line and a part of the one line it expects."""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from harness.cli.main import main
from tests.cli.test_bad_inputs import one_line, tree
from tests.conftest import CONFIGS
from tests.data.conftest import write_raw_safetensors

SMOKE = str(CONFIGS / "smoke.toml")
Case = Callable[[Path], tuple[list[str], str]]


def _spec(folder: Path, data: str, extra: str = "", analysis: str = 'op = "svdvals"') -> str:
    path = folder / "spec.toml"
    path.write_text(f'[experiment]\nname = "t"\n\n[data]\n{data}\n\n[[analysis]]\n{analysis}\n{extra}')
    return str(path)


def _peft(folder: Path, **config: object) -> str:
    """A PEFT LoRA adapter folder `a` of one 8x6 rank-2 module, its config overridden."""
    adapter = folder / "a"
    adapter.mkdir()
    rng = np.random.default_rng(0)
    write_raw_safetensors(adapter / "adapter_model.safetensors", {
        "base_model.model.layers.0.q_proj.lora_A.weight": rng.standard_normal((2, 6)).astype(np.float32),
        "base_model.model.layers.0.q_proj.lora_B.weight": rng.standard_normal((8, 2)).astype(np.float32),
    }, bf16=False)
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 2, "lora_alpha": 4} | config))
    return _spec(folder, 'source = "peft"\npaths = ["a"]')


def _kohya_metadata(folder: Path, metadata: dict[str, object]) -> str:
    """A diffusers LoRA file whose saved config is `metadata`."""
    rng = np.random.default_rng(0)
    tensors = {"unet.down.0.proj.lora_A.weight": rng.standard_normal((2, 6)).astype(np.float32),
               "unet.down.0.proj.lora_B.weight": rng.standard_normal((8, 2)).astype(np.float32)}
    path = write_raw_safetensors(folder / "l.safetensors", tensors, bf16=False)
    _set_metadata(path, {"lora_adapter_metadata": json.dumps(metadata)})
    return _spec(folder, 'source = "kohya"\npaths = ["l.safetensors"]')


def _header(path: Path) -> tuple[dict[str, object], bytes]:
    length = struct.unpack("<Q", path.read_bytes()[:8])[0]
    blob = path.read_bytes()
    return json.loads(blob[8:8 + length]), blob[8 + length:]


def _write_header(path: Path, header: bytes, data: bytes) -> None:
    header += b" " * (-len(header) % 8)
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)


def _set_metadata(path: Path, metadata: dict[str, str]) -> None:
    header, data = _header(path)
    _write_header(path, json.dumps(header | {"__metadata__": metadata}).encode(), data)


def _checkpoint(folder: Path, edit: Callable[[dict[str, object]], bytes] | None = None,
                value: float = 1.0, **spec: str) -> str:
    """A fine-tune `ft.safetensors` against `base.safetensors` (two 4x4 float64 matrices); `edit`
    rewrites the fine-tune's header."""
    base = {"layers.0.w": np.ones((4, 4)), "layers.0.v": np.ones((4, 4))}
    write_raw_safetensors(folder / "base.safetensors", base, bf16=False)
    tuned = {k: v * 2 for k, v in base.items()}
    tuned["layers.0.w"][1, 2] = value
    path = write_raw_safetensors(folder / "ft.safetensors", tuned, bf16=False)
    if edit is not None:
        header, data = _header(path)
        _write_header(path, edit(header), data)
    return _spec(folder, 'source = "checkpoint"\npaths = ["ft.safetensors"]\nbase = "base.safetensors"', **spec)


def _nested(depth: int) -> bytes:
    return b'{"x": ' + b"[" * depth + b"]" * depth + b"}"


def _offsets(header: dict[str, object], w: list[float], v: list[float]) -> bytes:
    header["layers.0.w"]["data_offsets"] = w  # type: ignore[index]
    header["layers.0.v"]["data_offsets"] = v  # type: ignore[index]
    return json.dumps(header).encode()


def _arrays(folder: Path, make: Callable[[Path], None]) -> str:
    (folder / "in").mkdir()
    np.save(folder / "in" / "good.npy", np.ones((4, 3)))
    make(folder / "in")
    return _spec(folder, 'source = "arrays"\npaths = ["in/*.npy"]')


DATA_CASES: dict[str, Case] = {
    "peft rank_pattern 0": lambda d: (["plan", _peft(d, rank_pattern={"q_proj": 0})], "rank_pattern.q_proj"),
    "peft negative rank with rslora": lambda d: (
        ["plan", _peft(d, rank_pattern={"q_proj": -4}, use_rslora=True)], "rank_pattern.q_proj"),
    "peft lora_alpha Infinity": lambda d: (["plan", _peft(d, lora_alpha=float("inf"))], "lora_alpha"),
    "peft alpha_pattern NaN": lambda d: (["plan", _peft(d, alpha_pattern={"q_proj": float("nan")})],
                                         "alpha_pattern.q_proj"),
    "diffusers rank_pattern 0": lambda d: (
        ["plan", _kohya_metadata(d, {"unet.r": 2, "unet.lora_alpha": 4, "unet.rank_pattern": {"proj": 0}})],
        "rank_pattern.proj"),
    "diffusers lora_alpha Infinity": lambda d: (
        ["plan", _kohya_metadata(d, {"unet.r": 2, "unet.lora_alpha": float("inf")})], "lora_alpha"),
    "safetensors header nested deeply": lambda d: (
        ["plan", _checkpoint(d, lambda h: _nested(100_000))], "ft.safetensors: not a readable safetensors file"),
    "safetensors overlapping offsets": lambda d: (
        ["plan", _checkpoint(d, lambda h: _offsets(h, [0, 128], [64, 192]))], "overlap"),
    "safetensors fractional offsets": lambda d: (
        ["plan", _checkpoint(d, lambda h: _offsets(h, [0.5, 128.5], [128.5, 256.5]))], "data_offsets"),
    "checkpoint value 1e300": lambda d: (["run", _checkpoint(d, value=1e300), "-o", "out"], "layers.0.w"),
    "checkpoint value 1e300, float64 PCA": lambda d: (
        ["run", _checkpoint(d, value=1e300, analysis='op = "pca"\ncomponents = 1',
                            extra='[execution]\ndtype = "float64"'), "-o", "out"], "layer0/w: the Gram of its deltas overflows"),
    "arrays dangling symlink": lambda d: (
        ["plan", _arrays(d, lambda f: (f / "gone.npy").symlink_to(f / "missing.npy"))], "gone.npy"),
    "arrays symlink loop": lambda d: (
        ["plan", _arrays(d, lambda f: (f / "loop.npy").symlink_to(f / "loop.npy"))], "loop.npy"),
    "arrays 0-row matrix": lambda d: (["plan", _arrays(d, lambda f: np.save(f / "empty.npy", np.ones((0, 3))))],
                                      "empty.npy"),
}


def last_line(stderr: str) -> str:
    """The line that ends stderr, with no traceback before it (a run's progress lines may)."""
    assert "Traceback" not in stderr, stderr
    return stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("case", DATA_CASES, ids=list(DATA_CASES))
def test_hostile_input_ends_in_one_line(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    argv, expected = DATA_CASES[case](tmp_path)
    before = tree(tmp_path)
    assert main(argv) == 2
    assert expected in last_line(capsys.readouterr().err)
    assert tree(tmp_path) - before <= {".harness-cache", ".harness-cache/content-hashes.json"}
