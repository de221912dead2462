import json
from pathlib import Path

import pytest

from harness.specs.reading import SpecError, load_spec
from tests.conftest import CONFIGS

GOOD = """
[experiment]
name = "t"

[data]
source = "synthetic"

[[analysis]]
op = "svd_topk"
k = 2
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return path


def problems(tmp_path: Path, text: str, overrides: list[str] | None = None) -> list[str]:
    """The spec's problem lines without the file they name (an override's name the override)."""
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_spec(path, overrides)
    assert all(line.startswith((f"{path}: ", "--set '")) for line in info.value.lines)
    return [line.removeprefix(f"{path}: ") for line in info.value.lines]


@pytest.mark.parametrize("name", ["smoke.toml", "task_geometry.toml"])
def test_shipped_configs_are_valid(name: str) -> None:
    load_spec(CONFIGS / name)


def test_defaults(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, GOOD))
    assert spec.analysis[0].strategy == "auto" and spec.analysis[0].label == "svd_topk"
    assert int(spec.execution.memory_budget) == 4 * 2**30


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    text = GOOD.replace('name = "t"', 'name = "t"\nsede = 3') + """
[[analysis]]
op = "svdvals"
strategy = "nmupy"
compare = ["torch", "scipy_svds"]

[[analysis]]
op = "svd_topk"

