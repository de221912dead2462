"""op pca with axes = true: the axes file against the SVD of the centred data, its index, its
check, and the errors and leftovers a user must never see."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from harness.compute import axes as axes_step
from harness.base.atomic import atomic_npy
from harness.compute.axes import write_axes
from harness.cli.main import main
from harness.data.layout import AdapterLayout
from harness.data.synthetic import SyntheticData, SyntheticSource
from harness.data.workload import Workload
from harness.base.progress import Display
from harness.record.run_record import load_record
from harness.specs.sections import PcaAnalysis
from tests.compute.test_pca import SPEC as PCA_SPEC

SPEC = PCA_SPEC.replace('scope = "{scope}"\n', 'scope = "{scope}"\naxes = true\n')
CONFIG = SyntheticData(adapters=4, layers=2, modules={"up": (12, 8), "down": (8, 12)}, rank=3)


def run(tmp_path: Path, form: str = "lora", scope: str = "global", *extra: str) -> tuple[int, Path]:
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(form=form, components=3, scope=scope))
    out = tmp_path / "run"
    return main(["run", str(spec), "-o", str(out), *extra]), out


def reference_axes(X: np.ndarray, k: int) -> np.ndarray:
    """Rows of Vt of the centred float64 data: the principal axes, sign-free."""
    Xc = X - X.mean(axis=0)
    return np.linalg.svd(Xc, full_matrices=False)[2][:k]


def assert_same_axes(A: np.ndarray, A_ref: np.ndarray) -> None:
    signs = np.sign(np.sum(A * A_ref, axis=1, keepdims=True))
    np.testing.assert_allclose(A * signs, A_ref, atol=2e-6)


def position_data(workload: Workload) -> tuple[AdapterLayout, list[np.ndarray]]:
    layout = AdapterLayout.from_workload(workload)
    blocks = [workload.source.load_dense(p.refs, np.dtype(np.float64)).reshape(layout.n, -1) for p in layout.positions]
    return layout, blocks


@pytest.mark.parametrize("form", ["lora", "dense"])
def test_global_axes_match_the_svd_of_the_centred_adapter_vectors(tmp_path: Path, form: str) -> None:
    code, out = run(tmp_path, form)
    assert code == 0
    workload = Workload.from_source(SyntheticSource(CONFIG.model_copy(update={"form": form}), seed=0))
    _, blocks = position_data(workload)
    X = np.concatenate(blocks, axis=1)
    A = np.load(out / "axes-geo.npy")
    assert A.shape == (3, X.shape[1]) and A.dtype == np.float32
    assert_same_axes(A.astype(np.float64), reference_axes(X, 3))
    with np.load(out / "pca.npz") as z:  # scores are the centred data on these axes
        np.testing.assert_allclose(z["geo:scores"], (X - X.mean(axis=0)) @ A.T.astype(np.float64), atol=1e-5)
    (analysis,) = load_record(out).analyses
    assert analysis.axes is not None and analysis.axes.parameters == X.shape[1]
    assert analysis.axes.orthonormality_error < 1e-6
    assert any(v.strategy == "axes" and v.passed for v in analysis.verification)


def test_per_layer_axes_hold_each_positions_own_pca_in_its_columns(tmp_path: Path) -> None:
    code, out = run(tmp_path, "lora", "per_layer")
    assert code == 0
    layout, blocks = position_data(Workload.from_source(SyntheticSource(CONFIG, seed=0)))
    A = np.load(out / "axes-geo.npy").astype(np.float64)
    with np.load(out / "pca.npz") as z:
        offsets, labels = z["geo:axes_offsets"], list(z["geo:axes_positions"])
        shapes = z["geo:axes_shapes"]
    assert labels == [p.label for p in layout.positions]
    assert [tuple(s) for s in shapes] == [p.shape for p in layout.positions]
    for p, X in enumerate(blocks):
        assert_same_axes(A[:, offsets[p] : offsets[p + 1]], reference_axes(X, 3))


def test_a_cached_pca_step_still_writes_the_same_axes(tmp_path: Path) -> None:
    code, first = run(tmp_path)
    assert code == 0
    spec = tmp_path / "spec.toml"
    assert main(["run", str(spec), "-o", str(tmp_path / "again")]) == 0
    (analysis,) = load_record(tmp_path / "again").analyses
    assert analysis.cached_chunks == 1  # the PCA came from the cache, the axes did not
    np.testing.assert_array_equal(np.load(first / "axes-geo.npy"), np.load(tmp_path / "again" / "axes-geo.npy"))


def test_axes_of_another_pca_fail_the_orthonormality_check(tmp_path: Path) -> None:
    """The check reads the written file back: it catches deltas that are not the vectors whose
    Gram gave the PCA."""
    code, out = run(tmp_path)
    assert code == 0
    with np.load(out / "pca.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["geo:scores"] = arrays["geo:scores"][::-1].copy()  # scores of adapters in another order
    analysis = PcaAnalysis.model_validate({"op": "pca", "name": "geo", "components": 3, "axes": True})
    workload = Workload.from_source(SyntheticSource(CONFIG, seed=0))
    record, check, _ = write_axes("geo", analysis, arrays, workload, tmp_path, dtype=np.dtype(np.float32),
                                  backend="numpy", memory_budget=1 << 20, tolerance=1e-4, display=Display(Console(quiet=True)))
    assert record.orthonormality_error > 1e-2
    assert not check.passed


def test_axes_need_a_file_name_safe_analysis_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(form="lora", components=3, scope="global").replace('name = "geo"', 'name = "geo/1"'))
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "analysis[0]: name 'geo/1'" in err and "axes-geo/1.npy" in err and "Traceback" not in err


def test_too_little_disk_space_is_a_one_line_error_and_leaves_no_run_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(axes_step.shutil, "disk_usage", lambda _: shutil._ntuple_diskusage(10**6, 10**6, 100))
    code, out = run(tmp_path)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(str(out / "axes-geo.npy")) and "100 B is free" in err[-1]
    assert not out.exists()


def test_an_interrupted_axes_file_leaves_nothing_behind(tmp_path: Path) -> None:
    path = tmp_path / "axes.npy"
    with pytest.raises(KeyboardInterrupt), atomic_npy(path, (2, 10), np.dtype(np.float32)) as out:
        out.write(0, np.ones((2, 4)))
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_pieces_land_in_their_columns_in_any_order(tmp_path: Path) -> None:
    path = tmp_path / "axes.npy"
    want = np.arange(30, dtype=np.float64).reshape(3, 10)
    with atomic_npy(path, (3, 10), np.dtype(np.float32)) as out:
        out.write(7, want[:, 7:])
        out.write(0, want[:, :7])
        with pytest.raises(ValueError, match="does not fit"):
            out.write(8, want[:, :3])
    np.testing.assert_array_equal(np.load(path), want.astype(np.float32))
    assert [p.name for p in tmp_path.iterdir()] == ["axes.npy"]


def test_terminal_and_report_say_where_the_axes_are(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(tmp_path, "lora", "global", "--report")
    assert code == 0
    text = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert "geo: principal axes (3 x 384 float32" in text and "in axes-geo.npy" in text
    assert "principal axes (3 x 384 float32" in (out / "report.html").read_text()
