"""features.csv from a run: scalar features, exact energy for truncated spectra, pairwise rows."""

import csv
from pathlib import Path
from typing import get_type_hints

import numpy as np
import pytest

from harness.cli.main import main
from harness.record.features_csv import CSV_COLUMNS, FeatureRow, Row
from harness.specs.reading import SpecError, load_spec
from tests.conftest import CONFIGS

SMOKE = str(CONFIGS / "smoke.toml")


def run_with_features(tmp_path: Path) -> tuple[list[dict[str, str]], np.lib.npyio.NpzFile]:
    out = tmp_path / "run"
    code = main([
        "run", SMOKE, "-o", str(out),
        "--set", "analysis.0.features=['stable_rank','effective_rank','frobenius_norm']",
        "--set", "analysis.2.features=['stable_rank','subspace_similarity','principal_angles','delta_cosine']",
        "--set", "analysis.2.strategy='factored'",
    ])
    assert code == 0
    with open(out / "features.csv") as fh:
        return list(csv.DictReader(fh)), np.load(out / "spectra.npz")


def value(rows, **match) -> float:
    (row,) = [r for r in rows if all(r[k] == str(v) for k, v in match.items())]
    return float(row["value"])


def test_features_csv(tmp_path: Path) -> None:
    from harness.data.registry import build_source

    rows, spectra = run_with_features(tmp_path)
    spec = load_spec(SMOKE)
    source = build_source(spec.data, spec.experiment.seed, Path("."))
    refs = {r.id: r for r in source.refs()}
    W = source.load_dense([refs["adapter1/layer0/up"]], np.dtype(np.float64))[0]
    s = np.linalg.svd(W, compute_uv=False)
    full = dict(analysis="svdvals", adapter="adapter1", layer=0, module="up")
    assert value(rows, metric="frobenius_norm", **full) == pytest.approx(np.linalg.norm(W), rel=1e-5)
    assert value(rows, metric="stable_rank", **full) == pytest.approx((s**2).sum() / s[0] ** 2, rel=1e-5)
    # top-2 spectrum, but the stable rank must use the exact energy, not the truncated sum
    top = dict(analysis="svd_topk", adapter="adapter1", layer=0, module="up")
    assert value(rows, metric="stable_rank", **top) == pytest.approx((s**2).sum() / s[0] ** 2, rel=1e-5)
    W2 = source.load_dense([refs["adapter2/layer0/up"]], np.dtype(np.float64))[0]
    cos = np.vdot(W, W2) / (np.linalg.norm(W) * np.linalg.norm(W2))
    pair = dict(top, other_adapter="adapter2", metric="delta_cosine")
    assert value(rows, **pair) == pytest.approx(cos, abs=1e-12)
    U1 = np.linalg.svd(W)[0][:, :2]
    U2 = np.linalg.svd(W2)[0][:, :2]
    phi = np.linalg.norm(U1.T @ U2) ** 2 / 2
    assert value(rows, **dict(pair, metric="subspace_similarity")) == pytest.approx(phi, abs=1e-5)
    angles = np.arccos(np.linalg.svd(U1.T @ U2, compute_uv=False))
    for i, angle in enumerate(angles, start=1):
        assert value(rows, **dict(pair, metric=f"principal_angle_{i}")) == pytest.approx(angle, abs=1e-4)
    assert len([r for r in rows if r["metric"] == "delta_cosine"]) == 3 * 4  # 3 pairs x 4 positions
    pairwise = [(r["adapter"], r["other_adapter"], r["metric"]) for r in rows if r["other_adapter"]]
    metrics = ["subspace_similarity", "principal_angle_1", "principal_angle_2", "delta_cosine"]
    pairs = [("adapter0", "adapter1"), ("adapter0", "adapter2"), ("adapter1", "adapter2")]
    assert pairwise[:12] == [(a, b, m) for a, b in pairs for m in metrics]  # position, pair, metric


@pytest.mark.parametrize("op,features,message", [
    ("svdvals", ["stabel_rank"], "unknown feature 'stabel_rank'; did you mean 'stable_rank'?"),
    ("svdvals", ["subspace_similarity"], "compares top-k singular vectors: use it with op svd_topk"),
    ("svd_topk", ["effective_rank"], "'effective_rank' needs the full spectrum"),
])
def test_feature_spec_errors(op: str, features: list[str], message: str) -> None:
    index = {"svdvals": 0, "svd_topk": 2}[op]
    with pytest.raises(SpecError) as info:
        load_spec(SMOKE, [f"analysis.{index}.features={features!r}"])
    assert message in info.value.lines[0] and f"analysis[{index}].features" in info.value.lines[0]


def test_the_plain_row_has_feature_rows_fields() -> None:
    """Row is spelt out for the type checker; it must stay FeatureRow's fields, in column order."""
    assert Row._fields == CSV_COLUMNS
    assert get_type_hints(Row) == {name: f.annotation for name, f in FeatureRow.model_fields.items()}
