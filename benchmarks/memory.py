"""Peak memory of a full analysis of one shape group: loading and computing chunk by chunk at the
planned batch size, as `harness run` does. asv measures the whole benchmark process's peak RSS.

Memory-bound ops are tracked here: a subclass per op. `svd` is the one that exists now (dense
strategies hold the matrix, U and Vh; `factored` never builds the dense delta). When the "pca"
op lands, `class Pca(_MemorySuite): op = "pca"` with an analysis in configs/bench.toml adds it.
"""

from __future__ import annotations

from benchmarks import CaseSuite, case_params


class _MemorySuite(CaseSuite):
    def peakmem_full_group(self, strategy: str, case: str) -> None:
        self.case.stream_group()


class SvdMemory(_MemorySuite):
    op = "svd"
    params = case_params(op)
