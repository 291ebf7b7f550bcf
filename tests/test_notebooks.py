"""Notebook templates and plans: no outputs committed, plain-literal parameters, valid plans."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from mlmlib.runs.plans import (
    available_profiles,
    full_params,
    is_summary,
    load_plan,
    notebook_groups,
    notebook_parameters,
)

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_templates():
    assert TEMPLATES


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_template_committed_without_outputs(path):
    nb = json.loads(path.read_text())
    code = [cell for cell in nb["cells"] if cell["cell_type"] == "code"]
    assert code, f"{path.name}: no code cell"
    for cell in code:
        assert not cell.get("outputs"), f"{path.name}: a code cell has outputs"
        assert cell.get("execution_count") is None, f"{path.name}: a cell has an execution count"


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_template_declares_the_project_kernel(path):
    """A template opened in a system JupyterLab starts the project's environment, not python3."""
    spec = json.loads(path.read_text())["metadata"].get("kernelspec", {})
    assert spec.get("name") == "mlmlib", f"{path.name}: kernel {spec.get('name')!r}, not the project's"
    assert spec.get("display_name") == "Python (mlmlib)"  # as `make kernel` installs it


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


@pytest.mark.parametrize("profile", available_profiles())
def test_summaries_wait_for_every_notebook_they_read(profile):
    """A summary with `needs` waits only for those runs (and hashes only their records): every
    notebook its code names must be among them, or it could run before its inputs exist."""
    summaries = [r for r in load_plan(profile).runs if is_summary(r.notebook) and r.needs]
    assert summaries, f"{profile}: no summary run with `needs`"
    for run in summaries:
        nb = json.loads((ROOT / "notebooks" / f"{run.notebook}.ipynb").read_text())
        code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"
                         and "parameters" not in c.get("metadata", {}).get("tags", []))
        named = set(re.findall(r'"([A-C][0-9]_\w+|compute_benchmark|data_overview)"', code))
        # a page's inputs named by a parameter: its value in this run (its default unless set)
        params = full_params(run.notebook, run.params)
        named |= {v for k, v in params.items() if k.endswith("_notebook") and v}
        assert named and named <= set(run.needs), (profile, run.notebook, named, run.needs)


def _base_params(run) -> dict:
    """The base a run builds or loads: its base-model group resolved to every field, or (a
    template not converted to the group) its flat base_* parameters."""
    from mlmlib.base_config import BaseModelConfig
    from mlmlib.runs.plans import full_params, notebook_groups

    params = full_params(run.notebook, run.params)
    groups = notebook_groups(str(ROOT / "notebooks" / f"{run.notebook}.ipynb"))
    for name, group in groups.items():
        if group is BaseModelConfig:
            return params[name]
    return {k: v for k, v in params.items() if k.startswith("base_")}


REHEARSED = [f"{p.stem}-rehearsal" for p in sorted((ROOT / "notebooks" / "plans" / "rehearse").glob("*.yaml"))]


@pytest.mark.parametrize("profile", available_profiles() + REHEARSED)
def test_runs_that_need_the_base_use_the_base_built_before_them(profile):
    """A5, C1 and C2, and B1 with the base's generator, load the base that the base_model run
    built (with other base_* values they would build their own beside it, and runs side by side
    would wait on its cache lock). B1 names the base `base` and takes the head fit's base_*."""
    runs = load_plan(profile).runs
    built = [_base_params(r) for r in runs if r.notebook == "base_model"]
    b1 = "B1_true_negatives_pretrain"
    users = [r for r in runs if r.notebook != "base_model" and (
        (r.notebook == b1 and _b1_start(r)["generator"] == "base")
        or r.notebook in ("A5_real_finetune_perturb", "C1_task_scores", "C2_selective_mlm"))]
    assert built and users
    for run in users:
        if profile == "test" and run.notebook == "A5_real_finetune_perturb":
            continue  # the test plan's A5 trains its own, smaller base (4 steps)
        assert "base_model" in run.needs, (profile, run.notebook)
        if run.notebook == b1:  # B1's start group names the head fit in its own words
            start = _b1_start(run)
            params = {"name": start["base"], "steps": start["base_steps"],
                      "max_sentences": start["base_max_sentences"],
                      "max_length": start["base_max_length"],
                      "tokenizer": full_params(run.notebook, run.params)["corpus"]["tokenizer"]}
            built_here = [{k: b[k] for k in params} for b in built]
        else:
            params, built_here = _base_params(run), built
        assert params in built_here, (profile, run.notebook, params)


