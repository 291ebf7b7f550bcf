"""A run that needs a GPU says so (`device: gpu`), refuses to start without CUDA, and its SLURM
job asks for one GPU; a `device: cpu` entry asks for none; a rehearsal runs on CPU."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest
import toy_project

from mlmlib.runs import cli, executors, runner
from mlmlib.runs.executors import Options, check_options
from mlmlib.runs.plans import PlanError, load_plan

PLAN = """
notebooks:
  - notebook: toy
    device: gpu
    grid: {x: [1]}
    timeout: 120
  - notebook: toy
    device: cpu
    grid: {x: [2]}
    timeout: 120
  - notebook: toy
    grid: {x: [3]}
    timeout: 120
"""
NO_CUDA = (False, "torch is built without CUDA")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A throwaway project: one toy notebook that logs each run to `trace`, and plan p."""
    return toy_project.make(tmp_path, monkeypatch, PLAN)


def test_an_entry_declares_its_device(project):
    assert [r.device for r in load_plan("p").runs] == ["gpu", "cpu", None]
    (project / "notebooks" / "plans" / "bad.yaml").write_text(PLAN.replace("device: cpu", "device: tpu"))
    with pytest.raises(PlanError, match=r"notebooks\[1\] \(toy\): device must be one of \['cpu', 'gpu'\]"):
        load_plan("bad")


def test_a_gpu_run_without_cuda_fails_before_its_notebook_runs_and_the_others_go_on(project, monkeypatch):
    monkeypatch.setattr(runner, "cuda_available", lambda: NO_CUDA)
    report = runner.run_plan(load_plan("p"), log=lambda *_: None)
    assert report.done == ["toy/x-2", "toy/x-3"] and list(report.failed) == ["toy/x-1"]
    error = report.failed["toy/x-1"]
    for part in ("toy/x-1", "notebooks/plans/p.yaml", "`device: gpu`", "CUDA is not available here",
                 "torch is built without CUDA", "nothing ran", "--rehearse", "--gpus"):
        assert part in error, error
    assert toy_project.ran(project) == ["2", "3"]  # the GPU run's notebook never started
    assert not (project / ".work" / "p" / "toy" / "x-1").exists()  # nor its work folder


def test_a_gpu_run_with_cuda_runs(project, monkeypatch):
    monkeypatch.setattr(runner, "cuda_available", lambda: (True, "1 CUDA device(s)"))
    plan = load_plan("p", ["toy"])
    assert runner.device_refusal("p", plan.runs[0]) is None
    _, error = runner.execute_run("p", plan.runs[0], runner.run_key(plan, 0), "v", log=lambda *_: None)
    assert error is None and toy_project.ran(project) == ["1"]


def test_cuda_is_asked_of_torch_in_a_subprocess(monkeypatch):
    runner.cuda_available.cache_clear()
    try:
        found, seen = runner.cuda_available()  # the real question, on this machine
        assert isinstance(found, bool) and seen
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        for said, expected in (("True 2 12.4", (True, "2 CUDA device(s)")),
                               ("False 0 None", (False, "torch is built without CUDA")),
                               ("False 0 12.4", (False, "torch (CUDA 12.4) sees no GPU"))):
            asked: list = []
            monkeypatch.setattr(runner.subprocess, "run", lambda cmd, _a=asked, _s=said, **_: _a.append(cmd)
                                or subprocess.CompletedProcess(cmd, 0, stdout=_s + "\n", stderr=""))
            runner.cuda_available.cache_clear()
            assert runner.cuda_available() == expected
            assert asked[0][0] == sys.executable and "import torch" in asked[0][-1]
        monkeypatch.setattr(runner.subprocess, "run", lambda cmd, **_: subprocess.CompletedProcess(
            cmd, 1, stdout="", stderr="Traceback ...\nModuleNotFoundError: No module named 'torch'"))
        runner.cuda_available.cache_clear()
        assert runner.cuda_available() == (False, "torch failed: ModuleNotFoundError: No module named 'torch'")
    finally:
        runner.cuda_available.cache_clear()


def test_the_paper_plan_trains_on_gpus_and_its_rehearsal_anywhere():
    paper = load_plan("paper")
    gpu = {r.notebook for r in paper.runs if r.device == "gpu"}
    assert gpu == {"base_model", "compute_benchmark", "A2_synthetic_pretrain", "A3_synthetic_finetune",
                   "A5_real_finetune_perturb", "B1_true_negatives_pretrain", "B2_true_negatives_overhead",
                   "B4_synthetic_true_negatives", "C2_selective_mlm", "C4_synthetic_selective"}
    cpu = {r.notebook for r in paper.runs if r.device == "cpu"}
    assert {"B0_pack_corpus", "C1_task_scores", "A4_synthetic_summary", "runs_report"} <= cpu
    assert all(r.device in ("gpu", "cpu") for r in paper.runs)  # every entry says which
    rehearsal = load_plan("paper-rehearsal")  # offline, on CPU: no run asks for CUDA
    assert {r.device for r in rehearsal.runs} == {None}
    assert all(runner.device_refusal(rehearsal.profile, r) is None for r in rehearsal.runs)


