"""The papermill runner: plans, skip/force, failure isolation, atomic writes, bad input."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import AsyncKernelManager
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from mlmlib.runs import plans, runner
from mlmlib.runs.plans import PlanError, load_plan

BODY = """
import time
from mlmlib.runs import records as results
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


def test_a_run_never_timed_is_estimated_from_its_notebooks_other_records(project):
    """Fresh seeds have no record of their own: the batch orders and estimates them by their
    notebook's median time, not by the timeout (a bound many times the real time)."""
    _root, write_plan = project
    write_plan("notebooks:\n  - notebook: toy\n    timeout: 900\n    grid: {x: [1, 2, 3, 4]}\n")
    plan = load_plan("p")
    assert [runner.last_wall_time(plan, r) for r in plan.runs] == [None] * 4
    folder = runner.record_path("p", plan.runs[0]).parent
    folder.mkdir(parents=True)
    for run, seconds in zip(plan.runs[:3], [40.0, 10.0, 30.0]):
        runner.record_path("p", run).write_text(json.dumps(
            {"notebook": "toy", "params": {}, "metrics": {}, "wall_time_s": seconds}))
    assert [runner.last_wall_time(plan, r) for r in plan.runs] == [40.0, 10.0, 30.0, 30.0]


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


def with_summary(root: Path, write_plan, after: str = "") -> None:
    """A plan of toy x=1 then a summary notebook that reads the profile's records (then `after`)."""
    _notebook(root / "notebooks" / "summary.ipynb",
              'x = 0\nfail_on = -1\nsleep = 0.0\nitems = []\nprofile = "p"\nrun_dir = ""')
    write_plan("notebooks:\n  - notebook: toy\n    grid: {x: [1]}\n"
               "  - notebook: summary\n    params: {profile: p}\n" + after)


def test_summary_reruns_when_the_records_it_reads_change(project):
    root, write_plan = project
    with_summary(root, write_plan)
    assert "2 ran" in _cli(root, "run", "--profile", "p").stdout
    assert "0 ran, 2 skipped" in _cli(root, "run", "--profile", "p").stdout
    _cli(root, "run", "--profile", "p", "--only", "toy", "--force")  # the summarised run changes
    again = _cli(root, "run", "--profile", "p")
    assert "run  summary/run" in again.stdout and "skip toy/x-1" in again.stdout
    # run alone (--only), it reads what it reads in the whole plan: current now, stale after
    # a rerun of the run it reads
    assert "0 ran, 1 skipped" in _cli(root, "run", "--profile", "p", "--only", "summary").stdout
    _cli(root, "run", "--profile", "p", "--only", "toy", "--force")
    assert "1 ran" in _cli(root, "run", "--profile", "p", "--only", "summary").stdout


def test_a_second_batch_skips_everything(project):
    root, write_plan = project
    with_summary(root, write_plan, "  - notebook: toy\n    grid: {x: [2]}\n")  # a run after it
    assert "3 ran" in _cli(root, "run", "--profile", "p").stdout
    assert "0 ran, 3 skipped" in _cli(root, "run", "--profile", "p").stdout


def test_a_killed_reruns_notebook_is_removed_when_the_run_is_skipped(project):
    """A forced rerun killed mid-run leaves its temporary notebook; the next batch skips the
    run (its record exists) and still removes that leftover, but not a live process's."""
    import socket

    root, write_plan = project
    write_plan("notebooks:\n  - notebook: toy\n    grid: {x: [1]}\n")
    assert "1 ran" in _cli(root, "run", "--profile", "p").stdout
    folder = root / "book" / "runs" / "p" / "toy"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = socket.gethostname()
    killed = folder / f".x-1.ipynb.{host}.{dead.pid}.ipynb"
    live = folder / f".x-1.ipynb.{host}.{os.getpid()}.ipynb"
    killed.write_text("{}"), live.write_text("{}")
    assert "0 ran, 1 skipped" in _cli(root, "run", "--profile", "p").stdout
    assert not killed.exists() and live.exists()


