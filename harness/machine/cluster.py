"""A Dask cluster as the planner and the record see it: the scheduler, and every worker with the
machine it probed, or the reason the run gives it no work. Value objects only: joining a cluster
is harness.run.cluster's."""

from __future__ import annotations

from pydantic import BaseModel

from harness.base.units import format_bytes
from harness.machine.info import MachineInfo

LOCAL_CLUSTER = "LocalCluster"  # the scheduler of a cluster the run starts on this machine
MEMORY_SHARE = 0.5  # of a worker thread's share of its memory limit, what one task may hold


class WorkerInfo(BaseModel):
    address: str  # "" for a LocalCluster's worker before it starts
    name: str
    threads: int  # tasks it runs at once (`dask worker --nthreads`)
    memory_limit: int  # bytes; 0: the worker has none
    resources: dict[str, float] = {}  # `dask worker --resources "GPU=1"`
    machine: MachineInfo | None = None  # its own probe; None where it was refused
    refused: str | None = None  # why the run gives it no work, or None

    @property
    def gpu(self) -> bool:
        return self.machine is not None and self.machine.cuda_device is not None

    def task_memory(self, device: str) -> int | None:
        """Bytes one task may use here: a share of the worker's memory limit per thread (of its
        free GPU memory for CUDA work), or None where the worker states no limit."""
        if device == "cuda" and self.machine is not None and self.machine.cuda_memory_free:
            return self.machine.cuda_memory_free // self.threads
        limit = self.memory_limit or (self.machine.memory_available if self.machine else 0)
        return int(limit * MEMORY_SHARE) // self.threads if limit else None

    def describe(self) -> str:
        if self.refused is not None:
            return f"{self.address or self.name}: refused, {self.refused}"
        memory = f", {format_bytes(self.memory_limit)}" if self.memory_limit else ""
        gpu = f", {self.machine.cuda_device}" if self.machine is not None and self.machine.cuda_device else ""
        host = f" on {self.machine.hostname}" if self.machine is not None else ""
        threads = f"{self.threads} thread" + ("s" if self.threads > 1 else "")
        return f"{self.address or self.name}{host} ({threads}{memory}{gpu})"


class ClusterInfo(BaseModel):
    """The cluster a plan was sized for: full analyses run on its usable workers; the benchmark
    phase times on the client, never through the cluster."""

    scheduler: str  # its address, or LOCAL_CLUSTER
    dashboard: str | None = None
    workers: list[WorkerInfo]

    @property
    def usable(self) -> list[WorkerInfo]:
        return [w for w in self.workers if w.refused is None]

    def serving(self, device: str) -> list[WorkerInfo]:
        """The usable workers that run work on `device`: the GPU workers for CUDA."""
        usable = self.usable
        return [w for w in usable if w.gpu] if device == "cuda" else usable

    def threads(self, device: str) -> int:
        return sum(w.threads for w in self.serving(device))

    def restriction(self, device: str) -> list[str] | None:
        """The worker addresses tasks on `device` are confined to, or None when every worker of
        the cluster may take them."""
        serving = self.serving(device)
        return None if len(serving) == len(self.workers) else [w.address for w in serving]

    def gpu_resource(self) -> bool:
        """Whether every GPU worker declares a "GPU" resource: CUDA tasks then ask for one, so a
        GPU runs one of them at a time."""
        gpus = self.serving("cuda")
        return bool(gpus) and all(w.resources.get("GPU", 0) >= 1 for w in gpus)

    def task_memory(self, device: str) -> int | None:
        """What one task may use on the tightest worker serving `device`, or None if none states it."""
        limits = [m for w in self.serving(device) if (m := w.task_memory(device)) is not None]
        return min(limits) if limits else None

    def machine(self, device: str) -> MachineInfo | None:
        """The machine plans for `device` are costed on: of the serving worker with the fewest
        cores (a uniform cluster's any)."""
        machines = [w.machine for w in self.serving(device) if w.machine is not None]
        return min(machines, key=lambda m: m.cores) if machines else None

    def describe(self) -> str:
        """One line: the scheduler, its workers, their threads and memory, what was refused."""
        usable = self.usable
        memory = sum(w.memory_limit for w in usable)
        threads = sum(w.threads for w in usable)
        line = (f"dask scheduler {self.scheduler}: {len(usable)} worker{'s' * (len(usable) != 1)}, "
                f"{threads} thread{'s' * (threads != 1)}" + (f", {format_bytes(memory)}" if memory else ""))
        if gpus := self.serving("cuda"):
            line += f", {len(gpus)} with CUDA"
        if refused := len(self.workers) - len(usable):
            line += f"; {refused} refused"
        return line + (f"; dashboard {self.dashboard}" if self.dashboard else "")


class LostWorker(BaseModel):
    """A worker that left while the run had work on it: Dask ran that work again elsewhere."""

    address: str
    at: str  # when the scheduler removed it (UTC, ISO 8601)
    analysis: str
    tasks: int  # the run's tasks it held (running, queued or done but not yet fetched)


def local_cluster(machine: MachineInfo, workers: int) -> ClusterInfo:
    """The LocalCluster a run starts: `workers` single-thread processes on this machine, sharing
    its memory as Dask's automatic limit does."""
    return ClusterInfo(scheduler=LOCAL_CLUSTER, workers=[
        WorkerInfo(address="", name=f"local worker {i + 1}", threads=1,
                   memory_limit=machine.memory_total // workers, machine=machine)
        for i in range(workers)
    ])
