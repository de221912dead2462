"""The run's factor memo: one load per matrix, identical factors, a byte limit, safe for threads,
and, pickled for a worker, that worker's own memo of the run."""

import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from harness.data.memo import MemoSource, forget_worker_memo
from harness.data.synthetic import SyntheticSource
from harness.data.workload import Workload


class Counting(SyntheticSource):
    loads = 0

    def load_factors(self, refs, dtype):  # type: ignore[no-untyped-def]
        Counting.loads += len(refs)
        return super().load_factors(refs, dtype)


def test_each_matrix_loads_once_and_stays_identical(lora_workload: Workload) -> None:
    inner = lora_workload.source
    counting = Counting(inner.config, inner.seed)  # type: ignore[attr-defined]
    Counting.loads = 0
    memo = MemoSource(counting, limit_bytes=1 << 30, dtype=np.dtype(np.float32))
    refs = lora_workload.groups()[0].refs
    f32 = np.dtype(np.float32)
    first = memo.load_factors(refs, f32)
    again = memo.load_factors(refs[::-1], f32)  # any order, any grouping
    assert Counting.loads == len(refs)
    memo.load_factors(refs, np.dtype(np.float64))  # another dtype: passes through, not kept
    assert Counting.loads == 2 * len(refs) and memo.held_bytes == first.B.nbytes + first.A.nbytes
    direct = inner.load_factors(refs, f32)
    np.testing.assert_array_equal(first.B, direct.B)
    np.testing.assert_array_equal(again.A, direct.A[::-1])
    np.testing.assert_array_equal(first.scale, direct.scale)


def test_a_full_memo_serves_without_keeping(lora_workload: Workload) -> None:
    memo = MemoSource(lora_workload.source, limit_bytes=1, dtype=np.dtype(np.float32))
    refs = lora_workload.groups()[0].refs
    f = memo.load_factors(refs, np.dtype(np.float32))
    assert len(f.B) == len(refs) and memo.held_bytes == 0


def test_pickled_it_is_the_workers_own_memo_of_the_run(lora_workload: Workload) -> None:
    memo = MemoSource(lora_workload.source, limit_bytes=1 << 30, dtype=np.dtype(np.float32))
    memo.load_factors(lora_workload.refs[:2], np.dtype(np.float32))
    copy = pickle.loads(pickle.dumps(memo))  # as a worker process receives it
    assert type(copy) is MemoSource and type(copy.inner) is SyntheticSource and copy.held_bytes == 0
    assert copy.fingerprint() == memo.fingerprint()
    copy.load_factors(lora_workload.refs[:2], np.dtype(np.float32))
    assert pickle.loads(pickle.dumps(memo)) is copy  # the run's next task finds what it loaded
    other = pickle.loads(pickle.dumps(MemoSource(lora_workload.source, 1 << 30, np.dtype(np.float32))))
    assert other is not copy and other.held_bytes == 0  # another run's replaces it
    forget_worker_memo()


def test_task_threads_share_the_memo(lora_workload: Workload) -> None:
    memo = MemoSource(lora_workload.source, limit_bytes=1 << 30, dtype=np.dtype(np.float32))
    refs, f32 = lora_workload.refs, np.dtype(np.float32)
    halves = [refs[: len(refs) // 2], refs[len(refs) // 2 :]]
    with ThreadPoolExecutor(4) as threads:
        list(threads.map(lambda part: memo.load_factors(part, f32), halves * 4))
    got, direct = memo.load_factors(refs, f32), lora_workload.source.load_factors(refs, f32)
    np.testing.assert_array_equal(got.B, direct.B)
    np.testing.assert_array_equal(got.A, direct.A)
