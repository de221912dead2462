"""One `pca` step's numbers: from the chosen strategy's Grams over the whole workload, dual PCA
and the arrays of the run folder's pca.npz; and the errors of a strategy's Grams against the
float64 references, by which the benchmark phase (harness.run.phase) verifies them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.base.atomic import write_atomic
from harness.data.layout import AdapterLayout
from harness.data.workload import DataError
from harness.linalg.gram import cosine_from_gram
from harness.linalg.pca import DualPCA, dual_pca
from harness.specs.sections import PcaAnalysis

PCA_FILE = "pca.npz"
GLOBAL = "global"


def scoped_grams(grams: np.ndarray, layout: AdapterLayout, scope: str) -> dict[str, np.ndarray]:
    """The Gram of each PCA the scope asks for: the sum over positions, or one per position."""
    if scope == GLOBAL:
        return {GLOBAL: grams.sum(axis=0)}
    return {p.label: g for p, g in zip(layout.positions, grams)}


def pca_prefix(analysis: str, scope: str, key: str) -> str:
    """pca.npz names of one PCA start `<analysis>:`, or `<analysis>:<layer/module>:`."""
    return analysis if scope == GLOBAL else f"{analysis}:{key}"


def pca_arrays(analysis: str, scope: str, key: str, G: np.ndarray, pca: DualPCA, adapters: tuple[str, ...]) -> dict[str, np.ndarray]:
    """pca.npz entries of one PCA: `<analysis>:<name>`, or `<analysis>:<layer/module>:<name>`."""
    prefix = pca_prefix(analysis, scope, key)
    return {
        f"{prefix}:eigenvalues": pca.eigenvalues,
        f"{prefix}:explained_variance_ratio": pca.explained_variance_ratio,
        f"{prefix}:scores": pca.scores,
        f"{prefix}:cosine": cosine_from_gram(G),
        f"{prefix}:adapters": np.array(adapters),
    }


def pca_from_arrays(arrays: dict[str, np.ndarray], prefix: str, center: bool) -> DualPCA:
    """The DualPCA whose pca.npz entries start `prefix` (as cached, so no Gram is needed)."""
    eigenvalues = arrays[f"{prefix}:eigenvalues"]
    scores = arrays[f"{prefix}:scores"]
    return DualPCA(
        eigenvalues=eigenvalues,
        explained_variance_ratio=arrays[f"{prefix}:explained_variance_ratio"],
        singular_values=np.sqrt(eigenvalues * max(scores.shape[0] - 1, 1)),
        scores=scores,
        centered=center,
    )


def save_pca(arrays: dict[str, np.ndarray], folder: Path) -> Path:
    """Add `arrays` to the run folder's pca.npz (earlier pca analyses of the run are kept)."""
    path = folder / PCA_FILE
    merged: dict[str, np.ndarray] = {}
    if path.exists():
        with np.load(path, allow_pickle=False) as old:
            merged = {k: old[k] for k in old.files}
    merged.update(arrays)
    write_atomic(path, lambda fh: np.savez(fh, **merged))  # type: ignore[arg-type]  # numpy's stub matches **arrays against allow_pickle
    return path


def gram_errors(
    grams: dict[str, np.ndarray], refs: dict[str, np.ndarray], components: int, center: bool
) -> tuple[float, float]:
    """Worst max|G - G_ref| / max|G_ref| and max|w - w_ref| / w_ref_1 over the scope's PCAs."""
    tiny = np.finfo(np.float64).tiny
    gram_error = eig_error = 0.0
    for key, G_ref in refs.items():
        G = grams[key]
        gram_error = max(gram_error, float(np.max(np.abs(G - G_ref)) / max(np.max(np.abs(G_ref)), tiny)))
        w = dual_pca(G, components, center=center).eigenvalues
        w_ref = dual_pca(G_ref, components, center=center).eigenvalues
        eig_error = max(eig_error, float(np.max(np.abs(w - w_ref)) / max(w_ref[0], tiny)))
    return gram_error, eig_error


def require_finite_grams(grams: np.ndarray, layout: AdapterLayout) -> None:
    """DataError naming the first position whose Gram overflowed: finite deltas can still have
    squares beyond the dtype (a float64 1e300), and an Inf Gram has no eigenvalues."""
    for position, G in zip(layout.positions, grams):
        if not np.isfinite(G).all():
            raise DataError(f"{position.label}: the Gram of its deltas overflows {G.dtype} (a value too large to "
                            "square); expected deltas whose squares fit the run's dtype")


def pca_results(
    name: str, analysis: PcaAnalysis, layout: AdapterLayout, full_grams: np.ndarray
) -> tuple[dict[str, list[float]], dict[str, np.ndarray]]:
    """The explained-variance ratios per PCA, and the pca.npz arrays, of the chosen strategy's
    (positions, n, n) Grams of the whole workload."""
    ratios: dict[str, list[float]] = {}
    arrays: dict[str, np.ndarray] = {}
    require_finite_grams(full_grams, layout)
    for key, G in scoped_grams(full_grams, layout, analysis.scope).items():
        pca = dual_pca(G, analysis.components, center=analysis.center)
        ratios[key] = pca.explained_variance_ratio.tolist()
        arrays.update(pca_arrays(name, analysis.scope, key, G, pca, layout.adapters))
    return ratios, arrays
