"""Content hashes of input files, remembered across runs by each file's identity.

A workload's fingerprint covers its files' bytes, so the cache never serves a result of other
numbers. Hashing is a full read: for 18 fine-tunes of a 352M-parameter model, 26.8 GB, as long
as their whole PCA. So a digest is kept with its file's identity (device, inode, size, mtime and
ctime in ns) in the cache folder: a write changes ctime, which no user call can set back, so an
unchanged identity means unchanged bytes (git's index makes the same bet). A file modified within
RACY_NS of its hashing could change again inside the clock's resolution and keep its identity, so
its digest is used in this process only (git's "racy" rule).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from harness.base.atomic import write_atomic
from harness.data.workload import DataError

__all__ = ["STORE", "digest", "remembered"]

STORE = "content-hashes.json"  # in the cache folder
RACY_NS = 2_000_000_000
_VERSION = 1


class _Known(NamedTuple):
    identity: tuple[int, ...]
    digest: str
    racy: bool  # modified too near its hashing to be trusted by a later process


def _identity(stat: os.stat_result) -> tuple[int, ...]:
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


_known: dict[str, _Known] = {}  # this process's digests, by path
_on_hash: list[Callable[[Path, int], None]] = []  # told of each file read in full
_asked: list[set[str]] = []  # paths digested within each open `remembered`


def digest(path: Path) -> str:
    """The sha256 of `path`'s bytes: remembered while its identity holds, else read in full.
    A file that changes while read raises DataError: its digest would describe no version."""
    try:
        before = path.stat()
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror})") from e
    identity = _identity(before)
    for asked in _asked:
        asked.add(str(path))
    known = _known.get(str(path))
    if known is not None and known.identity == identity:
        return known.digest
    started = time.time_ns()
    for tell in _on_hash:
        tell(path, before.st_size)
    try:
        with path.open("rb") as f:
            value = hashlib.file_digest(f, "sha256").hexdigest()
        after = path.stat()
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror})") from e
    if _identity(after) != identity:
        raise DataError(f"{path}: changed while it was read; expected input files that stay as they are during a run")
    racy = max(before.st_mtime_ns, before.st_ctime_ns) > started - RACY_NS
    _known[str(path)] = _Known(identity, value, racy)
    return value


def _load(store: Path) -> dict[str, list[object]]:
    """Digests kept in `store` (returned as kept), unless this process knows the file better;
    a store of another version, or one that cannot be read or parsed, is ignored (it only saves
    time)."""
    try:
        kept = json.loads(store.read_text())
        if kept.get("version") != _VERSION:
            return {}
        for path, (identity, value) in kept["files"].items():
            _known.setdefault(path, _Known(tuple(identity), value, False))
        return dict(kept["files"])
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def _save(store: Path, kept: dict[str, list[object]], asked: set[str]) -> None:
    """The trusted digests of the files the store `kept` or the run `asked` for that are still
    there (not every digest this process knows: a long-lived process runs other specs, whose
    files are not this cache's business), written atomically when they differ from what it kept
    (a run beside this one may lose its additions: they are only hashed again)."""
    files: dict[str, list[object]] = {}
    for path in sorted(asked | kept.keys()):
        if (known := _known.get(path)) is None:  # its hashing failed
            continue
        try:
            still = _identity(os.stat(path)) == known.identity
        except OSError:
            still = False
        if still and not known.racy:
            files[path] = [list(known.identity), known.digest]
    if files == kept:
        return
    body = json.dumps({"version": _VERSION, "files": files}, indent=0).encode()
    write_atomic(store, lambda fh: fh.write(body))


@contextmanager
def remembered(folder: Path | None, on_hash: Callable[[Path, int], None] | None = None) -> Iterator[None]:
    """Within: digests are looked up in `folder`'s store first and saved there after (folder
    None: this process's only), and `on_hash(path, bytes)` is told before each file is read.
    A store that cannot be written costs only the time to hash again: OSError is not raised."""
    store = None if folder is None else folder / STORE
    kept = {} if store is None else _load(store)
    asked: set[str] = set()
    _asked.append(asked)
    if on_hash is not None:
        _on_hash.append(on_hash)
    try:
        yield
    finally:
        _asked[:] = [a for a in _asked if a is not asked]  # not remove(): empty sets are equal
        if on_hash is not None:
            _on_hash.remove(on_hash)
    if store is not None:
        try:
            _save(store, kept, asked)
        except OSError:
            pass
