"""The run's factor memo: one load per matrix, identical factors, a byte limit, and a plain
source when pickled for a worker."""

import pickle

import numpy as np

from harness.data.memo import MemoSource
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


def test_pickled_it_is_the_plain_source(lora_workload: Workload) -> None:
    memo = MemoSource(lora_workload.source, limit_bytes=1 << 30, dtype=np.dtype(np.float32))
    memo.load_factors(lora_workload.refs[:2], np.dtype(np.float32))
    copy = pickle.loads(pickle.dumps(memo))
    assert type(copy) is SyntheticSource and copy.fingerprint() == memo.fingerprint()
