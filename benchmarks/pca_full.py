"""Benchmark: the published task-geometry PCA at full size, from disk, through the `checkpoint`
source. A standalone script, not an asv suite (it writes tens of GB):

    python -m benchmarks.pca_full [--params 352e6] [--adapters 18] [--dtypes float32,bf16]
                                  [--folder /tmp] [--device auto] [--budget-mib 512]
                                  [--repeats 1] [--cli]

Writes one model of `--params` parameters (a GPT-2-medium-like stack of 2-D weights) as a base
and `--adapters` fine-tunes of it as .safetensors files, deterministically (fine-tune i = base +
a delta shared by a third of them + its own), in float32 and in bf16, one dtype at a time: the
free disk is checked first (the script refuses when the files would not fit) and everything is
deleted after. Per dtype, with the page cache dropped before each (``echo 3 >
/proc/sys/vm/drop_caches`` where permitted, else posix_fadvise(DONTNEED) on every file, which
needs no root): plain sequential reads of the same files (1 and 64 MiB buffers; the faster is
the reference), then the global PCA of the deltas (fine-tuned minus base) as a
`checkpoint`-source spec runs it: workload from the headers, dual_gram's Grams streamed per
(layer, module), dual PCA. Reported: wall time, GB/s of
the files read, the plain read's GB/s, peak anonymous memory (RssAnon of this process sampled
every 5 ms by a thread, above its level before the PCA, and the absolute peak), the load
average, and the published pipeline's 15 min / 2.7 GB beside them; `--repeats` rounds of reads
and PCA, with the median share. With `--cli`, the spec then runs through `harness run` twice,
cold: the first hashes the inputs for the workload fingerprint and times the positions against
float64 references, the second finds the digests remembered and the results cached. Then, once,
the Gram entries of 3 of the deltas against a float64 pairwise pass over the same files.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.gram_memmap import peak_anon, rss_anon
from harness.machine.roofline import drop_from_page_cache, sequential_read
from harness.data.layout import AdapterLayout
from harness.data.registry import build_source
from harness.data.safetensors_io import SafetensorsFile
from harness.data.workload import Workload
from harness.base.executors import SerialExecutor
from harness.machine.info import probe
from harness.compute.pca import pca_results
from harness.specs.sections import PcaAnalysis, Spec
from harness.specs.reading import load_spec
from harness.strategies.base import ExecContext
from harness.strategies.gram import DualGramStrategy

MiB = 2**20
PUBLISHED = "published pipeline: 15 min, 2.7 GB peak (18 x 352M, 25 GB float32)"
SHARED_GROUPS = 3  # fine-tunes share one of 3 directions, so the PCA has structure to find
CHECKED = 3  # deltas whose Gram entries are checked against float64 pairs


def model_dims(params: float) -> tuple[int, int, int]:
    """(h, layers, embedding rows) of a decoder of about `params` parameters: 12 h^2 per layer
    (attention q, k, v, o of h x h, MLP up 4h x h and down h x 4h) and an embedding of h columns
    filling the rest; h = 1024 (GPT-2 medium: 24 layers and 48,838 rows at 352M)."""
    h = int(min(1024, 2 ** math.floor(math.log2(math.sqrt(params / 24)))))
    layers = max(1, round(params * 0.855 / (12 * h * h)))
    return h, layers, max(1, int(params - layers * 12 * h * h) // h)


def model_shapes(h: int, layers: int, rows: int) -> dict[str, tuple[int, int]]:
    """The 2-D weights of `model_dims`, by Hugging Face name."""
    shapes = {"model.embed_tokens.weight": (rows, h)}
    for i in range(layers):
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            shapes[f"model.layers.{i}.self_attn.{name}.weight"] = (h, h)
        shapes[f"model.layers.{i}.mlp.up_proj.weight"] = (4 * h, h)
        shapes[f"model.layers.{i}.mlp.down_proj.weight"] = (h, 4 * h)
    return shapes


def _to_bf16(values: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, rounded to nearest even."""
    bits = values.view(np.uint32)
    return ((bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16).astype("<u2")


def write_checkpoints(folder: Path, shapes: dict[str, tuple[int, int]], adapters: int, bf16: bool) -> list[Path]:
    """base.safetensors and ft-XX.safetensors, written tensor by tensor into all files at once
    (each tensor's base and noise are drawn once); fsynced, so the page cache can be dropped."""
    itemsize, dtype = (2, "BF16") if bf16 else (4, "F32")
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in shapes.items():
        end = offset + math.prod(shape) * itemsize
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, end]}
        offset = end
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    paths = [folder / "base.safetensors"] + [folder / f"ft-{i:02d}.safetensors" for i in range(adapters)]
    files = [path.open("wb") for path in paths]
    try:
        for fh in files:
            fh.write(struct.pack("<Q", len(blob)) + blob)
        shift = 9973  # noise of fine-tune i (and of each shared direction) starts i * shift in
        for t, shape in enumerate(shapes.values()):
            rng = np.random.default_rng([0, t])
            size = math.prod(shape)
            base = rng.standard_normal(size, dtype=np.float32) * np.float32(0.02)
            noise = rng.standard_normal(size + (adapters + SHARED_GROUPS) * shift, dtype=np.float32)
            noise *= np.float32(1e-3)
            tuned = np.empty_like(base)
            for i, fh in enumerate(files):
                if i:
                    own, shared = (i - 1) * shift, (adapters + (i - 1) % SHARED_GROUPS) * shift
                    np.add(noise[own : own + size], noise[shared : shared + size], out=tuned)
                    tuned += base
                values = tuned if i else base
                fh.write((_to_bf16(values) if bf16 else values).tobytes())
        for fh in files:
            fh.flush()
            os.fsync(fh.fileno())
    finally:
        for fh in files:
            fh.close()
    return paths