# ---------------------------------------------------------------- reliability

RESUMABLE = """
from pathlib import Path
from mlmlib.runs import records as results
marker = Path(run_dir) / "checkpoint.txt"
resumed = marker.exists()  # a checkpoint left by an earlier run of the same work folder
marker.write_text(str(x))
if fail and not resumed:
    raise RuntimeError("stopped mid-way, its checkpoint written")
results.save_metrics(run_dir, {"resumed": resumed, "x": x, "ratio": float("nan") if x < 0 else x})
"""


def _resumable(root: Path, extra: str = "") -> None:
    nb = new_notebook(cells=[new_markdown_cell("# Resumable"),
                             new_code_cell('x = 1\nlam = 1.0\nfail = False\nrun_dir = ""',
                                           metadata={"tags": ["parameters"]}),
                             new_code_cell(RESUMABLE + extra)])
    nb.metadata["kernelspec"] = {"name": "mlmlib", "display_name": "mlmlib", "language": "python"}
    nbformat.write(nb, root / "notebooks" / "res.ipynb")


def _record(root: Path, name: str) -> dict:
    return json.loads((root / "book" / "runs" / "p" / name).read_text())


def test_changed_parameter_or_code_never_resumes_an_old_checkpoint(project):
    """A run stopped mid-way resumes its checkpoint under the same key only; `fail` stops a run
    that did not resume, so a failure below means it started afresh."""
    root, write_plan = project
    _resumable(root)
    write_plan("notebooks:\n  - notebook: res\n    grid: {x: [1]}\n    params: {fail: true}\n")
    assert _cli(root, "run", "--profile", "p").returncode != 0  # stopped, its checkpoint kept
    assert _cli(root, "run", "--profile", "p").returncode == 0  # same key: resumes
    assert _record(root, "res/x-1.json")["metrics"]["resumed"] is True
    write_plan("notebooks:\n  - notebook: res\n    grid: {x: [1]}\n    params: {fail: true, lam: 5.0}\n")
    assert _cli(root, "run", "--profile", "p").returncode != 0  # new parameters: afresh
    _resumable(root, extra="\n# one changed line of code\n")
    out = _cli(root, "run", "--profile", "p")  # new code: afresh again
    assert out.returncode != 0 and "0 ran" in out.stdout
    assert len(list((root / ".work" / "p" / "res" / "x-1").iterdir())) == 1  # stale ones removed


def test_records_are_strict_json_and_read_back_with_their_nan(project):
    root, write_plan = project
    _resumable(root)
    write_plan("notebooks:\n  - notebook: res\n    grid: {x: [-1]}\n")
    assert _cli(root, "run", "--profile", "p").returncode == 0
    text = (root / "book" / "runs" / "p" / "res" / "x--1.json").read_text()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"record holds {c}"))
    assert json.loads(text)["non_finite"] == [{"path": ["metrics", "ratio"], "value": "nan"}]
    from mlmlib.runs.records import load_records
    table = load_records("p", root=root)
    assert table["ratio"].isna().all() and table["x"].tolist() == [-1]


def test_damaged_record_is_named_and_rerun(project):
    root, write_plan = project
    write_plan("notebooks:\n  - notebook: toy\n    grid: {x: [1, 3]}\n")
    assert _cli(root, "run", "--profile", "p").returncode == 0
    path = root / "book" / "runs" / "p" / "toy" / "x-1.json"
    path.write_text(path.read_text()[:40])  # truncated
    status = _cli(root, "status", "--profile", "p")
    assert status.returncode == 0 and str(path) in status.stdout and "1 finished runs" in status.stdout
    again = _cli(root, "run", "--profile", "p")
    assert "run  toy/x-1" in again.stdout and "damaged record" in again.stdout
    assert json.loads(path.read_text())["metrics"]["doubled"] == 2