def _b1_start(run) -> dict:
    return full_params(run.notebook, run.params)["start"]


def test_a_group_default_is_the_smoke_value():
    """A template opened in JupyterLab runs what its first smoke run runs: the smoke plan sets no
    field of a parameter group to anything but its default (the dataclass is the only source)."""
    first = {}
    for run in load_plan("smoke").runs:
        first.setdefault(run.notebook, run)
    assert set(first) == {p.stem for p in TEMPLATES}, set(first) ^ {p.stem for p in TEMPLATES}
    compared = []
    for name, run in first.items():
        groups = notebook_groups(str(ROOT / "notebooks" / f"{name}.ipynb"))
        resolved = full_params(name, {})
        for group in groups:
            if group in run.grid_keys:
                continue
            compared.append((name, group))
            differ = {k: (resolved[group][k], v) for k, v in run.params.get(group, {}).items()
                      if resolved[group][k] != v}
            assert not differ, f"{name}: {group} (default, smoke) {differ}"
        # plain parameters too; a summary's `profile` defaults to the records that ship (cpu)
        flat = {k: (resolved.get(k), v) for k, v in run.params.items()
                if k not in groups and k not in run.grid_keys and k != "profile"
                and resolved.get(k) != v}
        assert not flat, f"{name}: (default, smoke) {flat}"
    assert compared, "no parameter group was compared with its smoke value"


@pytest.mark.parametrize("path", [p for p in TEMPLATES if "profile" in notebook_parameters(str(p))],
                         ids=lambda p: p.stem)
def test_a_page_reading_records_defaults_to_records_that_ship(path):
    """Run top to bottom in JupyterLab from a fresh clone, a page that reads a profile's records
    finds them: its default `profile` is one whose records are committed with the book."""
    profile = notebook_parameters(str(path))["profile"]
    shipped = ROOT / "book" / "runs" / profile
    assert any(shipped.rglob("*.json")), f"{path.name}: profile = {profile!r}, but no records ship in {shipped}"


def test_every_template_runs_in_smoke_and_test_profiles():
    for profile in ("smoke", "test"):
        used = {r.notebook for r in load_plan(profile).runs}
        assert used == {p.stem for p in TEMPLATES}, f"{profile}: {used ^ {p.stem for p in TEMPLATES}}"


# ---------------------------------------------------------------- how a page reads

SUMMARIES = ("A4_synthetic_summary", "A6_real_summary", "B3_true_negatives_summary", "C3_selective_summary")
MAX_LINE = 100  # no horizontal scroll bar in a code cell at 1400 px


def _cells(path, kind=None):
    cells = json.loads(path.read_text())["cells"]
    return [c for c in cells if kind is None or c["cell_type"] == kind]


def _tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def _save_cell(path):
    saves = [c for c in _cells(path, "code") if "save_metrics(run_dir" in "".join(c["source"])]
    assert len(saves) == 1, f"{path.name}: {len(saves)} save_metrics cells"
    return saves[0]


def _saved_keys(path) -> set[str]:
    """The literal keys of the dict the save cell hands to save_metrics."""
    tree = ast.parse("".join(_save_cell(path)["source"]))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "save_metrics"]
    assert len(calls) == 1 and isinstance(calls[0].args[1], ast.Dict), path.name
    return {k.value for k in calls[0].args[1].keys if isinstance(k, ast.Constant)}


def test_summaries_are_the_summary_templates():
    assert set(SUMMARIES) <= {p.stem for p in TEMPLATES}


@pytest.mark.parametrize("name", SUMMARIES)
def test_summary_saves_a_scorecard(name):
    keys = _saved_keys(ROOT / "notebooks" / f"{name}.ipynb")
    assert "scorecard" in keys, f"{name}: its save_metrics call writes no 'scorecard'"
    assert "claims" in keys, f"{name}: the claim table is still saved"


