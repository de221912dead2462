"""Which tensors of a module make which delta: the key suffixes of kohya-ss (LoRA, LoCon),
LyCORIS and PEFT (LoHa `hada_*`, LoKr `lokr_*`, full `diff`) and diffusers (`lora_A`/`lora_B`
and its older `lora.down`, `lora_linear_layer.down`), and the entry each set of them gives.

Every tensor of a file is placed: a module's factors, a vector to list as skipped, or an error
naming the file and key (an unknown suffix, a Tucker core or DoRA, an incomplete set).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from harness.data.deltas import Weights, lokr_entry, loha_entry, lora_entry, unfolded
from harness.data.paths import Entry
from harness.data.workload import DataError

# key suffix -> the role of the tensor in its module
_ROLES = {
    "lora_down.weight": "down", "lora_up.weight": "up",
    "lora_A.weight": "down", "lora_B.weight": "up",
    "lora.down.weight": "down", "lora.up.weight": "up",
    "lora_linear_layer.down.weight": "down", "lora_linear_layer.up.weight": "up",
    "alpha": "alpha", "diff": "diff",
    **{f"hada_w{i}_{p}": f"hada_w{i}_{p}" for i in (1, 2) for p in "ab"},
    **{f"lokr_w{i}{p}": f"lokr_w{i}{p}" for i in (1, 2) for p in ("", "_a", "_b")},
}
_VECTORS = {"diff_b": "a full bias delta", "lora_B.bias": "a LoRA bias", "lora_up.bias": "a LoRA bias"}
_REFUSED = {
    "lora_mid.weight": "a Tucker core (LoCon lora_mid), not supported",
    "hada_t1": "a LoHa Tucker core, not supported", "hada_t2": "a LoHa Tucker core, not supported",
    "lokr_t2": "a LoKr Tucker core, not supported",
    "dora_scale": "DoRA's magnitude; DoRA's delta is not a product of factors",
    "lora_magnitude_vector": "DoRA's magnitude; DoRA's delta is not a product of factors",
}
_KEY = re.compile(
    r"(?P<module>.+?)\.(?P<suffix>" + "|".join(map(re.escape, [*_ROLES, *_VECTORS, *_REFUSED])) + ")"
)
_KINDS: dict[frozenset[str], str] = {
    frozenset({"down", "up"}): "lora",
    frozenset({"hada_w1_a", "hada_w1_b", "hada_w2_a", "hada_w2_b"}): "loha",
    frozenset({"diff"}): "diff",
    **{frozenset({f"lokr_{w}" for w in (*w1, *w2)}): "lokr"
       for w1 in ({"w1"}, {"w1_a", "w1_b"}) for w2 in ({"w2"}, {"w2_a", "w2_b"})},
}
# scale(kind, dim): the delta's scale, given its kind and the rank of its factored part
Scale = Callable[[str, int | None], float]


def module_tensors(
    weights: Weights, skipped: list[str], prefix: str = "", unknown: list[str] | None = None
) -> dict[str, dict[str, str]]:
    """module -> {role: tensor name} (`prefix` stripped from module paths); vectors go to
    `skipped`; a key of no known layout goes to `unknown` when given, else raises."""
    modules: dict[str, dict[str, str]] = {}
    for name in weights.tensors:
        match = _KEY.fullmatch(name.removeprefix(prefix))
        if match is None and unknown is not None:
            unknown.append(name)
            continue
        if match is None:
            raise DataError(
                f"{weights.path}: tensor {name!r} is not a LoRA, LoCon, LoHa, LoKr or diff tensor "
                "of the kohya-ss, PEFT or diffusers layouts"
            )
        module, suffix = match["module"], match["suffix"]
        if suffix in _REFUSED:
            raise DataError(f"{weights.path}: tensor {name!r} is {_REFUSED[suffix]}")
        if suffix in _VECTORS:
            skipped.append(f"{weights.path}: {name} ({_VECTORS[suffix]}: a vector, not a matrix)")
            continue
        roles = modules.setdefault(module, {})
        role = _ROLES[suffix]
        if role in roles:
            raise DataError(f"{weights.path}: tensors {roles[role]!r} and {name!r} are both the {role} of {module!r}")
        roles[role] = name
    return modules


def module_entry(adapter: str, module: str, roles: dict[str, str], weights: Weights, scale: Scale) -> Entry:
    """One module's delta, its kind read from which tensors it has (an `alpha` role aside)."""
    kind = _KINDS.get(frozenset(roles) - {"alpha"})
    if kind is None:
        raise DataError(
            f"{weights.path}: module {module!r} has tensors {sorted(roles.values())}; expected "
            "lora_down + lora_up (or lora_A + lora_B), hada_w1_a/b + hada_w2_a/b, lokr_w1[_a/_b] + "
            "lokr_w2[_a/_b], or diff, each with an optional alpha"
        )
    names = {role.partition("_")[2] if kind in ("loha", "lokr") else role: name
             for role, name in roles.items() if role != "alpha"}
    if kind == "loha":
        return loha_entry(adapter, module, weights, names, lambda dim: scale(kind, dim))
    if kind == "lokr":
        return lokr_entry(adapter, module, weights, names, lambda dim: scale(kind, dim))
    if kind == "diff":
        locator = {"kind": "diff", "file": str(weights.path), "tensor": names["diff"]}
        return Entry(adapter, module, unfolded(weights.info(names["diff"]).shape), locator)
    rank = weights.info(names["down"]).shape[0]
    return lora_entry(adapter, module, weights, names["down"], names["up"], scale(kind, rank))
