"""op pca end to end: planner choices and reasons, and `harness run` writing pca.npz."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.cli.main import main
from harness.data.synthetic import SyntheticSource
from harness.data.workload import Workload
from harness.machine.info import probe
from harness.plan.model import PlanError
from harness.plan.compiler import compile_plan
from harness.record.run_record import load_record
from harness.specs.sections import Spec

SPEC = """
[experiment]
name = "pca_test"
[data]
source = "synthetic"
form = "{form}"
adapters = 4
layers = 2
rank = 3
[data.modules]
up = [12, 8]
down = [8, 12]
[[analysis]]
name = "geo"
op = "pca"
components = {components}
scope = "{scope}"
compare = ["dual_gram", "factored_gram"]
[benchmark]
warmup = 0
repeats = 1
sample = 2
"""


def write(tmp_path: Path, form: str = "lora", components: int = 2, scope: str = "global") -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(SPEC.format(form=form, components=components, scope=scope))
    return path


def plan_for(spec_text: str):  # type: ignore[no-untyped-def]
    import tomllib

    spec = Spec.model_validate(tomllib.loads(spec_text))
    workload = Workload.from_source(SyntheticSource(spec.data, spec.experiment.seed))  # type: ignore[arg-type]
    return compile_plan(spec, workload, probe())


def test_planner_picks_factored_gram_for_lora_and_dual_gram_for_dense() -> None:
    step = plan_for(SPEC.format(form="lora", components=2, scope="global")).steps[0]
    assert step.strategy == "factored_gram"
    assert "LoRA factors: factored_gram" in step.reason and "dual_gram est." in step.reason
    assert [t.strategy for t in step.timed] == ["gram_pairwise", "dual_gram", "factored_gram"]
    step = plan_for(SPEC.format(form="dense", components=2, scope="global")).steps[0]
    assert step.strategy == "dual_gram"
    assert "dense deltas: dual_gram streams" in step.reason
    assert [c.strategy for c in step.skipped] == ["factored_gram"]
    assert step.batch_sizes["columns"] >= 1


def test_components_over_adapters_is_a_plan_error() -> None:
    with pytest.raises(PlanError, match=r"analysis\[0\].components: 9 exceeds the 3 a PCA of 4 adapters has"):
        plan_for(SPEC.format(form="lora", components=9, scope="global"))


@pytest.mark.usefixtures("quiet_machine")  # every compared point timed, however busy the machine
@pytest.mark.parametrize("scope", ["global", "per_layer"])
def test_harness_run_writes_pca_npz(tmp_path: Path, scope: str) -> None:
    out = tmp_path / "run"
    assert main(["run", str(write(tmp_path, scope=scope)), "-o", str(out)]) == 0
    record = load_record(out)
    (analysis,) = record.analyses
    assert analysis.op == "pca" and analysis.passed
    assert {t.strategy for t in analysis.timings} == {"gram_pairwise", "dual_gram", "factored_gram"}
    assert all(v.values_error < 1e-6 for v in analysis.verification)
    with np.load(out / "pca.npz", allow_pickle=False) as z:
        prefix = "geo" if scope == "global" else "geo:layer1/down"
        assert z[f"{prefix}:scores"].shape == (4, 2)
        assert z[f"{prefix}:cosine"].shape == (4, 4)
        np.testing.assert_allclose(np.diag(z[f"{prefix}:cosine"]), 1.0)
        assert list(z[f"{prefix}:adapters"]) == [f"adapter{i}" for i in range(4)]
        ratio = z[f"{prefix}:explained_variance_ratio"]
        assert analysis.explained_variance_ratio is not None
        key = "global" if scope == "global" else "layer1/down"
        np.testing.assert_allclose(analysis.explained_variance_ratio[key], ratio)
        assert len([k for k in z.files if k.endswith(":scores")]) == (1 if scope == "global" else 4)
