"""Peak memory of a full analysis of one shape group: loading and computing chunk by chunk at the
planned batch size, as `harness run` does. asv measures the whole benchmark process's peak RSS.

Memory-bound per-matrix ops are tracked here: a subclass per op. `svd` is the one (dense
strategies hold the matrix, U and Vh; `factored` never builds the dense delta). The workload-level
op `pca` streams instead: benchmarks/gram_memmap.py measures its peak anonymous memory.
"""

from __future__ import annotations

from benchmarks import CaseSuite, case_params


class _MemorySuite(CaseSuite):
    def peakmem_full_group(self, strategy: str, case: str) -> None:
        self.case.stream_group()


class SvdMemory(_MemorySuite):
    op = "svd"
    params = case_params(op)