REPORTED = Path("/sys/module/page_reporting/parameters/reported_kib")


def drop_caches(paths: list[Path], system: bool = True) -> str:
    """Drop the files' cached pages (the whole page cache when `system` and permitted); returns how."""
    if system:
        try:
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
            return "echo 3 > /proc/sys/vm/drop_caches"
        except OSError:
            pass
    for path in paths:
        drop_from_page_cache(path)
    return "posix_fadvise(DONTNEED) on every file" + (" (drop_caches not permitted)" if system else "")


def reported_kib() -> int | None:
    """KiB of freed memory this VM has handed back to its host so far (virtio free page
    reporting), or None where the kernel does not report. Reported memory is faulted in again
    by the host on its next use, so a cold read into it is slower: on the 2-core VM a bf16 PCA
    run right after another PCA took 15-21 s against 12-16 s right after a plain read (which
    leaves its freed pages not yet reported), and with reporting switched off plain reads ran
    1.9-2.9 GB/s, not 1.1-1.5. Each PCA here therefore follows a plain read, as its reference does."""
    try:
        return int(REPORTED.read_text())
    except (OSError, ValueError):
        return None


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def write_spec(folder: Path, adapters: int, device: str, budget_mib: int) -> Path:
    spec = folder / "pca_full.toml"
    spec.write_text(f"""[experiment]
name = "pca_full"
seed = 0

[data]
source = "checkpoint"
paths = ["ft-*.safetensors"]
base = "base.safetensors"

[[analysis]]
name = "geometry"
op = "pca"
components = {min(5, adapters - 1)}
scope = "global"
strategy = "dual_gram"

[execution]
cache_dir = "cache"
device = "{device}"
memory_budget = "{budget_mib}MiB"
dtype = "float32"
""")
    return spec


def run_pca(spec: Spec, folder: Path) -> tuple[np.ndarray, dict[str, list[float]]]:
    """The spec's global PCA as `harness run` computes it: (summed Gram, explained variance)."""
    workload = Workload.from_source(build_source(spec.data, spec.experiment.seed, folder))
    layout = AdapterLayout.from_workload(workload)
    strategy = DualGramStrategy()
    backend = strategy.backend(spec.execution.device)
    ctx = ExecContext(dtype=np.dtype(spec.execution.dtype), backend=backend, workers=1, seed=0,
                      executor=SerialExecutor)
    grams = strategy.grams(workload.source, layout, ctx, int(spec.execution.memory_budget))
    analysis = spec.analysis[0]
    assert isinstance(analysis, PcaAnalysis)
    ratios, _ = pca_results("geometry", analysis, layout, grams)
    return grams.sum(axis=0), ratios


