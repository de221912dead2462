"""Plans for a Dask cluster: devices and memory from the workers' own probes, the work split over
their threads; the benchmark phase planned for this machine, where it times."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness.data.registry import build_source
from harness.data.workload import Workload
from harness.linalg.device import cuda_available
from harness.machine.cluster import MEMORY_SHARE, ClusterInfo, WorkerInfo, local_cluster
from harness.machine.info import probe
from harness.plan.compiler import compile_plan
from harness.plan.model import Plan, PlanError
from harness.plan.spread import TASKS_PER_THREAD, position_tasks, spread, task_count
from harness.specs.reading import load_spec
from tests.conftest import CONFIGS

GiB = 2**30


def worker(address: str, threads: int = 2, gpu: str | None = None, memory: int = 8 * GiB,
           refused: str | None = None) -> WorkerInfo:
    machine = probe().model_copy(update={"cuda_device": gpu, "cuda_memory_free": 20 * GiB if gpu else None,
                                         "cuda_memory_total": 24 * GiB if gpu else None, "torch_missing": None})
    return WorkerInfo(address=address, name=address, threads=threads, memory_limit=memory,
                      machine=None if refused else machine, refused=refused)


def plan_on(cluster: ClusterInfo, *sets: str) -> Plan:
    spec = load_spec(CONFIGS / "smoke.toml", ["execution.executor='dask'", "execution.dask_address='tcp://h:8786'",
                                              *sets])
    workload = Workload.from_source(build_source(spec.data, spec.experiment.seed, Path(".")))
    return compile_plan(spec, workload, probe(), cluster=cluster)


def test_spread_gives_every_thread_several_tasks_within_memory() -> None:
    sizes, seconds = {"a": 1000, "b": 100}, {"a": 1.0, "b": 1.0}
    batches = spread({"a": 4096, "b": 4096}, sizes, seconds, threads=4)
    assert TASKS_PER_THREAD * 4 <= task_count(batches, sizes) <= 4 * 4 + 2  # shares follow the work
    assert math.ceil(1000 / batches["a"]) > math.ceil(100 / batches["b"])
    assert spread({"a": 10, "b": 4096}, sizes, seconds, threads=1)["a"] == 10  # memory bounds a chunk
    assert position_tasks(56, 2) == 6 and position_tasks(3, 8) == 3


def test_a_cpu_client_plans_cuda_work_for_gpu_workers() -> None:
    if cuda_available():
        pytest.skip("this machine has CUDA: the point is a client without it")
    cluster = ClusterInfo(scheduler="tcp://h:8786", workers=[
        worker("tcp://gpu:1", gpu="FakeGPU 24GB"), worker("tcp://cpu:1", threads=4),
        worker("tcp://old:1", refused="it runs harness 0.0.1, this client 0.1.0")])
    plan = plan_on(cluster, "data.modules={up=[600,400]}", "data.form='dense'", "analysis.0.strategy='torch'")
    svdvals = plan.steps[0]
    assert svdvals.device == "cuda"  # resolved from the workers' probes, not from this machine
    assert svdvals.tasks == task_count(svdvals.batch_sizes, {g.label: g.count for g in plan.groups})
    assert svdvals.tasks >= TASKS_PER_THREAD * cluster.threads("cuda")  # the GPU worker's threads only
    assert {t.device for t in svdvals.timed} <= {"cpu", "numpy"}  # timed here, where there is no CUDA
    assert cluster.restriction("cuda") == ["tcp://gpu:1"] and cluster.restriction("cpu") == ["tcp://gpu:1", "tcp://cpu:1"]
    assert plan.cluster == cluster and plan.cluster.task_memory("cpu") == int(8 * GiB * MEMORY_SHARE) // 4


def test_cuda_asked_of_cpu_workers_is_refused_naming_them() -> None:
    cluster = ClusterInfo(scheduler="tcp://h:8786", workers=[worker("tcp://cpu:1")])
    with pytest.raises(PlanError, match="'cuda' requested but torch sees no CUDA device on the dask workers"):
        plan_on(cluster, "execution.device='cuda'")


def test_a_tasks_memory_is_bounded_by_the_tightest_worker() -> None:
    cluster = ClusterInfo(scheduler="tcp://h:8786", workers=[worker("tcp://a:1", memory=GiB),
                                                            worker("tcp://b:1", threads=1, memory=64 * GiB)])
    plan = plan_on(cluster, "data.form='dense'", "data.modules={w=[2000,2000]}", "data.adapters=8",
                   "execution.memory_budget='4GiB'", "analysis.0.strategy='numpy'")
    share = int(GiB * MEMORY_SHARE) // 2  # a's, per thread
    assert cluster.task_memory("numpy") == share
    per_matrix = 2000 * 2000 * 4  # at least the float32 input
    assert plan.steps[0].batch_sizes["2000x2000"] * per_matrix <= share


def test_a_local_cluster_is_this_machine_in_as_many_workers() -> None:
    machine = probe()
    cluster = local_cluster(machine, 3)
    assert [w.threads for w in cluster.workers] == [1, 1, 1] and cluster.restriction("cpu") is None
    assert cluster.machine("cpu") == machine