def test_failed_rerun_supersedes_and_success_clears(project):
    root, write_plan = project
    _notebook(root / "notebooks" / "rate.ipynb",
              'x = 1.0\nfail_on = -1.0\nsleep = 0.0\nitems = []\nrun_dir = ""')
    write_plan("notebooks:\n  - notebook: rate\n    grid: {x: [1.5, 1.25]}\n")
    assert _cli(root, "run", "--profile", "p").returncode == 0
    runs = root / "book" / "runs" / "p"
    write_plan("notebooks:\n  - notebook: rate\n    grid: {x: [1.5, 1.25]}\n    params: {fail_on: 1.5}\n")
    out = _cli(root, "run", "--profile", "p")
    assert out.returncode == 1 and "superseded" in out.stdout
    assert not (runs / "rate" / "x-1.5.json").exists()  # not presented as current
    assert (runs / "_superseded" / "rate__x-1.5.json").exists()
    assert (runs / "_failed" / "rate__x-1.5.error.txt").exists()  # whole slug kept
    write_plan("notebooks:\n  - notebook: rate\n    grid: {x: [1.5, 1.25]}\n    params: {fail_on: 1.25}\n")
    _cli(root, "run", "--profile", "p")
    assert (runs / "_failed" / "rate__x-1.25.error.txt").exists()
    assert (runs / "_failed" / "rate__x-1.5.error.txt").exists() is False  # the success cleared it
    assert not (runs / "_superseded" / "rate__x-1.5.json").exists()
    status = _cli(root, "status", "--profile", "p").stdout
    assert "1 finished runs" in status and "FAILED rate__x-1.25" in status and "x-1.5:" not in status


def test_record_fields_are_not_overwritten_by_parameters(project):
    root, write_plan = project
    _notebook(root / "notebooks" / "summary.ipynb",
              'x = 0\nfail_on = -1\nsleep = 0.0\nitems = []\nprofile = "other"\nrun_dir = ""')
    write_plan("notebooks:\n  - notebook: summary\n    params: {profile: other}\n")
    assert _cli(root, "run", "--profile", "p").returncode == 0
    from mlmlib.runs.records import load_records
    row = load_records("p", root=root).iloc[0]
    assert row["profile"] == "p" and row["params.profile"] == "other"


@pytest.mark.parametrize("text, message", [
    ("notebooks:\n  - notebook: toy\n    params: {x: null}\n", "x = null"),
    ("notebooks:\n  - notebook: toy\n    params: {items: [1, 'a']}\n", r"items\[1\] = 'a'"),
    ("notebooks:\n  - notebook: ../toy\n", "no '/' or '..'"),
])
def test_more_bad_plans_fail_early(project, text, message):
    _root, write_plan = project
    write_plan(text)
    with pytest.raises(PlanError, match=message):
        load_plan("p")


def test_unknown_or_unsafe_profiles_are_refused(project):
    root, _write_plan = project
    for args in (("book", "--profile", "nope"), ("status", "--profile", "nope"),
                 ("run", "--profile", "../x")):
        out = _cli(root, *args)
        assert out.returncode == 2 and "profile" in out.stderr, args
    assert not (root.parent / "x").exists()


# ---------------------------------------------------------------- kernel shutdown


@pytest.mark.parametrize("manager, signals_at_shutdown", [
    (runner.QuietShutdownKernelManager, 0),
    (AsyncKernelManager, 1),  # jupyter_client's own: the SIGINT that logged an ERROR line
])
def test_runner_kernels_are_not_interrupted_on_shutdown(monkeypatch, manager, signals_at_shutdown):
    sent = []

    async def record_signal(self, signum):
        sent.append(signum)

    monkeypatch.setattr(manager, "_async_signal_kernel", record_signal)

    async def start_interrupt_shutdown():
        km = manager(kernel_name=runner.KERNEL, transport="ipc")
        await km.start_kernel()
        try:
            await km.interrupt_kernel()  # asked for: still sent
        finally:
            await km.shutdown_kernel()

    asyncio.run(start_interrupt_shutdown())
    assert sent == [signal.SIGINT] * (1 + signals_at_shutdown)


