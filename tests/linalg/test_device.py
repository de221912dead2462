"""Device resolution with CUDA faked present or absent, and with torch made unimportable."""

import sys

import pytest

from harness.linalg import device


@pytest.fixture
def no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (3 * 2**30, 80 * 2**30))


def test_auto_without_cuda_is_torch_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert device.resolve_device("auto") == "cpu"
    with pytest.raises(RuntimeError, match="'cuda' requested but torch sees no CUDA device"):
        device.resolve_device("cuda")
    assert device.cuda_free_bytes() is None


@pytest.mark.usefixtures("fake_cuda")
def test_auto_with_cuda_is_cuda() -> None:
    assert device.resolve_device("auto") == "cuda"
    assert device.resolve_device("cpu") == "cpu"
    assert device.cuda_free_bytes() == 3 * 2**30


@pytest.mark.usefixtures("no_torch")
def test_without_torch_everything_falls_back_to_numpy() -> None:
    assert device.torch_module() is None
    assert device.resolve_device("auto") == "numpy"
    assert "torch is not installed" in (device.torch_missing_reason() or "")
    with pytest.raises(RuntimeError, match="torch is not installed"):
        device.resolve_device("cpu")
    with pytest.raises(RuntimeError, match="torch is not installed"):
        device.resolve_device("cuda")


def test_unknown_device() -> None:
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        device.resolve_device("tpu")


def test_synchronize_waits_for_cuda_only(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    calls: list[bool] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: calls.append(True))
    device.synchronize("cpu")
    device.synchronize("numpy")
    assert calls == []
    device.synchronize("cuda")
    assert calls == [True]
