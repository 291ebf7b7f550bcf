"""Disk space before compute: an entry states `disk_gb` (what one run writes at its peak); a run
refuses to start on a work folder with less free, naming the entry, the setting, the folder and
what is missing, and the other runs go on; the dry run prints the disk per entry and the
GPU-hours per entry; a rehearsal checks no paper-size disk."""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path

import pytest
import toy_project

from mlmlib.runs import cli, disk, runner
from mlmlib.runs.plans import PlanError, load_plan

PLAN = """
notebooks:
  - notebook: toy
    disk_gb: 50
    grid: {x: [1]}
    timeout: 120
  - notebook: toy
    disk_gb: 0.5
    grid: {x: [2]}
    timeout: 120
  - notebook: toy
    grid: {x: [3]}
    timeout: 120
"""
Usage = namedtuple("Usage", "total used free")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A throwaway project: one toy notebook that logs each run to `trace`, and plan p; the
    work folder's file system has 10 GB free."""
    monkeypatch.setattr(disk.shutil, "disk_usage", lambda _: Usage(100e9, 90e9, 10e9))
    return toy_project.make(tmp_path, monkeypatch, PLAN)


def test_an_entry_states_its_disk_and_a_bad_value_stops_the_plan(project):
    assert [r.disk_gb for r in load_plan("p").runs] == [50.0, 0.5, None]
    for bad in ("0", "-3", "lots", "true"):
        (project / "notebooks" / "plans" / "bad.yaml").write_text(PLAN.replace("disk_gb: 0.5", f"disk_gb: {bad}"))
        with pytest.raises(PlanError, match=r"notebooks\[1\] \(toy\): disk_gb must be a positive number"):
            load_plan("bad")


def test_a_run_without_the_space_it_needs_fails_before_its_notebook_and_the_others_go_on(project):
    report = runner.run_plan(load_plan("p"), log=lambda *_: None)
    assert report.done == ["toy/x-2", "toy/x-3"] and list(report.failed) == ["toy/x-1"]
    error = report.failed["toy/x-1"]
    for part in ("toy/x-1", "notebooks/plans/p.yaml", "`disk_gb: 50`", "10.0 GB free",
                 "40.0 GB missing", "nothing ran", "MLMLIB_WORK", str(project / ".work")):
        assert part in error, error
    assert toy_project.ran(project) == ["2", "3"]  # the refused run's notebook never started


def test_free_space_is_read_on_the_nearest_existing_folder(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(disk.shutil, "disk_usage", lambda p: seen.append(Path(p)) or Usage(1, 1, 2e9))
    assert disk.free_gb(tmp_path / "not" / "yet" / "made") == 2.0 and seen == [tmp_path.resolve()]


def test_the_paper_plan_states_the_disk_of_its_large_writers_and_its_rehearsal_none():
    paper = {r.notebook: r.disk_gb for r in load_plan("paper").runs}
    assert paper["B0_pack_corpus"] >= 100 and paper["C2_selective_mlm"] and paper["B1_true_negatives_pretrain"]
    assert {r.disk_gb for r in load_plan("paper-rehearsal").runs} == {None}


def test_the_dry_run_prints_gpu_hours_and_disk_per_entry(capsys):
    assert cli.main(["run", "--profile", "paper", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "GPU-hours per entry (per run, including its fine-tuning and evaluation):" in out
    b1 = next(ln for ln in out.splitlines() if ln.startswith("  B1_true_negatives_pretrain ")
              and "GPU-h/run" in ln)
    assert "24 runs" in b1 and "8.30 GPU-h/run" in b1 and "199.20 GPU-h" in b1
    disk_line = next(ln for ln in out.splitlines() if ln.startswith("  B0_pack_corpus ") and "GB/run" in ln)
    assert "100.0 GB/run" in disk_line


def test_a_finished_run_leaves_no_work_folder(project):
    """Once its record is written a run is never resumed: its checkpoints go."""
    (project / "notebooks" / "plans" / "w.yaml").write_text(
        "notebooks:\n  - notebook: toy\n    grid: {x: [4, 5]}\n")
    plan = load_plan("w")
    folders = [runner.work_folder("w", run, runner.run_key(plan, i)) for i, run in enumerate(plan.runs)]
    folders[1].mkdir(parents=True)
    (folders[1] / "step-5").write_text("a checkpoint")
    report = runner.run_plan(plan, log=lambda *_: None)
    assert report.done == ["toy/x-4", "toy/x-5"]
    assert not any(f.exists() for f in folders), folders
    assert folders[0].parent.parent.exists()  # the notebook's folder under the profile stays
