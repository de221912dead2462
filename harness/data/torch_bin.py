"""PyTorch `.bin` state dicts (older PEFT adapters), read with `torch.load(weights_only=True)`.

A .bin file is a pickle, and unpickling can run code; `weights_only=True` lets torch rebuild
tensors and plain containers only, and refuses anything else. A file that needs more is refused
with one line, never unpickled another way. The file is read whole (pickles have no index), so
this is for adapter-sized files.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import numpy as np

from harness.data.paths import require_finite
from harness.data.safetensors_io import TensorInfo, tensor_info
from harness.data.workload import DataError
from harness.linalg.device import torch_module

# torch dtype name -> the safetensors spelling the readers check against
_DTYPES = {"float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64"}


class TorchBinFile:
    """A .bin state dict with the reading interface of SafetensorsFile: `tensors`, info, read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._state = _load(path)
        self.tensors = {
            name: TensorInfo(_DTYPES.get(str(t.dtype).removeprefix("torch."), str(t.dtype)), tuple(t.shape), 0)
            for name, t in self._state.items()
        }

    def info(self, name: str) -> TensorInfo:
        """The tensor's dtype and shape; a missing tensor or an unreadable dtype raises."""
        return tensor_info(self.path, self.tensors, name)

    def read(self, name: str) -> np.ndarray:
        """The tensor as float16/32/64 (bfloat16 -> float32); NaN or Inf raises."""
        self.info(name)
        tensor = self._state[name].detach()
        if str(tensor.dtype) == "torch.bfloat16":
            tensor = tensor.float()
        return require_finite(tensor.numpy().copy(), self.path, name)


def _load(path: Path) -> dict:  # type: ignore[type-arg]
    torch = torch_module()
    if torch is None:
        raise DataError(f"{path}: reading a .bin state dict needs torch (pip install torch)")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError as e:
        raise DataError(f"{path}: file not found") from e
    except pickle.UnpicklingError as e:
        found = re.search(r"Unsupported global: GLOBAL (\S+)", str(e))
        detail = re.search(r"WeightsUnpickler error:\s*(\S[^\n]*)", str(e))
        what = (f"it pickles {found[1]}" if found
                else f"torch.load cannot read it as tensors ({detail[1] if detail else type(e).__name__})")
        raise DataError(
            f"{path}: refused: {what}, and only torch.load(weights_only=True) is used; "
            "save the adapter with safe_serialization=True"
        ) from e
    except (OSError, RuntimeError, EOFError, ValueError) as e:
        raise DataError(f"{path}: not a readable PyTorch state dict ({e})") from e
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise DataError(f"{path}: expected a state dict of tensor name -> tensor")
    return state
