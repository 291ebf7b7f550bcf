"""The papermill runner: plans, skip/force, failure isolation, atomic writes, bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from mlmlib import plans
from mlmlib.plans import PlanError, load_plan

BODY = """
import time
from mlmlib import results
time.sleep(sleep)
if x == fail_on:
    raise RuntimeError(f"failing on purpose for x={x}")
results.save_metrics(run_dir, {"doubled": 2 * x, "items": items})
"""


def _notebook(path: Path, params: str) -> None:
    nb = new_notebook(cells=[new_markdown_cell("# Toy"),
                             new_code_cell(params, metadata={"tags": ["parameters"]}),
                             new_code_cell(BODY)])
    nb.metadata["kernelspec"] = {"name": "mlmlib", "display_name": "mlmlib", "language": "python"}
    nbformat.write(nb, path)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A throwaway project root with one toy notebook and a plan writer."""
    (tmp_path / "notebooks" / "plans").mkdir(parents=True)
    (tmp_path / "_config.yml").write_text("title: test\n")
    _notebook(tmp_path / "notebooks" / "toy.ipynb",
              'x = 1\nfail_on = -1\nsleep = 0.0\nitems = [1, 2]\nseed = 0\nrun_dir = ""')
    monkeypatch.setenv("MLMLIB_ROOT", str(tmp_path))
    plans.notebook_parameters.cache_clear()

    def write_plan(text: str, name: str = "p") -> Path:
        path = tmp_path / "notebooks" / "plans" / f"{name}.yaml"
        path.write_text(text)
        return path

    return tmp_path, write_plan


def _cli(root: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "MLMLIB_ROOT": str(root)}
    return subprocess.run([sys.executable, "-m", "mlmlib", *args], env=env, capture_output=True,
                          text=True, check=False, **kwargs)


PLAN = """
notebooks:
  - notebook: toy
    grid: {x: [1, 2, 3], seed: [0]}
    params: {fail_on: 2, items: [4, 5]}
    timeout: 60
"""


def test_grid_expands_and_lists_pass_as_values(project):
    _root, write_plan = project
    write_plan(PLAN)
    plan = load_plan("p")
    assert [r.slug for r in plan.runs] == ["x-1_seed-0", "x-2_seed-0", "x-3_seed-0"]
    assert plan.runs[0].params["items"] == [4, 5]


def test_batch_isolates_failure_skips_finished_and_forces(project):
    root, write_plan = project
    write_plan(PLAN)
    first = _cli(root, "run", "--profile", "p")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "FAILED toy/x-2_seed-0" in first.stdout
    runs = root / "book" / "runs" / "p"
    rec = json.loads((runs / "toy" / "x-3_seed-0.json").read_text())  # the batch went on
    assert rec["metrics"] == {"doubled": 6, "items": [4, 5]}
    assert rec["params"]["items"] == [4, 5] and rec["seed"] == 0
    for key in ("git_sha", "versions", "device", "wall_time_s", "code_version"):
        assert key in rec
    assert (runs / "toy" / "x-3_seed-0.ipynb").exists()
    assert not (runs / "toy" / "x-2_seed-0.json").exists()
    assert not (runs / "toy" / "x-2_seed-0.ipynb").exists()
    assert (runs / "_failed" / "toy__x-2_seed-0.ipynb").exists()
    assert "failing on purpose" in (runs / "_failed" / "toy__x-2_seed-0.error.txt").read_text()

    second = _cli(root, "run", "--profile", "p")
    assert second.stdout.count("skip toy/") == 2 and "run  toy/x-2_seed-0" in second.stdout
    mtime = (runs / "toy" / "x-1_seed-0.json").stat().st_mtime
    forced = _cli(root, "run", "--profile", "p", "--only", "toy", "--force")
    assert "skip toy/" not in forced.stdout
    assert (runs / "toy" / "x-1_seed-0.json").stat().st_mtime > mtime
    status = _cli(root, "status")
    assert "2 finished runs" in status.stdout and "FAILED toy__x-2_seed-0" in status.stdout


def test_changed_parameters_rerun(project):
    root, write_plan = project
    write_plan("notebooks:\n  - notebook: toy\n    grid: {x: [5]}\n")
    assert _cli(root, "run", "--profile", "p").returncode == 0
    write_plan("notebooks:\n  - notebook: toy\n    grid: {x: [5]}\n    params: {items: [9]}\n")
    again = _cli(root, "run", "--profile", "p")
    assert "1 ran, 0 skipped" in again.stdout


