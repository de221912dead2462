"""kohya-ss, LyCORIS and diffusers LoRA files: each delta against its defining formula in float64."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from numpy.random import Generator
from safetensors.numpy import save_file

from harness.cli.main import main
from harness.data.kohya import KohyaData, KohyaSource
from harness.data.workload import DataError, Workload
from harness.strategies.base import ExecContext, OpRequest
from harness.strategies.registry import STRATEGIES

F64 = np.dtype(np.float64)
F32 = np.dtype(np.float32)
UNET = "lora_unet_down_blocks_0_attentions_0_proj_in"
CONV = "lora_unet_down_blocks_0_resnets_0_conv1"
TE = "lora_te_text_model_encoder_layers_0_mlp_fc1"


def normal(rng: Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def f64(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64)


def write(path: Path, tensors: dict[str, np.ndarray], metadata: dict[str, str] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(path), metadata=metadata)
    return path


def source(base_dir: Path, *paths: str) -> KohyaSource:
    return KohyaSource(KohyaData(paths=list(paths)), base_dir)


def dense_by_module(src: KohyaSource) -> dict[str, np.ndarray]:
    return {ref.module: src.load_dense([ref], F64)[0] for ref in src.refs()}


@pytest.fixture
def rng() -> Generator:
    return np.random.default_rng(0)


def test_kohya_lora_and_locon_scale_alpha_over_rank(tmp_path: Path, rng: Generator) -> None:
    """Linear: up @ down; 3x3 conv: up [out, r, 1, 1] @ down [r, in, 3, 3] unfolded to
    out x (in 3 3); scale alpha / r, and 1 where the file has no alpha."""
    lin_down, lin_up = normal(rng, 4, 12), normal(rng, 8, 4)
    conv_down, conv_up = normal(rng, 2, 3, 3, 3), normal(rng, 6, 2, 1, 1)
    te_down, te_up = normal(rng, 4, 10), normal(rng, 16, 4)
    write(tmp_path / "style.safetensors", {
        f"{UNET}.lora_down.weight": lin_down, f"{UNET}.lora_up.weight": lin_up, f"{UNET}.alpha": np.array(2.0, F32),
        f"{CONV}.lora_down.weight": conv_down, f"{CONV}.lora_up.weight": conv_up, f"{CONV}.alpha": np.array(1.0, F32),
        f"{TE}.lora_down.weight": te_down, f"{TE}.lora_up.weight": te_up,
    })
    src = source(tmp_path, "style.safetensors")
    got = dense_by_module(src)
    np.testing.assert_allclose(got[UNET], 2.0 / 4 * f64(lin_up) @ f64(lin_down), rtol=1e-12)
    np.testing.assert_allclose(got[CONV], 1.0 / 2 * f64(conv_up[:, :, 0, 0]) @ f64(conv_down.reshape(2, 27)), rtol=1e-12)
    np.testing.assert_allclose(got[TE], f64(te_up) @ f64(te_down), rtol=1e-12)
    assert {ref.id: (ref.shape, ref.rank) for ref in src.refs()} == {
        f"style/{UNET}": ((8, 12), 4), f"style/{CONV}": ((6, 27), 2), f"style/{TE}": ((16, 10), 4)}
    assert src.has_factors
    for group in Workload.from_source(src).groups():
        factors = src.load_factors(group.refs, F64)
        np.testing.assert_allclose(factors.dense(), src.load_dense(group.refs, F64), rtol=1e-12)


def test_diffusers_layout_takes_alpha_from_its_metadata(tmp_path: Path, rng: Generator) -> None:
    """lora_A/lora_B and the older lora_linear_layer.down/up; lora_alpha / r per component,
    rank_pattern and alpha_pattern as PEFT."""
    q, fc1 = "unet.down_blocks.0.attentions.0.transformer_blocks.0.attn1.to_q", "text_encoder.encoder.layers.0.mlp.fc1"
    out = "unet.down_blocks.0.attentions.0.proj_out"
    a_q, b_q, a_o, b_o = normal(rng, 4, 8), normal(rng, 8, 4), normal(rng, 2, 8), normal(rng, 8, 2)
    a_fc, b_fc = normal(rng, 2, 12), normal(rng, 16, 2)
    metadata = {"unet.r": 4, "unet.lora_alpha": 6, "unet.rank_pattern": {"proj_out": 2},
                "unet.alpha_pattern": {"proj_out": 5}, "text_encoder.r": 2, "text_encoder.lora_alpha": 3}
    write(tmp_path / "d" / "pytorch_lora_weights.safetensors", {
        f"{q}.lora_A.weight": a_q, f"{q}.lora_B.weight": b_q,
        f"{out}.lora_A.weight": a_o, f"{out}.lora_B.weight": b_o,
        f"{fc1}.lora_linear_layer.down.weight": a_fc, f"{fc1}.lora_linear_layer.up.weight": b_fc,
    }, metadata={"lora_adapter_metadata": json.dumps(metadata)})
    src = source(tmp_path, "d")
    assert {ref.adapter for ref in src.refs()} == {"d"}
    got = {ref.locator["A"].rsplit(".lora", 1)[0]: src.load_dense([ref], F64)[0] for ref in src.refs()}
    np.testing.assert_allclose(got[q], 6 / 4 * f64(b_q) @ f64(a_q), rtol=1e-12)
    np.testing.assert_allclose(got[out], 5 / 2 * f64(b_o) @ f64(a_o), rtol=1e-12)
    np.testing.assert_allclose(got[fc1], 3 / 2 * f64(b_fc) @ f64(a_fc), rtol=1e-12)


def test_loha_is_the_hadamard_product_and_factored_exactly(tmp_path: Path, rng: Generator) -> None:
    """(w1a @ w1b) * (w2a @ w2b) * alpha / r, a conv's w1b/w2b being [r, in kh kw]; its LoRA
    factors (rank r1 r2, face-splitting) give the same delta."""
    w = {"hada_w1_a": normal(rng, 10, 3), "hada_w1_b": normal(rng, 3, 18),
         "hada_w2_a": normal(rng, 10, 3), "hada_w2_b": normal(rng, 3, 18)}
    write(tmp_path / "loha.safetensors", {**{f"{CONV}.{k}": v for k, v in w.items()}, f"{CONV}.alpha": np.array(1.5, F32)})
    src = source(tmp_path, "loha.safetensors")
    (ref,) = src.refs()
    assert (ref.shape, ref.rank, src.has_factors) == ((10, 18), 9, True)
    want = 1.5 / 3 * (f64(w["hada_w1_a"]) @ f64(w["hada_w1_b"])) * (f64(w["hada_w2_a"]) @ f64(w["hada_w2_b"]))
    np.testing.assert_allclose(src.load_dense([ref], F64)[0], want, rtol=1e-12)
    np.testing.assert_allclose(src.load_factors([ref], F64).dense()[0], want, rtol=1e-12, atol=1e-13)


LOKR_CASES = {
    "w1 whole, w2 a product": {"lokr_w1": (2, 3), "lokr_w2_a": (5, 2), "lokr_w2_b": (2, 4)},
    "both products": {"lokr_w1_a": (4, 2), "lokr_w1_b": (2, 2), "lokr_w2_a": (3, 2), "lokr_w2_b": (2, 6)},
    "both whole, conv w2": {"lokr_w1": (2, 2), "lokr_w2": (4, 3, 3, 3)},
}


def _lokr_factor(w: dict[str, np.ndarray], name: str) -> np.ndarray:
    if name in w:
        return f64(w[name]).reshape(len(w[name]), -1)
    return f64(w[name + "_a"]) @ f64(w[name + "_b"])


@pytest.mark.parametrize("case", LOKR_CASES)
def test_lokr_is_the_kronecker_product_and_its_spectrum_needs_no_dense_delta(
    tmp_path: Path, rng: Generator, case: str
) -> None:
    """kron(W1, W2) * alpha / dim (dim: the rank of the factored W2, else W1; scale 1 when
    neither is factored); the factored strategy's spectrum (products of the factors' singular
    values) against the dense float64 SVD."""
    w = {name: normal(rng, *shape) for name, shape in LOKR_CASES[case].items()}
    write(tmp_path / "lokr.safetensors", {**{f"{UNET}.{k}": v for k, v in w.items()}, f"{UNET}.alpha": np.array(3.0, F32)})
    src = source(tmp_path, "lokr.safetensors")
    (ref,) = src.refs()
    scale = 3.0 / 2 if "lokr_w2_b" in w or "lokr_w1_b" in w else 1.0
    want = scale * np.kron(_lokr_factor(w, "lokr_w1"), _lokr_factor(w, "lokr_w2"))
    assert ref.form == "kron" and ref.shape == want.shape and not src.has_factors
    np.testing.assert_allclose(src.load_dense([ref], F64)[0], want, rtol=1e-12)
    factored = STRATEGIES["factored"]
    assert factored.unavailable(Workload.from_source(src), "cpu") is None
    context = ExecContext(F64, "numpy", 1, 0, executor=lambda: None)  # type: ignore[arg-type, return-value]
    result = factored.compute(OpRequest("svd"), factored.load(src, [ref], F64), context)
    S_ref = np.linalg.svd(want, compute_uv=False)
    np.testing.assert_allclose(result.S[0], S_ref, rtol=0, atol=1e-12 * S_ref[0])
    q = result.U.shape[2]
    np.testing.assert_allclose((result.U[0] * result.S[0, :q]) @ result.Vh[0], want, atol=1e-12 * S_ref[0])


def test_diff_is_the_delta_and_vectors_are_listed_as_skipped(tmp_path: Path, rng: Generator) -> None:
    diff = normal(rng, 6, 3, 3, 3)
    write(tmp_path / "full.safetensors", {f"{CONV}.diff": diff, f"{CONV}.diff_b": normal(rng, 6)})
    src = source(tmp_path, "full.safetensors")
    (ref,) = src.refs()
    np.testing.assert_array_equal(src.load_dense([ref], F64)[0], f64(diff).reshape(6, 27))
    assert not src.has_factors
    assert src.skipped() == [f"{tmp_path / 'full.safetensors'}: {CONV}.diff_b (a full bias delta: a vector, not a matrix)"]
    reason = STRATEGIES["factored"].unavailable(Workload.from_source(src), "cpu")
    assert reason == "needs LoRA or LoKr factors, and this workload's matrices are dense"


BadFile = Callable[[Generator], tuple[dict[str, np.ndarray], str]]


def _unknown_key(rng: Generator) -> tuple[dict[str, np.ndarray], str]:
    return {f"{UNET}.lora_down.weight": normal(rng, 2, 4), f"{UNET}.lora_up.weight": normal(rng, 4, 2),
            f"{UNET}.scale_weight": normal(rng, 4)}, f"tensor '{UNET}.scale_weight' is not a LoRA"


def _up_without_down(rng: Generator) -> tuple[dict[str, np.ndarray], str]:
    return {f"{UNET}.lora_up.weight": normal(rng, 4, 2)}, f"module '{UNET}' has tensors ['{UNET}.lora_up.weight']"


def _tucker(rng: Generator) -> tuple[dict[str, np.ndarray], str]:
    return {f"{CONV}.lora_mid.weight": normal(rng, 2, 2, 3, 3)}, f"tensor '{CONV}.lora_mid.weight' is a Tucker core"


def _ranks_disagree(rng: Generator) -> tuple[dict[str, np.ndarray], str]:
    return ({f"{UNET}.lora_down.weight": normal(rng, 2, 4), f"{UNET}.lora_up.weight": normal(rng, 4, 3)},
            f"tensor '{UNET}.lora_down.weight' [2, 4] has rank 2 but")


def _loha_shapes(rng: Generator) -> tuple[dict[str, np.ndarray], str]:
    w = {"hada_w1_a": (4, 2), "hada_w1_b": (2, 5), "hada_w2_a": (4, 2), "hada_w2_b": (2, 6)}
    return {f"{UNET}.{k}": normal(rng, *s) for k, s in w.items()}, "LoHa tensors"


def _alpha_not_scalar(rng: Generator) -> tuple[dict[str, np.ndarray], str]:
    return ({f"{UNET}.lora_down.weight": normal(rng, 2, 4), f"{UNET}.lora_up.weight": normal(rng, 4, 2),
             f"{UNET}.alpha": normal(rng, 2)}, f"tensor '{UNET}.alpha' has shape [2]; expected a scalar")


@pytest.mark.parametrize("make", [_unknown_key, _up_without_down, _tucker, _ranks_disagree, _loha_shapes,
                                  _alpha_not_scalar])
def test_a_layout_not_understood_is_one_line_naming_file_and_key(tmp_path: Path, make: BadFile) -> None:
    tensors, detail = make(np.random.default_rng(1))
    path = write(tmp_path / "bad.safetensors", tensors)
    with pytest.raises(DataError) as info:
        source(tmp_path, "bad.safetensors").refs()
    message = str(info.value)
    assert message.startswith(f"{path}: ") and detail in message and "\n" not in message, message


SPEC = """
[experiment]
name = "kohya_e2e"

