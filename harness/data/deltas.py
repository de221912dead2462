"""The kinds of delta an adapter file stores, how each is found in a header and how it is read.

- lora: scale * B @ A. Conv factors are unfolded: A [r, in, kh, kw] -> r x (in kh kw) and
  B [out, r, 1, 1] -> out x r, so the delta is the layer's unfolded weight, out x (in kh kw),
  the layout `weight.reshape(out, -1)` and im2col use. Transposed for fan_in_fan_out and
  embedding layers, which store dW.T.
- loha: scale * (W1a @ W1b) * (W2a @ W2b), elementwise. Kept as LoRA factors of rank r1 r2 by
  the face-splitting identity (X1 Y1) * (X2 Y2) = (X1 . X2)(Y1 * Y2), with X1 . X2 the row-wise
  Kronecker product (m x r1 r2) and Y1 * Y2 the column-wise one (r1 r2 x n): exact, so the
  factored strategies stay exact; cheaper than dense while r1 r2 < min(m, n).
- lokr: scale * kron(W1, W2), each factor stored whole or as a product; a conv W2
  [m2, n2, kh, kw] unfolds to m2 x (n2 kh kw), so kron(W1, W2) is again the unfolded weight.
- full: a saved copy of a whole weight (PEFT modules_to_save, saved embeddings) less the base.
- diff: the delta itself, stored whole (LyCORIS's full fine-tune format).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from harness.data.paths import Entry, one_shape
from harness.data.safetensors_io import SafetensorsFile
from harness.data.torch_bin import TorchBinFile
from harness.data.workload import DataError, Factors, KronFactors, MatrixRef, Source

Weights = SafetensorsFile | TorchBinFile
F64 = np.dtype(np.float64)


def open_weights(path: Path) -> Weights:
    """A .bin state dict (torch.load(weights_only=True)) or a .safetensors file."""
    return TorchBinFile(path) if path.suffix == ".bin" else SafetensorsFile(path)


def unfolded(shape: Sequence[int]) -> tuple[int, int]:
    """A weight's matrix: out x (in * kernel), as `weight.reshape(out, -1)`."""
    return shape[0], math.prod(shape[1:])


def lora_entry(
    adapter: str, module: str, weights: Weights, a: str, b: str, scale: float, transpose: bool = False
) -> Entry:
    """scale * B @ A (conv factors unfolded), shapes checked against each other."""
    sa, sb = weights.info(a).shape, weights.info(b).shape
    if len(sa) < 2 or len(sa) != len(sb) or any(d != 1 for d in sb[2:]):
        raise DataError(
            f"{weights.path}: tensors {a!r} {list(sa)} and {b!r} {list(sb)} are not LoRA factors; "
            "expected A [r, in] and B [out, r], or for a conv A [r, in, *kernel] and B [out, r, 1, ...]"
        )
    if sa[0] != sb[1]:
        raise DataError(
            f"{weights.path}: tensor {a!r} {list(sa)} has rank {sa[0]} but {b!r} {list(sb)} has "
            f"rank {sb[1]}; expected A [r, in] and B [out, r]"
        )
    if transpose and len(sa) != 2:
        raise DataError(f"{weights.path}: tensor {a!r} {list(sa)} must be 2-D for a transposed layer")
    shape = (unfolded(sa)[1], sb[0]) if transpose else (sb[0], unfolded(sa)[1])
    locator = {"kind": "lora", "file": str(weights.path), "A": a, "B": b, "scale": scale, "transpose": transpose}
    return Entry(adapter, module, shape, locator, rank=sa[0])


def loha_entry(adapter: str, module: str, weights: Weights, names: dict[str, str],
               scale: Callable[[int], float]) -> Entry:
    """(w1_a @ w1_b) * (w2_a @ w2_b) * scale(r1): `names` maps w1_a, w1_b, w2_a, w2_b to tensors."""
    shapes = {key: unfolded(weights.info(name).shape) for key, name in names.items()}
    (m1, r1), (r1b, n1) = shapes["w1_a"], shapes["w1_b"]
    (m2, r2), (r2b, n2) = shapes["w2_a"], shapes["w2_b"]
    if r1 != r1b or r2 != r2b or (m1, n1) != (m2, n2):
        listed = ", ".join(f"{names[k]!r} {list(weights.info(names[k]).shape)}" for k in names)
        raise DataError(
            f"{weights.path}: LoHa tensors {listed} do not fit; expected w1_a [out, r1], "
            "w1_b [r1, in], w2_a [out, r2], w2_b [r2, in]"
        )
    locator = {"kind": "loha", "file": str(weights.path), **names, "scale": scale(r1)}
    return Entry(adapter, module, (m1, n1), locator, rank=r1 * r2)


