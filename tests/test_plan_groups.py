"""Parameter groups in plans: a plan's overrides of a group are checked against its dataclass
before anything runs, grids and rehearsal sizes reach inside groups, and records carry every field."""

from __future__ import annotations

import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from mlmlib import configs
from mlmlib.runs import plans, runner
from mlmlib.runs.plans import PlanError, load_plan, planned_params

GROUP_MODULE = '''
import dataclasses


@dataclasses.dataclass(frozen=True)
class Setup:
    steps: int = 10
    lr: float = 0.001
    corpus: str = "embedded-english"
    widths: tuple[int, ...] = (8, 16)

    def __post_init__(self):
        if self.steps <= 0:
            raise ValueError(f"steps must be positive, got {self.steps}")
'''

BODY = """
from mlmlib import configs
from mlmlib.runs import records as results
from plangroups_probe.config import Setup
built = configs.build(Setup, setup, "setup")
results.save_metrics(run_dir, {"steps": built.steps, "seed": seed})
"""


def _notebook(path, groups: dict[str, str]) -> None:
    params = new_code_cell('setup = {}  # overrides of Setup\nseed = 0\nrun_dir = ""',
                           metadata={"tags": ["parameters"], configs.METADATA_KEY: groups})
    nb = new_notebook(cells=[new_markdown_cell("# Groups"), params, new_code_cell(BODY)])
    nb.metadata["kernelspec"] = {"name": "mlmlib", "display_name": "mlmlib", "language": "python"}
    nbformat.write(nb, path)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A throwaway project with one notebook whose `setup` parameter is a group (a tmp package's
    dataclass), and a writer of plan files."""
    package = tmp_path / "lib" / "plangroups_probe"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "config.py").write_text(GROUP_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "lib"))  # the kernel imports it too
    (tmp_path / "notebooks" / "plans" / "rehearse").mkdir(parents=True)
    (tmp_path / "_config.yml").write_text("title: test\n")
    _notebook(tmp_path / "notebooks" / "toy.ipynb", {"setup": "plangroups_probe.config:Setup"})
    monkeypatch.setenv("MLMLIB_ROOT", str(tmp_path))
    plans.notebook_parameters.cache_clear()
    plans.notebook_groups.cache_clear()
    yield tmp_path
    plans.notebook_parameters.cache_clear()
    plans.notebook_groups.cache_clear()


def _plan(root, text: str, name: str = "p") -> None:
    (root / "notebooks" / "plans" / f"{name}.yaml").write_text(text)


@pytest.mark.parametrize("entry, message", [
    ("params: {setup: {stepz: 3}}", r"p.yaml: notebooks\[0\] \(toy\): params.setup: unknown field 'stepz' of Setup"),
    ("params: {setup: {steps: 1.5}}", r"notebooks\[0\] \(toy\): params.setup.steps = 1.5 is a float; Setup.steps is int"),
    ("params: {setup: {corpus: 3}}", r"params.setup.corpus = 3 is a int; Setup.corpus is str"),
    ("params: {setup: {widths: [8, x]}}", r"params.setup.widths = \[8, 'x'\]"),
    ("params: {setup: 3}", r"params.setup: expected a mapping of Setup's fields"),
    ("params: {setup: {steps: 0}}", r"params.setup: steps must be positive, got 0"),
    ("grid: {setup: [{steps: 2}, {stepz: 3}]}", r"grid.setup: unknown field 'stepz' of Setup"),
])
def test_a_bad_group_override_names_the_plan_entry_parameter_and_field(project, entry, message):
    _plan(project, f"notebooks:\n  - notebook: toy\n    {entry}\n")
    with pytest.raises(PlanError, match=message):
        load_plan("p")


def test_a_grid_of_a_group_expands_and_records_resolve_every_field(project):
    _plan(project, "notebooks:\n  - notebook: toy\n    grid: {setup: [{steps: 2}, {steps: 3, lr: 1}]}\n")
    plan = load_plan("p")
    assert [r.params["setup"] for r in plan.runs] == [{"steps": 2}, {"steps": 3, "lr": 1}]
    assert len({r.slug for r in plan.runs}) == 2
    full = runner._full_params(plan.runs[1])
    assert full == {"setup": {"steps": 3, "lr": 1, "corpus": "embedded-english", "widths": [8, 16]},
                    "seed": 0}
    assert [p["setup"]["steps"] for p in planned_params("p", "toy")] == [2, 3]
    assert planned_params("p", "toy")[0]["setup"]["lr"] == 0.001


def test_a_group_left_out_of_the_plan_resolves_to_the_smoke_defaults(project):
    _plan(project, "notebooks:\n  - notebook: toy\n    params: {seed: 4}\n")
    assert planned_params("p", "toy") == [{"setup": {"steps": 10, "lr": 0.001, "corpus": "embedded-english",
                                                     "widths": [8, 16]}, "seed": 4, "run_dir": ""}]


def test_the_notebook_gets_the_group_and_the_record_every_field(project):
    _plan(project, "notebooks:\n  - notebook: toy\n    params: {setup: {steps: 7}}\n    timeout: 120\n")
    plan = load_plan("p")
    report = runner.run_plan(plan, log=lambda *_: None)
    assert report.ok, report.failed
    record = json.loads(runner.record_path("p", plan.runs[0]).read_text())
    assert record["metrics"]["steps"] == 7
    assert record["params"]["setup"] == {"steps": 7, "lr": 0.001, "corpus": "embedded-english",
                                         "widths": [8, 16]}


def test_a_fresh_run_page_shows_the_group_resolved_as_its_record_holds_it(project):
    # a group the plan leaves out: the notebook's own cells say `setup = {}`, the record every field
    _plan(project, "notebooks:\n  - notebook: toy\n    params: {seed: 3}\n    timeout: 120\n")
    plan = load_plan("p")
    assert runner.run_plan(plan, log=lambda *_: None).ok
    path = runner.record_path("p", plan.runs[0])
    record = json.loads(path.read_text())
    page = nbformat.read(path.with_suffix(".ipynb"), as_version=4)
    shown = [c.source for c in page.cells if "injected-parameters" in c.metadata.get("tags", [])]
    namespace: dict = {}
    exec(shown[0], namespace)
    assert namespace["setup"] == record["params"]["setup"] == {
        "steps": 10, "lr": 0.001, "corpus": "embedded-english", "widths": [8, 16]}
    assert namespace["seed"] == 3


def test_a_rehearsal_shrinks_numbers_inside_a_group_and_nothing_else(project):
    _plan(project, "notebooks:\n  - notebook: toy\n    params: {setup: {steps: 3000, corpus: shift}}\n")
    overlay = project / "notebooks" / "plans" / "rehearse" / "p.yaml"
    overlay.write_text("notebooks:\n  toy:\n    params: {setup: {steps: 2, widths: [4]}}\n")
    run, = load_plan("p-rehearsal").runs
    assert run.params["setup"] == {"steps": 2, "corpus": "shift", "widths": [4]}
    overlay.write_text("notebooks:\n  toy:\n    params: {setup: {corpus: other}}\n")
    with pytest.raises(PlanError, match=r"params.setup.corpus = 'other': a rehearsal changes sizes only"):
        load_plan("p-rehearsal")
    overlay.write_text("notebooks:\n  toy:\n    params: {setup: {stepz: 2}}\n")
    with pytest.raises(PlanError, match=r"params.setup: unknown field 'stepz' of Setup"):
        load_plan("p-rehearsal")
    overlay.write_text("notebooks:\n  toy:\n    params: {setup: 2}\n")
    with pytest.raises(PlanError, match=r"setup is a group \(Setup\)"):
        load_plan("p-rehearsal")


def test_a_group_naming_no_dataclass_or_no_dict_parameter_is_refused(project):
    _plan(project, "notebooks:\n  - notebook: toy\n")
    _notebook(project / "notebooks" / "toy.ipynb", {"setup": "plangroups_probe.config:Missing"})
    with pytest.raises(PlanError, match="parameter 'setup': group class .*no dataclass Missing"):
        load_plan("p")
    plans.notebook_parameters.cache_clear()
    plans.notebook_groups.cache_clear()
    _notebook(project / "notebooks" / "toy.ipynb", {"seed": "plangroups_probe.config:Setup"})
    with pytest.raises(PlanError, match="names 'seed', which is not a parameter of the form"):
        load_plan("p")


def test_the_lab_check_edits_a_group_as_a_user_would(project):
    import importlib.util

    from mlmlib.paths import PACKAGE_DIR

    spec = importlib.util.spec_from_file_location("lab_check", PACKAGE_DIR.parent / "scripts" / "lab_check.py")
    lab_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lab_check)
    lines = lab_check.edit_lines("toy", {"setup": {"steps": 5}, "seed": 2})
    assert lines == "\nsetup = {**setup, 'steps': 5}\nseed = 2"
    cell = {"setup": {"lr": 1}, "seed": 0}
    exec(lines, {}, cell)  # noqa: S102 - the lines a user would type, run as a cell runs them
    assert cell == {"setup": {"lr": 1, "steps": 5}, "seed": 2}
    assert lab_check.edit_label({"setup": {"steps": 5}, "seed": 2}) == "setup.steps=5,seed=2"
    with pytest.raises(ValueError, match="setup is a group"):
        lab_check.edit_lines("toy", {"setup": 5})
    with pytest.raises(ValueError, match="no parameter 'corpus'"):
        lab_check.edit_lines("toy", {"corpus": "shift"})
