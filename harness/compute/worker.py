"""What a Dask worker is asked before the run gives it work, and what it imports first: run there
with `Client.run`, so a worker that cannot import this harness answers with its import error."""

from __future__ import annotations

import importlib

from pydantic import BaseModel

from harness.data.workload import Source
from harness.machine.info import MachineInfo, memory_available, probe
from harness.store.keys import source_digest
from harness.strategies.registry import STRATEGIES


class WorkerFacts(BaseModel):
    """A worker's harness (version and the digest of the code that computes numbers: the client's
    cache keys hold its own) and its machine."""

    harness: str
    source: str
    machine: MachineInfo


def worker_facts() -> WorkerFacts:
    """This process's facts; its machine's available memory read now (a long-lived worker's first
    probe is stale)."""
    machine = probe().model_copy(update={"memory_available": memory_available()})
    return WorkerFacts(harness=machine.harness, source=source_digest(), machine=machine)


def warm_worker(loads: list[tuple[str, str]], source: Source) -> None:
    """Import what the chunk tasks and the chosen (strategy, backend) pairs' first calls on
    `source` would, so that no chunk pays for it: a local run warms the same before its first
    analysis."""
    importlib.import_module("harness.compute.chunks")  # what every task runs
    for name, backend in loads:
        STRATEGIES[name].warm(backend, source)  # type: ignore[arg-type]
