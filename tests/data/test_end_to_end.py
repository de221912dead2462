"""Real files through the whole CLI: PEFT adapters in, exact spectra out; bad files, exit 2."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from harness.cli.main import main

SPEC = """
[experiment]
name = "peft_e2e"

[data]
source = "peft"
paths = ["adapters/*"]

[[analysis]]
op = "svdvals"
compare = ["numpy", "factored"]

[benchmark]
warmup = 0
repeats = 1
sample = 0
"""


def write_adapters(tmp_path: Path, write_adapter, n: int = 2) -> dict[str, np.ndarray]:
    """n adapters, two layers of q_proj (24 x 16, r=4, alpha 8 -> scale 2); the deltas by hand."""
    rng = np.random.default_rng(0)
    deltas = {}
    for a in range(n):
        factors = {}
        for layer in range(2):
            A, B = rng.standard_normal((4, 16)).astype(np.float32), rng.standard_normal((24, 4)).astype(np.float32)
            module = f"model.layers.{layer}.self_attn.q_proj"
            factors[module] = (A, B)
            deltas[f"svdvals:task{a}/layer{layer}/self_attn.q_proj"] = 2.0 * B.astype(np.float64) @ A
        write_adapter(tmp_path / "adapters" / f"task{a}", factors)
    return deltas


@pytest.mark.usefixtures("quiet_machine")  # every compared point timed, however busy the machine
def test_peft_adapters_give_exact_spectra(tmp_path: Path, write_adapter) -> None:
    deltas = write_adapters(tmp_path, write_adapter)
    (tmp_path / "spec.toml").write_text(SPEC)
    out = tmp_path / "run"
    assert main(["run", str(tmp_path / "spec.toml"), "-o", str(out)]) == 0
    record = json.loads((out / "record.json").read_text())
    analysis = record["analyses"][0]
    assert {t["strategy"] for t in analysis["timings"]} >= {"numpy", "factored"}
    assert all(v["passed"] for v in analysis["verification"])
    spectra = np.load(out / "spectra.npz")
    assert sorted(spectra.files) == sorted(deltas)
    for key, W in deltas.items():
        ref = np.linalg.svd(W, compute_uv=False)
        np.testing.assert_allclose(spectra[key], ref, rtol=0, atol=1e-5 * ref[0])


def test_bad_input_exits_2_and_writes_nothing(tmp_path: Path, write_adapter, capsys) -> None:
    write_adapters(tmp_path, write_adapter, n=1)
    (tmp_path / "adapters" / "task0" / "adapter_model.safetensors").unlink()
    (tmp_path / "spec.toml").write_text(SPEC)
    out = tmp_path / "run"
    assert main(["run", str(tmp_path / "spec.toml"), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "adapter_model.safetensors" in err
    assert not out.exists()


def test_nan_found_while_loading_exits_2_and_leaves_no_folder(tmp_path: Path, capsys) -> None:
    W = np.ones((6, 4), dtype=np.float32)
    W[2, 3] = np.nan
    np.save(tmp_path / "bad.npy", W)
    np.save(tmp_path / "good.npy", np.eye(6, 4, dtype=np.float32))
    (tmp_path / "spec.toml").write_text(SPEC.replace('source = "peft"\npaths = ["adapters/*"]',
                                                     'source = "arrays"\npaths = ["good.npy", "bad.npy"]'))
    out = tmp_path / "run"
    assert main(["run", str(tmp_path / "spec.toml"), "-o", str(out), "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    # the phases that finished before the bad matrix was found (one line each, as in a log),
    # then the error in one line
    assert "bad.npy" in err[-1] and "NaN" in err[-1] and "Traceback" not in "\n".join(err)
    assert all(re.search(r" in [\d.]+ (µs|ms|s)$", line) for line in err[:-1]), err
    assert not out.exists()


def test_peft_adapters_give_the_principal_axes_of_their_deltas(tmp_path: Path, write_adapter) -> None:
    deltas = write_adapters(tmp_path, write_adapter, n=3)
    spec = SPEC.replace('op = "svdvals"\ncompare = ["numpy", "factored"]',
                        'name = "geo"\nop = "pca"\ncomponents = 2\naxes = true')
    (tmp_path / "spec.toml").write_text(spec)
    out = tmp_path / "run"
    assert main(["run", str(tmp_path / "spec.toml"), "-o", str(out)]) == 0
    with np.load(out / "pca.npz") as z:
        assert list(z["geo:axes_positions"]) == ["layer0/self_attn.q_proj", "layer1/self_attn.q_proj"]
    X = np.stack([np.concatenate([deltas[f"svdvals:task{a}/layer{layer}/self_attn.q_proj"].ravel()
                                  for layer in range(2)]) for a in range(3)])
    want = np.linalg.svd(X - X.mean(axis=0), full_matrices=False)[2][:2]
    axes = np.load(out / "axes-geo.npy").astype(np.float64)
    signs = np.sign(np.sum(axes * want, axis=1, keepdims=True))
    np.testing.assert_allclose(axes * signs, want, atol=1e-6)