def pairwise_check(paths: list[Path], G: np.ndarray, shapes: dict[str, tuple[int, int]]) -> str:
    """Gram entries of the first CHECKED deltas against float64 dots over the same files."""
    base, tuned = SafetensorsFile(paths[0]), [SafetensorsFile(p) for p in paths[1 : 1 + CHECKED]]
    ref = np.zeros((CHECKED, CHECKED))
    for name in shapes:
        below = base.read(name).astype(np.float64)
        deltas = [t.read(name).astype(np.float64) - below for t in tuned]
        for i in range(CHECKED):
            for j in range(i, CHECKED):
                ref[i, j] = ref[j, i] = ref[i, j] + float(np.vdot(deltas[i], deltas[j]))
    norms = np.sqrt(np.diag(ref))
    error = np.abs(G[:CHECKED, :CHECKED] - ref) / np.outer(norms, norms)
    return f"max |G - G_f64| / (|x_i| |x_j|) over {CHECKED} deltas = {error.max():.1e}"


def measure(folder: Path, paths: list[Path], args: argparse.Namespace, label: str) -> np.ndarray:
    """`--repeats` rounds of: cold plain reads of the files (1 and 64 MiB buffers; the faster
    is the round's reference), then the cold PCA, so each share compares a PCA with a read of
    the disk's same minutes (this disk's cold reads varied 0.65-1.55 GB/s between minutes).
    Prints the figures and the median share; returns the last PCA's (n, n) Gram."""
    nbytes = sum(p.stat().st_size for p in paths)
    spec = load_spec(write_spec(folder, args.adapters, args.device, args.budget_mib))
    strategy = DualGramStrategy()
    strategy.warm(strategy.backend(args.device))  # imports, the compiled kernels: not the PCA's
    probe()  # the machine's memory, once per process, as a run has it
    shares = []
    for round_ in range(1, args.repeats + 1):
        reads = {}
        for buffer in (MiB, 64 * MiB):
            how = drop_caches(paths, not args.fadvise)
            before = loadavg()
            reads[buffer] = sum(sequential_read(p, buffer) for p in paths)
            print(f"  [{round_}] plain sequential read of the same {len(paths)} files, {buffer // MiB} MiB buffer, "
                  f"cold ({how}): {reads[buffer]:.1f} s = {nbytes / reads[buffer] / 1e9:.2f} GB/s "
                  f"(load average {before})")
        read_s = min(reads.values())
        drop_caches(paths, not args.fadvise)
        before, base, handed = loadavg(), rss_anon(), reported_kib()
        (G, ratios), wall, anon = peak_anon(lambda: run_pca(spec, folder))
        if handed is not None:
            print(f"  [{round_}] memory this VM handed back to its host during the PCA (free page reporting): "
                  f"{((reported_kib() or handed) - handed) / 2**20:.1f} GiB")
        shares.append(read_s / wall)
        print(f"  [{round_}] global PCA ({label}, dual_gram on {strategy.backend(args.device)}), cold: {wall:.1f} s = "
              f"{nbytes / wall / 1e9:.2f} GB/s of input, {read_s / wall:.0%} of the faster plain read; peak RssAnon "
              f"+{anon / MiB:.0f} MiB ({(base + anon) / MiB:.0f} MiB in all; load average {before} -> {loadavg()})")
        print(f"  [{round_}] {PUBLISHED}; here {15 * 60 / wall:.0f}x faster")
    print(f"  explained variance ratio: {', '.join(f'{r:.3f}' for r in ratios['global'])}")
    print(f"  share of the plain read, median of {len(shares)}: {float(np.median(shares)):.0%} "
          f"({', '.join(f'{s:.0%}' for s in shares)})")
    if args.cli:
        harness_run(folder, paths, args)
    return G


