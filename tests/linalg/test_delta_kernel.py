"""The compiled delta kernels: bit-exact with numpy's widen-and-subtract, and their finite check
flags exactly the pieces whose delta holds NaN or Inf (not large finite values)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from harness.data.safetensors_io import bf16_to_f32  # noqa: E402
from harness.linalg import delta_kernel  # noqa: E402

SIZE = 1037  # not a multiple of any vector width


def bf16_bits(values: np.ndarray) -> np.ndarray:
    return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def test_bf16_delta_is_numpys_widen_then_subtract_bit_for_bit(rng: np.random.Generator) -> None:
    raw = bf16_bits(rng.standard_normal(SIZE) * 1e3)
    base = rng.standard_normal(SIZE).astype(np.float32)
    out = np.empty(SIZE, np.float32)
    assert delta_kernel.bf16_delta(raw, base, out)
    np.testing.assert_array_equal(out, bf16_to_f32(raw) - base)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_delta_is_numpys_subtract_bit_for_bit(rng: np.random.Generator, dtype: type) -> None:
    raw, base = rng.standard_normal((2, SIZE)).astype(dtype)
    out = np.empty(SIZE, dtype)
    assert delta_kernel.delta(raw, base, out)
    np.testing.assert_array_equal(out, raw - base)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", [0, 500, SIZE - 1])
def test_a_single_nan_or_inf_anywhere_is_flagged(rng: np.random.Generator, bad: float, where: int) -> None:
    raw, base = rng.standard_normal((2, SIZE)).astype(np.float32)
    raw[where] = bad
    assert not delta_kernel.delta(raw, base, np.empty(SIZE, np.float32))
    bits = bf16_bits(raw)
    assert not delta_kernel.bf16_delta(bits, base, np.empty(SIZE, np.float32))


def test_a_nan_in_the_base_is_flagged(rng: np.random.Generator) -> None:
    raw, base = rng.standard_normal((2, SIZE)).astype(np.float32)
    base[3] = np.nan
    assert not delta_kernel.bf16_delta(bf16_bits(raw), base, np.empty(SIZE, np.float32))


def test_large_finite_values_are_not_flagged_but_an_overflowing_delta_is() -> None:
    big = np.full(SIZE, 3e38, np.float32)
    assert delta_kernel.delta(big, np.zeros(SIZE, np.float32), np.empty(SIZE, np.float32))
    assert delta_kernel.bf16_delta(bf16_bits(big), -np.ones(SIZE, np.float32), np.empty(SIZE, np.float32))
    assert not delta_kernel.delta(big, -big, np.empty(SIZE, np.float32))  # 6e38 is Inf in float32


def test_empty_pieces_are_finite() -> None:
    empty = np.empty(0, np.float32)
    assert delta_kernel.delta(empty, empty, empty)
    assert delta_kernel.bf16_delta(np.empty(0, np.uint16), empty, empty)
