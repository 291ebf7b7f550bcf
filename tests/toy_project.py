"""A throwaway project for runner tests: one toy notebook that appends its `x` to `trace.txt`
and records it, a plan file, and MLMLIB_ROOT pointing there."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from mlmlib.runs import plans

BODY = """
from pathlib import Path
from mlmlib.runs import records
Path(trace).open("a").write(f"{x}\\n")
records.save_metrics(run_dir, {"x": x})
"""


def make(root: Path, monkeypatch, plan: str, name: str = "p") -> Path:
    """The toy notebook and plan `name` (its YAML text `plan`) under `root`, used as the project."""
    (root / "notebooks" / "plans").mkdir(parents=True)
    (root / "_config.yml").write_text("title: test\n")
    nb = new_notebook(cells=[new_code_cell(f'x = 0\ntrace = "{root / "trace.txt"}"\nrun_dir = ""',
                                           metadata={"tags": ["parameters"]}), new_code_cell(BODY)])
    nb.metadata["kernelspec"] = {"name": "mlmlib", "display_name": "mlmlib", "language": "python"}
    nbformat.write(nb, root / "notebooks" / "toy.ipynb")
    (root / "notebooks" / "plans" / f"{name}.yaml").write_text(plan)
    monkeypatch.setenv("MLMLIB_ROOT", str(root))
    plans.notebook_parameters.cache_clear()
    return root


def ran(root: Path) -> list[str]:
    """The `x` of every toy run whose notebook ran, in order."""
    trace = root / "trace.txt"
    return trace.read_text().split() if trace.exists() else []
