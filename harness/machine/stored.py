"""A file this machine keeps its measurements in (the wisdom, the pooled rounds), read as data
from elsewhere: a crash, another harness, a hand or whoever can write the cache folder may have
written it. Planted roofs of 0 ended in a ZeroDivisionError, NaN and 1e308 printed "nan%" and
"3.3e-306%" of peak, and since roofs only rise, 1e308 would have outlived every calibration.

A file that is not what it claims (too large, not JSON, wrong types, values that are not finite,
positive and plausible, another machine's identity under this machine's name) is kept aside
under a new name, said in one line, and the caller measures afresh. Another version's file is
left where it is and never overwritten: its measurements are that version's to read.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from collections.abc import Callable
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

from harness.base.bounded import TooLarge, read_capped

CAP = 64 << 20  # bytes: tens of thousands of observations or rounds; more is not a file this harness wrote
M = TypeVar("M", bound=BaseModel)


class Found(NamedTuple, Generic[M]):
    """What reading gave: the stored model, or why there is none to read (`problem`: a bad file,
    to keep aside; `other`: another version's, to leave alone), and the file's identity."""

    model: M | None = None
    problem: str | None = None
    other: str | None = None
    identity: tuple[int, int, int, int] | None = None


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def first_problem(exc: ValidationError) -> str:
    """`roofs.cpu.gemm_gflops.float32: Input should be greater than 0 (0.0)`, or
    `analyses[0].timings[3].speedup: ...`, and how many more: one line, whatever the file holds."""
    first = exc.errors()[0]
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]).lstrip(".")
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    got = repr(first.get("input")) if isinstance(first.get("input"), str) else str(first.get("input"))
    return f"{where or '(top level)'}: {first['msg'].removeprefix('Value error, ')} ({got[:40]}){more}"


def read(path: Path, model: type[M], version: int, machine: dict[str, str], cap: int | None = None) -> Found[M]:
    """The stored `model` of this `version` and `machine` (a file of at most `cap` bytes, default
    CAP); Found() where there is no file."""
    cap = CAP if cap is None else cap
    identity = None
    try:
        identity = _identity(path.stat())
        data = read_capped(path, cap)
    except FileNotFoundError:
        return Found()
    except TooLarge as exc:
        return Found(problem=str(exc), identity=identity)
    except OSError as exc:
        return Found(problem=f"cannot be read ({exc.strerror or exc})")  # not moved: it may be a mount's
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError) as exc:
        return Found(problem=f"not JSON ({'nested too deeply' if isinstance(exc, RecursionError) else exc})",
                     identity=identity)
    if not isinstance(raw, dict):
        return Found(problem=f"a JSON {type(raw).__name__}, not an object", identity=identity)
    stored = raw.get("version")
    if isinstance(stored, int) and not isinstance(stored, bool) and stored != version:
        return Found(other=f"holds version {stored}; this harness reads and writes version {version}")
    if raw.get("machine") != machine:
        return Found(problem="not this machine's: its identity differs from the one its name stands for",
                     identity=identity)
    try:
        return Found(model=model.model_validate(raw), identity=identity)
    except ValidationError as exc:
        return Found(problem=first_problem(exc), identity=identity)


def set_aside(path: Path, found: Found[M]) -> str:
    """Rename the bad file `found` read to `<name>.bad-<UTC time>` if it is still that file (a
    writer may have replaced it since); what became of it, for the line that says so. Call it
    under the folder's lock."""
    try:
        if found.identity is None or _identity(path.stat()) != found.identity:
            return "left as it is"
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        aside = path.with_name(f"{path.name}.bad-{stamp}")
        n = 1
        while aside.exists():
            n += 1
            aside = path.with_name(f"{path.name}.bad-{stamp}-{n}")
        path.rename(aside)
    except FileNotFoundError:
        return "gone since"
    except OSError as exc:
        return f"could not be kept aside ({exc.strerror or exc})"
    return f"kept aside as {aside.name}"


def tell(path: Path, what: str, found: Found[M], fate: str, say: Callable[[str], None]) -> None:
    """The one line a file that was not read gets (nothing where there was no file)."""
    if found.other is not None:
        say(f"{what} {path} {found.other}: kept as it is, neither read nor written; measuring afresh")
    elif found.problem is not None:
        say(f"{what} {path}: {found.problem}; {fate or 'left as it is'}; measuring afresh")