@pytest.mark.parametrize("name", SUMMARIES)
def test_summary_shows_its_scorecard_first(name):
    """After the parameters, the first cell a reader sees output from draws the scorecard table."""
    path = ROOT / "notebooks" / f"{name}.ipynb"
    code = _cells(path, "code")
    start = next(i for i, c in enumerate(code) if "parameters" in _tags(c)) + 1
    shown = [c for c in code[start:] if "remove-cell" not in _tags(c)]
    first = "".join(shown[0]["source"])
    assert "claims.scorecard_table(scorecard)" in first, f"{name}: the first visible output is not the scorecard"
    assert "hide(axis=\"index\")" in first, f"{name}: the scorecard table shows a bare 0..n index"
    assert "plt." in "".join(shown[1]["source"]), f"{name}: the main figure does not follow the scorecard"


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_save_cell_is_the_last_and_removed(path):
    save = _save_cell(path)
    assert _cells(path, "code")[-1] == save, f"{path.name}: save_metrics is not the last code cell"
    assert "remove-cell" in _tags(save), f"{path.name}: the save_metrics cell is not tagged remove-cell"


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_import_cells_are_removed(path):
    """A cell of imports only prints nothing a reader needs: it is tagged remove-cell."""
    cells = _cells(path, "code")
    assert cells, f"{path.name}: no code cell"
    for cell in cells:
        body = ast.parse("".join(cell["source"])).body
        if body and all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in body):
            assert "remove-cell" in _tags(cell), f"{path.name}: an imports-only cell is shown"


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_code_lines_fit_the_page(path):
    """Every code line, folded or not (a folded input shows when expanded), fits in MAX_LINE characters."""
    long = [line for c in _cells(path, "code") for line in "".join(c["source"]).splitlines()
            if len(line) > MAX_LINE]
    assert not long, f"{path.name}: {len(long)} code lines over {MAX_LINE} characters, e.g. {long[0]!r}"


MAX_CODE_LINES = 60  # outside the parameters cell: a page calls into mlmlib, the logic lives there


def _code_lines(path) -> int:
    """Lines of code (not blank, not only a comment) in the code cells other than the parameters cell."""
    return sum(1 for c in _cells(path, "code") if "parameters" not in _tags(c)
               for line in "".join(c["source"]).splitlines()
               if line.strip() and not line.strip().startswith("#"))


def test_code_line_count_skips_parameters_blanks_and_comments(tmp_path):
    page = tmp_path / "page.ipynb"
    page.write_text(json.dumps({"cells": [
        {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": ["a = 1\n", "b = 2\n"]},
        {"cell_type": "markdown", "metadata": {}, "source": ["x = 1\n"]},
        {"cell_type": "code", "metadata": {}, "source": ["f(a)\n", "\n", "  # why\n", "g(b)  # how\n"]}]}))
    assert _code_lines(page) == 2


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_a_page_has_few_code_lines_outside_its_parameters(path):
    assert _code_lines(path) <= MAX_CODE_LINES, \
        f"{path.name}: {_code_lines(path)} code lines outside its parameters cell; move logic to mlmlib"


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_first_cell_says_how_to_run_it(path):
    intro = "".join(_cells(path)[0]["source"]).rstrip().splitlines()[-1]
    assert "Run it top to bottom here" in intro, f"{path.name}: no line on how to run it"
    assert f"python -m mlmlib run --profile smoke --only {path.stem}`" in intro, path.name


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_only_known_cell_tags(path):
    known = {"parameters", "remove-cell", "hide-input", "remove-input", "hide-output", "hide-cell"}
    for cell in _cells(path):
        assert set(_tags(cell)) <= known, f"{path.name}: unknown tags {set(_tags(cell)) - known}"
    params = [c for c in _cells(path, "code") if "parameters" in _tags(c)]
    assert len(params) == 1 and not set(_tags(params[0])) & {"remove-cell", "hide-input"}, \
        f"{path.name}: the parameters cell must stay visible"
