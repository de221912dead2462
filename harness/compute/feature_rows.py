"""Spectral features of an analysis's results, as tidy rows for features.csv.

Scalar features come from the recorded spectra. A truncated (top-k) spectrum gets the exact
total energy ||W||_F^2 from a pass over the inputs (from the factors when there are factors), so
energy fractions never use the truncated sum. Pairwise features compare adapters at each
(layer, module) position: their top-k singular subspaces (recomputed per position with the
analysis's strategy, since only spectra are kept) and the cosine of the deltas dW themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from harness.data.layout import AdapterLayout
from harness.data.workload import Factors, MatrixRef, Source, Workload
from harness.linalg.features import PAIRWISE_FEATURES, SUBSPACE_FEATURES, Spectrum, pairwise_principal_angles, pairwise_subspace_similarity, scalar_features
from harness.record.features_csv import Row
from harness.linalg.factored import frobenius_gram, frobenius_norms
from harness.linalg.gram import cosine_from_gram
from harness.plan.model import Step
from harness.strategies.base import ExecContext, OpRequest, Strategy
from harness.strategies.registry import STRATEGIES

def total_energies(source: Source, refs: Sequence[MatrixRef], dtype: np.dtype) -> np.ndarray:
    """||W||_F^2 of each matrix, float64: from the factors when the source has them."""
    if source.has_factors:
        f: Factors = source.load_factors(refs, dtype)
        return frobenius_norms(f.B, f.A, f.scale) ** 2
    W = source.load_dense(refs, np.dtype(np.float64))
    return np.einsum("kmn,kmn->k", W, W)


def _row(step: Step, ref: MatrixRef, metric: str, value: float, other: str | None = None) -> Row:
    return Row(analysis=step.analysis, adapter=ref.adapter, other_adapter=other, layer=ref.layer,
               module=ref.module, metric=metric, value=value)


def scalar_rows(
    step: Step, workload: Workload, spectra: dict[str, np.ndarray], dtype: np.dtype
) -> tuple[list[Row], list[str]]:
    """Rows, and notes on values that the spectrum cannot give (written as nan, never guessed):
    energy_rank beyond the top k of a truncated spectrum."""
    names = [f for f in step.features if f not in PAIRWISE_FEATURES]
    if not names:
        return [], []
    truncated = step.op == "svd_topk"
    rows, unknown = [], dict.fromkeys(names, 0)
    for group in workload.groups():
        energies = total_energies(workload.source, group.refs, dtype) if truncated else None
        for i, ref in enumerate(group.refs):
            spectrum = Spectrum(
                spectra[f"{step.analysis}:{ref.id}"],
                total_energy=None if energies is None else float(energies[i]),
                truncated=truncated,
            )
            for name in names:
                try:
                    value = scalar_features(spectrum, [name], tau=step.energy_tau)[name]
                except ValueError:
                    value, unknown[name] = float("nan"), unknown[name] + 1
                rows.append(_row(step, ref, name, value))
    notes = [
        f"{step.analysis}: {name} is beyond the top {step.k} singular values for {count} "
        f"matrices (tau={step.energy_tau}); written as nan"
        for name, count in unknown.items()
        if count
    ]
    return rows, notes


def pairwise_rows(
    step: Step, workload: Workload, ctx: ExecContext, bases: Mapping[str, np.ndarray] | None = None
) -> list[Row]:
    """Rows of every pair of adapters a < b at each position, ordered by position, pair, metric.

    Each metric is computed for all pairs of a position at once (one Gram of the stacked bases,
    one of the deltas), so the per-pair work left is building the rows. `bases` are the top-k
    left singular vectors (m, k) by matrix id that the full analysis computed with the same
    strategy; a position missing any is computed again."""
    wanted = [f for f in step.features if f in PAIRWISE_FEATURES]
    if not wanted:
        return []
    layout = AdapterLayout.from_workload(workload)
    strategy = STRATEGIES[step.strategy]
    assert isinstance(strategy, Strategy)  # subspaces come from a per-matrix svd_topk or svd
    k = step.k or 1
    subspaces = any(f in SUBSPACE_FEATURES for f in wanted)
    first, second = (side.tolist() for side in np.triu_indices(len(layout.adapters), 1))
    rows = []
    for position in layout.positions:
        refs = position.refs
        data = strategy.load(workload.source, refs, ctx.dtype) if subspaces else _exact(workload.source, refs)
        values: dict[str, list[float]] = {}  # metric: its value for each pair, in row order
        if subspaces:
            U = (np.stack([bases[ref.id] for ref in refs]) if bases and all(ref.id in bases for ref in refs)
                 else strategy.compute(OpRequest("svd_topk", k), data, ctx).U)
            assert U is not None  # svd_topk returns the vectors
            if "subspace_similarity" in wanted:
                values["subspace_similarity"] = pairwise_subspace_similarity(U).tolist()
            if "principal_angles" in wanted:
                for i, angles in enumerate(pairwise_principal_angles(U).T.tolist(), start=1):
                    values[f"principal_angle_{i}"] = angles
        if "delta_cosine" in wanted:
            values["delta_cosine"] = cosine_from_gram(_gram(data))[first, second].tolist()
        for pair, (a, b) in enumerate(zip(first, second)):
            for metric, column in values.items():
                rows.append(_row(step, refs[a], metric, column[pair], refs[b].adapter))
    return rows


def _exact(source: Source, refs: Sequence[MatrixRef]) -> Factors | np.ndarray:
    """One position's deltas in float64: as factors when the source has them."""
    if source.has_factors:
        return source.load_factors(refs, np.dtype(np.float64))
    return source.load_dense(refs, np.dtype(np.float64))


def _gram(data: Factors | np.ndarray) -> np.ndarray:
    """<dW_i, dW_j>_F of one position's deltas (the deltas, not their flattened factors), float64."""
    if isinstance(data, Factors):  # float64 factors: frobenius_gram keeps float32 products float32
        f64 = np.float64
        return frobenius_gram(data.B.astype(f64), data.A.astype(f64), data.scale.astype(f64))
    X = data.reshape(len(data), -1).astype(np.float64)
    return X @ X.T


def feature_rows(
    step: Step, workload: Workload, spectra: dict[str, np.ndarray], ctx: ExecContext,
    bases: Mapping[str, np.ndarray] | None = None,
) -> tuple[list[Row], list[str]]:
    """Every requested feature of one analysis, and notes for the user."""
    rows, notes = scalar_rows(step, workload, spectra, ctx.dtype)
    return rows + pairwise_rows(step, workload, ctx, bases), notes
