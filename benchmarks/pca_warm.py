"""The checkpoint PCA from files in the page cache (a user iterating on the same checkpoints),
against a plain read of the same files in the same process: 6 fine-tunes and a base of 8
float32 2048 x 2048 tensors (0.94 GB) through the `checkpoint` source, as `harness run` computes
the Grams (dual_gram). Routes: "pieces" (each core reads cache-sized pieces and multiplies them
in cache, harness.linalg.piece_gram; taken when the files are warm) and "ring" (the cold route:
readers fill 64 MiB blocks that the kernel reads back), forced here for comparison. An asv suite,
and a script that prints the figures with the load average:

    python -m benchmarks.pca_warm [--repeats 7] [--folder /tmp]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.pca_full import loadavg, run_pca, write_checkpoints, write_spec
from harness.data.checkpoint import CheckpointSource
from harness.machine.info import probe
from harness.machine.roofline import sequential_read
from harness.specs.sections import Spec
from harness.specs.reading import load_spec
from harness.strategies.gram import DualGramStrategy

MiB = 2**20
SHAPE = (2048, 2048)
TENSORS = 8
ADAPTERS = 6
ROUNDS = 5  # plain reads and PCAs alternated, for the share's median


def write_set(folder: Path) -> list[Path]:
    """base.safetensors and ADAPTERS fine-tunes of TENSORS float32 tensors of SHAPE."""
    shapes = {f"model.layers.{i}.mlp.up_proj.weight": SHAPE for i in range(TENSORS)}
    return write_checkpoints(folder, shapes, ADAPTERS, bf16=False)


def plain_read(paths: list[Path]) -> float:
    """Seconds to read every file once through a 1 MiB buffer (the faster buffer in page cache)."""
    return sum(sequential_read(path, MiB) for path in paths)


class Routed:
    """The PCA on one route: "ring" hides the pieces from the strategy, as cold files do."""

    def __init__(self, folder: Path, route: str) -> None:
        self.folder, self.route = folder, route
        self.spec: Spec = load_spec(write_spec(folder, ADAPTERS, "auto", 512))

    def __call__(self) -> float:
        """Seconds for the Grams and the PCA."""
        real = CheckpointSource.stored_pieces
        if self.route == "ring":
            CheckpointSource.stored_pieces = lambda self, positions, dtype: None  # type: ignore[method-assign]
        try:
            start = time.perf_counter()
            run_pca(self.spec, self.folder)
            return time.perf_counter() - start
        finally:
            CheckpointSource.stored_pieces = real  # type: ignore[method-assign]


def shares(paths: list[Path], pca: Routed, rounds: int) -> tuple[list[float], list[float]]:
    """`rounds` of a plain read then the PCA, back to back: (read seconds, PCA seconds)."""
    reads, pcas = [], []
    for _ in range(rounds):
        reads.append(plain_read(paths))
        pcas.append(pca())
    return reads, pcas


class WarmCheckpointPCA:
    params = (["pieces", "ring"],)
    param_names = ["route"]
    timeout = 300

    def setup_cache(self) -> str:
        """The files in asv's cache folder (the working directory here), which asv removes after."""
        folder = Path("pca_warm").resolve()
        folder.mkdir(exist_ok=True)
        write_set(folder)
        return str(folder)

    def setup(self, folder: str, route: str) -> None:
        self.paths = sorted(Path(folder).glob("*.safetensors"))
        self.pca = Routed(Path(folder), route)
        strategy = DualGramStrategy()
        strategy.warm(strategy.backend("auto"))
        probe()
        plain_read(self.paths)  # into the page cache
        self.pca()

    def time_grams(self, folder: str, route: str) -> None:
        self.pca()

    def track_share_of_plain_read(self, folder: str, route: str) -> float:
        """Median over ROUNDS of (plain read seconds / PCA seconds): 1.0 is a plain read's speed."""
        reads, pcas = shares(self.paths, self.pca, ROUNDS)
        return statistics.median(r / p for r, p in zip(reads, pcas))

    track_share_of_plain_read.unit = "share"  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7, help="rounds of plain read and PCA per route")
    p.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()))
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pca_warm_", dir=args.folder) as tmp:
        paths = write_set(Path(tmp))
        nbytes = sum(path.stat().st_size for path in paths)
        bench = WarmCheckpointPCA()
        for route in ("pieces", "ring"):
            bench.setup(tmp, route)
            before = loadavg()
            reads, pcas = shares(paths, bench.pca, args.repeats)
            ratios = sorted(r / q for r, q in zip(reads, pcas))
            print(f"{route}: {nbytes / 1e9:.2f} GB warm, {args.repeats} rounds; plain read "
                  f"{nbytes / statistics.median(reads) / 1e9:.1f} GB/s (median), PCA "
                  f"{nbytes / statistics.median(pcas) / 1e9:.1f} GB/s ({statistics.median(pcas) * 1e3:.0f} ms median, "
                  f"{min(pcas) * 1e3:.0f} min); share of the plain read min {ratios[0]:.0%}, median "
                  f"{statistics.median(ratios):.0%}; load average {before} -> {loadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
