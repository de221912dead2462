"""A point's own environment for its spawned worker: whether exec takes it, and os.environ with it
on top while the child starts (multiprocessing's spawn copies os.environ at exec)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


ARG_STRLEN = 32 * 4096  # Linux's MAX_ARG_STRLEN: the longest one string (NAME=value) exec takes
SPAWN_SLACK = 4096  # bytes for the interpreter's command line and its pointers


class CannotStart(RuntimeError):
    """A point's worker cannot start: its environment is more than exec takes."""


def check_fits(env: dict[str, str]) -> None:
    """Raises CannotStart when os.environ with `env` on top is more than exec takes (E2BIG).
    multiprocessing never sees exec fail: it hands the dead child its pickled work down a pipe
    nobody reads, and a run with 600 KB of variables (`ulimit -s 1024`) waited there for good."""
    strings = [f"{name}={value}".encode(errors="surrogateescape") for name, value in {**os.environ, **env}.items()]
    total = sum(len(s) + 1 + 8 for s in strings) + SPAWN_SLACK  # each string, its NUL and its pointer
    longest = max((len(s) + 1 for s in strings), default=0)
    limit = os.sysconf("SC_ARG_MAX") if hasattr(os, "sysconf") else total
    if longest > ARG_STRLEN:
        raise CannotStart(f"cannot start its worker: a variable of its environment is {longest:,} bytes, more than "
                          f"the {ARG_STRLEN:,} a process starts with")
    if total > limit:
        raise CannotStart(f"cannot start its worker: its environment (yours with {len(env)} more) is {total:,} "
                          f"bytes, more than the {limit:,} this system starts a process with (`ulimit -s` sets it)")


@contextmanager
def environment(env: dict[str, str] | None) -> Iterator[None]:
    """os.environ with `env` on top while a spawned child starts (it copies it at exec)."""
    if not env:
        yield
        return
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
