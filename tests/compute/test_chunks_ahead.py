"""Full analyses of file sources read the next chunk while this one computes: the same spectra
as chunk by chunk, the next load under way during a compute (waited for as an event, not timed),
two chunks' inputs in memory at most, a bad file still one line, and a plan that leaves room for
the chunk read ahead and says so."""

from __future__ import annotations

import json
import threading
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.compute import chunks as chunk_task
from harness.compute.chunks import ChunkTask, run_chunk, run_chunks_ahead
from harness.cli.main import main
from harness.data.arrays import ArraysData, ArraysSource
from harness.data.workload import DataError, Workload, chunks
from harness.base.executors import SerialExecutor
from harness.machine.info import probe
from harness.plan.compiler import compile_plan
from harness.report.plan_view import plan_table
from harness.specs.reading import load_spec
from harness.strategies.base import OpRequest
from harness.strategies.registry import STRATEGIES

MATRICES, SHAPE, BATCH = 6, (40, 30), 2

SPEC = """
[experiment]
name = "ahead"

[data]
source = "arrays"
paths = ["m*.npy"]

[[analysis]]
op = "svdvals"
strategy = "numpy"

[execution]
memory_budget = "{budget}"
{extra}

[benchmark]
warmup = 0
repeats = 1
sample = 1
"""


def write_arrays(folder: Path) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    mats = [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(MATRICES)]
    for i, m in enumerate(mats):
        np.save(folder / f"m{i}.npy", m)
    return mats


def tasks(folder: Path) -> list[ChunkTask]:
    source = ArraysSource(ArraysData(paths=["m*.npy"]), folder)
    refs = Workload.from_source(source).refs
    return [ChunkTask(source=source, refs=tuple(c), strategy="numpy", op=OpRequest("svdvals"), dtype="float32",
                      device="numpy", seed=0, threads=None) for c in chunks(refs, BATCH)]


def test_the_same_spectra_as_chunk_by_chunk(tmp_path: Path) -> None:
    mats = write_arrays(tmp_path)
    todo = tasks(tmp_path)
    ahead = [o.result for o in run_chunks_ahead(todo, SerialExecutor)]
    alone = [run_chunk(t).result for t in todo]
    for got, want in zip(ahead, alone, strict=True):
        np.testing.assert_array_equal(got, want)
    S = np.concatenate(ahead)
    for s, m in zip(S, mats, strict=True):
        np.testing.assert_allclose(s, np.linalg.svd(m.astype(np.float64), compute_uv=False), rtol=1e-5)


def test_the_next_chunk_loads_while_this_one_computes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each compute waits for the next chunk's load to begin; chunk by chunk it never would (a
    timeout). At most two chunks' inputs are alive when a load begins: this one's and the next's."""
    write_arrays(tmp_path)
    todo = tasks(tmp_path)
    began = [threading.Event() for _ in todo]
    alive: list[int] = []
    at_load: list[int] = []
    load = chunk_task.load_chunk

    def watched_load(task: ChunkTask) -> Any:
        at_load.append(len(alive))
        began[todo.index(task)].set()
        data = load(task)
        alive.append(1)
        weakref.finalize(data, alive.pop)
        return data

    strategy = STRATEGIES["numpy"]
    compute = type(strategy).compute

    computed: list[int] = []

    def watched_compute(self: Any, op: OpRequest, data: Any, ctx: Any) -> Any:
        i = len(computed)  # chunks are computed in order
        computed.append(i)
        if i + 1 < len(todo):
            assert began[i + 1].wait(30), "the next chunk was not loading during this compute"
        return compute(self, op, data, ctx)

    monkeypatch.setattr(chunk_task, "load_chunk", watched_load)
    monkeypatch.setattr(type(strategy), "compute", watched_compute)
    assert len(list(run_chunks_ahead(todo, SerialExecutor))) == len(todo)
    assert computed == list(range(len(todo)))
    assert max(at_load) <= 1  # a load begins beside one chunk's inputs at most


def test_a_bad_file_read_ahead_is_still_one_error_naming_it(tmp_path: Path) -> None:
    write_arrays(tmp_path)
    bad = np.ones(SHAPE, dtype=np.float32)
    bad[3, 4] = np.inf
    np.save(tmp_path / "m4.npy", bad)
    with pytest.raises(DataError, match=r"m4\.npy.*Inf"):
        list(run_chunks_ahead(tasks(tmp_path), SerialExecutor))


def plan_for(folder: Path, budget: str, extra: str = "") -> Any:
    spec_path = folder / "spec.toml"
    spec_path.write_text(SPEC.format(budget=budget, extra=extra))
    spec = load_spec(spec_path)
    source = ArraysSource(ArraysData(paths=["m*.npy"]), folder)
    return compile_plan(spec, Workload.from_source(source), probe())


def test_the_plan_leaves_room_for_the_chunk_read_ahead_and_says_so(tmp_path: Path) -> None:
    write_arrays(tmp_path)
    budget = budget_for(3)
    ahead, alone = plan_for(tmp_path, budget), plan_for(tmp_path, budget, "read_ahead = false")
    assert ahead.steps[0].reads_ahead and not alone.steps[0].reads_ahead
    assert ahead.steps[0].batch_sizes == {"40x30": 2} and alone.steps[0].batch_sizes == {"40x30": 3}
    pool = plan_for(tmp_path, budget, 'executor = "process_pool"\nworkers = 1')
    assert not pool.steps[0].reads_ahead  # a worker loads its own chunk
    table = plan_table(ahead)
    assert "next chunk read ahead" in "".join(str(c) for col in table.table.columns for c in col._cells)


def budget_for(batch: int) -> str:
    """A budget of `batch` matrices alone, or one fewer with the next chunk's inputs beside."""
    m, n = SHAPE
    per = 4 * (2 * m * n + n * n)  # svdvals: input, LAPACK copy, the (p x p) work
    return f"{batch * per + m * n * 4 * 2}B"


def test_harness_run_reads_ahead_with_the_same_spectra(tmp_path: Path) -> None:
    mats = write_arrays(tmp_path)
    results = {}
    for name, extra in (("ahead", ""), ("alone", "read_ahead = false")):
        (tmp_path / "spec.toml").write_text(SPEC.format(budget=budget_for(3), extra=extra))
        assert main(["run", str(tmp_path / "spec.toml"), "-o", str(tmp_path / name), "--no-cache"]) == 0
        record = json.loads((tmp_path / name / "record.json").read_text())
        assert record["plan"]["steps"][0]["reads_ahead"] is (name == "ahead")
        assert len(record["analyses"][0]["placements"]) == (3 if name == "ahead" else 2)
        spectra = np.load(tmp_path / name / "spectra.npz")
        results[name] = {key: spectra[key] for key in spectra.files}
    assert results["ahead"].keys() == results["alone"].keys()
    for key in results["ahead"]:
        np.testing.assert_array_equal(results["ahead"][key], results["alone"][key])
    for i, m in enumerate(mats):
        np.testing.assert_allclose(results["ahead"][f"svdvals:m{i}/m{i}"],
                                   np.linalg.svd(m.astype(np.float64), compute_uv=False), rtol=1e-5)
