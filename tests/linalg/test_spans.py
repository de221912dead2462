"""Spans of files: the share of them in the page cache, as a warm stream is told from a cold one."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.linalg.spans import cached_fraction
from harness.machine.roofline import drop_from_page_cache

MiB = 1 << 20


def test_a_file_just_read_is_cached_and_one_dropped_is_not(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(np.arange(2 * MiB, dtype=np.uint32).tobytes())  # 8 MiB
    path.read_bytes()
    assert cached_fraction([(path, 0, 8 * MiB), (path, 3 * MiB + 5, MiB)]) == 1.0
    drop_from_page_cache(path)
    assert cached_fraction([(path, 0, 8 * MiB)]) < 0.5
    with path.open("rb") as fh:  # the second half back in the cache
        fh.seek(4 * MiB)
        fh.read()
    assert cached_fraction([(path, 4 * MiB, 4 * MiB)]) == 1.0
    assert 0.25 < cached_fraction([(path, 0, 8 * MiB)]) < 0.75


def test_nothing_to_look_at_is_not_cached(tmp_path: Path) -> None:
    path = tmp_path / "empty.bin"
    path.write_bytes(b"")
    assert cached_fraction([]) == 0.0
    assert cached_fraction([(path, 0, 0)]) == 0.0
