"""Content-addressed store of computed results: a re-run, or a run resumed after a crash, redoes
only what the store does not hold.

An entry is `<root>/<key[:2]>/<key>.entry`: one line of JSON (the payload's SHA-256 and size,
what it holds, when it was written), then the payload. The key is the SHA-256 of the canonical
JSON of everything that determines the payload (store.keys), so a hit is never stale; the
checksum is verified on every read, so a torn or flipped entry is recomputed, never used. The
checksum guards against corruption, not tampering: whoever can write the folder can write an entry
with a matching checksum, and it is served as a result. A cache is trusted as the code is: share
one only between users who trust each other (docs/cache.md). Payloads are JSON or .npz
read without pickle, so an entry can lie about numbers but never run code.
Writes are atomic (temporary file, fsync, rename), so concurrent runs sharing a store at worst
both write the same key, and one complete entry wins.

Default location: `.harness-cache/` in the current working directory, beside the `results/`
folder that `harness run` writes there too; `[execution] cache_dir` moves it (a relative path
resolves against the spec file's folder, as data paths do).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sys
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from harness.base.atomic import write_atomic

DEFAULT_DIR = Path(".harness-cache")
SUFFIX = ".entry"
STALE_TMP_S = 3600.0  # a temporary file this old belongs to no live writer

M = TypeVar("M", bound=BaseModel)
Kind = Literal["chunk", "timing", "verification", "step", "reference"]  # timing: written by schema 3


class Header(BaseModel):
    sha256: str
    size: int
    kind: Kind
    label: str  # what the entry holds, for `harness cache ls`
    created: float  # seconds since the epoch
    experiment: str = ""  # the experiment whose run wrote it ("" in entries from before it was kept)


class CorruptEntry(Exception):
    """An entry whose header or payload does not check out."""


@dataclass(frozen=True)
class Entry:
    path: Path
    size: int
    mtime: float

    @property
    def key(self) -> str:
        return self.path.name.removesuffix(SUFFIX)


def locate(cache_dir: str | None, spec_path: str | Path) -> Path:
    """The store a spec uses: `cache_dir` (relative to the spec's folder), else DEFAULT_DIR."""
    if cache_dir is None:
        return DEFAULT_DIR
    return Path(spec_path).resolve().parent / Path(cache_dir).expanduser()


def short_keys(keys: Sequence[str], least: int) -> list[str]:
    """Each key's shortest start, of `least` characters at the fewest, that begins no other of
    `keys`, as git shortens a commit (walk 16: two rows keyed `85703bb4` at 100 columns); a key
    that begins another is shown whole."""
    ranked = sorted(set(keys))
    need = dict.fromkeys(ranked, least)
    for a, b in zip(ranked, ranked[1:]):  # a key shares its longest start with a neighbour in order
        common = len(os.path.commonprefix([a, b])) + 1
        need[a], need[b] = max(need[a], common), max(need[b], common)
    return [key[:need[key]] for key in keys]


def cache_key(parts: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON (sorted keys, no spaces) of `parts`."""
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def encode(header_fields: dict[str, Any], payload: bytes) -> bytes:
    header = Header(sha256=hashlib.sha256(payload).hexdigest(), size=len(payload), **header_fields)
    return header.model_dump_json().encode() + b"\n" + payload


def decode(blob: bytes) -> tuple[Header, bytes]:
    """The header and the payload of an entry's bytes; CorruptEntry when they do not check out."""
    line, newline, payload = blob.partition(b"\n")
    if not newline:
        raise CorruptEntry("no header line")
    try:
        header = Header.model_validate_json(line)
    except ValidationError:
        raise CorruptEntry("unreadable header") from None
    if len(payload) != header.size:
        raise CorruptEntry(f"payload is {len(payload)} bytes, header says {header.size}")
    if hashlib.sha256(payload).hexdigest() != header.sha256:
        raise CorruptEntry("payload checksum mismatch")
    return header, payload


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


class ResultCache:
    """Get and put payloads by key; a corrupt entry is warned about once and reads as a miss."""

    def __init__(self, root: Path, warn: Callable[[str], None] = _stderr, experiment: str = "") -> None:
        self.root = root
        self.experiment = experiment  # written into every entry, so `cache clear SPEC` removes its own only
        self.warn = warn
        self._warned: set[str] = set()
        self._unwritable = False

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}{SUFFIX}"

    def get(self, key: str) -> bytes | None:
        path = self.path(key)
        try:
            payload = decode(_read(path))[1]
        except FileNotFoundError:
            return None
        except CorruptEntry as exc:
            self._corrupt(key, str(exc))
            return None
        try:
            os.utime(path)  # mtime = last use, which `clear --older-than` goes by
        except OSError:  # a read-only store still serves hits
            pass
        return payload

    def _corrupt(self, key: str, why: str) -> None:
        """Warn once per key of an entry that does not check out; the caller recomputes it."""
        if key not in self._warned:
            self._warned.add(key)
            self.warn(f"warning: cache entry {self.path(key)} is corrupt ({why}); recomputing it")

    def put(self, key: str, payload: bytes, kind: Kind, label: str) -> None:
        """Store an entry; a store that refuses writes (read-only, full) costs the run its cache,
        not its results: one warning, and no further tries."""
        if self._unwritable:
            return
        blob = encode({"kind": kind, "label": label, "created": time.time(), "experiment": self.experiment},
                      payload)
        try:
            write_atomic(self.path(key), lambda fh: fh.write(blob))
        except OSError as exc:
            self._unwritable = True
            self.warn(f"warning: cannot write to the result cache {self.root} ({exc.strerror or exc}); this "
                      "run's results are not cached (execution.cache_dir, or --no-cache)")

    def get_arrays(self, key: str) -> dict[str, np.ndarray] | None:
        payload = self.get(key)
        if payload is None:
            return None
        try:
            with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
                return {name: npz[name] for name in npz.files}
        except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:  # pickled objects are refused, never loaded
            self._corrupt(key, f"not arrays: {exc}")
            return None

    def put_arrays(self, key: str, arrays: dict[str, np.ndarray], label: str, kind: Kind = "chunk") -> None:
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)  # type: ignore[arg-type]  # numpy's stub matches **arrays against allow_pickle
        self.put(key, buffer.getvalue(), kind, label)

    def get_model(self, key: str, model: type[M]) -> M | None:
        payload = self.get(key)
        if payload is None:
            return None
        try:
            return model.model_validate_json(payload)
        except ValidationError:  # written by another schema: not an answer to trust
            return None

    def put_model(self, key: str, value: BaseModel, label: str, kind: Kind = "verification") -> None:
        self.put(key, value.model_dump_json().encode(), kind, label)

    def entries(self) -> Iterator[Entry]:
        """Every entry file, oldest first."""
        found = []
        for path in self.root.glob(f"??/*{SUFFIX}"):
            try:
                stat = path.stat()
            except FileNotFoundError:  # removed by a concurrent clear
                continue
            found.append(Entry(path=path, size=stat.st_size, mtime=stat.st_mtime))
        yield from sorted(found, key=lambda e: e.mtime)

    def clear(self, older_than_s: float | None = None, experiment: str | None = None) -> tuple[int, int]:
        """Remove entries (only those older than `older_than_s`; only those `experiment` wrote,
        when given: a corrupt entry names no owner and stays); returns (count, bytes)."""
        cutoff = time.time() - older_than_s if older_than_s is not None else None
        count = size = 0
        for entry in self.entries():
            if (cutoff is None or entry.mtime < cutoff) and (experiment is None or _owner(entry) == experiment):
                if entry.path.is_dir() and not entry.path.is_symlink():  # a folder where an entry belongs
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    entry.path.unlink(missing_ok=True)
                count, size = count + 1, size + entry.size
        for tmp in self.root.glob("??/.*.tmp"):  # left by a killed writer, never read
            try:
                if tmp.stat().st_mtime < time.time() - STALE_TMP_S:
                    tmp.unlink()
            except FileNotFoundError:
                pass
        for folder in self.root.glob("??"):
            try:
                folder.rmdir()
            except OSError:  # not empty, or a concurrent run just wrote into it
                pass
        return count, size


def _owner(entry: Entry) -> str | None:
    """The experiment that wrote the entry; None when its header does not check out."""
    try:
        return read_header(entry).experiment
    except (CorruptEntry, OSError):
        return None


def read_header(entry: Entry) -> Header:
    """The verified header of an entry; CorruptEntry when it does not check out."""
    try:
        return decode(_read(entry.path))[0]
    except FileNotFoundError:
        raise CorruptEntry("removed while read") from None


def _read(path: Path) -> bytes:
    """An entry's bytes; CorruptEntry for what cannot be one (a folder, an unreadable file), so
    it is recomputed like a damaged entry; FileNotFoundError for a miss."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise CorruptEntry(f"unreadable: {exc.strerror or exc}") from None
