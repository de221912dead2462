"""The machine as probed: its thread pools in one order whatever order the libraries loaded in
(`harness system` listed openblas then openmp, and a minute later openmp then openblas)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.machine import info

POOLS = [{"internal_api": "openmp", "filepath": "/lib/libgomp.so.1", "version": None, "num_threads": 2},
         {"internal_api": "openblas", "filepath": "/lib/libopenblas.so", "version": "0.3.27", "num_threads": 2}]


@pytest.mark.parametrize("loaded", [POOLS, POOLS[::-1]])
def test_thread_pools_are_listed_in_one_order(loaded: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(info, "threadpool_info", lambda: loaded)
    probed = info.probe.__wrapped__()  # probe is cached for the process: this test's fake stays out of it
    assert [p.api for p in probed.blas] == ["openblas", "openmp"]
