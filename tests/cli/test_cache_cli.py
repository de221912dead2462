"""`harness run` resumed after SIGKILL, concurrent runs on one cache, and `harness cache`."""

from __future__ import annotations

import io
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from harness.cli.main import main
from harness.record.run_record import SPECTRA, load_record
from harness.store.cache import ResultCache, cache_key, read_header
from tests.conftest import CONFIGS

# 40 dense 200x200 matrices in chunks of 2 (the budget fits two): 20 chunks of ~10 ms each after
# a start-up of a second or more, so a run can be killed with some chunks cached and most not.
SPEC = """
[experiment]
name = "resume"
seed = 11

[data]
source = "synthetic"
form = "dense"
adapters = 40
layers = 1
modules = {{ w = [200, 200] }}

[[analysis]]
op = "svdvals"
strategy = "numpy"

[execution]
dtype = "float64"
memory_budget = "2MB"
cache_dir = "{cache}"

[benchmark]
warmup = 0
repeats = 1
sample = 1
"""
CHUNKS = 20


def write_spec(folder: Path, cache: Path) -> Path:
    path = folder / "spec.toml"
    path.write_text(SPEC.format(cache=cache))
    return path


def harness_run(spec: Path, out: Path, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness", "run", str(spec), "-o", str(out), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def spectra(folder: Path) -> dict[str, np.ndarray]:
    with np.load(folder / SPECTRA) as npz:
        return {name: npz[name] for name in npz.files}


def same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return list(a) == list(b) and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.slow
def test_a_run_killed_mid_analysis_resumes_to_the_uninterrupted_result(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    spec = write_spec(tmp_path, cache)
    victim = harness_run(spec, tmp_path / "killed")
    deadline = time.monotonic() + 120
    while not any(cache.glob("*/*.entry")) and victim.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert victim.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    done = len(list(cache.glob("*/*.entry")))
    assert 1 <= done < CHUNKS

    resumed = harness_run(spec, tmp_path / "killed")  # into its own folder, as the user re-runs the command
    said = resumed.stderr.read().decode() if resumed.stderr else ""
    assert resumed.wait() == 0, said
    assert f"resuming into {tmp_path / 'killed'}: a run of this spec stopped there" in said
    analysis = load_record(tmp_path / "killed").analyses[0]
    assert analysis.cached_chunks >= done and analysis.computed_chunks >= 1
    assert analysis.cached_chunks + analysis.computed_chunks == CHUNKS

    fresh = harness_run(spec, tmp_path / "fresh", "--no-cache")
    assert fresh.wait() == 0
    assert same(spectra(tmp_path / "killed"), spectra(tmp_path / "fresh"))


@pytest.mark.slow
def test_two_concurrent_runs_share_one_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    spec = write_spec(tmp_path, cache)
    runs = [harness_run(spec, tmp_path / f"run{i}") for i in range(2)]
    assert [r.wait() for r in runs] == [0, 0]
    assert same(spectra(tmp_path / "run0"), spectra(tmp_path / "run1"))
    assert main(["cache", "verify", "--dir", str(cache)]) == 0
    warm = harness_run(spec, tmp_path / "warm")
    assert warm.wait() == 0
    assert load_record(tmp_path / "warm").analyses[0].cached_chunks == CHUNKS
    assert same(spectra(tmp_path / "run0"), spectra(tmp_path / "warm"))


def test_cache_ls_verify_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    spec = write_spec(tmp_path, cache)
    assert main(["run", str(spec), "-o", str(tmp_path / "run"), "--set=data.adapters=2"]) == 0
    entries = sorted(cache.glob("*/*.entry"))
    assert len(entries) == 3  # one chunk, one verdict, the reference of the one timed matrix
    capsys.readouterr()

    assert main(["cache", "ls", str(spec)]) == 0  # located through the spec's cache_dir
    listing = capsys.readouterr().out
    assert "3 entries" in listing and "chunk" in listing and "verification" in listing and "reference" in listing
    assert not set("┏┃┡│└") & set(listing)  # the CLI's one table style, a rule under the header (walk 11: boxed)

    entries[0].write_bytes(entries[0].read_bytes()[:-3])
    assert main(["cache", "verify", "--dir", str(cache)]) == 3
    assert "2 of 3 entries check out" in capsys.readouterr().out

    assert main(["cache", "clear", "--dir", str(cache), "--older-than", "1d"]) == 0
    assert len(list(cache.glob("*/*.entry"))) == 3
    assert main(["cache", "clear", "--dir", str(cache)]) == 0
    assert "removed 3 entries" in capsys.readouterr().out
    assert not list(cache.iterdir())


def test_a_bad_age_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["cache", "clear", "--dir", str(tmp_path), "--older-than", "soon"])
    assert exc.value.code == 2


def test_cache_clear_spec_removes_only_its_experiments_entries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`cache clear SPEC` removed every experiment's entries; now its own only, `--all` every one,
    and no question asked either way."""
    cache = tmp_path / "cache"
    spec = write_spec(tmp_path, cache)
    other = tmp_path / "other.toml"
    other.write_text(spec.read_text().replace('name = "', 'name = "other', 1))
    assert main(["run", str(spec), "-o", str(tmp_path / "a"), "--set=data.adapters=2"]) == 0
    assert main(["run", str(other), "-o", str(tmp_path / "b"), "--set=data.adapters=2", "--set=experiment.seed=7"]) == 0
    before = len(list(cache.glob("*/*.entry")))
    capsys.readouterr()
    assert main(["cache", "clear", str(spec)]) == 0
    said = capsys.readouterr().out
    left = len(list(cache.glob("*/*.entry")))
    assert 0 < left < before and "of experiment" in said and "--all" in said
    assert main(["cache", "clear", str(spec), "--all"]) == 0
    assert not list(cache.glob("*/*.entry"))


@pytest.mark.parametrize("width", [100, 160])
def test_cache_ls_keeps_what_an_entry_holds_on_one_line(tmp_path: Path, width: int) -> None:
    """Walk 12, at 100 columns: `float64 reference: values of` / `adapter00/layer0/mlp_up`; the
    optional columns leave for it instead (and say so), and a markup-like label is shown as written."""
    from harness.cli.commands.cache import ls_table

    labels = ["float64 reference: values of adapter00/layer0/mlp_up", "svdvals by factored on adapter00/layer0/mlp_up +7",
              "spectrum: svdvals by factored, 1064 from adapter00/[mlp_up]"]
    store = ResultCache(tmp_path, experiment="task_geometry")
    for i, label in enumerate(labels):
        store.put_arrays(cache_key({"i": i}), {"a": np.zeros(3)}, label, kind="reference")
    table, corrupt = ls_table(tmp_path, list(store.entries()))
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(table)
    lines = console.export_text().splitlines()
    assert corrupt == 0 and max(map(len, lines)) <= width
    assert all(sum(label in line for line in lines) == 1 for label in labels), lines
    drawn = [str(c.header) for c in table.fit(console, width).columns]
    assert drawn == (["key", "kind", "holds", "size"] if width == 100 else
                     ["key", "kind", "experiment", "holds", "size", "last used"])


def _smoke_cache(folder: Path, *seeds: int) -> Path:
    """A real cache: the smoke spec (one layer, every op) run once per seed into `folder`/cache."""
    cache = folder / "cache"
    for seed in seeds:
        assert main(["run", str(CONFIGS / "smoke.toml"), "-o", str(folder / f"run{seed}"), "--budget", "0s",
                     "--set", "data.layers=1", "--set", f"experiment.seed={seed}",
                     "--set", f'execution.cache_dir="{cache}"']) == 0
    return cache


def _listing(cache: Path, width: int) -> tuple[dict[str, list[str]], list[str], list[str]]:
    """`cache ls` drawn `width` columns wide: the cells of each column drawn, the rows (each one
    line, checked) and the notes under them."""
    from harness.cli.commands.cache import ls_table

    entries = list(ResultCache(cache).entries())
    table, _ = ls_table(cache, entries)
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(table)
    lines = console.export_text().splitlines()
    rule = next(i for i, line in enumerate(lines) if set(line) == {"─"})  # the title may wrap above it
    rows, rest = lines[rule + 1:rule + 1 + len(entries)], lines[rule + 1 + len(entries):]
    assert max(map(len, lines)) <= width and all(line.startswith("(") for line in rest[:1]), lines  # a line a row
    cells = {str(c.header): [str(cell) for cell in c._cells] for c in table.fit(console, width).columns}
    return cells, rows, rest


def test_a_runs_cache_entries_say_what_they_hold_apart(tmp_path: Path, quiet_machine: None) -> None:
    """Walk 13: `verdict of numpy on 2 of 48x32r4` twice, svdvals' and svd's verdicts; a verdict
    names its op (and k), as a chunk names its analysis."""
    cache = _smoke_cache(tmp_path, 0)
    entries = list(ResultCache(cache).entries())
    labels = [read_header(entry).label for entry in entries]
    assert len(labels) == len(set(labels)), sorted(labels)
    # a PCA's arrays are a step's product under a key of their own (walk 16: `key` and `key-arrays`)
    assert [read_header(e).kind for e in entries if read_header(e).label.endswith(": pca arrays")] == ["step"]
    keys = sorted(entry.key for entry in entries)
    assert not any(b.startswith(a) for a, b in zip(keys, keys[1:])), keys
    assert any(label.startswith("svd_topk k=2 by torch on ") and label.endswith(" +1") for label in labels), labels


def test_a_verdicts_label_names_what_it_checked_and_a_grams_fits_a_line() -> None:
    """Walk 14, at 100 columns: three `verdict of svdvals by numpy on 1 of 3072x768r16` rows read
    alike, and `float64 reference: gram of layer0/mlp_up of adapters e3d9c3b5923f1c67` wrapped."""
    from harness.compute.references import gram_name
    from harness.store.keys import entry_label

    assert entry_label("svdvals", "numpy", ["adapter03/layer1/mlp_up"]) == "svdvals by numpy on adapter03/layer1/mlp_up"
    longest = entry_label("svd_topk k=3", "torch_lowrank", ["adapter37/layer55/mlp_down"] * 8)
    assert longest == "svd_topk k=3 by torch_lowrank on adapter37/layer55/mlp_down +7" and len(longest) <= 64
    name = gram_name("layer55/mlp_down", [f"adapter{i:02}" for i in range(38)])
    assert len(f"float64 reference: gram of {name}") <= 64, name  # `cache ls` holds a line of 64 at 100 columns


def test_cache_ls_at_100_columns_never_shows_two_entries_alike(tmp_path: Path, quiet_machine: None) -> None:
    """One spec at two seeds writes entries whose kind, holds and size match: the key, shortened
    where the whole one does not fit, tells every row apart."""
    cache = _smoke_cache(tmp_path, 0, 1)
    cells, rows, _notes = _listing(cache, 100)
    assert len(set(rows)) == len(rows), rows
    assert len(set(cells["key"])) == len(rows), cells["key"]  # walk 16: a PCA and its arrays keyed alike


@pytest.mark.parametrize(("width", "shared"), [(100, 9), (160, 17)])
def test_cache_ls_keys_keep_every_row_apart_where_shortened(tmp_path: Path, width: int, shared: int) -> None:
    """Walk 16, at 100 columns: `85703bb4  chunk  geometry: pca arrays` and `85703bb4  step  geometry:
    pca`; a shortened key is its shortest start unique in the listing, as git's, 8 (16) digits at least."""
    start = "85703bb4bdb9bc45fa44"[:shared]
    keys = [start + "0" * (64 - shared), start + "1" + "0" * (63 - shared), "7c49fba2" + "f" * 56]
    store = ResultCache(tmp_path, experiment="task_geometry")
    wide = "svd_topk k=3 by torch_lowrank on adapter37/layer55/mlp_down +7"  # 100 columns: 8 digits, not 16
    for key, label, kind in zip(keys, ["geometry: pca", "geometry: pca arrays", wide], ["step", "step", "verification"],
                                strict=True):
        store.put_arrays(key, {"a": np.zeros(3)}, label, kind=kind)  # type: ignore[arg-type]
    cells, _rows, _notes = _listing(tmp_path, width)
    shown = dict(zip(cells["holds"], cells["key"], strict=True))
    least = 8 if width == 100 else 16
    assert shown == {"geometry: pca": keys[0][:shared + 1], "geometry: pca arrays": keys[1][:shared + 1],
                     wide: keys[2][:least]}


@pytest.mark.parametrize("width", [100, 160])
def test_cache_ls_cuts_what_an_entry_holds_to_one_line_and_says_so(tmp_path: Path, width: int) -> None:
    """Walk 16, at 100 columns: `spectrum: svdvals by factored, 1064 from` / `adapter00/layer0/mlp_down`;
    a label wider than its column is cut with `…` on its row's line, and the notes say so."""
    whole = "spectrum: svdvals by factored, 1064 from adapter00/layer0/mlp_down"  # 66 characters
    longer = "a_spectrum_named_at_length_by_its_owner: svd_topk k=3 by torch_lowrank on adapter37/layer55/mlp_down +7"
    store = ResultCache(tmp_path, experiment="task_geometry")
    for i, label in enumerate([whole, longer, "top3: features"]):
        store.put_arrays(cache_key({"i": i}), {"a": np.zeros(3)}, label, kind="chunk")
    _cells, rows, notes = _listing(tmp_path, width)
    assert any("a_spectrum_named" in row and "…" in row and longer not in row for row in rows), rows
    assert width == 100 or any(whole in row for row in rows), rows  # whole where the width holds it
    assert any(note.startswith("(shortened at this width: ") and "holds" in note.split(";")[0] for note in notes)
