"""A lock file held for a bounded time: a run that finished its work and found the lock held by
another process blocked forever without a word, and when stopped left its record marked
incomplete. Waiting says so after SAY_AFTER_S and gives up after a timeout, so the caller can
keep what it has and say what it could not do."""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

SAY_AFTER_S = 1.0  # a wait longer than this is said (within 2 s, then nothing more until it ends)
TIMEOUT_S = 30.0  # what a lock's holder may take: a wisdom update is a read, a merge and a write (< 1 s)
POLL_S = (0.01, 0.2)  # the first and the longest pause between tries


class LockTimeout(OSError):
    """The lock stayed held by another process past the timeout."""


def on_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _holder(fd: int) -> str:
    """`process 1234` as the holder wrote it into the lock file, or `another process`."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        if text.isdigit():
            os.kill(int(text), 0)  # a holder killed outright left its pid behind
            return f"process {text}"
    except PermissionError:  # alive, another user's
        return f"process {text}"
    except (OSError, ValueError, OverflowError):
        pass
    return "another process"


@contextmanager
def held(path: Path, timeout_s: float | None = None, say: Callable[[str], None] = on_stderr) -> Iterator[None]:
    """An exclusive flock on `path` (made if missing) while the block runs; after SAY_AFTER_S of
    waiting one line through `say`, after `timeout_s` (default TIMEOUT_S) LockTimeout. The
    holder's pid is written into the file for the next waiter's line; the kernel drops the lock
    however the holder ends."""
    timeout_s = TIMEOUT_S if timeout_s is None else timeout_s
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        start, pause, said = time.monotonic(), POLL_S[0], False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - start
                if waited >= timeout_s:
                    raise LockTimeout(f"{path}: held by {_holder(fd)} for {waited:.0f} s; gave up waiting") from None
                if not said and waited >= SAY_AFTER_S:
                    say(f"waiting for {path}, held by {_holder(fd)} (giving up after {timeout_s:.0f} s)")
                    said = True
                time.sleep(min(pause, max(0.0, timeout_s - waited)))
                pause = min(2 * pause, POLL_S[1])
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)