def test_socket_folders_of_runners_are_removed_at_exit_or_by_the_next_runner(tmp_path):
    """Each runner keeps its kernels' sockets in a folder of its own: removed when it exits,
    and a killed runner's folder is removed by the next runner on the host."""
    host = socket.gethostname()
    dead = tmp_path / f".mlmlib-ipc.{host}.999999999.ipc"  # no such pid
    dead.mkdir()
    code = "from mlmlib.runs import runner; print(runner._ipc_folder())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "TMPDIR": str(tmp_path)}).stdout.strip()
    assert Path(out).parent == tmp_path and Path(out).name.startswith(f".mlmlib-ipc.{host}.")
    assert not dead.exists() and not Path(out).exists()


def test_the_record_names_the_gpu_the_run_sees_without_importing_torch(tmp_path, monkeypatch):
    """device_info asks nvidia-smi for the first visible GPU; torch is never imported for it."""
    smi = tmp_path / "nvidia-smi"
    smi.write_text('#!/bin/sh\necho "$@" >> "$(dirname "$0")/asked"\n'
                   'case "$*" in *"-i 1"*) echo "GPU One";; *"-i"*) echo "GPU Zero";; *) printf "GPU Zero\\nGPU One\\n";; esac\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert runner.gpu_name(None) == "GPU Zero"
    assert runner.gpu_name("1,0") == "GPU One"
    assert runner.gpu_name("") == "none" and runner.gpu_name("-1") == "none"
    assert (tmp_path / "asked").read_text().count("--query-gpu=name") == 2  # hidden GPUs: not asked
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert runner.gpu_name(None) == "none"  # no nvidia-smi: no GPU
    code = "import sys; from mlmlib.runs import runner; runner.device_info(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_reader_that_stops_early_gets_no_traceback():
    """`python -m mlmlib run --dry-run | head`: the closed pipe ends the listing quietly."""
    proc = subprocess.Popen([sys.executable, "-m", "mlmlib", "run", "--profile", "paper", "--dry-run"],
                            cwd=Path(__file__).resolve().parents[1], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first line is written
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_git_sha_is_dirty_for_changed_code_not_for_changed_run_outputs(tmp_path, monkeypatch):
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    (tmp_path / "book" / "runs" / "cpu").mkdir(parents=True)
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "book" / "runs" / "cpu" / "run.json").write_text("{}\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    monkeypatch.setenv("MLMLIB_ROOT", str(tmp_path))
    clean = runner.git_sha()
    assert len(clean) == 40
    (tmp_path / "book" / "runs" / "cpu" / "run.json").write_text('{"metrics": {}}\n')
    assert runner.git_sha() == clean  # a batch rewriting committed records stays clean
    (tmp_path / "code.py").write_text("x = 2\n")
    assert runner.git_sha() == clean + "-dirty"


def test_records_of_runs_the_plan_dropped_are_removed_before_a_batch(project):
    """A summary reads its notebooks' whole folders: a run dropped from the plan must not stay."""
    root, write_plan = project
    write_plan("notebooks:\n  - notebook: toy\n    grid: {x: [1, 2, 3]}\n")
    assert _cli(root, "run", "--profile", "p").returncode == 0
    folder = root / "book" / "runs" / "p" / "toy"
    write_plan("notebooks:\n  - notebook: toy\n    grid: {x: [1, 2]}\n")
    dry = _cli(root, "run", "--profile", "p", "--dry-run")  # a dry run removes nothing
    assert dry.returncode == 0 and (folder / "x-3.json").exists()
    again = _cli(root, "run", "--profile", "p")
    assert again.returncode == 0 and "2 skipped" in again.stdout
    assert "removing the record toy/x-3" in again.stdout
    assert sorted(p.name for p in folder.glob("x-*")) == ["x-1.ipynb", "x-1.json", "x-2.ipynb",
                                                          "x-2.json"]
