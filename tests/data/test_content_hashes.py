"""Input digests remembered across runs by file identity: a second process reads no unchanged
file in full, a changed file is hashed again, a file modified just before its hashing is not
trusted to a later process, and a broken store only costs time."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness.data import content_hashes
from harness.data.workload import DataError


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files read in full, in a fresh process's memory (no digest known)."""
    monkeypatch.setattr(content_hashes, "_known", {})
    names: list[str] = []
    file_digest = hashlib.file_digest

    def counting(f: Any, digest: str) -> Any:
        names.append(Path(f.name).name)
        return file_digest(f, digest)

    monkeypatch.setattr(hashlib, "file_digest", counting)
    return names


def new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(content_hashes, "_known", {})


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_a_later_process_takes_the_digest_from_the_store(tmp_path: Path, hashed: list[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(content_hashes, "RACY_NS", 0)  # files written by the test are not racy
    a, b = write(tmp_path / "a.bin", b"alpha"), write(tmp_path / "b.bin", b"beta")
    cache = tmp_path / "cache"
    told: list[tuple[str, int]] = []
    with content_hashes.remembered(cache, lambda path, size: told.append((path.name, size))):
        first = [content_hashes.digest(a), content_hashes.digest(b)]
    assert first == [hashlib.sha256(b"alpha").hexdigest(), hashlib.sha256(b"beta").hexdigest()]
    assert hashed == ["a.bin", "b.bin"] and told == [("a.bin", 5), ("b.bin", 4)]
    new_process(monkeypatch)
    with content_hashes.remembered(cache):
        assert [content_hashes.digest(a), content_hashes.digest(b)] == first
    assert hashed == ["a.bin", "b.bin"]  # nothing read again


def test_a_changed_file_is_hashed_again_even_with_its_size_and_mtime_put_back(
        tmp_path: Path, hashed: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(content_hashes, "RACY_NS", 0)
    a = write(tmp_path / "a.bin", b"alpha")
    cache = tmp_path / "cache"
    with content_hashes.remembered(cache):
        content_hashes.digest(a)
    stat = a.stat()
    write(a, b"ALPHA")
    os.utime(a, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # ctime still moved: no user call sets it
    new_process(monkeypatch)
    with content_hashes.remembered(cache):
        assert content_hashes.digest(a) == hashlib.sha256(b"ALPHA").hexdigest()
    assert hashed == ["a.bin", "a.bin"]


def test_a_file_modified_just_before_its_hashing_is_not_kept(tmp_path: Path, hashed: list[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Written now, within RACY_NS: another write inside the clock's resolution could keep its
    identity, so only this process uses the digest (git's racy rule)."""
    a = write(tmp_path / "a.bin", b"alpha")
    cache = tmp_path / "cache"
    with content_hashes.remembered(cache):
        content_hashes.digest(a)
        content_hashes.digest(a)
    assert hashed == ["a.bin"]
    assert not (cache / content_hashes.STORE).exists()  # nothing to keep, nothing written
    new_process(monkeypatch)
    with content_hashes.remembered(cache):
        content_hashes.digest(a)
    assert hashed == ["a.bin", "a.bin"]


@pytest.mark.parametrize("store", ["not json", '{"version": 999, "files": {}}', '{"version": 1, "files": [1]}',
                                   '{"version": 1, "files": {"x": 3}}'])
def test_a_broken_or_foreign_store_is_ignored_and_replaced(tmp_path: Path, hashed: list[str],
                                                           monkeypatch: pytest.MonkeyPatch, store: str) -> None:
    monkeypatch.setattr(content_hashes, "RACY_NS", 0)
    a = write(tmp_path / "a.bin", b"alpha")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / content_hashes.STORE).write_text(store)
    with content_hashes.remembered(cache):
        assert content_hashes.digest(a) == hashlib.sha256(b"alpha").hexdigest()
    kept = json.loads((cache / content_hashes.STORE).read_text())
    assert kept["version"] == 1 and list(kept["files"]) == [str(a)]


def test_files_gone_are_dropped_from_the_store(tmp_path: Path, hashed: list[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(content_hashes, "RACY_NS", 0)
    a, b = write(tmp_path / "a.bin", b"alpha"), write(tmp_path / "b.bin", b"beta")
    cache = tmp_path / "cache"
    with content_hashes.remembered(cache):
        content_hashes.digest(a)
        content_hashes.digest(b)
    b.unlink()
    with content_hashes.remembered(cache):
        pass
    assert list(json.loads((cache / content_hashes.STORE).read_text())["files"]) == [str(a)]


def test_a_store_that_cannot_be_written_costs_nothing_but_time(tmp_path: Path, hashed: list[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    a = write(tmp_path / "a.bin", b"alpha")
    blocker = write(tmp_path / "cache", b"a file where the cache folder should be")
    with content_hashes.remembered(blocker):
        assert content_hashes.digest(a) == hashlib.sha256(b"alpha").hexdigest()
    assert blocker.read_bytes().startswith(b"a file")


def test_a_file_that_changes_while_read_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    new_process(monkeypatch)
    a = write(tmp_path / "a.bin", b"alpha")
    file_digest = hashlib.file_digest

    def appending(f: Any, digest: str) -> Any:
        with a.open("ab") as fh:  # another program writes on while we read
            fh.write(b" and more")
        return file_digest(f, digest)

    monkeypatch.setattr(hashlib, "file_digest", appending)
    with pytest.raises(DataError, match=rf"^{a}: changed while it was read; expected input files that stay"):
        content_hashes.digest(a)


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=rf"^{tmp_path / 'gone.bin'}: cannot read \(No such file or directory\)$"):
        content_hashes.digest(tmp_path / "gone.bin")


def test_a_store_keeps_only_the_files_of_its_own_runs(tmp_path: Path, hashed: list[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """One process running two specs: each cache folder's store holds its own inputs only, and
    a run that digests nothing writes no store."""
    monkeypatch.setattr(content_hashes, "RACY_NS", 0)
    a, b = write(tmp_path / "a.bin", b"alpha"), write(tmp_path / "b.bin", b"beta")
    with content_hashes.remembered(tmp_path / "one"):
        content_hashes.digest(a)
    with content_hashes.remembered(tmp_path / "two"):
        content_hashes.digest(b)
    with content_hashes.remembered(tmp_path / "synthetic"):
        pass
    stored = {name: set(json.loads((tmp_path / name / content_hashes.STORE).read_text())["files"])
              for name in ("one", "two")}
    assert stored == {"one": {str(a)}, "two": {str(b)}}
    assert not (tmp_path / "synthetic").exists()