# `python -m harness` that prints its peak RSS (VmHWM) last: getrusage's ru_maxrss of a child
# starts from this process's RSS at the fork, so it reported 1.2 GB for a 1.8 s cached run.
PEAK_REPORTING_HARNESS = """import atexit, sys
from pathlib import Path
status = Path("/proc/self/status")
atexit.register(lambda: print(next(l for l in status.read_text().splitlines() if l.startswith("VmHWM")), file=sys.stderr))
from harness.cli.entry import main
sys.exit(main())"""


def harness_run(folder: Path, paths: list[Path], args: argparse.Namespace) -> None:
    """The same spec through `harness run`, cold, twice: the first run hashes the inputs for
    its fingerprint (a full read) and times dual_gram's positions against float64 references;
    the second finds the digests remembered and the results in the cache folder."""
    command = [sys.executable, "-c", PEAK_REPORTING_HARNESS, "run", str(folder / "pca_full.toml"), "--verbose"]
    for name in ("run", "again"):
        drop_caches(paths, not args.fadvise)
        before = loadavg()
        start = time.perf_counter()
        done = subprocess.run([*command, "-o", str(folder / name)], capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            print(f"  harness run failed ({done.returncode}): {done.stderr.strip()}")
            return
        peak = int(done.stderr.rsplit("VmHWM:", 1)[1].split()[0]) * 1024
        print(f"  `harness run` ({name}), cold: {wall:.1f} s wall, peak RSS {peak / MiB:.0f} MiB "
              f"(load average {before} -> {loadavg()})")
        for line in (done.stderr + done.stdout).splitlines():  # phases on stderr, the summary on stdout
            if line.startswith(("fingerprinting", "geometry:", "benchmark:")):
                print(f"    {line}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--params", type=float, default=352e6, help="parameters of the model")
    p.add_argument("--adapters", type=int, default=18)
    p.add_argument("--dtypes", default="float32,bf16", help="float32, bf16 or both, comma-separated")
    p.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()))
    p.add_argument("--device", default="auto", help="execution.device of the spec: auto, cpu, cuda, numpy")
    p.add_argument("--budget-mib", type=int, default=512, help="execution.memory_budget of the spec")
    p.add_argument("--fadvise", action="store_true", help="drop only these files' pages, never the whole cache")
    p.add_argument("--skip-check", action="store_true", help="skip the float64 pairwise check")
    p.add_argument("--repeats", type=int, default=1, help="rounds of plain reads and PCA, cold each")
    p.add_argument("--cli", action="store_true", help="then run the spec through `harness run`, twice")
    args = p.parse_args(argv)
    h, layers, rows = model_dims(args.params)
    params = layers * 12 * h * h + rows * h
    checked = args.skip_check
    args.folder.mkdir(parents=True, exist_ok=True)
    for dtype in args.dtypes.split(","):
        bf16 = {"float32": False, "bf16": True}[dtype]
        need = (args.adapters + 1) * params * (2 if bf16 else 4)
        free = shutil.disk_usage(args.folder).free
        print(f"{dtype}: {args.adapters} fine-tunes + base of {params / 1e6:.1f}M parameters "
              f"({6 * layers + 1} tensors) = {need / 1e9:.1f} GB; free disk {free / 1e9:.1f} GB in {args.folder}")
        if need + 2**30 > free:
            print(f"  refused: the files need {need / 1e9:.1f} GB and 1 GiB to spare; use a smaller --params")
            return 2
        shapes = model_shapes(h, layers, rows)
        with tempfile.TemporaryDirectory(prefix="pca_full_", dir=args.folder) as tmp:
            folder = Path(tmp)
            start = time.perf_counter()
            paths = write_checkpoints(folder, shapes, args.adapters, bf16)
            print(f"  written and fsynced in {time.perf_counter() - start:.0f} s")
            G = measure(folder, paths, args, dtype)
            if not checked:
                start = time.perf_counter()
                print(f"  check: {pairwise_check(paths, G, shapes)} ({time.perf_counter() - start:.0f} s)")
                checked = True
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
