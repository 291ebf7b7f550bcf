"""GPU-hour budget: the plan's `gpu_hours` key, the arithmetic behind it, the dry run's totals
and the table the compute page includes."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from mlmlib.runs import budget, cli, plans
from mlmlib.runs.plan_files import compose
from mlmlib.runs.plans import PlanError, load_plan

ROOT = Path(__file__).resolve().parents[1]

PLAN = """
notebooks:
  - notebook: train
    chapter: paper_a
    gpu_hours: 2.5
    timeout: 7200
    grid: {seed: [0, 1]}
  - notebook: train
    chapter: paper_b
    gpu_hours: 0.25
    timeout: 3600
    grid: {seed: [0, 1, 2, 3]}
  - notebook: train
    chapter: paper_b
    timeout: 1800
    grid: {seed: [9]}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    nbs = tmp_path / "notebooks"
    (nbs / "plans").mkdir(parents=True)
    (tmp_path / "_config.yml").write_text("title: test\n")
    nb = new_notebook(cells=[new_code_cell("seed = 0\nrun_dir = ''", metadata={"tags": ["parameters"]})])
    nbformat.write(nb, nbs / "train.ipynb")
    (nbs / "plans" / "g.yaml").write_text(PLAN)
    monkeypatch.setenv("MLMLIB_ROOT", str(tmp_path))
    plans.notebook_parameters.cache_clear()
    return tmp_path


def test_the_estimate_is_six_times_parameters_times_tokens_at_the_stated_mfu():
    # 6 x 1e8 x 1e10 = 6e18 FLOP; 25% of 1000 TFLOP/s = 2.5e14 FLOP/s -> 24,000 s = 6.667 h
    assert budget.training_flops(1e8, 1e10) == 6e18
    assert budget.estimate_gpu_hours(1e8, 1e10, 0.25, 1000.0) == pytest.approx(24000 / 3600)
    # A2 of the paper plan: 6 x 44M x (23,438 x 128 x 257) at 30% of 989.4 -> 0.19 h
    assert budget.estimate_gpu_hours(44e6, 23438 * 128 * 257, 0.3) == pytest.approx(0.1905, abs=1e-3)
    for bad in (0, 1.5, -0.1):
        with pytest.raises(ValueError, match="mfu must be in"):
            budget.estimate_gpu_hours(1e8, 1e10, bad)


def test_gpu_hours_are_read_per_run_and_summed_per_chapter(project):
    plan = load_plan("g")
    assert [r.gpu_hours for r in plan.runs] == [2.5, 2.5, 0.25, 0.25, 0.25, 0.25, None]
    rows = {r.chapter: r for r in budget.plan_budget(plan)}
    assert rows["paper_a"].runs == 2 and rows["paper_a"].gpu_hours == 5.0
    assert rows["paper_a"].timeout_hours == 4.0
    assert rows["paper_b"].gpu_hours == 1.0 and rows["paper_b"].unestimated == 1
    assert rows["paper_b"].timeout_hours == pytest.approx(4.5)


@pytest.mark.parametrize("value", [0, -1, "two", True, None, ".nan"])
def test_a_gpu_hours_that_is_not_a_positive_number_is_refused(project, value):
    text = PLAN.replace("gpu_hours: 2.5", f"gpu_hours: {'null' if value is None else value}")
    (project / "notebooks" / "plans" / "g.yaml").write_text(text)
    if value is None:  # null: no estimate, as if the key were absent
        assert load_plan("g").runs[0].gpu_hours is None
        return
    with pytest.raises(PlanError, match="gpu_hours must be a positive number"):
        load_plan("g")


def test_the_dry_run_prints_gpu_hours_per_paper_beside_the_timeouts(project, capsys):
    assert cli.main(["run", "--profile", "g", "--dry-run"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0] + (" " + line.split()[1] if line.split()[0] == "Paper" else ""): line
             for line in out.splitlines() if line.startswith("  ") and "GPU-h" in line}
    assert "2 runs" in lines["Paper A"] and "5.0 GPU-h" in lines["Paper A"] and "4.0 h" in lines["Paper A"]
    assert "1.0 GPU-h" in lines["Paper B"] and "1 run(s) without an estimate" in lines["Paper B"]
    assert "6.0 GPU-h" in lines["total"] and "8.5 h" in lines["total"]


def test_the_book_page_table_is_written_from_the_plan(project, monkeypatch):
    monkeypatch.setattr(cli, "BUDGET_PROFILE", "g")
    page = cli.write_budget_page().read_text()
    assert page.startswith("GPU-hours of the `g` plan, read from `g.yaml`")
    assert "| Paper A | 2 | 5.0 | 4.0 |" in page
    assert "| Paper B | 5 | 1.0 (1 runs without) | 4.5 |" in page
    assert "| **total** | 7 | **6.0** | 8.5 |" in page
    monkeypatch.setattr(cli, "BUDGET_PROFILE", "nowhere")
    assert "no GPU-hours to show" in cli.write_budget_page().read_text()