def test_killed_run_leaves_nothing_half_written(project):
    root, write_plan = project
    write_plan("notebooks:\n  - notebook: toy\n    grid: {x: [7]}\n    params: {sleep: 60.0}\n")
    env = {**os.environ, "MLMLIB_ROOT": str(root)}
    proc = subprocess.Popen([sys.executable, "-m", "mlmlib", "run", "--profile", "p"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    folder = root / "book" / "runs" / "p" / "toy"
    deadline = time.time() + 60
    while time.time() < deadline and not list(folder.glob(".*.ipynb")):
        time.sleep(0.2)
    assert list(folder.glob(".*.ipynb")), "papermill never started writing the notebook"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (folder / "x-7.json").exists()
    assert not (folder / "x-7.ipynb").exists()
    write_plan("notebooks:\n  - notebook: toy\n    grid: {x: [7]}\n")
    assert _cli(root, "run", "--profile", "p").returncode == 0
    assert (folder / "x-7.json").exists() and (folder / "x-7.ipynb").exists()
    assert not list(folder.glob(".*"))  # the leftover temporary notebook was cleaned up


@pytest.mark.parametrize("text, message", [
    ("notebooks:\n  - notebook: nope\n", "unknown notebook 'nope'"),
    ("notebooks:\n  - notebook: toy\n    grid: {y: [1]}\n", "unknown parameter 'y'"),
    ("notebooks:\n  - notebook: toy\n    params: {x: 'one'}\n", "params.x = 'one' is a str"),
    ("notebooks:\n  - notebook: toy\n    grid: {x: 3}\n", "grid.x must be a non-empty list"),
    ("notebooks:\n  - notebook: toy\n    params: {run_dir: '/tmp'}\n", "set by the runner"),
    ("notebooks:\n  - notebook: toy\n    colour: red\n", "unknown key"),
    ("notebooks: [\n", "not valid YAML"),
])
def test_bad_plans_fail_before_anything_runs(project, text, message):
    root, write_plan = project
    path = write_plan(text)
    with pytest.raises(PlanError, match=message) as info:
        load_plan("p")
    assert str(path) in str(info.value)
    out = _cli(root, "run", "--profile", "p")
    assert out.returncode == 2 and message.split("'")[0] in out.stderr
    assert not (root / "book" / "runs" / "p").exists()


def test_unknown_profile_lists_the_known_ones(project):
    _root, write_plan = project
    write_plan(PLAN, name="known")
    with pytest.raises(PlanError, match=r"unknown profile 'nope'.*\['known'\]"):
        load_plan("nope")


def test_two_entries_writing_the_same_record_are_rejected(project):
    _root, write_plan = project
    write_plan("notebooks:\n  - notebook: toy\n    grid: {x: [1]}\n"
               "  - notebook: toy\n    grid: {x: [1]}\n    params: {items: [3]}\n")
    with pytest.raises(PlanError, match="both named 'x-1'"):
        load_plan("p")


def test_summary_reruns_when_the_records_it_reads_change(project):
    root, write_plan = project
    _notebook(root / "notebooks" / "summary.ipynb",
              'x = 0\nfail_on = -1\nsleep = 0.0\nitems = []\nprofile = "p"\nrun_dir = ""')
    write_plan("notebooks:\n  - notebook: toy\n    grid: {x: [1]}\n"
               "  - notebook: summary\n    params: {profile: p}\n")
    assert "2 ran" in _cli(root, "run", "--profile", "p").stdout
    assert "0 ran, 2 skipped" in _cli(root, "run", "--profile", "p").stdout
    _cli(root, "run", "--profile", "p", "--only", "toy", "--force")  # the summarised run changes
    again = _cli(root, "run", "--profile", "p")
    assert "run  summary/run" in again.stdout and "skip toy/x-1" in again.stdout


def test_a_second_batch_skips_everything(project):
    root, write_plan = project
    _notebook(root / "notebooks" / "summary.ipynb",
              'x = 0\nfail_on = -1\nsleep = 0.0\nitems = []\nprofile = "p"\nrun_dir = ""')
    write_plan("notebooks:\n  - notebook: toy\n    grid: {x: [1]}\n"
               "  - notebook: summary\n    params: {profile: p}\n"
               "  - notebook: toy\n    grid: {x: [2]}\n")  # a run after the summary
    assert "3 ran" in _cli(root, "run", "--profile", "p").stdout
    assert "0 ran, 3 skipped" in _cli(root, "run", "--profile", "p").stdout
