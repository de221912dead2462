"""Executing one `pca` step: from the chosen strategy's Grams over the whole workload,
dual PCA, the arrays in the run folder's pca.npz, then timing and verification of every compared
strategy on a sub-workload.

The sub-workload is the first `benchmark.sample` matrix positions ((layer, module) slots) of
every adapter (all of them for 0); each strategy's cost is linear in the positions, so its
time is scaled by positions / sampled. The reference is dual_gram in float64 with numpy on
the same positions.
"""

from __future__ import annotations

import dataclasses
import time
from functools import partial
from collections.abc import Callable
from pathlib import Path

import numpy as np

from harness.atomic import write_atomic
from harness.data.layout import AdapterLayout
from harness.data.workload import Workload
from harness.linalg.gram import cosine_from_gram
from harness.linalg.pca import DualPCA, dual_pca
from harness.plan import Plan, Step
from harness.results import (
    AnalysisRecord,
    GroupTiming,
    StrategyTiming,
    analysis_record,
    apply_speedups,
)
from harness.spec import PcaAnalysis
from harness.strategies.base import ExecContext
from harness.strategies.gram import DualGramStrategy, GramStrategy
from harness.strategies.registry import STRATEGIES
from harness.timing import measure
from harness.verify import Verification

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
    write_atomic(path, lambda fh: np.savez(fh, **merged))
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


def run_pca_step(
    step: Step,
    analysis: PcaAnalysis,
    plan: Plan,
    workload: Workload,
    context: Callable[[str], ExecContext],
    full_grams: np.ndarray,
    gram_seconds: float,
    *,
    warmup: int,
    repeats: int,
) -> tuple[AnalysisRecord, dict[str, np.ndarray]]:
    """The step's record, and its pca.npz arrays (the caller saves them). `full_grams` are the
    chosen strategy's (positions, n, n) Grams of the whole workload, computed by the caller in
    `gram_seconds` (here or on workers); this times and verifies every strategy on the
    sub-workload."""
    layout = AdapterLayout.from_workload(workload)
    source = workload.source

    start = time.perf_counter()
    grams = scoped_grams(full_grams, layout, analysis.scope)
    ratios: dict[str, list[float]] = {}
    arrays: dict[str, np.ndarray] = {}
    for key, G in grams.items():
        pca = dual_pca(G, analysis.components, center=analysis.center)
        ratios[key] = pca.explained_variance_ratio.tolist()
        arrays.update(pca_arrays(step.analysis, analysis.scope, key, G, pca, layout.adapters))
    wall = gram_seconds + time.perf_counter() - start

    sub = layout.head(plan.sample)
    ctx64 = dataclasses.replace(context("numpy"), dtype=np.dtype(np.float64), backend="numpy")
    refs = scoped_grams(DualGramStrategy().grams(source, sub, ctx64, plan.memory_budget), sub, analysis.scope)
    timings: list[StrategyTiming] = []
    checks: list[Verification] = []
    for timed in step.timed:
        strategy = STRATEGIES[timed.strategy]
        assert isinstance(strategy, GramStrategy)
        ctx = context(timed.device)
        measurement, result = measure(
            partial(strategy.grams, source, sub, ctx, plan.memory_budget),
            warmup=warmup,
            repeats=repeats,
            backend=ctx.backend,
        )
        scale = len(layout.positions) / len(sub.positions)
        timings.append(
            StrategyTiming(
                strategy=timed.strategy,
                role=timed.role,
                device=timed.device,
                groups=[GroupTiming(group="positions", sampled=len(sub.positions),
                                    total=len(layout.positions), measurement=measurement)],
                estimate_total_s=measurement.median_s * scale,
                iqr_total_s=measurement.iqr_s * scale,
                extrapolated=scale > 1,
            )
        )
        gram_error, eig_error = gram_errors(
            scoped_grams(result, sub, analysis.scope), refs, analysis.components, analysis.center
        )
        checks.append(Verification.judged(
            timed.strategy, len(sub.positions) * sub.n, step.tolerance, max(gram_error, eig_error)
        ))
    apply_speedups(timings)
    record = analysis_record(step, len(workload), wall, timings, checks, explained_variance_ratio=ratios)
    return record, arrays