[execution]
device = "tpu"
memory_budget = "lots"
"""
    lines = problems(tmp_path, text)
    assert "experiment.sede: unknown key; did you mean 'seed'?" in lines
    assert any(line.startswith("analysis[1].strategy: unknown strategy 'nmupy'; did you mean 'numpy'?") for line in lines)
    assert any(line.startswith("analysis[1].compare: strategy 'scipy_svds' does not do svdvals") for line in lines)
    assert "analysis[2].k: required key is missing" in lines
    assert any(line.startswith("execution.device: ") for line in lines)
    # pydantic's "could not parse value and unit from byte string" gave no example of a size
    assert "execution.memory_budget: should be a size such as 256MiB or 2GB, got 'lots'" in lines
    assert len(lines) == 6


def test_unknown_key_in_tagged_sections_suggests(tmp_path: Path) -> None:
    text = GOOD.replace('source = "synthetic"', 'source = "synthetic"\nadapter = 3').replace(
        "k = 2", "k = 2\ntolerence = 1e-3"
    )
    lines = problems(tmp_path, text)
    assert "data.adapter: unknown key; did you mean 'adapters'?" in lines
    assert "analysis[0].tolerence: unknown key; did you mean 'tolerance'?" in lines


def test_unknown_op_and_source(tmp_path: Path) -> None:
    text = GOOD.replace('"synthetic"', '"hub"').replace('"svd_topk"', '"eig"')
    lines = problems(tmp_path, text)
    assert any(line.startswith("data.source: unknown value 'hub'; expected one of") for line in lines)
    assert any(line.startswith("analysis[0].op: unknown value 'eig'; expected one of 'svdvals'") for line in lines)


def test_missing_op(tmp_path: Path) -> None:
    assert "analysis[0]: required key 'op' is missing" in problems(tmp_path, GOOD.replace('op = "svd_topk"', ""))


def test_malformed_toml_gives_line_and_column(tmp_path: Path) -> None:
    (line,) = problems(tmp_path, GOOD.replace("k = 2", "k = = 2"))
    assert line.startswith("invalid TOML") and "(at line 10, column 5)" in line


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="file not found"):
        load_spec(tmp_path / "nope.toml")


def test_duplicate_analysis_names(tmp_path: Path) -> None:
    lines = problems(tmp_path, GOOD + '\n[[analysis]]\nop = "svd_topk"\nk = 1\n')
    assert any("two analyses are named 'svd_topk'" in line for line in lines)


def test_overrides_parse_values_as_toml(tmp_path: Path) -> None:
    spec = load_spec(
        write(tmp_path, GOOD),
        ["data.adapters=5", "analysis.0.k=3", "execution.memory_budget=1GiB", "data.modules={w=[4,3]}"],
    )
    assert spec.data.adapters == 5 and spec.analysis[0].k == 3
    assert int(spec.execution.memory_budget) == 2**30
    assert spec.data.modules == {"w": (4, 3)}


def test_bad_overrides(tmp_path: Path) -> None:
    lines = problems(tmp_path, GOOD, ["nonsense", "analysis.7.k=1", "data.adapters=0"])
    assert lines[0] == "--set 'nonsense': expected dotted.key=value"
    assert lines[1].startswith("--set 'analysis.7.k=1'")


def test_override_error_is_validated(tmp_path: Path) -> None:
    lines = problems(tmp_path, GOOD, ["data.adapters=0"])
    assert lines == ["--set 'data.adapters=0': data.adapters: should be >= 1, got 0"]  # pydantic's words


def test_a_problem_an_override_made_names_the_override_not_the_file(tmp_path: Path) -> None:
    """`--set nonsense.key=1` was said as `spec.toml: nonsense: unknown key`: the file has no such key.
    A key an override only reaches into (the file's own table) stays the file's."""
    path = write(tmp_path, GOOD.replace("[data]", "[benchmark]\nsample = -1\n\n[data]"))
    with pytest.raises(SpecError) as info:
        load_spec(path, ["nonsense.key=1", "benchmark.threads=1", "analysis[0].tolerence=0.1"])
    assert info.value.lines == [f"{path}: benchmark.sample: should be >= 0, got -1",
                                "--set 'analysis[0].tolerence=0.1': analysis[0].tolerence: unknown key; "
                                "did you mean 'tolerance'?",
                                "--set 'nonsense.key=1': nonsense: unknown key"]


def test_problems_are_in_the_files_order_in_the_harness_words(tmp_path: Path) -> None:
    """pydantic's `Input should be greater than or equal to 0` sat beside `unknown key`, in its
    models' field order, not the file's."""
    text = GOOD.replace("[data]", '[benchmark]\nsample = -1\n\n[data]').replace("k = 2", "k = 2\ntolerance = 2")
    lines = problems(tmp_path, text + '[execution]\ndtype = "float31"\n')
    assert lines == ["benchmark.sample: should be >= 0, got -1", "analysis[0].tolerance: should be <= 1, got 2",
                     "execution.dtype: should be 'float32' or 'float64', got 'float31'"]


def test_schema_is_json_schema() -> None:
    from harness.specs.sections import Spec

    schema = json.loads(json.dumps(Spec.model_json_schema()))
    assert {"experiment", "data", "analysis"} <= set(schema["properties"])


def test_benchmark_budget_is_a_duration() -> None:
    spec = load_spec(CONFIGS / "smoke.toml", ["benchmark.budget='1.5m'"])
    assert spec.benchmark.budget == 90.0
    assert load_spec(CONFIGS / "smoke.toml", ["benchmark.budget=20"]).benchmark.budget == 20.0
    with pytest.raises(SpecError) as exc:
        load_spec(CONFIGS / "smoke.toml", ["benchmark.budget='soon'"])
    assert exc.value.lines == ["--set \"benchmark.budget='soon'\": benchmark.budget: 'soon' is not a duration; "
                               'expected e.g. "20s", "500ms", "2m"']


def test_overrides_take_the_index_notation_errors_print(tmp_path: Path) -> None:
    """An error names `analysis[0].k`; the same key must work as --set, as `analysis.0.k` does."""
    spec = load_spec(write(tmp_path, GOOD), ["analysis[0].k=3"])
    assert spec.analysis[0].k == 3


def test_an_index_past_the_analyses_says_how_many_there_are(tmp_path: Path) -> None:
    """`analysis[9].k` was refused as `does not name a settable key`, with no word of the count."""
    lines = problems(tmp_path, GOOD + '\n[[analysis]]\nname = "two"\nop = "svd_topk"\nk = 1\n', ["analysis[9].k=3"])
    assert lines == ["--set 'analysis[9].k=3': analysis[9]: the spec has 2 analyses (analysis[0]-analysis[1])"]
    assert problems(tmp_path, GOOD, ["analysis[1].k=3"]) == [
        "--set 'analysis[1].k=3': analysis[1]: the spec has 1 analysis (analysis[0])"]


def test_schema_types_budget_as_a_duration() -> None:
    """`budget = "20s"` is documented: the published schema must accept it (and a number), as
    jsonschema reads it: one of its alternatives a string whose pattern takes "20s", not "soon"."""
    import re

    from harness.specs.sections import Spec

    schema = Spec.model_json_schema()
    budget = schema["$defs"]["Benchmark"]["properties"]["budget"]
    kinds = {alternative["type"]: alternative for alternative in budget["anyOf"]}
    assert {"number", "string"} <= set(kinds)
    pattern = kinds["string"]["pattern"]
    assert all(re.search(pattern, text) for text in ("20s", "1.5m", "500ms"))
    assert not re.search(pattern, "soon")


def test_the_target_is_a_share_the_schema_and_the_spec_agree_on() -> None:
    """`target = "10%"` (or 0.1; `precision`, its old name, reads the same): the default, the
    parse, the refusals, and the schema's pattern."""
    import re

    from harness.specs.sections import Spec

    precision = Spec.model_json_schema()["$defs"]["Benchmark"]["properties"]["target"]
    kinds = {alternative["type"]: alternative for alternative in precision["anyOf"]}
    assert all(re.search(kinds["string"]["pattern"], text) for text in ("10%", "2.5 %", "0.1"))
    assert not re.search(kinds["string"]["pattern"], "tight")
    from harness.base.units import parse_share

    assert parse_share("10%") == pytest.approx(0.10) and parse_share(0.25) == 0.25
    for bad in ("0%", "150%", "tight", -0.1):
        with pytest.raises(ValueError):
            parse_share(bad)
    from harness.specs.sections import Benchmark

    assert Benchmark.model_validate({"precision": "25%"}).target == Benchmark.model_validate({"target": 0.25}).target


def test_a_lora_rank_above_its_layers_is_refused_with_the_specs_other_problems(tmp_path: Path) -> None:
    """rank 1000 of 3072x768 layers was accepted: a B @ A delta has rank min(m, n, r) at most."""
    text = GOOD.replace('source = "synthetic"', 'source = "synthetic"\nrank = 1000\nmodules = { up = [3072, 768], '
                        'down = [768, 3072], q = [1024, 1024] }') + '\n[execution]\ndevice = "tpu"\n'
    lines = problems(tmp_path, text)
    assert "data.rank: 1000 exceeds min(m, n) = 768 of the 3072x768 layers (up)" in lines
    assert any(line.startswith("execution.device: ") for line in lines) and len(lines) == 2
    load_spec(write(tmp_path, GOOD.replace('source = "synthetic"', 'source = "synthetic"\nform = "dense"\nrank = 1000')))
    load_spec(write(tmp_path, GOOD.replace('source = "synthetic"', 'source = "synthetic"\nrank = 64')))  # 64x256 layers


def test_two_bad_compared_strategies_list_the_ones_that_fit_once(tmp_path: Path) -> None:
    """Walk-through 5: `strategy 'numpy' does not do svd_topk; svd_topk strategies: cupy, ...;
    unknown strategy 'nonesuch'; svd_topk strategies: cupy, ...`, the list twice in one line."""
    (line,) = [p for p in problems(tmp_path, GOOD, ['analysis.0.compare=["nonesuch", "numpy"]']) if ".compare:" in p]
    assert line.count("svd_topk strategies:") == 1 and "'nonesuch'" in line and "'numpy' does not do" in line


def test_a_misspelt_strategy_is_matched_among_the_ops_own() -> None:
    """Walk-through 6: 'numpyy' for svd_topk got "did you mean 'numpy'?", a strategy svd_topk lacks."""
    from harness.strategies.registry import check_strategy_name

    said = check_strategy_name("numpyy", "svd_topk")
    assert said is not None and "did you mean 'numpy'" not in said and "svd_topk strategies:" in said
    assert "did you mean 'torch'?" in str(check_strategy_name("tortch", "svd_topk"))


def test_a_key_of_another_section_is_named_where_it_lives(tmp_path: Path) -> None:
    """Walk 24: `execution.threads: unknown key`, and nothing more; the key is benchmark's."""
    lines = problems(tmp_path, GOOD + "\n[execution]\nthreads = 2\n")
    assert "execution.threads: unknown key; did you mean 'benchmark.threads'?" in lines
