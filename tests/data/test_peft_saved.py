"""PEFT adapters beyond Linear LoRA in safetensors: conv LoRA, whole saved weights with and
without a base, and the older adapter_model.bin (torch.load(weights_only=True) only)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from numpy.random import Generator

from harness.cli.main import main
from harness.data.peft import PeftData, PeftSource
from harness.data.workload import DataError

Writer = Callable[..., Path]
F64 = np.dtype(np.float64)
F32 = np.float32
HEAD = "base_model.model.lm_head.weight"
EMBED = "base_model.model.model.embed_tokens.weight"
Q = "model.layers.0.self_attn.q_proj"


@pytest.fixture
def rng() -> Generator:
    return np.random.default_rng(0)


def test_conv_lora_is_the_unfolded_weights_delta(tmp_path: Path, rng: Generator, write_adapter: Writer) -> None:
    """Conv2d and Conv1d LoRA: B [out, r, 1...] @ A [r, in, *kernel] -> out x (in * kernel)."""
    a2, b2 = rng.standard_normal((4, 3, 3, 3), dtype=F32), rng.standard_normal((6, 4, 1, 1), dtype=F32)
    a1, b1 = rng.standard_normal((4, 5, 2), dtype=F32), rng.standard_normal((7, 4, 1), dtype=F32)
    write_adapter(tmp_path / "conv", {"model.conv2": (a2, b2), "model.conv1": (a1, b1)})
    src = PeftSource(PeftData(paths=["conv"]), tmp_path)
    refs = {ref.module: ref for ref in src.refs()}
    assert {m: (r.shape, r.rank) for m, r in refs.items()} == {"model.conv1": ((7, 10), 4), "model.conv2": ((6, 27), 4)}
    for module, (a, b) in {"model.conv2": (a2, b2), "model.conv1": (a1, b1)}.items():
        want = 2.0 * b.reshape(len(b), 4).astype(np.float64) @ a.reshape(4, -1)
        np.testing.assert_allclose(src.load_dense([refs[module]], F64)[0], want, rtol=1e-12)
        np.testing.assert_allclose(src.load_factors([refs[module]], F64).dense()[0], want, rtol=1e-12)


def q_lora(rng: Generator) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) of a rank-4 q_proj LoRA, 16 x 12."""
    return rng.standard_normal((4, 12), dtype=F32), rng.standard_normal((16, 4), dtype=F32)


def _with_saved_weights(tmp_path: Path, rng: Generator, write_adapter: Writer, write_safetensors: Writer,
                        head: np.ndarray) -> dict[str, np.ndarray]:
    """An adapter with a q_proj LoRA, a modules_to_save lm_head and a saved embedding beside an
    embedding LoRA; the base checkpoint. Returns the base's tensors."""
    base = {name: rng.standard_normal(shape, dtype=F32) for name, shape in
            {"lm_head.weight": (20, 8), "model.embed_tokens.weight": (20, 8), f"{Q}.weight": (16, 12)}.items()}
    write_safetensors(tmp_path / "base" / "model.safetensors", base)
    embedding = (rng.standard_normal((4, 20), dtype=F32), rng.standard_normal((8, 4), dtype=F32))
    saved = {HEAD: head, EMBED: base["model.embed_tokens.weight"] + 0.5,
             "base_model.model.lm_head.bias": rng.standard_normal((20,), dtype=F32)}
    write_adapter(tmp_path / "adapter", {Q: q_lora(rng), "model.embed_tokens": embedding},
                  embedding=frozenset({"model.embed_tokens"}), extra=saved, modules_to_save=["lm_head"])
    return base


def test_saved_weights_with_a_base_are_dense_deltas(
    tmp_path: Path, rng: Generator, write_adapter: Writer, write_safetensors: Writer
) -> None:
    head = rng.standard_normal((20, 8), dtype=F32)
    base = _with_saved_weights(tmp_path, rng, write_adapter, write_safetensors, head)
    src = PeftSource(PeftData(paths=["adapter"], base="base"), tmp_path)
    refs = {ref.module: ref for ref in src.refs()}
    # the saved embedding keeps its tensor name beside the embedding LoRA of the same layer
    assert sorted(refs) == ["lm_head", "model.embed_tokens", "model.embed_tokens.weight", "self_attn.q_proj"]
    np.testing.assert_array_equal(src.load_dense([refs["lm_head"]], F64)[0], head.astype(F64) - base["lm_head.weight"])
    np.testing.assert_allclose(src.load_dense([refs["model.embed_tokens.weight"]], F64)[0], 0.5, rtol=1e-6)
    assert [refs[m].form for m in sorted(refs)] == ["dense", "lora", "dense", "lora"]
    assert not src.has_factors
    assert src.skipped() == [f"{tmp_path / 'adapter' / 'adapter_model.safetensors'}: "
                             "base_model.model.lm_head.bias (F32 [20]: not a matrix)"]