def test_every_paper_plan_entry_states_its_gpu_hours():
    entries = compose(ROOT / "notebooks" / "plans" / "paper.yaml")["notebooks"]
    missing = [e["title"] for e in entries if not isinstance(e.get("gpu_hours"), (int, float))
               or isinstance(e.get("gpu_hours"), bool) or e["gpu_hours"] <= 0]
    assert not missing, missing


def test_the_compute_page_includes_the_generated_table():
    text = (ROOT / "book" / "compute.md").read_text()
    assert f"```{{include}} _generated/{cli.BUDGET_PAGE}" in text


def test_a_measured_mfu_replaces_the_assumed_one_where_the_loop_was_timed(project, capsys, tmp_path):
    """gpu_check.py's JSON: paper A's loop ran at MFU 0.15 where its estimate assumed 0.30, so
    its runs take twice the GPU-hours; paper B's loop was not timed (its row failed): estimate."""
    text = PLAN.replace("gpu_hours: 2.5\n", "gpu_hours: 2.5\n    gpu_mfu: 0.3\n    gpu_loop: bert\n")
    text = text.replace("gpu_hours: 0.25\n", "gpu_hours: 0.25\n    gpu_mfu: 0.2\n    gpu_loop: electra\n")
    (project / "notebooks" / "plans" / "g.yaml").write_text(text)
    measured = tmp_path / "gpu_check.json"
    measured.write_text('{"timings": {"bert": {"mfu": 0.15}, "electra": {"error": "OOM"}}}')
    assert budget.measured_mfu(measured) == {"bert": 0.15}
    assert cli.main(["run", "--profile", "g", "--dry-run", "--measured", str(measured)]) == 0
    out = capsys.readouterr().out
    train = [ln for ln in out.splitlines() if ln.startswith("  train ")]
    assert len(train) == 3, out
    assert "5.00 GPU-h/run" in train[0] and "measured: bert at MFU 0.15, the estimate assumed 0.30" in train[0]
    assert "0.25 GPU-h/run" in train[1] and "(estimate)" in train[1]
    assert "10.0 GPU-h" in next(ln for ln in out.splitlines() if ln.startswith("  Paper A"))
    assert "with the measured MFUs" in out
    (project / "bad.json").write_text("{}")
    assert cli.main(["run", "--profile", "g", "--dry-run", "--measured", str(project / "bad.json")]) == 2
    assert cli.main(["run", "--profile", "g", "--measured", str(measured)]) == 2  # dry runs only


def test_a_measured_correction_overhead_scales_the_runs_that_train_its_arm(project, capsys, tmp_path):
    """gpu_check.py's `corrections`: shield costs 10% a step over plain, so a run training
    electra/shield (or its table variant) takes 10% more; the other arms' runs are unchanged."""
    text = PLAN.replace("grid: {seed: [0, 1]}", "grid: {arms: [[electra/shield@w2v], [electra/none]]}")
    (project / "notebooks" / "plans" / "g.yaml").write_text(text)
    nb = new_notebook(cells=[new_code_cell("seed = 0\narms = []\nrun_dir = ''",
                                           metadata={"tags": ["parameters"]})])
    nbformat.write(nb, project / "notebooks" / "train.ipynb")
    plans.notebook_parameters.cache_clear()
    measured = tmp_path / "gpu_check.json"
    measured.write_text('{"timings": {}, "corrections": {"rows": [{"arm": "electra/shield", '
                        '"overhead": 0.1}, {"arm": "electra/plain", "overhead": 0.0}]}}')
    assert budget.measured_overhead(measured) == {"electra/shield": 0.1, "electra/plain": 0.0}
    assert cli.main(["run", "--profile", "g", "--dry-run", "--measured", str(measured)]) == 0
    out = capsys.readouterr().out
    train = [ln for ln in out.splitlines() if ln.startswith("  train ")]
    assert "2.75 GPU-h/run" in train[0] and "electra/shield@w2v measured at +10.0%" in train[0]
    assert "2.50 GPU-h/run" in train[1] and "(estimate)" in train[1]
    assert "5.2 GPU-h" in next(ln for ln in out.splitlines() if ln.startswith("  Paper A"))
    measured.write_text('{"timings": {}, "corrections": {"rows": [{"arm": "electra/shield"}]}}')
    assert cli.main(["run", "--profile", "g", "--dry-run", "--measured", str(measured)]) == 2
    assert "its corrections are not overhead rows" in capsys.readouterr().err


@pytest.mark.parametrize("extra, message", [
    ("    gpu_mfu: 0.3\n", "gpu_mfu and gpu_loop go together"),
    ("    gpu_loop: bert\n", "gpu_mfu and gpu_loop go together"),
    ("    gpu_mfu: 1.5\n    gpu_loop: bert\n", "gpu_mfu must be in \\(0, 1\\]"),
])
def test_a_bad_measured_loop_declaration_is_refused(project, extra, message):
    (project / "notebooks" / "plans" / "g.yaml").write_text(PLAN.replace("gpu_hours: 2.5\n", "gpu_hours: 2.5\n" + extra))
    with pytest.raises(PlanError, match=message):
        load_plan("g")