def test_the_dry_run_shows_each_runs_device(capsys):
    assert cli.main(["run", "--profile", "paper", "--dry-run"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(" [gpu]: " in ln for ln in lines if ln.startswith("  B1_true_negatives_pretrain/"))
    assert "  B0_pack_corpus/run [cpu]: " in out


@pytest.fixture
def sbatch(project, monkeypatch):
    """A fake `sbatch` on PATH that keeps each submitted script and answers with a job id."""
    bin_dir, kept = project / "bin", project / "submitted"
    bin_dir.mkdir()
    kept.mkdir()
    script = bin_dir / "sbatch"
    script.write_text(f'#!/bin/sh\nn=$(ls "{kept}" | wc -l)\ncp "$1" "{kept}/$n.sh"\n'
                      'echo "Submitted batch job $((n + 100))"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(executors.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(executors, "sbatch_options", lambda: {"account", "gres"})
    return kept


@pytest.mark.parametrize("gpus_per_run, asked", [(None, [1, 0, 0]), (1, [1, 0, 1])])
def test_a_slurm_job_asks_for_a_gpu_by_its_entrys_device(project, sbatch, gpus_per_run, asked):
    """`device: gpu`: one GPU even without --gpus-per-run; `device: cpu`: none even with it; an
    entry that says nothing: what --gpus-per-run says."""
    plan = load_plan("p")
    options = check_options(Options(executor="slurm", gpus_per_run=gpus_per_run), plan)
    executor = executors.make_executor(options, plan.profile)
    lines = []
    for i in range(len(plan.runs)):
        flight = executors._submit(executor, options, plan, i, f"job{i}", 1, False, None, lines.append)
        assert flight.info["job_id"] == str(100 + i)
    scripts = [(sbatch / f"{i}.sh").read_text() for i in range(len(plan.runs))]
    assert ["#SBATCH --gpus-per-node=1" in s for s in scripts] == [bool(n) for n in asked]
    assert [", 1 GPU" in line for line in lines] == [bool(n) for n in asked]
    job = json.loads(executors.job_file("p", "toy/x-1").read_text())
    assert job["key"] == runner.run_key(plan, 0) and job["resubmits"] == 0


def test_an_alone_entry_gets_a_slurm_node_of_its_own(project, sbatch):
    """`alone: true` (it measures time): sbatch --exclusive; the entries after it do not inherit it."""
    (project / "notebooks" / "plans" / "a.yaml").write_text(
        "notebooks:\n  - notebook: toy\n    alone: true\n    grid: {x: [1]}\n"
        "  - notebook: toy\n    grid: {x: [2]}\n")
    plan = load_plan("a")
    options = check_options(Options(executor="slurm"), plan)
    executor = executors.make_executor(options, plan.profile)
    for i in range(len(plan.runs)):
        executors._submit(executor, options, plan, i, f"job{i}", 1, False, None, lambda *_: None)
    scripts = [(sbatch / f"{i}.sh").read_text() for i in range(len(plan.runs))]
    assert ["#SBATCH --exclusive" in s for s in scripts] == [True, False]


def test_an_entry_states_the_cores_memory_and_time_its_slurm_job_asks_for(project, sbatch):
    """`resources` replace the plan-wide --cpus-per-run, --mem-gb and --time-min for its jobs
    only; the job's threads follow its cores."""
    (project / "notebooks" / "plans" / "r.yaml").write_text(
        "notebooks:\n  - notebook: toy\n    resources: {cpus: 8, mem_gb: 32, time_min: 90.5}\n"
        "    grid: {x: [1]}\n  - notebook: toy\n    grid: {x: [2]}\n")
    plan = load_plan("r")
    assert plan.runs[0].resources == {"cpus": 8, "mem_gb": 32.0, "time_min": 90.5}
    options = check_options(Options(executor="slurm", cpus_per_run=2, time_min=60), plan)
    executor = executors.make_executor(options, plan.profile)
    flights = [executors._submit(executor, options, plan, i, f"job{i}", 2, False, None,
                                 lambda *_: None) for i in range(2)]
    first, second = [(sbatch / f"{i}.sh").read_text() for i in range(2)]
    assert "#SBATCH --cpus-per-task=8" in first and "#SBATCH --mem=32768M" in first
    assert "#SBATCH --time=91" in first and flights[0].info["threads"] == 8
    assert "#SBATCH --cpus-per-task=2" in second and "--mem=" not in second
    assert "#SBATCH --time=60" in second and flights[1].info["threads"] == 2
    for bad in ("{cpus: 2.5}", "{gpus: 1}", "{mem_gb: -1}", "[8]"):
        (project / "notebooks" / "plans" / "bad.yaml").write_text(
            f"notebooks:\n  - notebook: toy\n    resources: {bad}\n")
        with pytest.raises(PlanError, match="resources = .*give a mapping"):
            load_plan("bad")