@pytest.mark.parametrize(
    ("change", "detail"),
    [({"lm_head.weight": None}, "no tensor 'lm_head.weight', which"),
     ({"lm_head.weight": (21, 8)}, f"tensor '{HEAD}' has shape [20, 8], but in the base")],
)
def test_a_base_that_does_not_fit_is_one_line(
    tmp_path: Path, rng: Generator, write_adapter: Writer, write_safetensors: Writer,
    change: dict[str, tuple[int, int] | None], detail: str,
) -> None:
    base = _with_saved_weights(tmp_path, rng, write_adapter, write_safetensors, rng.standard_normal((20, 8), dtype=F32))
    for name, shape in change.items():
        base.pop(name)
        if shape is not None:
            base[name] = rng.standard_normal((*shape,), dtype=F32)
    write_safetensors(tmp_path / "base" / "model.safetensors", base)
    with pytest.raises(DataError) as info:
        PeftSource(PeftData(paths=["adapter"], base="base"), tmp_path).refs()
    assert detail in str(info.value) and "\n" not in str(info.value), str(info.value)


SPEC = """
[experiment]
name = "saved"

[data]
source = "peft"
paths = ["adapter"]
{base}

[[analysis]]
op = "svdvals"

[benchmark]
warmup = 0
repeats = 1
sample = 0
"""


@pytest.mark.parametrize("with_base", [False, True])
def test_the_run_warns_once_or_plans_dense(
    tmp_path: Path, rng: Generator, write_adapter: Writer, write_safetensors: Writer, capsys: pytest.CaptureFixture[str],
    with_base: bool,
) -> None:
    """Without a base: one warning line naming the skipped tensors, which the record's plan
    lists, and factored stays possible. With one: the saved weights' deltas are in spectra.npz,
    the plan says why factored is not offered, and only the bias (not a matrix) is warned about."""
    _with_saved_weights(tmp_path, rng, write_adapter, write_safetensors, rng.standard_normal((20, 8), dtype=F32))
    (tmp_path / "spec.toml").write_text(SPEC.format(base='base = "base"' if with_base else ""))
    out = tmp_path / "run"
    assert main(["run", str(tmp_path / "spec.toml"), "-o", str(out), "--no-cache"]) == 0
    record = json.loads((out / "record.json").read_text())
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    spectra = np.load(out / "spectra.npz").files
    if with_base:
        assert len(warnings) == 1 and "lm_head.bias" in warnings[0] and HEAD not in warnings[0]
        assert "svdvals:adapter/lm_head" in spectra
        assert record["analyses"][0]["strategy"] != "factored"
        (skipped,) = [c for c in record["plan"]["steps"][0]["candidates"] if c["strategy"] == "factored"]
        assert skipped["reason"].startswith("needs LoRA or LoKr factors, and 2 of the workload's matrices are not: ")
        assert "adapter/lm_head (dense)" in skipped["reason"]
    else:
        assert len(warnings) == 1 and HEAD in warnings[0] and EMBED in warnings[0]
        assert len(record["plan"]["skipped_inputs"]) == 3 and "svdvals:adapter/lm_head" not in spectra
        (factored,) = [c for c in record["plan"]["steps"][0]["candidates"] if c["strategy"] == "factored"]
        assert factored["reason"] is None
        assert sorted(spectra) == ["svdvals:adapter/layer0/self_attn.q_proj", "svdvals:adapter/model.embed_tokens"]


def test_adapter_model_bin_reads_like_safetensors(tmp_path: Path, rng: Generator, write_adapter: Writer) -> None:
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    folder = write_adapter(tmp_path / "st", {Q: q_lora(rng)})
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "adapter_config.json").write_text((folder / "adapter_config.json").read_text())
    tensors = load_file(folder / "adapter_model.safetensors")
    torch.save({k: v.to(torch.bfloat16) if "lora_A" in k else v for k, v in tensors.items()},
               tmp_path / "bin" / "adapter_model.bin")
    st, binary = (PeftSource(PeftData(paths=[name]), tmp_path) for name in ("st", "bin"))
    want = st.load_factors(st.refs(), F64)
    got = binary.load_factors(binary.refs(), F64)
    np.testing.assert_array_equal(got.B, want.B)
    a_bf16 = tensors[f"base_model.model.{Q}.lora_A.weight"].to(torch.bfloat16).float().numpy()
    np.testing.assert_array_equal(got.A[0], a_bf16)


class Payload:
    """Anything but a tensor: what weights_only refuses to rebuild."""


@pytest.mark.parametrize(("payload", "detail"), [("object", "it pickles "), ("garbage", "torch.load cannot read it")])
def test_a_bin_that_needs_more_than_tensors_is_refused(
    tmp_path: Path, rng: Generator, write_adapter: Writer, payload: str, detail: str
) -> None:
    torch = pytest.importorskip("torch")
    folder = write_adapter(tmp_path / "old", {Q: q_lora(rng)})
    (folder / "adapter_model.safetensors").unlink()
    if payload == "object":
        torch.save({"x": torch.zeros(2), "payload": Payload()}, folder / "adapter_model.bin")
    else:
        (folder / "adapter_model.bin").write_bytes(b"not a pickle")
    with pytest.raises(DataError) as info:
        PeftSource(PeftData(paths=["old"]), tmp_path).refs()
    message = str(info.value)
    assert message.startswith(f"{folder / 'adapter_model.bin'}: refused: {detail}"), message
    assert ("Payload" in message) == (payload == "object")
    assert "weights_only=True" in message and "\n" not in message
