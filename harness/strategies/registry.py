"""Strategies by name. A strategy that is not really implemented is not registered."""

from __future__ import annotations


from harness.base.suggest import did_you_mean
from harness.strategies.base import StrategyBase
from harness.strategies.cupy_batched import CupyStrategy
from harness.strategies.factored import FactoredStrategy
from harness.strategies.gram import DualGramStrategy, FactoredGramStrategy, GramPairwiseStrategy
from harness.strategies.gram_eigh import GramEighStrategy
from harness.strategies.numpy_lapack import NumpyStrategy
from harness.strategies.process_pool import ProcessPoolStrategy
from harness.strategies.scipy_svds import ScipySvdsStrategy
from harness.strategies.torch_batched import TorchStrategy
from harness.strategies.torch_lowrank import TorchLowrankStrategy

STRATEGIES: dict[str, StrategyBase] = {
    s.name: s
    for s in (
        NumpyStrategy(),
        ProcessPoolStrategy(),
        TorchStrategy(),
        CupyStrategy(),
        ScipySvdsStrategy(),
        TorchLowrankStrategy(),
        FactoredStrategy(),
        GramEighStrategy(),
        DualGramStrategy(),
        FactoredGramStrategy(),
        GramPairwiseStrategy(),
    )
}

# randomized: their accuracy depends on the spectrum's decay, so `auto` never picks them, and a
# plan that lost to one is not reported as a wrong choice
APPROXIMATE = frozenset(name for name, s in STRATEGIES.items() if s.approximate)

BASELINES: dict[str, str] = {
    "svdvals": "numpy",
    "svd": "numpy",
    "svd_topk": "scipy_svds",
    "pca": "gram_pairwise",
}


def strategy_problem(name: str, op: str) -> str | None:
    """None when `name` is a strategy serving `op`, else what is wrong (a close name among the op's own)."""
    if name not in STRATEGIES:
        hint = did_you_mean(name, serving(op))  # one the op takes: 'numpyy' for svd_topk is no numpy
        return f"unknown strategy {name!r}" + (f"; {hint}" if hint else "")
    if op not in STRATEGIES[name].ops:
        return f"strategy {name!r} does not do {op}"
    return None


def serving(op: str) -> list[str]:
    return sorted(n for n, s in STRATEGIES.items() if op in s.ops)


def serving_text(op: str) -> str:
    """`svd_topk strategies: cupy, factored, ...`: what would fit, said once after the problems."""
    return f"{op} strategies: {', '.join(serving(op))}"


def check_strategy_name(name: str, op: str) -> str | None:
    """None when `name` is a strategy serving `op`, else what is wrong and what would fit."""
    problem = strategy_problem(name, op)
    return None if problem is None else f"{problem}{' ' if problem.endswith('?') else '; '}{serving_text(op)}"
