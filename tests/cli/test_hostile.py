"""Hostile inputs, round three (issue 32): each case is a file, folder, record or number a hostile
user tried; each must end in one line naming what is wrong and what was expected, exit 2, no
traceback, and nothing written. A case builds its inputs in `tmp_path` and returns the command
line and a part of the one line it expects."""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from harness.cli.main import main
from tests.cli.test_bad_inputs import one_line, tree
from tests.cli.test_write_faults import tmpfs  # noqa: F401  (a fixture: mounts a small tmpfs)
from tests.conftest import CONFIGS
from tests.data.conftest import write_raw_safetensors

SMOKE = str(CONFIGS / "smoke.toml")
Case = Callable[[Path], tuple[list[str], str]]


def _spec(folder: Path, data: str, extra: str = "", analysis: str = 'op = "svdvals"') -> str:
    path = folder / "spec.toml"
    path.write_text(f'[experiment]\nname = "t"\n\n[data]\n{data}\n\n[[analysis]]\n{analysis}\n{extra}')
    return str(path)


def _peft(folder: Path, **config: object) -> str:
    """A PEFT LoRA adapter folder `a` of one 8x6 rank-2 module, its config overridden."""
    adapter = folder / "a"
    adapter.mkdir()
    rng = np.random.default_rng(0)
    write_raw_safetensors(adapter / "adapter_model.safetensors", {
        "base_model.model.layers.0.q_proj.lora_A.weight": rng.standard_normal((2, 6)).astype(np.float32),
        "base_model.model.layers.0.q_proj.lora_B.weight": rng.standard_normal((8, 2)).astype(np.float32),
    }, bf16=False)
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 2, "lora_alpha": 4} | config))
    return _spec(folder, 'source = "peft"\npaths = ["a"]')


def _kohya_metadata(folder: Path, metadata: dict[str, object]) -> str:
    """A diffusers LoRA file whose saved config is `metadata`."""
    rng = np.random.default_rng(0)
    tensors = {"unet.down.0.proj.lora_A.weight": rng.standard_normal((2, 6)).astype(np.float32),
               "unet.down.0.proj.lora_B.weight": rng.standard_normal((8, 2)).astype(np.float32)}
    path = write_raw_safetensors(folder / "l.safetensors", tensors, bf16=False)
    _set_metadata(path, {"lora_adapter_metadata": json.dumps(metadata)})
    return _spec(folder, 'source = "kohya"\npaths = ["l.safetensors"]')


def _header(path: Path) -> tuple[dict[str, object], bytes]:
    length = struct.unpack("<Q", path.read_bytes()[:8])[0]
    blob = path.read_bytes()
    return json.loads(blob[8:8 + length]), blob[8 + length:]


def _write_header(path: Path, header: bytes, data: bytes) -> None:
    header += b" " * (-len(header) % 8)
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)


def _set_metadata(path: Path, metadata: dict[str, str]) -> None:
    header, data = _header(path)
    _write_header(path, json.dumps(header | {"__metadata__": metadata}).encode(), data)


def _checkpoint(folder: Path, edit: Callable[[dict[str, object]], bytes] | None = None,
                value: float = 1.0, **spec: str) -> str:
    """A fine-tune `ft.safetensors` against `base.safetensors` (two 4x4 float64 matrices); `edit`
    rewrites the fine-tune's header."""
    base = {"layers.0.w": np.ones((4, 4)), "layers.0.v": np.ones((4, 4))}
    write_raw_safetensors(folder / "base.safetensors", base, bf16=False)
    tuned = {k: v * 2 for k, v in base.items()}
    tuned["layers.0.w"][1, 2] = value
    path = write_raw_safetensors(folder / "ft.safetensors", tuned, bf16=False)
    if edit is not None:
        header, data = _header(path)
        _write_header(path, edit(header), data)
    return _spec(folder, 'source = "checkpoint"\npaths = ["ft.safetensors"]\nbase = "base.safetensors"', **spec)


