"""Names in charts come from files (adapters, modules, strategies of a record): drawn as typed,
never parsed as mathtext, where `$\\fakecmd{x}$` crashed matplotlib's label parser (issue 50)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.report.charts import decay_chart, pca_scatter

HOSTILE = ["$\\fakecmd{x}$", "a$b$c", "$x^{", "100$"]


@pytest.mark.parametrize("name", HOSTILE)
def test_an_adapter_name_is_drawn_as_typed(name: str) -> None:
    svg = pca_scatter(np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]]), [name, "b", "c"], np.array([0.6, 0.4]), name)
    assert name.replace("&", "&amp;").replace("<", "&lt;") in svg


@pytest.mark.parametrize("name", HOSTILE)
def test_a_module_name_is_drawn_as_typed(name: str) -> None:
    s = np.array([1.0, 0.5, 0.1])
    svg = decay_chart({name: (s, s * 0.9, s * 1.1)}, f"decay of {name}")
    assert name in svg
