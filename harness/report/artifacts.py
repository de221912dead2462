"""Reading a run folder's data files for the report: spectra.npz always, features.csv and
pca.npz when the run wrote them. Each reader returns plain arrays ready to plot."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from harness.record.features_csv import FeatureRow
from harness.record.run_record import SPECTRA, RecordError

FEATURES = "features.csv"
PCA = "pca.npz"

Band = tuple[np.ndarray, np.ndarray, np.ndarray]  # median, 10th, 90th percentile per index


def decay_bands(folder: Path) -> dict[str, dict[str, Band]]:
    """{analysis: {module: band}} over every matrix of that module (all adapters and layers).
    Keys of spectra.npz are "<analysis>:<matrix id>", the module the id's last path part."""
    path = folder / SPECTRA
    if not path.exists():
        return {}
    grouped: dict[str, dict[str, list[np.ndarray]]] = defaultdict(lambda: defaultdict(list))
    with np.load(path) as spectra:
        for key in spectra.files:
            analysis, _, matrix = key.partition(":")
            grouped[analysis][matrix.rsplit("/", 1)[-1]].append(spectra[key])
    bands: dict[str, dict[str, Band]] = {}
    for analysis, modules in grouped.items():
        bands[analysis] = {}
        for module, arrays in sorted(modules.items()):
            n = min(len(a) for a in arrays)
            stack = np.stack([a[:n] for a in arrays])
            low, median, high = np.percentile(stack, [10, 50, 90], axis=0)
            bands[analysis][module] = (median, low, high)
    return bands


def read_features(folder: Path) -> list[FeatureRow]:
    """features.csv's rows, empty cells as None; [] when the run wrote none."""
    path = folder / FEATURES
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as f:
        try:
            return [
                FeatureRow.model_validate({k: (v if v != "" else None) for k, v in row.items()})
                for row in csv.DictReader(f)
            ]
        except ValidationError as exc:
            raise RecordError(f"{path}: malformed feature row ({exc.error_count()} problems)") from None


def feature_grids(rows: list[FeatureRow]) -> dict[tuple[str, str, str], tuple[np.ndarray, list[str], list[str]]]:
    """{(analysis, metric, module): (adapter x layer values, adapters, layers)} of the
    per-matrix metrics (pairwise rows, with other_adapter set, are not adapter x layer)."""
    cells: dict[tuple[str, str, str], dict[tuple[str, int | None], float]] = defaultdict(dict)
    for r in rows:
        if r.other_adapter is None:
            cells[(r.analysis, r.metric, r.module)][(r.adapter, r.layer)] = r.value
    grids = {}
    for key, values in sorted(cells.items()):
        adapters = sorted({a for a, _ in values})
        layers = sorted({layer for _, layer in values}, key=lambda layer: -1 if layer is None else layer)
        grid = np.full((len(adapters), len(layers)), np.nan)
        for (a, layer), v in values.items():
            grid[adapters.index(a), layers.index(layer)] = v
        grids[key] = (grid, adapters, ["-" if layer is None else str(layer) for layer in layers])
    return grids


def read_pca(folder: Path) -> dict[str, dict[str, np.ndarray]]:
    """{analysis: {"scores", "cosine", "explained_variance_ratio", "adapters"}: array}, with
    whichever of those the run wrote; {} without pca.npz."""
    path = folder / PCA
    if not path.exists():
        return {}
    out: dict[str, dict[str, np.ndarray]] = defaultdict(dict)
    with np.load(path, allow_pickle=False) as data:
        for key in data.files:
            analysis, _, name = key.rpartition(":")
            out[analysis][name] = data[key]
    return dict(out)
