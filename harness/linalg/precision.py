"""Numeric precisions below float64 as pure functions: rounding to them and the products that run
in them, so a kernel can say exactly where its arithmetic is narrow and where it widens.

A precision names the arithmetic of a kernel's heavy products, not how inputs are stored: inputs
arrive in float32 (float64 for "float64"); "bfloat16" and "float16" round them to that format and
multiply in it, accumulating in float32 (what bf16 GEMMs do: oneDNN on AVX512-BF16 CPUs, tensor
cores on GPUs); "tf32" is a CUDA tensor-core mode of float32 GEMMs (10-bit mantissa products,
float32 sums). LAPACK has no bf16, fp16 or tf32 routine: eigensolvers and SVDs widen.

Unit roundoff u (half the spacing of numbers at 1): float64 2^-53, float32 2^-24, tf32 and float16
2^-11, bfloat16 2^-8. Rounding a matrix's entries to a precision perturbs it by E with
||E||_2 <= ||E||_F <= u ||W||_F, so by Weyl's theorem every singular value moves by at most
u ||W||_F <= u sqrt(rank) sigma_1: no method on inputs in a precision does better than about u of
sigma_1, which is why a tolerance below it refuses the precision outright (`meets`).
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import numpy as np

from harness.linalg.device import Backend, as_backend, to_numpy, torch_module

Precision = Literal["float64", "float32", "tf32", "bfloat16", "float16"]
PRECISIONS: tuple[str, ...] = get_args(Precision)
NARROW = ("bfloat16", "float16")  # rounded inputs, products in that format
UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24, "tf32": 2.0**-11, "bfloat16": 2.0**-8,
                 "float16": 2.0**-11}
SHORT = {"float64": "f64", "float32": "f32", "tf32": "tf32", "bfloat16": "bf16", "float16": "f16"}
_MANTISSA_BITS = {"bfloat16": 7, "tf32": 10}  # stored fraction bits of the float32-based formats


def storage_dtype(precision: str) -> np.dtype:
    """The dtype inputs are loaded in at `precision`: float64 for float64, float32 for the rest
    (narrow formats are rounded from float32 in the kernel, as a float32 pipeline casts)."""
    return np.dtype(np.float64 if precision == "float64" else np.float32)


def round_to(x: np.ndarray, precision: str) -> np.ndarray:
    """`x`'s values rounded to nearest (ties to even) in `precision`, as float32 (float64 input
    at "float64" is returned as is). bfloat16 and tf32 keep float32's exponent range: the low
    23 - bits of the fraction are rounded away on the bit pattern; float16 goes through numpy's
    half (its narrower range overflows to inf past 65504, as a real cast would)."""
    if precision == "float64":
        return x
    x32 = np.asarray(x, dtype=np.float32)
    if precision == "float32":
        return x32
    if precision == "float16":
        return x32.astype(np.float16).astype(np.float32)
    drop = 23 - _MANTISSA_BITS[precision]
    bits = np.ascontiguousarray(x32).view(np.uint32).astype(np.uint64)
    half, odd = np.uint64(1 << (drop - 1)), (bits >> np.uint64(drop)) & np.uint64(1)
    rounded = ((bits + half - np.uint64(1) + odd) >> np.uint64(drop)) << np.uint64(drop)
    out = rounded.astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(x32), out, x32).reshape(x32.shape)


def meets(precision: str, tolerance: float, rank: int = 1) -> bool:
    """Whether `precision` can meet `tolerance` (relative to sigma_1) at all: its inputs' rounding
    alone moves singular values by up to u sqrt(rank) sigma_1, and by about u sigma_1 typically;
    a tolerance below u is out of reach whatever the method."""
    return UNIT_ROUNDOFF[precision] <= tolerance


def torch_dtype(precision: str) -> Any:
    """The torch dtype products run in: bfloat16, float16, or float32 (tf32's tensor-core mode)."""
    torch = torch_module()
    assert torch is not None, f"precision {precision!r} computes with torch"
    return {"bfloat16": torch.bfloat16, "float16": torch.float16, "tf32": torch.float32}[precision]


def _gram(T: Any, low: Any, rows: bool) -> Any:
    """T X T^T (`rows`) or T^T T in dtype `low`, widened to float64: the unit torch.compile
    wraps (the casts in and out fuse around the product)."""
    L = T.to(low)
    G = L @ L.mT if rows else L.mT @ L
    return G.double()


def _product(a: Any, b: Any, low: Any) -> Any:
    return (a.to(low) @ b.to(low)).double()


def _run(log: Any, fn: Any, *args: Any) -> Any:
    return fn(*args) if log is None else log.call(fn, *args)


def _tensor(x: Any, backend: Backend) -> Any:
    return as_backend(x, "cpu" if backend == "numpy" else backend)


def narrow_product(a: Any, b: Any, precision: str, backend: Backend, log: Any = None) -> np.ndarray:
    """a @ b (batched) with both operands rounded to `precision` and the product formed in it by
    torch: bfloat16 / float16 with float32 accumulation inside the GEMM (the result rounded to the
    format on output); tf32 on CUDA tensor cores. Widened to float64; on "numpy", torch's CPU.
    `log` (a CompileLog) compiles the cast-multiply-widen unit."""
    with _tf32(precision):
        return to_numpy(_run(log, _product, _tensor(a, backend), _tensor(b, backend), torch_dtype(precision)))


def narrow_gram(X: Any, precision: str, backend: Backend, *, rows: bool, log: Any = None) -> np.ndarray:
    """The float64-widened Gram of each matrix of X, products in `precision` (see
    `narrow_product`): X X^T (`rows`) or X^T X, for X of shape (..., m, n)."""
    with _tf32(precision):
        return to_numpy(_run(log, _gram, _tensor(X, backend), torch_dtype(precision), rows))


class _tf32:
    """Within it, CUDA float32 products may use TF32 tensor cores (tf32 only; restored after)."""

    def __init__(self, precision: str) -> None:
        self.on, self.before = precision == "tf32", None

    def __enter__(self) -> None:
        if self.on:
            torch = torch_module()
            assert torch is not None
            self.before = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = True

    def __exit__(self, *exc: object) -> None:
        if self.on:
            torch = torch_module()
            assert torch is not None
            torch.backends.cuda.matmul.allow_tf32 = self.before


def low(precision: str) -> bool:
    """Whether `precision` changes a Gram kernel's products (bfloat16, float16, tf32)."""
    return precision in (*NARROW, "tf32")


__all__ = ["PRECISIONS", "Precision", "UNIT_ROUNDOFF", "meets", "narrow_gram", "narrow_product", "round_to",
           "storage_dtype", "low"]
