"""diffusers as the oracle: a kohya-ss file and a diffusers-layout file, loaded with
load_lora_weights + fuse_lora into a tiny random UNet and CLIP text encoder; the fused weight
minus the original, per layer, against what the kohya source reads, as matrices and spectra."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.data.kohya import KohyaData, KohyaSource
from harness.linalg.factored import factored_svdvals, pad_spectrum

torch = pytest.importorskip("torch")
diffusers = pytest.importorskip("diffusers")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")
safetensors_torch = pytest.importorskip("safetensors.torch")

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
BLOCK = "down_blocks.0.attentions.0"
UNET_LAYERS = (f"{BLOCK}.proj_in", f"{BLOCK}.transformer_blocks.0.attn1.to_q",  # 1x1 conv, Linear
               f"{BLOCK}.transformer_blocks.0.ff.net.2", "down_blocks.0.resnets.0.conv1")  # Linear, 3x3 conv
TE_LAYERS = ("encoder.layers.0.self_attn.out_proj", "encoder.layers.1.mlp.fc1")


def _pipeline() -> Any:
    """A tiny random StableDiffusionPipeline (no VAE or tokenizer: loading LoRAs needs neither)."""
    torch.manual_seed(0)
    unet = diffusers.UNet2DConditionModel(
        block_out_channels=(8, 16), layers_per_block=1, sample_size=8, in_channels=4, out_channels=4,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=12, norm_num_groups=4, attention_head_dim=2)
    text = transformers.CLIPTextModel(transformers.CLIPTextConfig(
        hidden_size=12, intermediate_size=16, num_attention_heads=2, num_hidden_layers=2, vocab_size=50,
        max_position_embeddings=16, projection_dim=12, eos_token_id=2))
    scheduler = diffusers.DDIMScheduler(clip_sample=False, steps_offset=1)
    return diffusers.StableDiffusionPipeline(vae=None, text_encoder=text, tokenizer=None, unet=unet,
                                             scheduler=scheduler, safety_checker=None, feature_extractor=None,
                                             requires_safety_checker=False)


def _weights(pipe: Any) -> dict[str, Any]:
    """unet.<layer> / text_encoder.<layer> -> its weight now (a LoRA-wrapped layer's base weight)."""
    out = {}
    for component, layers in (("unet", UNET_LAYERS), ("text_encoder", TE_LAYERS)):
        for layer in layers:
            module = getattr(pipe, component).get_submodule(layer)
            out[f"{component}.{layer}"] = getattr(module, "base_layer", module).weight.detach().double().clone()
    return out


def _fused_deltas(path: Path) -> dict[str, np.ndarray]:
    """diffusers' own reading of the file: load, fuse, and subtract the original weights."""
    pipe = _pipeline()
    before = _weights(pipe)
    pipe.load_lora_weights(str(path))
    pipe.fuse_lora()
    return {name: (w - before[name]).reshape(len(w), -1).numpy() for name, w in _weights(pipe).items()}


def _check(src: KohyaSource, deltas: dict[str, np.ndarray], module_of: dict[str, str]) -> None:
    """Matrices to float32 round-off of the fused weights; spectra, from float32 factors, to
    float32 precision of sigma_1."""
    refs = {ref.locator["A"].rsplit(".lora", 1)[0]: ref for ref in src.refs()}  # the key's module path
    assert sorted(refs) == sorted(module_of.values()) and src.has_factors
    for name, want in deltas.items():
        ref = refs[module_of[name]]
        assert ref.shape == want.shape
        np.testing.assert_allclose(src.load_dense([ref], F64)[0], want, rtol=0, atol=1e-6 * np.abs(want).max())
        S = np.linalg.svd(want, compute_uv=False)
        f = src.load_factors([ref], F32)
        S_f = pad_spectrum(factored_svdvals(f.B, f.A, f.scale.astype(F32)), len(S))[0]
        np.testing.assert_allclose(S_f, S, rtol=0, atol=2e-6 * S[0])


def _kohya_name(name: str) -> str:
    component, _, layer = name.partition(".")
    prefix = "lora_unet_" if component == "unet" else "lora_te_text_model_"
    return prefix + layer.replace(".", "_")


@pytest.mark.slow
def test_kohya_file_matches_diffusers_fuse_lora(tmp_path: Path) -> None:
    """LoRA on Linear layers, LoCon on a 1x1 and a 3x3 conv, text encoder LoRA, ranks 2 to 4;
    alpha / rank. One alpha for every module, as sd-scripts writes: diffusers 0.42 misnames the
    alpha_pattern it builds for mixed alphas (PEFT warns the keys match nothing) and gives a
    module without alpha the file's most common one, where sd-scripts, LyCORIS and ComfyUI
    use alpha = rank (scale 1) as this reader does."""
    weights = _weights(_pipeline())
    gen = torch.Generator().manual_seed(1)
    tensors = {}
    for i, (name, weight) in enumerate(weights.items()):
        shape = weight.shape
        rank = 2 + i % 3
        key = _kohya_name(name)
        tensors[f"{key}.lora_down.weight"] = torch.randn(rank, *shape[1:], generator=gen)
        tensors[f"{key}.lora_up.weight"] = torch.randn(shape[0], rank, *[1] * (len(shape) - 2), generator=gen)
        tensors[f"{key}.alpha"] = torch.tensor(3.0)  # sd-scripts writes its network_alpha for each module
    path = tmp_path / "style.safetensors"
    safetensors_torch.save_file(tensors, str(path))
    deltas = _fused_deltas(path)
    _check(KohyaSource(KohyaData(paths=["style.safetensors"]), tmp_path), deltas,
           {name: _kohya_name(name) for name in weights})


@pytest.mark.slow
def test_diffusers_layout_file_matches_diffusers_fuse_lora(tmp_path: Path) -> None:
    """What save_lora_weights writes (unet./text_encoder. lora_A/lora_B keys, lora_alpha and a
    rank_pattern in the metadata) read back like diffusers reads it. (The older aliases,
    lora.down and lora_linear_layer.down, do not survive diffusers 0.42's own round trip through
    convert_state_dict_to_diffusers for every layer; test_kohya checks them by formula.)"""
    from peft.utils import get_peft_model_state_dict

    pipe = _pipeline()
    unet_config = peft.LoraConfig(r=3, lora_alpha=6, rank_pattern={"proj_in": 2}, init_lora_weights=False,
                                  target_modules=list(UNET_LAYERS))
    text_config = peft.LoraConfig(r=2, lora_alpha=5, target_modules=list(TE_LAYERS), init_lora_weights=False)
    pipe.unet.add_adapter(unet_config)
    pipe.text_encoder.add_adapter(text_config)
    diffusers.StableDiffusionPipeline.save_lora_weights(
        str(tmp_path / "style"),
        unet_lora_layers=get_peft_model_state_dict(pipe.unet),
        text_encoder_lora_layers=get_peft_model_state_dict(pipe.text_encoder),
        unet_lora_adapter_metadata=unet_config.to_dict(), text_encoder_lora_adapter_metadata=text_config.to_dict())
    path = tmp_path / "style" / "pytorch_lora_weights.safetensors"
    assert json.loads(_metadata(path))["unet.rank_pattern"] == {"proj_in": 2}
    deltas = _fused_deltas(path)
    _check(KohyaSource(KohyaData(paths=["style"]), tmp_path), deltas, {name: name for name in deltas})


def _metadata(path: Path) -> str:
    from safetensors import safe_open

    with safe_open(path, framework="np") as f:
        return f.metadata()["lora_adapter_metadata"]
