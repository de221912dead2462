"""numpy's per-matrix SVD fanned out over worker processes, one BLAS thread each.

With one thread per worker, p workers run p LAPACK calls at once instead of one call that
scales poorly across threads; the executor (a ProcessPoolExecutor here, Dask elsewhere) comes
from the runner.
"""

from __future__ import annotations

from typing import Any

from harness.data.workload import ShapeGroup
from harness.linalg.device import Backend
from harness.machine.info import MachineInfo
from harness.strategies import cost
from harness.strategies.base import ExecContext, OpRequest, OpResult, Strategy
from harness.strategies.numpy_lapack import stack_results, svd_one

PICKLE_BYTES_PER_S = 1e9  # shipping a matrix to a worker and its result back


class ProcessPoolStrategy(Strategy):
    name = "process_pool"
    ops = frozenset({"svdvals", "svd"})
    summary = "np.linalg.svd per matrix across worker processes (BLAS pinned to 1 thread each)"
    fans_out = True

    def seconds_per_matrix(
        self, op: OpRequest, group: ShapeGroup, machine: MachineInfo, backend: Backend
    ) -> float:
        m, n = group.shape
        single = cost.svd_flops(group.shape, op.wants_vectors) / cost.cpu_flops_per_s(machine, 1)
        workers = min(machine.cores, max(1, len(group)))
        return single / workers + 4 * m * n / PICKLE_BYTES_PER_S

    def compute(self, op: OpRequest, data: Any, ctx: ExecContext) -> OpResult:
        executor = ctx.executor()
        return stack_results(list(executor.map(svd_one, list(data), [op] * len(data))))
