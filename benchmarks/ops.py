"""Time and accuracy of every strategy of every op, per case of the bench specs.

A new op gets a three-line subclass naming it, once configs/bench*.toml have an analysis of it.
"""

from __future__ import annotations

from typing import Any

from benchmarks import CaseSuite, case_params


class _OpSuite(CaseSuite):
    def setup(self, strategy: str, case: str) -> None:
        super().setup(strategy, case)
        self.batches: list[Any] = self.case.load_sample()
        # Warm-up, untimed as in `harness run`: starts worker pools and torch's lazy init; the
        # answer is what track_error checks.
        self.result = self.case.compute(self.batches)

    def time_compute(self, strategy: str, case: str) -> None:
        self.case.compute(self.batches)

    def track_error(self, strategy: str, case: str) -> float:
        """Max error relative to sigma_1 vs float64 LAPACK; lower is better."""
        return self.case.error(self.result)

    track_error.unit = "relative error"  # type: ignore[attr-defined]


class Svdvals(_OpSuite):
    op = "svdvals"
    params = case_params(op)


class Svd(_OpSuite):
    op = "svd"
    params = case_params(op)


class SvdTopk(_OpSuite):
    op = "svd_topk"
    params = case_params(op)
