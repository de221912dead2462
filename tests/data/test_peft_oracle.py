"""PEFT itself as the oracle: a tiny random model with LoRA on Linear, Conv2d and Embedding
layers and a trained modules_to_save copy, merged by PEFT; merged weight minus base, per layer,
against what the peft source reads (with the base checkpoint), as matrices and as spectra."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.data.peft import PeftData, PeftSource
from harness.data.workload import Workload
from harness.linalg.factored import factored_svdvals, pad_spectrum

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")
safetensors_torch = pytest.importorskip("safetensors.torch")

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
LAYERS = ("emb", "conv", "lin", "head")  # head: modules_to_save


class Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(20, 8)
        self.conv = torch.nn.Conv2d(3, 6, 3)
        self.lin = torch.nn.Linear(8, 5)
        self.head = torch.nn.Linear(8, 20)


def _adapter(folder: Path, base: Path, safe: bool) -> dict[str, np.ndarray]:
    """Base checkpoint and adapter on disk; returns PEFT's merged weight minus base per layer."""
    torch.manual_seed(0)
    model = Tiny()
    safetensors_torch.save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(base))
    original = {name: model.get_submodule(name).weight.detach().clone() for name in LAYERS}
    config = peft.LoraConfig(r=2, lora_alpha=6, target_modules=["emb", "conv", "lin"], modules_to_save=["head"],
                             init_lora_weights=False)
    wrapped = peft.get_peft_model(model, config)
    with torch.no_grad():  # "train" the head's copy
        wrapped.base_model.model.head.modules_to_save["default"].weight.add_(torch.randn(20, 8))
    wrapped.save_pretrained(str(folder), safe_serialization=safe)
    merged = wrapped.merge_and_unload()
    return {name: (merged.get_submodule(name).weight.detach().double() - original[name].double()).reshape(
        original[name].shape[0], -1).numpy() for name in LAYERS}


@pytest.mark.parametrize("safe", [True, False], ids=["safetensors", "bin"])
def test_merged_minus_base_matches_for_lora_conv_embedding_and_modules_to_save(tmp_path: Path, safe: bool) -> None:
    deltas = _adapter(tmp_path / "adapter", tmp_path / "base.safetensors", safe)
    src = PeftSource(PeftData(paths=["adapter"], base="base.safetensors"), tmp_path)
    refs = {ref.module: ref for ref in src.refs()}
    assert sorted(refs) == sorted(LAYERS)
    assert refs["head"].form == "dense" and refs["conv"].shape == (6, 27)
    assert not src.has_factors and src.skipped() == [
        f"{tmp_path / 'adapter' / ('adapter_model.safetensors' if safe else 'adapter_model.bin')}: "
        "base_model.model.head.bias (F32 [20]: not a matrix)"]
    for name, want in deltas.items():
        got = src.load_dense([refs[name]], F64)[0]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * np.abs(want).max())
        S = np.linalg.svd(want, compute_uv=False)
        S32 = np.linalg.svd(src.load_dense([refs[name]], F32)[0], compute_uv=False)
        np.testing.assert_allclose(S32, S, rtol=0, atol=2e-6 * S[0])
        if name != "head":  # LoRA layers: the exact spectrum from float32 factors too
            f = src.load_factors([refs[name]], F32)
            S_f = pad_spectrum(factored_svdvals(f.B, f.A, f.scale.astype(F32)), len(S))[0]
            np.testing.assert_allclose(S_f, S, rtol=0, atol=2e-6 * S[0])
    reason = _factored_reason(src)
    assert reason is not None and "adapter/head (dense)" in reason, reason


def _factored_reason(src: PeftSource) -> str | None:
    from harness.strategies.registry import STRATEGIES

    return STRATEGIES["factored"].unavailable(Workload.from_source(src), "cpu")


def test_without_a_base_the_saved_weights_are_listed_and_the_loras_stay_factored(tmp_path: Path) -> None:
    _adapter(tmp_path / "adapter", tmp_path / "base.safetensors", True)
    src = PeftSource(PeftData(paths=["adapter"]), tmp_path)
    assert sorted(ref.module for ref in src.refs()) == ["conv", "emb", "lin"]
    assert src.has_factors and _factored_reason(src) is None
    file = tmp_path / "adapter" / "adapter_model.safetensors"
    assert src.skipped() == [f"{file}: base_model.model.head.bias (F32 [20]: not a matrix)",
                             f"{file}: base_model.model.head.weight (a whole saved weight; set `base` to analyse its delta)"]


class Convs(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 6, 3)
        self.lin = torch.nn.Linear(16, 12)
        self.wide = torch.nn.Linear(64, 48)  # LoKr factors its W2 here: r < max(W2's sides) / 2


@pytest.mark.parametrize("kind", ["LOHA", "LOKR"])
def test_loha_and_lokr_adapters_match_peft_merged(tmp_path: Path, kind: str) -> None:
    """LoHa (Hadamard of two rank-r products, face-split into rank r^2 factors) and LoKr
    (Kronecker, whole or factored W2, conv W2 4-D): merged minus base, and the spectra the
    factored strategy computes in float32 without forming the delta."""
    from harness.strategies.base import ExecContext, OpRequest
    from harness.strategies.registry import STRATEGIES

    torch.manual_seed(0)
    model = Convs()
    original = {name: model.get_submodule(name).weight.detach().double().clone() for name in ("conv", "lin", "wide")}
    make = peft.LoHaConfig if kind == "LOHA" else peft.LoKrConfig
    config = make(r=2, alpha=3, rank_pattern={"wide": 3}, alpha_pattern={"lin": 5}, init_weights=False,
                  target_modules=["conv", "lin", "wide"])
    wrapped = peft.get_peft_model(model, config)
    wrapped.save_pretrained(str(tmp_path / "adapter"))
    merged = wrapped.merge_and_unload()
    src = PeftSource(PeftData(paths=["adapter"]), tmp_path)
    refs = {ref.module: ref for ref in src.refs()}
    factored = STRATEGIES["factored"]
    assert factored.unavailable(Workload.from_source(src), "cpu") is None
    for name, before in original.items():
        want = (merged.get_submodule(name).weight.detach().double() - before).reshape(len(before), -1).numpy()
        ref = refs[name]
        assert ref.form == ("lora" if kind == "LOHA" else "kron")
        np.testing.assert_allclose(src.load_dense([ref], F64)[0], want, rtol=0, atol=1e-6 * np.abs(want).max())
        S = np.linalg.svd(want, compute_uv=False)
        context = ExecContext(F32, "numpy", 1, 0, executor=lambda: None)  # type: ignore[arg-type, return-value]
        result = factored.compute(OpRequest("svdvals"), factored.load(src, [ref], F32), context)
        np.testing.assert_allclose(result.S[0], S, rtol=0, atol=2e-6 * S[0])
