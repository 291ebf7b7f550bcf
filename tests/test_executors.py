"""Executors: runs side by side through submitit give the serial records, in their slots, once each."""

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
from nbformat.v4 import new_code_cell, new_notebook

from mlmlib.runs import executors, plans
from mlmlib.runs.cli import parse_slurm_args
from mlmlib.runs.executors import ExecutorError, Options, check_options, run_with_executor
from mlmlib.runs.plans import PlanError, load_plan
from mlmlib.runs.runner import run_plan

submitit = pytest.importorskip("submitit")

# A run that works in steps with a checkpoint in its work folder, as the training loops do: a
# requeued run resumes after its last finished step. It logs each attempt to `trace`.
STEPS = """
import json, os, time
from pathlib import Path
from mlmlib.runs import records
ckpt = Path(run_dir) / "step.txt"
first = int(ckpt.read_text()) if ckpt.exists() else 0
start = time.time()
with open(trace, "a") as f:
    f.write(json.dumps({"x": x, "first": first, "pid": os.getpid()}) + "\\n")
for step in range(first, steps):
    time.sleep(sleep)
    tmp = ckpt.with_name(".step.tmp")
    tmp.write_text(str(step + 1))
    os.replace(tmp, ckpt)
records.save_metrics(run_dir, {"doubled": 2 * x, "first": first, "start": start, "end": time.time(),
                               "threads": os.environ.get("OMP_NUM_THREADS")})
"""
SUMMARY = """
from mlmlib.runs import records
found = records.record_paths(profile)
records.save_metrics(run_dir, {"records_read": len(found)})
"""


def _notebook(path: Path, params: str, body: str) -> None:
    nb = new_notebook(cells=[new_code_cell(params, metadata={"tags": ["parameters"]}),
                             new_code_cell(body)])
    nb.metadata["kernelspec"] = {"name": "mlmlib", "display_name": "mlmlib", "language": "python"}
    nbformat.write(nb, path)


PLAN = """
notebooks:
  - notebook: work
    grid: {x: [1, 2, 3]}
    params: {sleep: 1.0, steps: 2}
  - notebook: work
    alone: true
    grid: {x: [4]}
    params: {sleep: 1.0, steps: 2}
  - notebook: after
    needs: [work]
    grid: {x: [7]}
    params: {sleep: 0.1, steps: 1}
  - notebook: summary
    params: {profile: PROFILE}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A throwaway project: step notebooks, a summary, and plans p (serial) and q (executors)."""
    nbs = tmp_path / "notebooks"
    (nbs / "plans").mkdir(parents=True)
    (tmp_path / "_config.yml").write_text("title: test\n")
    params = f'x = 1\nsleep = 0.5\nsteps = 2\ntrace = "{tmp_path / "trace.jsonl"}"\nrun_dir = ""'
    _notebook(nbs / "work.ipynb", params, STEPS)
    _notebook(nbs / "after.ipynb", params, STEPS)
    _notebook(nbs / "summary.ipynb", 'profile = "p"\nrun_dir = ""', SUMMARY)
    for profile in ("p", "q"):
        (nbs / "plans" / f"{profile}.yaml").write_text(PLAN.replace("PROFILE", profile))
    monkeypatch.setenv("MLMLIB_ROOT", str(tmp_path))
    plans.notebook_parameters.cache_clear()
    return tmp_path


def _records(root: Path, profile: str) -> dict[str, dict]:
    base = root / "book" / "runs" / profile
    return {f"{p.parent.name}/{p.stem}": json.loads(p.read_text()) for p in base.glob("[!_]*/*.json")}