def _nested(depth: int) -> bytes:
    return b'{"x": ' + b"[" * depth + b"]" * depth + b"}"


def _offsets(header: dict[str, object], w: list[float], v: list[float]) -> bytes:
    header["layers.0.w"]["data_offsets"] = w  # type: ignore[index]
    header["layers.0.v"]["data_offsets"] = v  # type: ignore[index]
    return json.dumps(header).encode()


def _arrays(folder: Path, make: Callable[[Path], None]) -> str:
    (folder / "in").mkdir()
    np.save(folder / "in" / "good.npy", np.ones((4, 3)))
    make(folder / "in")
    return _spec(folder, 'source = "arrays"\npaths = ["in/*.npy"]')


DATA_CASES: dict[str, Case] = {
    "peft rank_pattern 0": lambda d: (["plan", _peft(d, rank_pattern={"q_proj": 0})], "rank_pattern.q_proj"),
    "peft negative rank with rslora": lambda d: (
        ["plan", _peft(d, rank_pattern={"q_proj": -4}, use_rslora=True)], "rank_pattern.q_proj"),
    "peft lora_alpha Infinity": lambda d: (["plan", _peft(d, lora_alpha=float("inf"))], "lora_alpha"),
    "peft alpha_pattern NaN": lambda d: (["plan", _peft(d, alpha_pattern={"q_proj": float("nan")})],
                                         "alpha_pattern.q_proj"),
    "diffusers rank_pattern 0": lambda d: (
        ["plan", _kohya_metadata(d, {"unet.r": 2, "unet.lora_alpha": 4, "unet.rank_pattern": {"proj": 0}})],
        "rank_pattern.proj"),
    "diffusers lora_alpha Infinity": lambda d: (
        ["plan", _kohya_metadata(d, {"unet.r": 2, "unet.lora_alpha": float("inf")})], "lora_alpha"),
    "safetensors header nested deeply": lambda d: (
        ["plan", _checkpoint(d, lambda h: _nested(100_000))], "ft.safetensors: not a readable safetensors file"),
    "safetensors overlapping offsets": lambda d: (
        ["plan", _checkpoint(d, lambda h: _offsets(h, [0, 128], [64, 192]))], "overlap"),
    "safetensors fractional offsets": lambda d: (
        ["plan", _checkpoint(d, lambda h: _offsets(h, [0.5, 128.5], [128.5, 256.5]))], "data_offsets"),
    "checkpoint value 1e300": lambda d: (["run", _checkpoint(d, value=1e300), "-o", "out"], "layers.0.w"),
    "checkpoint value 1e300, float64 PCA": lambda d: (
        ["run", _checkpoint(d, value=1e300, analysis='op = "pca"\ncomponents = 1\ncenter = false',
                            extra='[execution]\ndtype = "float64"'), "-o", "out"], "layer0/w: the Gram of its deltas overflows"),
    "arrays dangling symlink": lambda d: (
        ["plan", _arrays(d, lambda f: (f / "gone.npy").symlink_to(f / "missing.npy"))], "gone.npy"),
    "arrays symlink loop": lambda d: (
        ["plan", _arrays(d, lambda f: (f / "loop.npy").symlink_to(f / "loop.npy"))], "loop.npy"),
    "arrays 0-row matrix": lambda d: (["plan", _arrays(d, lambda f: np.save(f / "empty.npy", np.ones((0, 3))))],
                                      "empty.npy"),
}


def last_line(stderr: str) -> str:
    """The line that ends stderr, with no traceback before it (a run's progress lines may)."""
    assert "Traceback" not in stderr, stderr
    return stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("case", DATA_CASES, ids=list(DATA_CASES))
