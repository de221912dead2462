"""The fitted cost exponents of three sweeps over synthetic inputs of known cost (issue 49's table),
each a `harness run` of a spec with a `[sweep]`: dense numpy svdvals of n x n matrices (LAPACK's
O(n^3)); factored svdvals of rank-16 LoRA deltas of m x m, m = 1024..8192 (O((m + n) r^2) = O(m)
at a fixed rank; 32 deltas a call, factored its own baseline: numpy's SVD of one 8192 x 8192 took
80 s); and dual_gram's Gram over the adapters (O(adapters^2 d) once the Gram outweighs forming
the deltas: 256 x 256 modules at rank 2, 128..1024 adapters; over 32..256 adapters of 512 x 512
the fit read 1.38, the Gram kernel still gaining speed with more rows). Factored's time is
a + b m: its r x r eigensolves (~0.025 ms a delta at r = 16, whatever m) are about half of it at
m = 1024, so its exponent over this range is below 1 (0.81-0.83, the cost model's 0.77-0.85).
Run it on an idle machine:

    python -m benchmarks.sweep_exponents [--quick] [--output results/sweep_exponents]

`--quick` sweeps tiny sizes in seconds, to check the script, not the exponents. Not an asv suite:
it defines no time_ or track_ function, and does nothing when imported."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

HEAD = """[experiment]
name = "{name}"
[execution]
device = "cpu"
memory_budget = "4GiB"
[benchmark]
warmup = 1
sample = {sample}
budget = "{budget}"
"""
# matrices a call: factored's call on 2 deltas spent ~0.05 ms a delta outside the Grams (numpy's
# per-call work, the r x r eigensolves), as much as the Grams themselves at m = 1024, and the fit
# read m^0.62; on 32 a call that part is a few microseconds a delta
SAMPLE = {"dense_numpy": 2, "factored_rows": 32, "dual_gram_adapters": 2}

# name: (the spec's [data], [[analysis]] and [sweep], the strategy whose exponent is checked, expected range)
SWEEPS: dict[str, tuple[str, str, tuple[float, float]]] = {
    "dense_numpy": ("""[data]
source = "synthetic"
form = "dense"
adapters = 2
layers = 1
modules = {{ w = [64, 64] }}
[[analysis]]
op = "svdvals"
strategy = "numpy"
compare = ["numpy"]
[sweep]
data.modules.w = {sizes}
""", "numpy", (2.5, 3.2)),
    "factored_rows": ("""[data]
source = "synthetic"
form = "lora"
adapters = 8
layers = 4
rank = 16
modules = {{ w = [64, 64] }}
[[analysis]]
op = "svdvals"
strategy = "factored"
baseline = "factored"
compare = ["factored"]
[sweep]
data.modules.w = {sizes}
""", "factored", (0.7, 1.3)),
    "dual_gram_adapters": ("""[data]
source = "synthetic"
form = "lora"
layers = 1
rank = 2
modules = {{ w = [256, 256] }}
[[analysis]]
op = "pca"
components = 2
strategy = "dual_gram"
baseline = "dual_gram"
compare = ["dual_gram"]
[sweep]
data.adapters = {sizes}
""", "dual_gram", (1.7, 2.3)),
}

FULL = {"dense_numpy": [[n, n] for n in (256, 384, 512, 768, 1024)],
        "factored_rows": [[m, m] for m in (1024, 2048, 4096, 8192)],
        "dual_gram_adapters": [128, 256, 512, 1024]}
QUICK = {"dense_numpy": [[n, n] for n in (32, 48, 64)],
         "factored_rows": [[m, m] for m in (64, 128, 256)],
         "dual_gram_adapters": [4, 6, 8]}


def spec_text(name: str, sizes: list[object], budget: str) -> str:
    body, _, _ = SWEEPS[name]
    return HEAD.format(name=name, budget=budget, sample=SAMPLE[name]) + body.format(sizes=sizes)


def run_sweep(name: str, sizes: list[object], folder: Path, budget: str) -> str:
    """One sweep run through the CLI; its fit of the checked strategy as a table row."""
    from harness.cli import main as cli
    from harness.record.sweep_classes import class_text
    from harness.record.sweep_record import load_sweep

    folder.mkdir(parents=True, exist_ok=True)
    spec = folder / f"{name}.toml"
    spec.write_text(spec_text(name, sizes, budget))
    out = folder / name
    if cli.main(["run", str(spec), "-o", str(out)]) != 0:
        return f"| {name} | - | run failed (see above) | | | |"
    _, strategy, (low, high) = SWEEPS[name]
    fit = next((f for f in load_sweep(out).fits if f.strategy == strategy), None)
    if fit is None:
        return f"| {name} | {strategy} | not fitted (timed at fewer than two points) | | | |"
    p = fit.power
    within = "yes" if low <= p.exponent <= high else "NO"
    model = f"{fit.model.exponent:.2f}" if fit.model else "-"
    return (f"| {name} | {strategy} | {p.exponent:.2f} ({p.low:.2f} to {p.high:.2f}) | {low}-{high} {within} | "
            f"{model} | {class_text(fit)} |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="*", choices=[[], *SWEEPS], help="which sweeps (default: all three)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks the script in seconds")
    parser.add_argument("--output", default="results/sweep_exponents", help="folder of the specs and sweeps")
    parser.add_argument("--budget", default=None, help='each sweep\'s benchmark budget (default "12s"; quick "0.3s")')
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    budget = args.budget or ("0.3s" if args.quick else "12s")
    folder = Path(args.output)
    if folder.exists() and any(folder.iterdir()):
        print(f"{folder}: exists and is not empty; choose another with --output", file=sys.stderr)
        return 2
    rows = [run_sweep(name, sizes[name], folder, budget) for name in (args.sweeps or SWEEPS)]
    print("| sweep | strategy | fitted exponent (95%) | expected | cost model | class |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
