"""Notebook templates and plans: no outputs committed, plain-literal parameters, valid plans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlmlib.runs.plans import available_profiles, load_plan, notebook_parameters

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_templates():
    assert TEMPLATES


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_template_committed_without_outputs(path):
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert not cell.get("outputs"), f"{path.name}: a code cell has outputs"
            assert cell.get("execution_count") is None, f"{path.name}: a cell has an execution count"


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_template_is_a_page(path):
    nb = json.loads(path.read_text())
    first = nb["cells"][0]
    assert first["cell_type"] == "markdown" and "".join(first["source"]).startswith("# ")
    params = notebook_parameters(str(path))  # raises unless plain literals
    assert params.get("run_dir") == "", f"{path.name}: needs run_dir = \"\" in its parameters"
    assert "save_metrics(run_dir" in "".join("".join(c["source"]) for c in nb["cells"])


@pytest.mark.parametrize("profile", available_profiles())
def test_every_plan_is_valid(profile):
    plan = load_plan(profile)  # validates notebook names, parameter names and types
    assert plan.runs


def test_every_template_runs_in_smoke_and_test_profiles():
    for profile in ("smoke", "test"):
        used = {r.notebook for r in load_plan(profile).runs}
        assert used == {p.stem for p in TEMPLATES}, f"{profile}: {used ^ {p.stem for p in TEMPLATES}}"
