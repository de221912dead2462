"""asv suites and benchmark scripts. speedups.py tracks what the harness measures, each compared
strategy's speedup, from `harness run` itself; continuous.py is the regression gate over it. The
kernel suites time code paths directly; memory.py's cases come from `harness.run.asv_cases`, which
prepares them along the code path `harness run` takes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from harness.run.asv_cases import Case, case_keys, strategies_for
from harness.linalg.device import torch_module
from harness.machine.info import probe

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
SPECS = [CONFIGS / "bench.toml", CONFIGS / "bench_dense.toml"]

# Probed and torch imported once at import: asv.conf.json's forkserver launch forks every
# benchmark process from one that has done it, instead of paying seconds of start-up per case.
torch_module()
probe()


def load_average(figures: int = 3) -> str:
    """The load average's first `figures` (1, 5 and 15 minutes), said beside every figure a script prints."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg()[:figures])
    except OSError:  # not on this system
        return "?"


def case_params(op: str) -> list[list[str]]:
    """asv `params` of a suite of `op`: strategy names x case labels."""
    return [strategies_for(op), list(case_keys(SPECS, op))]


def open_case(op: str, case: str, strategy: str) -> Case:
    return Case(case_keys(SPECS, op)[case], strategy)


class CaseSuite:
    """A suite over (strategy, case) of one op: opens the case in setup, closes it after."""

    op: ClassVar[str]
    param_names = ["strategy", "case"]
    case: Case
    timeout = 120

    def setup(self, strategy: str, case: str) -> None:
        self.case = open_case(self.op, case, strategy)

    def teardown(self, strategy: str, case: str) -> None:
        # asv also tears down after a setup that skipped (raised NotImplementedError)
        if (opened := getattr(self, "case", None)) is not None:
            opened.close()