def lokr_entry(adapter: str, module: str, weights: Weights, names: dict[str, str],
               scale: Callable[[int | None], float]) -> Entry:
    """kron(W1, W2) * scale(dim); each W is `w` whole or `w_a @ w_b` (names: w1 | w1_a, w1_b,
    and w2 | w2_a, w2_b); dim is the rank of the factored W (W2's when both are), else None."""
    factors, dim = [], None
    for w in ("w1", "w2"):
        if w in names:
            factors.append(unfolded(weights.info(names[w]).shape))
            continue
        (m, r), (rb, n) = (unfolded(weights.info(names[w + part]).shape) for part in ("_a", "_b"))
        if r != rb:
            raise DataError(
                f"{weights.path}: tensors {names[w + '_a']!r} and {names[w + '_b']!r} have ranks "
                f"{r} and {rb}; expected {w}_a [out, r] and {w}_b [r, in]"
            )
        factors.append((m, n))
        dim = r
    (m1, n1), (m2, n2) = factors
    locator = {"kind": "lokr", "file": str(weights.path), **names, "scale": scale(dim)}
    return Entry(adapter, module, (m1 * m2, n1 * n2), locator, kron=(m1, n1, m2, n2))


def full_entry(adapter: str, module: str, weights: Weights, tensor: str, base: Path, base_tensor: str) -> Entry:
    """A whole saved weight less the base's: dense, unfolded when it is a conv's."""
    locator = {"kind": "full", "file": str(weights.path), "tensor": tensor, "base": str(base),
               "base_tensor": base_tensor}
    return Entry(adapter, module, unfolded(weights.info(tensor).shape), locator)


class Files:
    """The files one load reads, each opened (its header parsed) once."""

    def __init__(self) -> None:
        self._open: dict[str, Weights] = {}

    def __call__(self, path: str) -> Weights:
        if path not in self._open:
            self._open[path] = open_weights(Path(path))
        return self._open[path]

    def matrix(self, path: str, tensor: str) -> np.ndarray:
        array = self(path).read(tensor)
        return array.reshape(unfolded(array.shape))


def _changed(ref: MatrixRef, names: list[str]) -> DataError:
    return DataError(
        f"{ref.locator['file']}: tensors {', '.join(map(repr, names))} changed since the workload "
        f"was built; expected a delta of {list(ref.shape)}"
    )


def read_lora(ref: MatrixRef, files: Files) -> tuple[np.ndarray, np.ndarray]:
    """(B, A) of a lora or loha ref, in the stored dtype (LoHa's face-split in float64)."""
    loc = ref.locator
    if loc["kind"] == "loha":
        w1a, w1b, w2a, w2b = (files.matrix(loc["file"], loc[k]).astype(F64) for k in ("w1_a", "w1_b", "w2_a", "w2_b"))
        b = (w1a[:, :, None] * w2a[:, None, :]).reshape(len(w1a), -1)
        a = (w1b[:, None, :] * w2b[None, :, :]).reshape(-1, w1b.shape[1])
        names = [loc[k] for k in ("w1_a", "w1_b", "w2_a", "w2_b")]
    else:
        a, b = files.matrix(loc["file"], loc["A"]), files.matrix(loc["file"], loc["B"])
        if loc["transpose"]:
            a, b = b.T, a.T
        names = [loc["A"], loc["B"]]
    if (b.shape[0], a.shape[1]) != ref.shape or a.shape[0] != ref.rank or b.shape[1] != ref.rank:
        raise _changed(ref, names)
    return b, a


def _kron_factor(loc: dict, files: Files, w: str) -> np.ndarray:  # type: ignore[type-arg]
    if w in loc:
        return files.matrix(loc["file"], loc[w]).astype(F64)
    return files.matrix(loc["file"], loc[w + "_a"]).astype(F64) @ files.matrix(loc["file"], loc[w + "_b"]).astype(F64)


