"""The wisdom is data from elsewhere (issue 43): each hostile file below was planted in this
machine's wisdom folder; reading it must give no figure from it, one line saying the file was kept
aside and the run measures afresh, and the file itself kept under another name. Another
version's file is left as it is, never overwritten."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.machine import stored, wisdom
from harness.machine.info import probe
from harness.machine.roofline import Roof, higher

MACHINE = probe()
ROOF = {"device": "cpu", "gemm_gflops": {"float32": 50.0, "float64": 25.0}, "bandwidth_gbs": 10.0, "threads": 2,
        "measured": "2026-11-23T00:00:00+00:00", "by": "harness calibrate"}
OBSERVATION = {"strategy": "numpy", "op": "svdvals", "shape": [64, 64], "dtype": "float32", "device": "numpy",
               "threads": 1, "seconds": 1e-3, "flops": 1e6, "samples": 7, "when": "2026-11-23T10:00:00+00:00",
               "source": "test", "recent": [1e-3]}


def good() -> dict[str, Any]:
    return {"version": wisdom.VERSION, "machine": wisdom.identity(MACHINE), "roofs": {"cpu": dict(ROOF)},
            "observations": [dict(OBSERVATION)]}


def roof(**change: object) -> dict[str, Any]:
    raw = good()
    raw["roofs"]["cpu"] = ROOF | change
    return raw


def observed(**change: object) -> dict[str, Any]:
    raw = good()
    raw["observations"] = [OBSERVATION | change]
    return raw


# (what was planted, the file's text, what the line says of it)
HOSTILE: list[tuple[str, Callable[[], str], str]] = [
    ("a roof of 0 (ZeroDivisionError)", lambda: json.dumps(roof(gemm_gflops={"float32": 0.0})), "gemm_gflops.float32"),
    ("a NaN roof (nan%)", lambda: json.dumps(roof(bandwidth_gbs=float("nan"))), "finite"),
    ("a negative roof (-14%)", lambda: json.dumps(roof(gemm_gflops={"float32": -1.0})), "gemm_gflops.float32"),
    ("a roof of 1e308 (outlived every calibration)", lambda: json.dumps(roof(gemm_gflops={"float64": 1e308})),
     "gemm_gflops.float64"),
    ("a roof past what 2 threads can measure", lambda: json.dumps(roof(gemm_gflops={"float32": 5e4})),
     "more than a cpu probe can measure on 2 threads"),
    ("a roof of text", lambda: json.dumps(roof(bandwidth_gbs="fast")), "bandwidth_gbs"),
    ("a roof under another device's key", lambda: json.dumps(good() | {"roofs": {"cuda": ROOF}}), "device 'cpu'"),
    ("zero seconds", lambda: json.dumps(observed(seconds=0.0, recent=[0.0])), "seconds"),
    ("faster than any device", lambda: json.dumps(observed(seconds=1e-30, recent=[1e-30])), "faster than any device"),
    ("observations of the wrong type", lambda: json.dumps(good() | {"observations": ["kept"]}), "observations[0]"),
    ("threads of 0", lambda: json.dumps(observed(threads=0)), "threads"),
    ("not JSON", lambda: "{not json", "not JSON"),
    ("not an object", lambda: "[1, 2]", "a JSON list, not an object"),
    ("another machine's identity under this name", lambda: json.dumps(good() | {"machine": {"cpu": "other"}}),
     "not this machine's"),
    ("larger than the cap", lambda: json.dumps(good() | {"padding": "x" * 5000}), "bytes or more"),
]


@pytest.mark.parametrize("planted, text, said", HOSTILE, ids=[case[0] for case in HOSTILE])
def test_a_bad_wisdom_file_is_kept_aside_and_measured_afresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             planted: str, text: Callable[[], str], said: str) -> None:
    monkeypatch.setattr(stored, "CAP", 4096)
    path = wisdom.path_for(tmp_path, MACHINE)
    path.write_text(body := text())
    lines: list[str] = []
    loaded = wisdom.load(tmp_path, MACHINE, say=lines.append)
    assert loaded.roofs == {} and loaded.observations == [], planted
    assert len(lines) == 1 and said in lines[0], lines
    aside = [p for p in tmp_path.iterdir() if p.name.startswith(f"{path.name}.bad-")]
    assert len(aside) == 1 and aside[0].read_text() == body and not path.exists()
    assert lines[0].endswith(f"kept aside as {aside[0].name}; measuring afresh")
    assert wisdom.load(tmp_path, MACHINE, say=lines.append).roofs == {} and len(lines) == 1  # said once


def test_a_bad_file_found_when_learning_is_kept_aside_and_replaced(tmp_path: Path) -> None:
    path = wisdom.path_for(tmp_path, MACHINE)
    path.write_text(json.dumps(roof(gemm_gflops={"float32": 0.0})))
    lines: list[str] = []
    learnt = wisdom.learn(tmp_path, MACHINE, roofs=[Roof.model_validate(ROOF)], say=lines.append)
    assert learnt is not None and learnt.roofs["cpu"].gemm_gflops["float32"] == 50.0
    assert len(lines) == 1 and "kept aside as" in lines[0]
    assert wisdom.load(tmp_path, MACHINE, say=lines.append) == learnt and len(lines) == 1


def test_another_versions_wisdom_is_said_and_never_overwritten(tmp_path: Path) -> None:
    path = wisdom.path_for(tmp_path, MACHINE)
    path.write_text(json.dumps(good() | {"version": wisdom.VERSION + 1, "observations": ["theirs"]}))
    before = path.read_bytes()
    lines: list[str] = []
    assert wisdom.load(tmp_path, MACHINE, say=lines.append).observations == []
    assert len(lines) == 1 and f"version {wisdom.VERSION + 1}" in lines[0] and "kept as it is" in lines[0]
    with pytest.raises(wisdom.OtherVersion):
        wisdom.learn(tmp_path, MACHINE, roofs=[Roof.model_validate(ROOF)], say=lines.append)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [".lock", path.name]


def test_an_error_no_json_can_hold_keeps_the_wisdom_readable(tmp_path: Path) -> None:
    """An infinite error was written as null, and the whole file then failed to load (and was lost
    on the next write)."""
    errors = [wisdom.MeasuredError(strategy="torch", op="svdvals", device="cpu", precision=p, error=e, when="x")
              for p, e in (("bfloat16", float("inf")), ("float16", float("nan")), ("float32", 1e-6))]
    lines: list[str] = []
    wisdom.learn(tmp_path, MACHINE, errors=errors, say=lines.append)
    loaded = wisdom.load(tmp_path, MACHINE, say=lines.append)
    assert lines == [] and [e.error for e in loaded.errors] == [wisdom.MISSED, wisdom.MISSED, 1e-6]


@pytest.mark.parametrize("old, new, kept", [
    (50.0, 40.0, 50.0),  # a busy probe lowers nothing
    (50.0, 60.0, 60.0),  # a better one raises it
    (5000.0, 40.0, 40.0),  # an old ceiling more than TRUST x above the probe is not this machine's
])
def test_a_roof_never_stays_far_above_what_the_probe_measures(old: float, new: float, kept: float) -> None:
    before, probed = Roof.model_validate(ROOF | {"gemm_gflops": {"float32": old}}), Roof.model_validate(
        ROOF | {"gemm_gflops": {"float32": new}})
    assert higher(before, probed).gemm_gflops["float32"] == kept
