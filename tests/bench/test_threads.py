"""Thread pinning: every pool at the asked count inside, restored after, recorded."""

import sys

from threadpoolctl import threadpool_info

from harness.bench.threads import pinned, thread_counts


def test_pinned_sets_and_restores_every_pool() -> None:
    import numpy  # noqa: F401  (loads the BLAS pool)

    before = thread_counts()
    with pinned(1):
        inside = thread_counts()
        assert all(p["num_threads"] == 1 for p in threadpool_info())
        assert set(inside.values()) == {1}
    assert thread_counts() == before


def test_torch_is_pinned_when_loaded() -> None:
    torch = sys.modules.get("torch")
    if torch is None:
        import pytest

        pytest.skip("torch is not imported here")
    before = torch.get_num_threads()
    with pinned(1):
        assert torch.get_num_threads() == 1 and thread_counts()["torch"] == 1
    assert torch.get_num_threads() == before