[data]
source = "kohya"
paths = ["loras/*.safetensors"]

[[analysis]]
op = "svdvals"
strategy = "factored"
compare = ["numpy"]

[[analysis]]
op = "svd_topk"
k = 3
strategy = "factored"

[benchmark]
warmup = 0
repeats = 1
sample = 0
"""


def write_loras(folder: Path, rng: Generator, n: int = 2) -> dict[str, np.ndarray]:
    """n files, each with a LoRA, a LoCon (3x3 conv), a LoHa and a LoKr module; their float64
    deltas by the defining formulas, keyed as spectra.npz keys them."""
    deltas = {}
    for i in range(n):
        lora = {"lora_down.weight": normal(rng, 3, 12), "lora_up.weight": normal(rng, 8, 3), "alpha": np.array(1.5, F32)}
        locon = {"lora_down.weight": normal(rng, 2, 4, 3, 3), "lora_up.weight": normal(rng, 6, 2, 1, 1)}
        loha = {k: normal(rng, *s) for k, s in
                {"hada_w1_a": (8, 2), "hada_w1_b": (2, 12), "hada_w2_a": (8, 2), "hada_w2_b": (2, 12)}.items()}
        lokr = {"lokr_w1": normal(rng, 2, 3), "lokr_w2": normal(rng, 4, 4)}
        modules = {"lora_unet_a_to_q": lora, "lora_unet_b_conv1": locon, "lora_unet_c_to_k": loha,
                   "lora_unet_d_to_v": lokr}
        write(folder / f"style{i}.safetensors",
              {f"{m}.{k}": v for m, tensors in modules.items() for k, v in tensors.items()})
        deltas[f"style{i}/lora_unet_a_to_q"] = 0.5 * f64(lora["lora_up.weight"]) @ f64(lora["lora_down.weight"])
        up, down = f64(locon["lora_up.weight"]).reshape(6, 2), f64(locon["lora_down.weight"]).reshape(2, 36)
        deltas[f"style{i}/lora_unet_b_conv1"] = up @ down
        deltas[f"style{i}/lora_unet_c_to_k"] = ((f64(loha["hada_w1_a"]) @ f64(loha["hada_w1_b"]))
                                                * (f64(loha["hada_w2_a"]) @ f64(loha["hada_w2_b"])))
        deltas[f"style{i}/lora_unet_d_to_v"] = np.kron(f64(lokr["lokr_w1"]), f64(lokr["lokr_w2"]))
    return deltas


def _run(spec: Path, tmp_path: Path, *settings: str) -> tuple[dict, np.lib.npyio.NpzFile]:  # type: ignore[type-arg]
    out = tmp_path / "run"
    assert main(["run", str(spec), "-o", str(out), "--no-cache", *(f"--set={s}" for s in settings)]) == 0
    return json.loads((out / "record.json").read_text()), np.load(out / "spectra.npz")


def test_lora_locon_loha_and_lokr_files_run_factored_and_verify(tmp_path: Path, rng: Generator) -> None:
    """Through the CLI: the factored strategy answers every module and its values match the
    float64 dense SVD of each delta."""
    deltas = write_loras(tmp_path / "loras", rng)
    (tmp_path / "spec.toml").write_text(SPEC)
    record, spectra = _run(tmp_path / "spec.toml", tmp_path)
    assert [a["strategy"] for a in record["analyses"]] == ["factored", "factored"]
    assert all(v["passed"] for a in record["analyses"] for v in a["verification"])
    for key, W in deltas.items():
        S = np.linalg.svd(W, compute_uv=False)
        np.testing.assert_allclose(spectra[f"svdvals:{key}"], S, rtol=0, atol=2e-6 * S[0])
        np.testing.assert_allclose(spectra[f"svd_topk:{key}"], S[:3], rtol=0, atol=2e-6 * S[0])


def test_the_example_spec_runs(tmp_path: Path, rng: Generator) -> None:
    """configs/kohya.toml on generated files (k lowered to their smallest side, 6): every
    compared strategy verifies."""
    deltas = write_loras(tmp_path / "loras", rng, n=3)
    spec = tmp_path / "kohya.toml"
    spec.write_text((Path(__file__).parents[2] / "configs" / "kohya.toml").read_text())
    record, spectra = _run(spec, tmp_path, "analysis.1.k=4")
    assert all(v["passed"] for a in record["analyses"] for v in a["verification"])
    assert {f"svdvals:{key}" for key in deltas} <= set(spectra.files)
