"""The variables a spec may time a point under (`environments`): the knobs that tune this
machine's thread runtimes and numeric libraries, and nothing else.

A spec is data a colleague mails you: a variable it sets must never run code its author chose.
PYTHONPATH ran a folder's sitecustomize.py, LD_PRELOAD a library's constructor, in the timing
workers; so names are allowed one by one (no prefixes: OMP_TOOL_LIBRARIES loads a library,
KMP_CPUINFO_FILE reads a file, MKL_VERBOSE_OUTPUT_FILE writes one, TORCH_ADDR2LINE_BINARY runs a
program), each read by the library it tunes when it loads, and values are short words and numbers
(no path, no shell or markup character, no control character)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, WithJsonSchema

TUNING_VARIABLES: dict[str, tuple[str, ...]] = {
    "OpenBLAS": ("OPENBLAS_NUM_THREADS", "OPENBLAS_DEFAULT_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT",
                 "OPENBLAS_CORETYPE", "OPENBLAS_BLOCK_FACTOR", "GOTO_NUM_THREADS", "OMP_ADAPTIVE"),
    "OpenMP": ("OMP_NUM_THREADS", "OMP_DYNAMIC", "OMP_PROC_BIND", "OMP_PLACES", "OMP_WAIT_POLICY", "OMP_SCHEDULE",
               "OMP_STACKSIZE", "OMP_THREAD_LIMIT", "OMP_MAX_ACTIVE_LEVELS", "OMP_NESTED"),
    "GNU OpenMP": ("GOMP_SPINCOUNT", "GOMP_CPU_AFFINITY", "GOMP_STACKSIZE"),
    "Intel/LLVM OpenMP": ("KMP_BLOCKTIME", "KMP_AFFINITY", "KMP_HW_SUBSET", "KMP_LIBRARY", "KMP_STACKSIZE",
                          "KMP_DYNAMIC_MODE", "KMP_USE_YIELD"),
    "MKL": ("MKL_NUM_THREADS", "MKL_DOMAIN_NUM_THREADS", "MKL_DYNAMIC", "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR",
            "MKL_DISABLE_FAST_MM", "MKL_FAST_MEMORY_LIMIT", "MKL_NUM_STRIPES", "MKL_DEBUG_CPU_TYPE"),
    "BLIS": ("BLIS_NUM_THREADS", "BLIS_JC_NT", "BLIS_PC_NT", "BLIS_IC_NT", "BLIS_JR_NT", "BLIS_IR_NT",
             "BLIS_ARCH_TYPE"),
    "Accelerate": ("VECLIB_MAXIMUM_THREADS",),
    "torch": ("ATEN_CPU_CAPABILITY", "TORCH_MKLDNN_MATMUL_MIN_DIM", "TORCH_MKLDNN_MATMUL_MIN_SIZE",
              "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "TORCH_BLAS_PREFER_CUBLASLT", "TORCH_LINALG_PREFER_CUSOLVER",
              "NVIDIA_TF32_OVERRIDE", "CUBLAS_WORKSPACE_CONFIG"),
}
ALLOWED = frozenset(name for names in TUNING_VARIABLES.values() for name in names)

MAX_VARIABLES = 8  # per environment: each environment times every compared strategy once more
MAX_VALUE = 64
VALUE_CHARACTERS = "letters, digits, space and _ . , : ; = + - ! @ { } ( )"
VALUE = re.compile(rf"[A-Za-z0-9 _.,:;=+\-!@{{}}()]{{1,{MAX_VALUE}}}")  # OMP_PLACES="{0:4},{4:4}", KMP_AFFINITY


def name_problem(name: str) -> str | None:
    """Why a spec may not set `name` for a timed point, or None."""
    if name in ALLOWED:
        return None
    return ("not a setting of a thread runtime or numeric library a spec may time (none that could load code or "
            f"name a path): the {len(ALLOWED)} allowed, of OpenBLAS, OpenMP, MKL, BLIS, Accelerate and torch, are "
            "listed in docs/environments.md")


def value_problem(value: str) -> str | None:
    """Why a spec may not give a variable `value`, or None."""
    if VALUE.fullmatch(value):
        return None
    return f"expected 1 to {MAX_VALUE} of {VALUE_CHARACTERS} (a setting is a word or a number, never a path)"


def _checked(problem: Callable[[str], str | None]) -> Callable[[str], str]:
    """A validator raising the problem `problem` finds in a text."""

    def check(text: str) -> str:
        if (why := problem(text)) is not None:
            raise ValueError(why)
        return text

    return check


def _few_variables(env: object) -> object:
    """Counted before any name is checked: 2,500 variables were 2,500 lines, a 1.2 MB screen."""
    if isinstance(env, dict) and not 1 <= len(env) <= MAX_VARIABLES:
        raise ValueError(f"{len(env)} variables; expected 1 to {MAX_VARIABLES} (the user's own environment is "
                         "always timed)")
    return env


# one environment of the axis: its variables are counted first, then each name and value is checked
Environment = Annotated[
    dict[Annotated[str, AfterValidator(_checked(name_problem))], Annotated[str, AfterValidator(_checked(value_problem))]],
    BeforeValidator(_few_variables),
    WithJsonSchema({"type": "object", "minProperties": 1, "maxProperties": MAX_VARIABLES,
                    "propertyNames": {"enum": sorted(ALLOWED)},
                    "additionalProperties": {"type": "string", "pattern": f"^{VALUE.pattern}$"}}),
]