def read_kron(ref: MatrixRef, files: Files) -> tuple[np.ndarray, np.ndarray]:
    """(W1, W2) of a lokr ref, float64, products formed."""
    w1, w2 = (_kron_factor(ref.locator, files, w) for w in ("w1", "w2"))
    if (*w1.shape, *w2.shape) != ref.kron:
        raise _changed(ref, [v for k, v in ref.locator.items() if k.startswith("w")])
    return w1, w2


def read_delta(ref: MatrixRef, files: Files) -> np.ndarray:
    """The delta itself, float64, whatever its kind."""
    loc = ref.locator
    if loc["kind"] == "diff":
        delta = files.matrix(loc["file"], loc["tensor"]).astype(F64)
        if delta.shape != ref.shape:
            raise _changed(ref, [loc["tensor"]])
        return delta
    if loc["kind"] == "full":
        tuned, base = files.matrix(loc["file"], loc["tensor"]), files.matrix(loc["base"], loc["base_tensor"])
        if tuned.shape != ref.shape or base.shape != ref.shape:
            raise DataError(
                f"{loc['base']}: tensor {loc['base_tensor']!r} is {list(base.shape)} and "
                f"{loc['file']}: {loc['tensor']!r} is {list(tuned.shape)}; expected {list(ref.shape)}"
            )
        return np.subtract(tuned, base, dtype=F64)
    if loc["kind"] == "lokr":
        w1, w2 = read_kron(ref, files)
        return loc["scale"] * np.kron(w1, w2)
    b, a = read_lora(ref, files)
    return loc["scale"] * (b.astype(F64) @ a.astype(F64))


@dataclass(frozen=True)
class Scan:
    """What a source found in its files' headers: the refs its filters keep, and the tensors it
    does not analyse (`file: tensor (why)` each)."""

    refs: list[MatrixRef]
    skipped: list[str]


class FactorFileSource(Source):
    """A source of adapter files whose refs carry these locators: loads any kind. The headers
    are read once per source (a run asks for refs, skipped and has_factors)."""

    @abstractmethod
    def read_headers(self) -> Scan:
        """Every file's header read: refs (filtered) and what is skipped."""

    @cached_property
    def _scan(self) -> Scan:
        return self.read_headers()

    def refs(self) -> list[MatrixRef]:
        return list(self._scan.refs)

    def skipped(self) -> list[str]:
        return list(self._scan.skipped)

    @property
    def has_factors(self) -> bool:  # type: ignore[override]
        """LoRA factors for every matrix (LoHa's face-split ones included); false with a
        Kronecker or dense delta among them."""
        return all(ref.form == "lora" for ref in self._scan.refs)

    def load_factors(self, refs: Sequence[MatrixRef], dtype: np.dtype) -> Factors:
        B, A, scale = _stacked(refs, "lora", read_lora, dtype)
        return Factors(B=B, A=A, scale=scale)

    def load_kron(self, refs: Sequence[MatrixRef], dtype: np.dtype) -> KronFactors:
        W1, W2, scale = _stacked(refs, "kron", read_kron, dtype)
        return KronFactors(W1=W1, W2=W2, scale=scale)

    def load_dense(self, refs: Sequence[MatrixRef], dtype: np.dtype) -> np.ndarray:
        files = Files()
        out = np.empty((len(refs), *one_shape(refs)), dtype=dtype)
        for i, ref in enumerate(refs):
            out[i] = read_delta(ref, files)
        return out


def _stacked(
    refs: Sequence[MatrixRef], form: str, read: Callable[[MatrixRef, Files], tuple[np.ndarray, np.ndarray]],
    dtype: np.dtype,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both factors of refs of one group of `form`, stacked in `dtype`, and their scales."""
    if len({ref.group_key for ref in refs}) != 1 or refs[0].form != form:
        raise ValueError(f"a factor load needs refs of one {form} group")
    files = Files()
    pairs = [read(ref, files) for ref in refs]
    return (np.stack([x for x, _ in pairs], dtype=dtype), np.stack([y for _, y in pairs], dtype=dtype),
            np.array([ref.locator["scale"] for ref in refs], dtype=np.float64))
