"""A stand-in for CuPy where there is no GPU: numpy behind CuPy's names, so the cupy strategy's
decisions and its verified answers are tested with availability faked (the SVD itself is then
numpy's; on a machine with CuPy and a GPU the same tests run the real one)."""

from types import SimpleNamespace

import numpy as np
import pytest

from harness.linalg import cupy_svd


def fake_cupy(devices: int = 1) -> SimpleNamespace:
    def count() -> int:
        if devices < 0:
            raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
        return devices

    return SimpleNamespace(linalg=np.linalg, asarray=np.asarray, asnumpy=np.asarray, ones=np.ones, float32=np.float32,
                           cuda=SimpleNamespace(runtime=SimpleNamespace(getDeviceCount=count)))


def install(monkeypatch: pytest.MonkeyPatch, devices: int = 1) -> SimpleNamespace:
    """Fake CuPy with `devices` GPUs (-1: its runtime raises, as without a driver)."""
    fake = fake_cupy(devices)
    monkeypatch.setattr(cupy_svd, "cupy_module", lambda: fake)
    return fake
