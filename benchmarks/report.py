"""How long `harness report` takes for the main job, the whole command as a user waits for it
(interpreter start and imports included): issue 41 asks for under 1.5 s; it took 9.6 s while nine
feature heatmaps and a frontier per analysis were matplotlib figures drawn twice each.

The run folder (record, spectra, features, PCA) is the README's small run of the main job,
configs/task_geometry.toml at 4 adapters, made once by setup_cache."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from harness.api import run

SPEC = Path(__file__).resolve().parents[1] / "configs" / "task_geometry.toml"


class Report:
    timeout = 600
    number = 1
    repeat = (3, 10, 60.0)

    def setup_cache(self) -> str:
        folder = Path(tempfile.mkdtemp(prefix="harness-report-bench-")) / "run"
        run(SPEC, folder, quiet=True, budget="0s", no_cache=True, data__adapters=4,
            **{"analysis[2].components": 3})
        return str(folder)

    def time_harness_report(self, folder: str) -> None:
        out = Path(folder).parent / "report.html"
        subprocess.run([sys.executable, "-m", "harness", "report", folder, "-o", str(out)], check=True,
                       capture_output=True)