def _trace(root: Path) -> list[dict]:
    path = root / "trace.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _cli(root: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "MLMLIB_ROOT": str(root)}
    return subprocess.Popen([sys.executable, "-m", "mlmlib", "run", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_plan_order_and_needs_decide_what_waits(project):
    plan = load_plan("q")
    assert [r.slug for r in plan.runs] == ["x-1", "x-2", "x-3", "x-4", "x-7", "run"]
    assert plan.prerequisites(0) == [] and plan.prerequisites(4) == [0, 1, 2, 3]
    assert plan.prerequisites(5) == [0, 1, 2, 3, 4]  # a summary waits for every run above it
    (project / "notebooks" / "plans" / "s.yaml").write_text(
        PLAN.replace("params: {profile: PROFILE}", "needs: [after]\n    params: {profile: s}"))
    assert load_plan("s").prerequisites(5) == [4]  # a summary with `needs` waits for those only
    bad = PLAN.replace("needs: [work]", "needs: [summary]")
    (project / "notebooks" / "plans" / "bad.yaml").write_text(bad)
    with pytest.raises(PlanError, match="needs = \\['summary'\\].*entries above it"):
        load_plan("bad")


def test_in_process_executor_gives_the_serial_records(project, tmp_path):
    assert run_plan(load_plan("p"), log=lambda _: None).ok
    executor = submitit.DebugExecutor(folder=tmp_path / "debug")
    report = run_with_executor(load_plan("q"), Options(executor="local", poll_s=0.05),
                               executor=executor, log=lambda _: None)
    assert report.ok and len(report.done) == 6, report
    serial, parallel = _records(project, "p"), _records(project, "q")
    assert sorted(serial) == sorted(parallel)
    for name, rec in serial.items():
        other = parallel[name]
        if name != "summary/run":  # the same notebook, parameters and code: the same key
            assert rec["key"] == other["key"]
            assert rec["metrics"]["doubled"] == other["metrics"]["doubled"]
    assert parallel["summary/run"]["metrics"]["records_read"] == 5
    assert not list((project / "book" / "runs" / "q" / executors.JOBS).glob("*"))  # job files gone
    # a second driver finds every record and submits nothing
    again = run_with_executor(load_plan("q"), Options(executor="local"), executor=executor,
                              log=lambda _: None)
    assert len(again.skipped) == 6 and not again.done


def test_two_cpu_slots_run_at_most_two_side_by_side(project):
    out, _ = _cli(project, "--profile", "q", "--executor", "local", "--max-parallel", "2").communicate(timeout=300)
    assert "6 ran, 0 skipped, 0 failed" in out, out
    recs = _records(project, "q")
    work = [recs[f"work/x-{x}"] for x in (1, 2, 3)]
    alone = recs["work/x-4"]["metrics"]  # `alone: true`: nothing beside it
    others = [r["metrics"] for name, r in recs.items() if name != "work/x-4"]
    assert all(m["end"] <= alone["start"] or m["start"] >= alone["end"] for m in others if "start" in m)
    spans = [(r["metrics"]["start"], r["metrics"]["end"], r["device"]["slot"]) for r in work]
    for t in sorted(s for s, _, _ in spans):  # how many runs were inside their steps at each start
        inside = [slot for s, e, slot in spans if s <= t < e]
        assert len(inside) <= 2 and len(set(inside)) == len(inside), spans
    assert any(s2 < e1 and s1 < e2 for i, (s1, e1, _) in enumerate(spans) for s2, e2, _ in spans[i + 1:])
    expected_threads = str(max(1, (os.cpu_count() or 1) // 2))
    assert {r["metrics"]["threads"] for r in [*work, recs["work/x-4"]]} == {expected_threads}
    assert {r["device"]["executor"] for r in recs.values()} == {"local"}
    after = recs["after/x-7"]["metrics"]["start"]
    assert after >= max(e for _, e, _ in spans) and after >= alone["end"]  # `needs: [work]` waited for every work run


CHAIN = """
notebooks:
  - notebook: work
    grid: {x: [1]}
    timeout: 100
  - notebook: gate
    grid: {x: [2]}
    timeout: 10
  - notebook: after
    needs: [gate]
    grid: {x: [3]}
    timeout: 200
  - notebook: work
    alone: true
    grid: {x: [4]}
    timeout: 5
"""


def test_the_run_that_gates_the_longest_chain_starts_first(project, tmp_path):
    """A short run that a long one waits for goes before a longer run that nothing waits for; a
    run that must run alone goes first, before anything is in flight."""
    (project / "notebooks" / "gate.ipynb").write_bytes((project / "notebooks" / "work.ipynb").read_bytes())
    (project / "notebooks" / "plans" / "c.yaml").write_text(CHAIN)
    plan = load_plan("c")
    assert executors.chain_times(plan, [None] * 4) == [100.0, 210.0, 200.0, 5.0]  # timeouts
    assert executors.chain_times(plan, [50.0, 5.0, 30.0, 1.0]) == [50.0, 35.0, 30.0, 1.0]  # last times
    assert executors.chain_times(plan, [50.0, None, 30.0, 1.0]) == [50.0, 40.0, 30.0, 1.0]
    executor = submitit.DebugExecutor(folder=tmp_path / "debug")  # one slot: runs in start order
    report = run_with_executor(plan, Options(executor="local", poll_s=0.05), executor=executor,
                               log=lambda _: None)
    assert report.ok, report
    # the run that runs alone while nothing is in flight, then gate, what waits on it, and work
    assert [a["x"] for a in _trace(project)] == [4, 2, 3, 1]


def test_a_requeued_job_resumes_and_leaves_one_record(project):
    """A run stopped by its time limit is requeued by submitit and resumes from its checkpoint."""
    (project / "notebooks" / "plans" / "r.yaml").write_text(
        "notebooks:\n  - notebook: work\n    grid: {x: [1]}\n    params: {sleep: 0.5, steps: 18}\n")
    # 9 s of steps, told to stop after 9 s of an 11 s limit: a job also starts Python, papermill
    # and a kernel (3-5 s here, more on a loaded machine); the 2 s left are for its exit (submitit
    # kills it after those). Each attempt resumes where the last one checkpointed, so a slow start
    # costs an attempt, not the test: eight requeues leave room for several slow starts.
    options = Options(executor="local", time_min=11 / 60, signal_delay_s=2, max_requeue=8, poll_s=0.2)
    report = run_with_executor(load_plan("r"), options, log=print)
    assert report.ok, report
    attempts = _trace(project)
    assert len(attempts) >= 2 and attempts[-1]["first"] > 0, attempts  # requeued, resumed
    assert len({a["pid"] for a in attempts}) == len(attempts)  # each attempt its own kernel
    records_of = sorted((project / "book" / "runs" / "r").rglob("x-1*.json"))
    assert [p.name for p in records_of] == ["x-1.json"]
    assert not list((project / "book" / "runs" / "r").glob("_failed/*"))


def test_a_restarted_driver_adopts_live_jobs_and_submits_nothing_twice(project):
    first = _cli(project, "--profile", "q", "--executor", "local", "--max-parallel", "2")
    jobs = project / "book" / "runs" / "q" / executors.JOBS
    deadline = time.time() + 120
    while len(list(jobs.glob("work__x-[123].json"))) < 2 and time.time() < deadline:  # x-4 runs alone, first
        time.sleep(0.2)
    first.send_signal(signal.SIGKILL)  # the driver dies; its two local jobs go on
    first.wait()
    out, _ = _cli(project, "--profile", "q", "--executor", "local", "--max-parallel", "2").communicate(timeout=300)
    assert out.count(" adopt ") == 2, out
    assert "0 failed" in out, out
    runs_started = [a["x"] for a in _trace(project)]
    assert sorted(runs_started) == [1, 2, 3, 4, 7], runs_started  # each run executed once
    assert sorted(_records(project, "q")) == ["after/x-7", "summary/run", "work/x-1", "work/x-2",
                                              "work/x-3", "work/x-4"]


@pytest.mark.parametrize("args, message", [
    (["--executor", "cloud"], "--executor 'cloud': unknown; allowed"),
    (["--executor", "local", "--gpus", "7"], "--gpus 7: this machine has"),
    (["--executor", "local", "--gpus", "a"], "--gpus 'a': give GPU numbers"),
    (["--executor", "local", "--partition", "gpu"], "--partition: SLURM options"),
    (["--max-parallel", "2"], "--max-parallel: the serial executor"),
    (["--executor", "local", "--max-parallel", "-1"], "--max-parallel -1"),
])
def test_bad_executor_options_stop_before_anything_runs(project, args, message):
    out, _ = _cli(project, "--profile", "q", *args).communicate(timeout=120)
    assert message in out, out
    assert not (project / "book" / "runs" / "q").exists()


def test_slurm_without_sbatch_is_refused(project, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ExecutorError, match="no `sbatch`"):
        check_options(Options(executor="slurm"), load_plan("q"))


# ---------------------------------------------------------------- GPUs per run, SLURM options,
# squeue polling, frozen keys and locks: unit tests that need no SLURM (sbatch/squeue mocked)


@pytest.fixture
def fake_slurm(monkeypatch):
    """sbatch and squeue 'on PATH' and an sbatch that knows a few options: no cluster needed."""
    monkeypatch.setattr(executors.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(executors, "sbatch_options",
                        lambda: {"account", "qos", "constraint", "exclusive", "gres", "mail-type",
                                 "partition", "time", "mem"})


@pytest.mark.parametrize("gpus", [2, 8])
def test_several_gpus_per_run_are_refused_with_the_reason(project, fake_slurm, gpus):
    with pytest.raises(ExecutorError, match=f"--gpus-per-run {gpus}: one run trains on one GPU"):
        check_options(Options(executor="slurm", gpus_per_run=gpus), load_plan("q"))
    plan = load_plan("q")
    plan.slurm = {"gpus_per_run": gpus}  # the plan's `slurm:` is held to the same rule
    with pytest.raises(ExecutorError, match="one run per GPU side by side"):
        check_options(Options(executor="slurm"), plan)
    assert check_options(Options(executor="slurm", gpus_per_run=1), load_plan("q")).gpus_per_run == 1


def test_slurm_args_and_setup_reach_the_sbatch_script(project, fake_slurm):
    options = check_options(Options(
        executor="slurm", gpus_per_run=1, partition="gpu",
        slurm_args=parse_slurm_args(["account=proj42", "qos=high", "exclusive"]),
        slurm_setup=["module load cuda/12.4", "source /opt/env.sh"]), load_plan("q"))
    script = executors.make_executor(options, "q")._make_submission_file_text("python job.py", "u1")
    for line in ("#SBATCH --account=proj42", "#SBATCH --qos=high", "#SBATCH --exclusive",
                 "#SBATCH --partition=gpu", "#SBATCH --gpus-per-node=1"):
        assert line in script, script
    setup = script.index("module load cuda/12.4")
    assert setup < script.index("source /opt/env.sh") < script.index("python job.py")


def test_plan_slurm_args_and_setup_are_used_and_the_command_line_wins(project, fake_slurm):
    plan = load_plan("q")
    plan.slurm = {"args": {"account": "planned", "qos": "low"}, "setup": ["module load planned"]}
    options = check_options(Options(executor="slurm", slurm_args={"qos": "high"}), plan)
    assert options.slurm_args == {"account": "planned", "qos": "high"}
    assert options.slurm_setup == ["module load planned"]


@pytest.mark.parametrize("args, message", [
    (["account"], None),  # a flag: accepted
    (["=x"], "--slurm-arg '=x': give key=value"),
    (["account="], "--slurm-arg 'account=': give key=value"),
    (["mail_type=END"], "--slurm-arg 'mail_type': an sbatch long option without its dashes"),
    (["partition=gpu"], "--slurm-arg partition: set by the executor \\(--partition\\)"),
    (["time=10"], "--slurm-arg time: set by the executor \\(--time-min\\)"),
    (["gpus-per-node=2"], "--slurm-arg gpus-per-node: set by the executor"),
    (["acount=proj42"], "--slurm-arg acount: this cluster's sbatch has no --acount option; similar: \\['account'\\]"),
    (["gres=gpu:a100:2"], "gres=gpu:a100:2: one run trains on one GPU"),
    (["gres=gpu:1"], None),
])
def test_bad_slurm_args_stop_at_submit_time(project, fake_slurm, args, message):
    options = Options(executor="slurm", slurm_args=parse_slurm_args(args)) \
        if not args[0].startswith("=") and not args[0].endswith("=") else None
    if options is None:
        with pytest.raises(ExecutorError, match=message):
            parse_slurm_args(args)
        return
    if message is None:
        check_options(options, load_plan("q"))
        return
    with pytest.raises(ExecutorError, match=message):
        check_options(options, load_plan("q"))


def test_slurm_options_need_the_slurm_executor(project):
    with pytest.raises(ExecutorError, match="--slurm-arg: SLURM options"):
        check_options(Options(executor="local", slurm_args={"account": "x"}), load_plan("q"))
    with pytest.raises(ExecutorError, match="--slurm-setup: SLURM options"):
        check_options(Options(executor="local", slurm_setup=["module load x"]), load_plan("q"))
    with pytest.raises(ExecutorError, match="one non-empty shell line"):
        executors.check_setup(["  "])


def test_the_sbatch_options_are_read_from_sbatch_help(monkeypatch):
    help_text = "Usage: sbatch [OPTIONS...]\n  -A, --account=name   charge job\n      --qos=qos\n"
    monkeypatch.setattr(executors.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a, 0, stdout=help_text, stderr=""))
    assert {"account", "qos"} <= executors.sbatch_options()


class _Squeue:
    """A stand-in for subprocess.run answering `squeue` calls; it counts them."""

    def __init__(self, stdout="", returncode=0, stderr=""):
        self.calls, self.stdout, self.returncode, self.stderr = [], stdout, returncode, stderr

    def __call__(self, cmd, **kwargs):
        self.calls.append(cmd)
        return subprocess.CompletedProcess(cmd, self.returncode, stdout=self.stdout, stderr=self.stderr)


def test_one_squeue_call_answers_for_every_slurm_job(monkeypatch):
    squeue = _Squeue("12 RUNNING\n13 PENDING\n15 COMPLETED\n")
    monkeypatch.setattr(executors.subprocess, "run", squeue)
    infos = [{"executor": "slurm", "job_id": j} for j in ("12", "13", "14", "15")]
    local = {"executor": "local", "job_id": str(os.getpid()), "host": executors.socket.gethostname()}
    assert executors.jobs_alive([*infos, local]) == [True, True, False, False, True]
    assert len(squeue.calls) == 1 and squeue.calls[0][-1] == "12,13,14,15", squeue.calls


def test_squeue_errors_never_count_a_job_as_ended_unless_slurm_says_so(monkeypatch):
    busy = _Squeue(returncode=1, stderr="slurm_load_jobs error: Socket timed out")
    monkeypatch.setattr(executors.subprocess, "run", busy)
    assert executors.slurm_alive(["1", "2"]) == {"1": True, "2": True}  # ask again later
    gone = _Squeue(returncode=1, stderr="slurm_load_jobs error: Invalid job id specified")
    monkeypatch.setattr(executors.subprocess, "run", gone)
    assert executors.slurm_alive(["7"]) == {"7": False}
    assert executors.slurm_alive([]) == {} and len(gone.calls) == 1


def test_a_job_whose_code_changed_after_submission_keeps_its_checkpoints(project):
    """A requeued attempt that finds another key (the tree was edited) runs nothing and deletes
    nothing: the first attempt's checkpoints stay where a restored tree resumes them."""
    from mlmlib.runs import runner

    plan = load_plan("q")
    run = plan.runs[0]
    old_key = "0123456789abcdef"
    kept = runner.work_folder("q", run, old_key)
    kept.mkdir(parents=True)
    (kept / "step.txt").write_text("5")
    outcome = executors.RunJob()("q", None, runner.run_name(run), False, {}, old_key)
    assert outcome["status"] == "failed" and "changed after its job was submitted" in outcome["error"]
    assert str(kept) in outcome["error"] and "it had no code snapshot" in outcome["error"]
    assert (kept / "step.txt").read_text() == "5"
    assert not _trace(project) and not _records(project, "q")  # the notebook never ran


def test_the_submitted_key_travels_with_the_job(project, tmp_path):
    executor = submitit.DebugExecutor(folder=tmp_path / "debug")
    seen = []
    real_submit = executor.submit

    def submit(fn, *args):
        seen.append(args)
        return real_submit(fn, *args)

    executor.submit = submit
    report = run_with_executor(load_plan("q"), Options(executor="local", poll_s=0.05),
                               executor=executor, log=lambda _: None, only=None)
    assert report.ok, report
    from mlmlib.runs import runner

    plan = load_plan("q")
    keys = {args[2]: args[5] for args in seen}
    for i, run in enumerate(plan.runs):
        assert keys[runner.run_name(run)] == runner.run_key(plan, i)


MOUNTS = """proc /proc proc rw 0 0
server:/export /shared nfs rw,vers=3,local_lock=all,addr=10.0.0.1 0 0
server:/export2 /shared/ok nfs4 rw,vers=4.2 0 0
lfs@o2ib:/scratch /scratch lustre rw,localflock 0 0
"""


@pytest.mark.parametrize("folder, message", [
    ("/shared/me/.work", "its mount /shared \\(nfs, local_lock=all\\) keeps file locks on one node"),
    ("/scratch/me/.work", "its mount /scratch \\(lustre, localflock\\)"),
    ("/shared/ok/me/.work", None),
])
def test_a_work_folder_whose_locks_stay_on_one_node_is_refused(folder, message):
    if message is None:
        executors.check_shared_locks(Path(folder), MOUNTS)
        return
    with pytest.raises(ExecutorError, match=message + ".*MLMLIB_WORK"):
        executors.check_shared_locks(Path(folder), MOUNTS)


def test_flock_is_probed_on_the_real_work_folder(tmp_path, monkeypatch):
    executors.check_shared_locks(tmp_path / "not-yet" / ".work")  # works here; nothing left behind
    assert not list(tmp_path.iterdir())

    def no_locks(*_):
        raise OSError(executors.errno.ENOLCK, "No locks available")

    monkeypatch.setattr(executors.fcntl, "flock", no_locks)
    with pytest.raises(ExecutorError, match="flock fails on its mount .*No locks available"):
        executors.check_shared_locks(tmp_path)


# ---------------------------------------------------------------- SLURM's edges: a refused sbatch,
# the job states, jobs the cluster ends without a word (a driver with a stand-in for submitit)

SLURM_STATES = {"BOOT_FAIL", "CANCELLED", "COMPLETED", "CONFIGURING", "COMPLETING", "DEADLINE", "FAILED",
                "NODE_FAIL", "OUT_OF_MEMORY", "PENDING", "PREEMPTED", "RUNNING", "RESV_DEL_HOLD",
                "REQUEUE_FED", "REQUEUE_HOLD", "REQUEUED", "RESIZING", "REVOKED", "SIGNALING",
                "SPECIAL_EXIT", "STAGE_OUT", "STOPPED", "SUSPENDED", "TIMEOUT"}  # squeue's job state codes


def test_every_slurm_job_state_is_live_or_ended():
    assert executors.SLURM_LIVE | executors.SLURM_ENDED == SLURM_STATES
    assert not executors.SLURM_LIVE & executors.SLURM_ENDED
    assert executors.SLURM_RESUBMIT <= executors.SLURM_ENDED


def test_held_and_unknown_states_count_as_live(monkeypatch):
    squeue = _Squeue("1 SPECIAL_EXIT\n2 RESV_DEL_HOLD\n3 SOME_NEW_STATE\n4 PREEMPTED\n5 OUT_OF_MEMORY\n")
    monkeypatch.setattr(executors.subprocess, "run", squeue)
    assert executors.slurm_alive(["1", "2", "3", "4", "5", "6"]) == {
        "1": True, "2": True, "3": True, "4": False, "5": False, "6": False}


def test_sacct_gives_an_ended_jobs_last_state(monkeypatch):
    sacct = _Squeue("7|PREEMPTED\n8|CANCELLED by 1234\n8|CANCELLED by 0\n99|COMPLETED\n")
    monkeypatch.setattr(executors.subprocess, "run", sacct)
    assert executors.slurm_end_states(["7", "8", "9"]) == {"7": "PREEMPTED", "8": "CANCELLED by 0"}
    assert sacct.calls[0][:2] == ["sacct", "-n"] and sacct.calls[0][-1] == "7,8,9"
    off = _Squeue(returncode=1, stderr="Slurm accounting storage is disabled")
    monkeypatch.setattr(executors.subprocess, "run", off)
    assert executors.slurm_end_states(["7"]) == {}


class _Cluster:
    """A stand-in for submitit's SlurmExecutor, squeue and sacct: sbatch refuses the runs named
    in `refuse` with a QOS message; each other job 'runs' at once and writes its outcome, unless
    `ends[name]` still lists states: then it ends silently and sacct gives the next state."""

    def __init__(self, monkeypatch, refuse=(), ends=None):
        from submitit.core.utils import FailedJobError

        self.failed_job_error, self.refuse, self.ends = FailedJobError, set(refuse), dict(ends or {})
        self.parameters: dict = {}
        self.submitted: list[tuple[str, str, str]] = []  # (run, job id, key)
        self.state: dict[str, str] = {}
        real = subprocess.run

        def run(cmd, **kwargs):
            if cmd[0] == "squeue":  # every job here has ended: squeue no longer lists it
                return subprocess.CompletedProcess(cmd, 0, stdout="", stderr="")
            if cmd[0] == "sacct":
                rows = [f"{j}|{self.state[j]}" for j in cmd[-1].split(",") if j in self.state]
                return subprocess.CompletedProcess(cmd, 0, stdout="\n".join(rows), stderr="")
            return real(cmd, **kwargs)

        monkeypatch.setattr(executors.subprocess, "run", run)
        monkeypatch.setattr(executors, "SLURM_POLL_S", 0.0)

    def update_parameters(self, **params):
        self.parameters.update(params)

    def submit(self, fn, profile, only, name, force, env, key):
        if name in self.refuse:
            raise self.failed_job_error(
                "sbatch: error: QOSMaxSubmitJobPerUserLimit\nsbatch: error: Batch job submission "
                "failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)")
        job_id = str(1000 + len(self.submitted))
        self.submitted.append((name, job_id, key))
        if self.ends.get(name):
            self.state[job_id] = self.ends[name].pop(0)  # ended silently: no outcome
        else:
            self.state[job_id] = "COMPLETED"
            executors.write_json(executors.job_file(profile, name, "outcome"), {"status": "done", "seconds": 1.0})
        return type("Job", (), {"job_id": job_id, "done": lambda self: True})()


def _drive(cluster, max_requeue=3):
    lines: list[str] = []
    report = run_with_executor(load_plan("q"), Options(executor="slurm", poll_s=0.0, max_requeue=max_requeue),
                               executor=cluster, log=lines.append)
    return report, "\n".join(lines)


def test_a_refused_submission_fails_that_run_with_sbatchs_message_and_the_driver_goes_on(project, monkeypatch):
    cluster = _Cluster(monkeypatch, refuse={"work/x-2"})
    report, out = _drive(cluster)
    assert sorted(report.done) == ["summary/run", "work/x-1", "work/x-3", "work/x-4"], out
    error = report.failed["work/x-2"]
    assert error.startswith("not submitted, slurm refused the job: sbatch: error: QOSMaxSubmitJobPerUserLimit; ")
    assert "Job violates accounting/QOS policy" in error and "--max-parallel" in error
    assert report.failed["after/x-7"] == "not run: it needs work/x-2, which failed"
    assert "FAIL work/x-2: not submitted" in out
    assert "work/x-2" not in [name for name, _, _ in cluster.submitted]
    assert not executors.job_file("q", "work/x-2").exists()


@pytest.mark.parametrize("state", ["PREEMPTED", "NODE_FAIL", "CANCELLED by OTHER"])
def test_a_job_the_cluster_ended_is_submitted_again_under_its_first_key(project, monkeypatch, state):
    state = state.replace("OTHER", str(os.getuid() + 1))  # an administrator, or SLURM's preemption
    cluster = _Cluster(monkeypatch, ends={"work/x-1": [state, state]})
    report, out = _drive(cluster)
    assert report.ok and "work/x-1" in report.done, out
    tries = [(job, key) for name, job, key in cluster.submitted if name == "work/x-1"]
    assert len(tries) == 3 and len({key for _, key in tries}) == 1  # the same key each time
    assert out.count("was stopped by the cluster; submitting it again") == 2
    assert "(again, 2 of at most 3)" in out


def test_resubmissions_are_bounded_by_max_requeue(project, monkeypatch):
    cluster = _Cluster(monkeypatch, ends={"work/x-1": ["PREEMPTED"] * 5})
    report, _ = _drive(cluster, max_requeue=1)
    assert len([n for n, _, _ in cluster.submitted if n == "work/x-1"]) == 2
    last = [job for name, job, _ in cluster.submitted if name == "work/x-1"][-1]
    assert report.failed["work/x-1"] == (
        f"job {last} ended PREEMPTED without reporting, submitted 1 time(s) again already "
        f"(--max-requeue 1); its log: .work/q/_submitit/{last}/")


@pytest.mark.parametrize("state, message", [
    ("CANCELLED by UID", "was cancelled by you (CANCELLED by UID); not submitted again"),
    ("OUT_OF_MEMORY", "ended OUT_OF_MEMORY without reporting; its log: "),
    ("TIMEOUT", "ended TIMEOUT without reporting; its log: "),
    (None, "ended without reporting (killed or lost); its log: "),  # sacct has no state for it
])
def test_a_job_that_ended_for_its_own_reasons_is_reported_with_its_state(project, monkeypatch, state, message):
    state = state and state.replace("UID", str(os.getuid()))
    cluster = _Cluster(monkeypatch, ends={"work/x-3": [state or "-"]})
    if state is None:
        cluster.state = type("NoAccounting", (dict,), {"__contains__": lambda self, k: False})()
    report, _ = _drive(cluster)
    assert len([n for n, _, _ in cluster.submitted if n == "work/x-3"]) == 1
    assert message.replace("UID", str(os.getuid())) in report.failed["work/x-3"], report.failed


def test_slurm_jobs_run_a_code_snapshot_or_the_driver_says_why_not(project, monkeypatch):
    """One snapshot for the submission, named in each job script; the keys are the tree's (the
    same code). Without one (the copy failed), the driver says so and the scripts are as before."""
    from mlmlib.runs import runner, snapshot

    cluster = _Cluster(monkeypatch)
    report, out = _drive(cluster)
    assert report.ok, out
    [code] = (project / ".work" / snapshot.SNAPSHOTS).iterdir()
    assert f"code snapshot {code}: the jobs run it" in out
    assert any(f"cd {code};" in line for line in cluster.parameters["setup"])
    plan = load_plan("q")
    keys = {name: key for name, _, key in cluster.submitted}
    assert keys == {runner.run_name(r): runner.run_key(plan, i) for i, r in enumerate(plan.runs)}

    def refuse():
        raise OSError("[Errno 28] No space left on device")

    monkeypatch.setattr(snapshot, "take", refuse)
    cluster = _Cluster(monkeypatch)
    report, out = _drive(cluster)
    assert report.ok and "no code snapshot ([Errno 28] No space left on device)" in out, out
    assert cluster.parameters["setup"] == []
