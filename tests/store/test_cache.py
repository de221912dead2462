"""The result cache: entries round-trip, corruption reads as a miss (warned once), and anything
that changes the numbers changes the key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from harness.store.cache import ResultCache
from harness.cli.main import main
from harness.machine.info import probe
from harness.record.run_record import SPECTRA, load_record

SPEC = """
[experiment]
name = "cache_unit"
seed = 3

[data]
source = "synthetic"
form = "lora"
adapters = 2
layers = 2
rank = 2
alpha = 4

[data.modules]
up = [12, 8]
down = [8, 12]

[[analysis]]
op = "svdvals"
strategy = "numpy"

[execution]
memory_budget = "2KiB"
cache_dir = "store"

[benchmark]
warmup = 0
repeats = 1
sample = 1
"""


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The spec, with this test's own wisdom folder, where rounds are pooled; every round judged
    taken on a quiet machine, so that pooling does not depend on how busy this one is."""
    from harness.run import rounds

    monkeypatch.setenv("HARNESS_WISDOM", str(tmp_path / "wisdom"))
    monkeypatch.setattr(rounds, "condition_reasons", lambda conditions: [])
    path = tmp_path / "spec.toml"
    path.write_text(SPEC)
    return path


@pytest.fixture
def fresh_probe() -> Iterator[None]:
    """probe() is cached per process; a test that fakes a version must not leak it."""
    probe.cache_clear()
    yield
    probe.cache_clear()


def run(spec: Path, out: str, *overrides: str) -> tuple[int, int, bool]:
    """(cached chunks, computed chunks, timings reused) of one in-process `harness run`."""
    args = ["run", str(spec), "-o", str(spec.parent / out)]
    assert main(args + [f"--set={o}" for o in overrides]) == 0
    analysis = load_record(spec.parent / out).analyses[0]
    return analysis.cached_chunks, analysis.computed_chunks, all(t.cached for t in analysis.timings)


def spectra(folder: Path) -> dict[str, np.ndarray]:
    with np.load(folder / SPECTRA) as npz:
        return {name: npz[name] for name in npz.files}


def test_store_round_trip_and_a_corrupt_entry_is_a_miss_warned_once(tmp_path: Path) -> None:
    warnings: list[str] = []
    store = ResultCache(tmp_path, warn=warnings.append)
    S = np.linspace(0, 1, 12).reshape(3, 4)
    store.put_arrays("ab" * 32, {"S": S}, "test")
    hit = store.get_arrays("ab" * 32)
    assert hit is not None and np.array_equal(hit["S"], S)
    assert store.get_arrays("cd" * 32) is None and not warnings

    path = store.path("ab" * 32)
    blob = bytearray(path.read_bytes())
    blob[-20] ^= 0x01
    path.write_bytes(bytes(blob))
    assert store.get_arrays("ab" * 32) is None
    assert store.get_arrays("ab" * 32) is None
    assert len(warnings) == 1 and "checksum" in warnings[0]

    path.write_bytes(path.read_bytes()[:-5])  # truncated, as by a crash without atomic writes
    assert ResultCache(tmp_path, warn=warnings.append).get("ab" * 32) is None
    assert len(warnings) == 2


def test_warm_run_reuses_every_chunk_and_timing_with_identical_spectra(spec: Path) -> None:
    assert run(spec, "cold") == (0, 4, False)
    assert run(spec, "warm") == (4, 0, True)
    cold, warm = spectra(spec.parent / "cold"), spectra(spec.parent / "warm")
    assert cold.keys() == warm.keys() and all(np.array_equal(cold[k], warm[k]) for k in cold)


@pytest.mark.parametrize(
    "override",
    [
        'execution.dtype="float64"',  # dtype
        "experiment.seed=4",  # the input: the synthetic generator's seed
        "data.alpha=8",  # a spec value that changes the numbers
        'analysis.0.strategy="torch"',  # the strategy that computes them
    ],
)
def test_a_change_that_can_alter_the_numbers_is_a_miss(spec: Path, override: str) -> None:
    """The numbers are recomputed; the timings are pooled under what determines seconds (dtype,
    strategy, shape), not values: another seed or alpha times the same kernel on the same shape."""
    run(spec, "cold")
    cached, computed, timings_reused = run(spec, "changed", override)
    assert cached == 0 and computed >= 4  # float64 halves the batches
    assert timings_reused == (override.startswith(("experiment.seed", "data.alpha")))


def test_another_library_version_is_a_miss(
    spec: Path, monkeypatch: pytest.MonkeyPatch, fresh_probe: None
) -> None:
    run(spec, "cold")
    monkeypatch.setattr(np, "__version__", "0.0.1")
    probe.cache_clear()
    assert run(spec, "other-numpy")[:2] == (0, 4)


def test_a_flipped_byte_is_warned_about_and_recomputed(
    spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(spec, "cold")
    entry = next(p for p in (spec.parent / "store").glob("*/*.entry") if b'"chunk"' in p.read_bytes()[:300])
    blob = bytearray(entry.read_bytes())
    blob[len(blob) // 2 + 40] ^= 0xFF
    entry.write_bytes(bytes(blob))
    capsys.readouterr()
    assert run(spec, "again")[:2] == (3, 1)
    assert capsys.readouterr().err.count("corrupt") == 1
    cold, again = spectra(spec.parent / "cold"), spectra(spec.parent / "again")
    assert all(np.array_equal(cold[k], again[k]) for k in cold)
    assert run(spec, "healed")[:2] == (4, 0)


def test_no_cache_neither_reads_nor_writes(spec: Path) -> None:
    assert main(["run", str(spec), "-o", str(spec.parent / "bare"), "--no-cache"]) == 0
    assert not (spec.parent / "store").exists()
    assert load_record(spec.parent / "bare").analyses[0].computed_chunks == 4