def test_hostile_input_ends_in_one_line(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    argv, expected = DATA_CASES[case](tmp_path)
    before = tree(tmp_path)
    assert main(argv) == 2
    assert expected in last_line(capsys.readouterr().err)
    assert tree(tmp_path) - before <= {".harness-cache", ".harness-cache/content-hashes.json"}


def _record(smoke: Path, folder: Path, edit: Callable[[dict], object]) -> str:
    """A copy of the smoke run's folder whose record.json `edit` rewrites (its return value
    replaces the record's text when it is bytes)."""
    copy = folder / "run"
    copy.mkdir()
    raw = json.loads((smoke / "record.json").read_text())
    text = edit(raw)
    (copy / "record.json").write_bytes(text if isinstance(text, bytes) else json.dumps(raw).encode())
    return str(copy)


def _samples(value: object) -> Callable[[dict], None]:
    def edit(raw: dict) -> None:
        raw["analyses"][0]["timings"][0]["groups"][0]["measurement"]["samples_s"] = value
    return edit


def _record_folder(folder: Path) -> str:
    (folder / "run" / "record.json").mkdir(parents=True)
    return str(folder / "run")


RECORD_CASES: dict[str, Callable[[Path, Path], tuple[str, str]]] = {
    "record.json is a folder": lambda s, d: (_record_folder(d), "is a folder; expected the run's record.json"),
    "NaN samples": lambda s, d: (_record(s, d, _samples([float("nan")] * 3)),
                                 "measurement.samples_s[0]: Input should be a finite number (nan)"),
    "zero samples": lambda s, d: (_record(s, d, _samples([0.0, 0.0])),
                                  "measurement.samples_s[0]: Input should be greater than 0 (0.0)"),
    "samples nested deeply": lambda s, d: (
        _record(s, d, lambda raw: json.dumps(raw).replace('"samples_s": [', '"samples_s": ' + "[" * 100_000, 1)
                .encode()), "nested too deeply"),
}


@pytest.mark.parametrize("command", ["compare", "report"])
@pytest.mark.parametrize("case", RECORD_CASES, ids=list(RECORD_CASES))
def test_a_bad_record_is_refused_in_one_line(case: str, command: str, smoke_run: tuple[Path, object],
                                             tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad, expected = RECORD_CASES[case](smoke_run[0], tmp_path)
    argv = ["compare", str(smoke_run[0]), bad] if command == "compare" else ["report", bad, "-o", str(tmp_path / "r.html")]
    before = tree(tmp_path)
    assert main(argv) == 2
    assert expected in one_line(capsys.readouterr().err)
    assert tree(tmp_path) == before


def _sparse(folder: Path, size: int) -> str:
    path = folder / "huge.toml"
    with path.open("wb") as fh:
        fh.truncate(size)
    return str(path)


CLI_CASES: dict[str, Case] = {
    "benchmark.threads=100000": lambda d: (["plan", SMOKE, "--set", "benchmark.threads=100000"], "benchmark.threads"),
    "negative seed": lambda d: (["plan", SMOKE, "--set", "experiment.seed=-1"], "experiment.seed"),
    "memory budget of 2 EiB": lambda d: (["plan", SMOKE, "--set", 'execution.memory_budget="2EiB"'],
                                          "execution.memory_budget"),
    "budget of a year": lambda d: (["plan", SMOKE, "--budget", "8760h"], "--budget 8760h: should be <= 604800"),
    "tolerance inf": lambda d: (["plan", SMOKE, "--set", "analysis.0.tolerance=inf"], "tolerance"),
    "synthetic alpha inf": lambda d: (["plan", SMOKE, "--set", "data.alpha=inf"], "data.alpha: should be a finite number, got inf"),
    "layers to 10^12": lambda d: (
        ["plan", _arrays(d, lambda f: None), "--set", 'data.layers="0-999999999999"'], "goes past layer"),
    "a 2.2 GB spec": lambda d: (["plan", _sparse(d, 2_200_000_000)], "2,200,000,000 bytes"),
    "/dev/zero as the spec": lambda d: (["plan", "/dev/zero"], "/dev/zero: 1,048,577 bytes or more"),
    "cache_dir naming a file": lambda d: (
        ["run", _spec(d, 'source = "synthetic"', '[execution]\ncache_dir = "spec.toml"')],
        "execution.cache_dir"),
    "-o on a symlink loop": lambda d: (
        ["run", SMOKE, "-o", str(_loop(d))], "loop: a symbolic link loop"),
}


def _loop(folder: Path) -> Path:
    (folder / "loop").symlink_to(folder / "loop")
    return folder / "loop"


@pytest.mark.parametrize("case", CLI_CASES, ids=list(CLI_CASES))
def test_a_hostile_number_or_path_is_refused(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    argv, expected = CLI_CASES[case](tmp_path)
    before = tree(tmp_path)
    assert main(argv) == 2
    assert expected in last_line(capsys.readouterr().err)
    assert tree(tmp_path) == before


@pytest.mark.parametrize("argv, expected", [
    (["system", "--seconds", "-1"], "--seconds: '-1': expected seconds above 0"),
    (["cache", "clear", "--older-than=-5d"], "--older-than: '-5d': expected an age like 30d"),
])
def test_a_negative_command_line_number_is_refused(argv: list[str], expected: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".harness-cache" / "ab").mkdir(parents=True)
    (tmp_path / ".harness-cache" / "ab" / ("ab" * 32 + ".entry")).write_text("x")
    before = tree(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and expected in err.strip().splitlines()[-1]
    assert tree(tmp_path) == before


def _asv_edit(root: Path, edit: Callable[[Path], None]) -> Path:
    from tests.report.test_history import write_asv_results

    write_asv_results(root, "box-cpu", {"numpy": [0.01, 0.02], "torch": [0.01, 0.02]})
    edit(root)
    return root


def _first_result(root: Path, field: str, value: object) -> None:
    path = sorted((root / "box-cpu").glob("*-existing-py.json"))[0]
    raw = json.loads(path.read_text())
    raw[field] = value
    path.write_text(json.dumps(raw))


@pytest.mark.parametrize("edit, expected", [
    (lambda r: (r / "benchmarks.json").write_text("{not json"), "benchmarks.json: not readable asv benchmark"),
    (lambda r: (r / "benchmarks.json").write_text("[1, 2]"), "benchmarks.json: expected asv's map"),
    (lambda r: _first_result(r, "results", {"ops.Svdvals.time_compute": [["x", "y"], 5]}), "malformed asv results"),
    (lambda r: _first_result(r, "commit_hash", {"not": "a hash"}), "malformed asv results"),
], ids=["benchmarks not JSON", "benchmarks a list", "values malformed", "commit not a string"])
def test_history_on_malformed_asv_results(edit: Callable[[Path], None], expected: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("asv")
    root = _asv_edit(tmp_path / "asv", edit)
    assert main(["history", "--results", str(root), "-o", str(tmp_path / "h.html")]) == 2
    assert expected in one_line(capsys.readouterr().err)
    assert not (tmp_path / "h.html").exists()


def _no_measuring(*args: object, **kwargs: object) -> None:
    raise AssertionError("calibrate measured before it knew its wisdom could be kept")


@pytest.mark.parametrize("where", ["HARNESS_WISDOM a file", "--dir /dev/null", "read-only"])
def test_calibrate_checks_its_wisdom_folder_before_measuring(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest,
) -> None:
    monkeypatch.setattr("harness.cli.commands.calibrate.measure_machine", _no_measuring)
    argv = ["calibrate", "--quick"]
    if where == "HARNESS_WISDOM a file":
        (tmp_path / "w").write_text("")
        monkeypatch.setenv("HARNESS_WISDOM", str(tmp_path / "w"))
    elif where == "--dir /dev/null":
        monkeypatch.delenv("HARNESS_WISDOM")
        argv += ["--dir", "/dev/null"]
    else:
        read_only = request.getfixturevalue("tmpfs")("ro", "ro,size=64k")
        monkeypatch.setenv("HARNESS_WISDOM", str(read_only))
    assert main(argv) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("calibrate: cannot keep the wisdom in ") and "expected a writable folder" in line


def test_wisdom_of_another_version_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from harness.machine import wisdom
    from harness.machine.info import probe

    path = wisdom.path_for(tmp_path, probe())
    path.write_text(json.dumps({"version": wisdom.VERSION + 1, "machine": {}, "observations": ["kept"]}))
    before = path.read_bytes()
    with pytest.raises(wisdom.OtherVersion, match="holds wisdom version"):
        wisdom.learn(tmp_path, probe())
    monkeypatch.setenv("HARNESS_WISDOM", str(tmp_path))
    monkeypatch.setattr("harness.cli.commands.calibrate.measure_machine", _no_measuring)
    assert main(["calibrate", "--quick"]) == 2
    assert f"{path} holds wisdom version {wisdom.VERSION + 1}" in one_line(capsys.readouterr().err)
    assert path.read_bytes() == before


def test_cache_entries_that_are_folders_or_pickles_are_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    import io

    from harness.store.cache import ResultCache, encode

    warnings: list[str] = []
    cache = ResultCache(tmp_path, warn=warnings.append)
    folder_key, pickle_key = "a" * 64, "b" * 64
    cache.path(folder_key).mkdir(parents=True)
    buffer = io.BytesIO()
    np.savez(buffer, x=np.array([{"evil": 1}], dtype=object))  # a pickle inside, its checksum valid
    cache.path(pickle_key).parent.mkdir(parents=True)
    cache.path(pickle_key).write_bytes(encode({"kind": "chunk", "label": "x", "created": 0.0}, buffer.getvalue()))
    assert cache.get_arrays(folder_key) is None and cache.get_arrays(pickle_key) is None
    assert [w.split(" is corrupt (")[0] for w in warnings] == [
        f"warning: cache entry {cache.path(folder_key)}", f"warning: cache entry {cache.path(pickle_key)}"]
    monkeypatch.chdir(tmp_path)
    assert main(["cache", "ls", "--dir", "."]) == 0
    assert "Traceback" not in capsys.readouterr().err
    assert main(["cache", "clear", "--dir", "."]) == 0
    assert not cache.path(folder_key).exists() and not cache.path(pickle_key).exists()


def test_a_second_run_into_a_held_folder_ends_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.base.atomic import exclusive_folder

    out = tmp_path / "out"
    with exclusive_folder(out):  # as a first run holds it
        assert main(["run", SMOKE, "-o", str(out)]) == 2
        assert last_line(capsys.readouterr().err) == (
            f"{out}: another process is writing into this folder; choose another with -o")
        assert tree(out) == set()
    assert not out.exists()  # made by the holder and left empty: removed


def test_a_full_cache_disk_costs_only_the_caching(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  request: pytest.FixtureRequest) -> None:
    full = request.getfixturevalue("tmpfs")("full", "size=4k")
    path = _spec(tmp_path, 'source = "synthetic"\nadapters = 20\nmodules = {a = [64, 64]}',
                 f'[execution]\ncache_dir = "{full}"')
    assert main(["run", path, "-o", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert f"warning: {full}: the result cache would take " in err and "Traceback" not in err
    assert (tmp_path / "out" / "record.json").exists()


def test_a_reader_that_leaves_early_costs_no_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "harness", "schema"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path, text=True)
    assert proc.stdout is not None
    proc.stdout.close()  # as `| true` does, before the schema is written
    _out, err = proc.communicate(timeout=300)
    assert err == "" and proc.returncode == 141


def test_an_ascii_terminal_gets_the_table_not_a_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = _spec(tmp_path, 'source = "synthetic"\nadapters = 2\nmodules = {a = [16, 8]}')
    proc = subprocess.run([sys.executable, "-m", "harness", "run", path, "-o", "out"], cwd=tmp_path,
                          capture_output=True, env=os.environ | {"PYTHONIOENCODING": "ascii"}, timeout=600)
    assert b"Traceback" not in proc.stderr and proc.returncode == 0, proc.stderr
    assert b"results: out" in proc.stdout and "µs".encode() not in proc.stdout
