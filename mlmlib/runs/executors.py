"""Run a plan's runs side by side through submitit: local slots (CPU or GPUs) or a SLURM cluster.

The driver (this process) decides what runs, as the serial batch does: the records on disk say
which runs are finished. It submits a run once the runs it waits for have finished (a summary
waits for every run above it, a fine-tuning entry for the entries it `needs`), keeps each
job's id beside the records (`<profile>/_jobs/`) so that a restarted driver adopts a live job
instead of submitting it twice, and frees the job's slot when it ends. A job executes one run
with the serial batch's code (`runner.execute_run`) and writes its record atomically.

submitit does the process and scheduler work: local subprocesses, `sbatch`, and the requeue of
a job stopped by its time limit or by preemption (a checkpointable job is submitted again and
the notebook resumes from the training checkpoint in its work folder). We add what submitit
does not know: the plan's order, slots, threads per run and the job files.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from mlmlib.atomic import pid_alive, remove_dead_temps, write_json
from mlmlib.paths import runs_dir, work_dir
from mlmlib.runs import runner
from mlmlib.runs.plans import Plan, is_summary, load_plan

EXECUTORS = ("serial", "local", "slurm")
JOBS = "_jobs"
SLURM_KEYS = {"partition", "time_min", "cpus_per_run", "mem_gb", "gpus_per_run", "max_parallel"}
# squeue states of a job that is not over yet (a requeued job goes back to PENDING)
SLURM_LIVE = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "REQUEUE_HOLD",
              "REQUEUE_FED", "RESIZING", "SUSPENDED", "SIGNALING", "STAGE_OUT", "STOPPED"}
EXTRA = "extra"  # an adopted job beyond the slots a restarted driver was given: not a slot
LOCAL_TIME_MIN = 7 * 24 * 60  # local jobs are not killed for time: each cell has its own timeout


class ExecutorError(ValueError):
    """Executor options that cannot work here: names the option and what is allowed."""


@dataclass
class Options:
    """How to execute a plan: which executor, its slots, and SLURM's resources per run."""

    executor: str = "serial"
    gpus: tuple[int, ...] = ()  # local: one run per listed GPU at a time
    max_parallel: int = 0  # local CPU: runs side by side (0: 1); slurm: jobs in flight (0: no cap)
    partition: str | None = None
    time_min: float | None = None  # time limit of one job (local or slurm); a longer run is requeued
    cpus_per_run: int | None = None
    mem_gb: float | None = None
    gpus_per_run: int | None = None
    max_requeue: int = 3  # timeouts a run may be requeued after (preemptions do not count)
    signal_delay_s: int = 60  # the job is told this long before its time limit (to stop cleanly)
    poll_s: float = 2.0


@dataclass
class Flight:
    """A submitted run: its job (None when adopted from an earlier driver), slot and job file."""

    index: int
    job: Any
    slot: str
    info: dict
    started: float = field(default_factory=time.time)


def check_options(options: Options, plan: Plan) -> Options:
    """Validate the options against the machine and the plan; fill SLURM's from the plan's `slurm:`."""
    if options.executor not in EXECUTORS:
        raise ExecutorError(f"--executor {options.executor!r}: unknown; allowed: {list(EXECUTORS)}")
    if options.max_parallel < 0:
        raise ExecutorError(f"--max-parallel {options.max_parallel}: give 0 (default) or more")
    slurm_given = [k for k in ("partition", "cpus_per_run", "mem_gb", "gpus_per_run")
                   if getattr(options, k) is not None]
    if options.executor != "slurm" and slurm_given:
        raise ExecutorError(f"{', '.join('--' + k.replace('_', '-') for k in slurm_given)}: "
                            "SLURM options; use them with --executor slurm")
    if options.gpus and options.executor != "local":
        raise ExecutorError("--gpus: GPU slots of --executor local (SLURM: --gpus-per-run)")
    if options.executor == "serial" and options.max_parallel > 1:
        raise ExecutorError("--max-parallel: the serial executor runs one run at a time; "
                            "use --executor local")
    if options.gpus:
        import torch

        have = torch.cuda.device_count()
        missing = [g for g in options.gpus if not 0 <= g < have]
        if missing or len(set(options.gpus)) != len(options.gpus):
            raise ExecutorError(f"--gpus {','.join(map(str, options.gpus))}: this machine has {have} "
                                f"GPU(s) (0..{have - 1} as torch sees them); list each once")
        if options.max_parallel:
            raise ExecutorError("--max-parallel with --gpus: the GPU list sets the slots")
    if options.executor == "slurm":
        if shutil.which("sbatch") is None or shutil.which("squeue") is None:
            raise ExecutorError("--executor slurm: no `sbatch`/`squeue` on PATH; run on a SLURM "
                                "login node (or scripts/slurm_local.sh up for a one-node test cluster)")
        unknown = set(plan.slurm) - SLURM_KEYS
        if unknown:
            raise ExecutorError(f"{plan.path.name}: slurm: unknown key(s) {sorted(unknown)}; "
                                f"allowed: {sorted(SLURM_KEYS)}")
        for key in SLURM_KEYS:  # the command line wins over the plan
            if getattr(options, key) in (None, 0) and plan.slurm.get(key) is not None:
                setattr(options, key, plan.slurm[key])
    if options.time_min is not None and options.time_min <= 0:
        raise ExecutorError(f"--time-min {options.time_min}: give a positive number of minutes")
    if options.time_min is not None and options.executor == "serial":
        raise ExecutorError("--time-min: a job time limit of --executor local or slurm")
    if options.max_requeue < 0:
        raise ExecutorError(f"--max-requeue {options.max_requeue}: give 0 or more")
    return options


def slots_of(options: Options, n_runs: int) -> list[str]:
    """The slots runs are placed in: one per GPU, N CPU slots, or (SLURM) as many jobs as allowed."""
    if options.gpus:
        return [f"gpu{g}" for g in options.gpus]
    if options.executor == "slurm":
        return [f"job{k}" for k in range(options.max_parallel or max(n_runs, 1))]
    return [f"cpu{k}" for k in range(max(options.max_parallel, 1))]


def threads_per_run(options: Options) -> int:
    """Torch threads for each run, so that the runs side by side do not oversubscribe the cores."""
    if options.executor == "slurm":
        return options.cpus_per_run or 1
    cores = os.cpu_count() or 1
    return max(1, cores // max(len(options.gpus) or options.max_parallel, 1))


def make_executor(options: Options, profile: str):
    """The submitit executor: LocalExecutor or SlurmExecutor, logs under the profile's work folder."""
    try:
        import submitit
    except ImportError:
        raise ExecutorError(f"--executor {options.executor}: needs submitit; "
                            "pip install -e '.[cluster]' (make installs it)") from None

    folder = work_dir() / profile / "_submitit" / "%j"
    if options.executor == "local":
        executor = submitit.LocalExecutor(folder=folder, max_num_timeout=options.max_requeue)
        executor.update_parameters(timeout_min=options.time_min or LOCAL_TIME_MIN,
                                   signal_delay_s=options.signal_delay_s)
        return executor
    executor = submitit.SlurmExecutor(folder=folder, max_num_timeout=options.max_requeue)
    params: dict[str, Any] = {"time": math.ceil(options.time_min or 24 * 60), "ntasks_per_node": 1,
                              "cpus_per_task": options.cpus_per_run or 1,
                              "signal_delay_s": options.signal_delay_s}
    if options.partition:
        params["partition"] = options.partition
    if options.mem_gb:
        params["mem"] = f"{int(options.mem_gb * 1024)}M"
    if options.gpus_per_run:
        params["gpus_per_node"] = options.gpus_per_run
    executor.update_parameters(**params)
    return executor


class RunJob:
    """One run of a plan as a submitit job; submitit requeues it (checkpoint) after a timeout."""

    def __call__(self, profile: str, only: list[str] | None, name: str, force: bool,
                 env: dict[str, str]) -> dict:
        os.environ.update(env)
        os.environ["MLMLIB_JOB_ID"] = _job_id_here()
        plan = load_plan(profile, only)
        i = [runner.run_name(r) for r in plan.runs].index(name)
        run = plan.runs[i]
        key = runner.run_key(plan, i)
        # the notebook an earlier attempt of this job was writing when SLURM or a timeout killed it
        remove_dead_temps(runner.record_path(profile, run).with_suffix(".ipynb"), "ipynb")
        if not force and runner.has_record(profile, run, key):
            outcome = {"status": "skipped", "seconds": 0.0}
        else:
            seconds, error = runner.execute_run(profile, run, key, runner.code_version(run.notebook))
            outcome = {"status": "failed" if error else "done", "seconds": round(seconds, 2),
                       "error": error}
        write_json(job_file(profile, name, "outcome"), outcome)
        return outcome

    def checkpoint(self, *args: Any, **kwargs: Any):
        """Called by submitit before a requeue: stop the kernel, submit the same run again (the
        notebook resumes from its work folder's checkpoint)."""
        from submitit.helpers import DelayedSubmission

        runner.kill_live_kernels()
        return DelayedSubmission(self, *args, **kwargs)


def _job_id_here() -> str:
    """The id of the job this process runs in (SLURM's or submitit's local one), or ''."""
    return os.environ.get("SLURM_JOB_ID") or os.environ.get("SUBMITIT_LOCAL_JOB_ID") or ""


def job_file(profile: str, name: str, kind: str = "job") -> Path:
    """`_jobs/<notebook>__<slug>.json` (the job's id, written by the driver) or `.outcome.json`."""
    stem = name.replace("/", "__")
    return runs_dir(profile) / JOBS / (f"{stem}.json" if kind == "job" else f"{stem}.outcome.json")


def job_alive(info: dict) -> bool:
    """True when the job a job file names has not ended (asked of SLURM, or of this host)."""
    if info.get("executor") == "slurm":
        asked = subprocess.run(["squeue", "-h", "-j", str(info["job_id"]), "-o", "%T"],
                               capture_output=True, text=True, check=False)
        if asked.returncode != 0:  # a job SLURM no longer knows has ended; any other error:
            return "Invalid job id" not in asked.stderr  # ask again later, never resubmit it
        state = asked.stdout.split()
        return bool(state) and state[0] in SLURM_LIVE
    if info.get("host") != socket.gethostname():
        return True  # a local job of another host: we cannot tell; never submit it twice
    return str(info.get("job_id", "")).isdigit() and pid_alive(int(info["job_id"]))


def run_with_executor(plan: Plan, options: Options, force: bool = False, log=print,
                      executor: Any = None, only: list[str] | None = None) -> runner.BatchReport:
    """Execute a plan's pending runs through submitit, side by side where the plan allows.

    `executor`: a submitit executor to use instead of the one the options name (tests pass
    submitit's in-process DebugExecutor).
    """
    runner._check_kernel()
    executor = executor if executor is not None else make_executor(options, plan.profile)
    report = runner.BatchReport()
    n, profile = len(plan.runs), plan.profile
    names = [runner.run_name(r) for r in plan.runs]
    versions = {nb: runner.code_version(nb) for nb in {r.notebook for r in plan.runs}}
    threads = threads_per_run(options)
    free = slots_of(options, n)
    state = _initial_state(plan, versions, force)
    for i in (i for i, s in enumerate(state) if s == "skipped"):
        log(f"[{i + 1}/{n}] skip {names[i]}: finished record exists")
        report.skipped.append(names[i])
    flights: dict[int, Flight] = {}
    for i in (i for i, s in enumerate(state) if s == "pending"):  # jobs of an earlier driver
        info = _read_json(job_file(profile, names[i]))
        if info and job_alive(info):
            slot = info.get("slot") if info.get("slot") in free else (free[0] if free else EXTRA)
            if slot in free:
                free.remove(slot)
            flights[i], state[i] = Flight(i, None, slot, info), "running"
            log(f"[{i + 1}/{n}] adopt {names[i]}: job {info['job_id']} ({info['executor']}) still runs")
    chain = chain_times(plan, [runner.last_wall_time(plan, r) for r in plan.runs])
    last_beat = time.time()
    while any(s in ("pending", "running") for s in state):
        for i, flight in list(flights.items()):
            if flight.job is not None and options.executor != "slurm":
                over = flight.job.done()
            else:
                over = not job_alive(flight.info)
            if not over:
                continue
            del flights[i]
            if flight.slot != EXTRA:
                free.append(flight.slot)
            state[i] = _settle(profile, names[i], flight, report, log, f"[{i + 1}/{n}]")
        for i in [i for i, s in enumerate(state) if s == "pending"]:
            waits = plan.prerequisites(i)
            if any(state[j] in ("pending", "running") for j in waits):
                continue
            # a summary runs after failed runs too (it shows what finished); a `needs` entry does not
            broken = [names[j] for j in waits
                      if state[j] == "failed" and not is_summary(plan.runs[i].notebook)]
            if broken:
                state[i] = "failed"
                report.failed[names[i]] = f"not run: it needs {broken[0]}, which failed"
                log(f"[{i + 1}/{n}] FAIL {names[i]}: {report.failed[names[i]]}")
        ready = sorted((i for i, s in enumerate(state) if s == "pending"
                        and all(state[j] not in ("pending", "running") for j in plan.prerequisites(i))),
                       key=lambda i: (not plan.runs[i].alone, -chain[i], i))
        # a run that runs alone goes first while nothing is in flight (at the start, mostly): later
        # it would wait for both slots to drain; then the longest chain first, so the batch ends sooner
        for i in ready:  # a run that measures time runs alone (local), with the same threads:
            # two threads of one run stall whenever another process takes a core (B2 at
            # ELECTRA-small size, alone with 2 threads beside `yes`: 3x its quiet time)
            local = options.executor == "local"
            if not free or (local and any(plan.runs[f.index].alone for f in flights.values())):
                break
            alone = plan.runs[i].alone and local
            if alone and flights:
                continue  # it starts once the runs in flight have ended
            flights[i] = _submit(executor, options, plan, i, free.pop(0), threads, force, only, log)
            state[i] = "running"
        if time.time() - last_beat >= runner.HEARTBEAT_S and flights:
            last_beat = time.time()
            for flight in flights.values():
                last = runner._last_line(runs_dir(profile) / runner.LOGS / f"{names[flight.index].replace('/', '__')}.log")
                log(f"      ... {names[flight.index]}: {time.time() - flight.started:.0f} s"
                    + (f" | {last}" if last else ""))
        if flights:  # SLURM is asked about each job at most every 10 s
            time.sleep(max(options.poll_s, 10.0) if options.executor == "slurm" else options.poll_s)
    return report


def chain_times(plan: Plan, last: list[float | None]) -> list[float]:
    """For each run, its expected seconds plus the longest chain of runs that wait on it.

    Started in this order (critical path first), the runs a batch must do one after another
    begin early: in smoke, A2's one minute gates A3's nine, and ordering by a run's own time
    left A2 behind C2's seeds and A3 alone on one core at the end. A run never timed counts
    as its timeout: an upper bound whose ratio to the real time differs between notebooks, so
    a first batch (no records yet) is ordered roughly, later ones by measured times.
    """
    own = [t if t is not None else float(run.timeout) for t, run in zip(last, plan.runs)]
    waiting: list[list[int]] = [[] for _ in plan.runs]
    for j in range(len(plan.runs)):
        for i in plan.prerequisites(j):
            waiting[i].append(j)
    chain = [0.0] * len(plan.runs)
    for i in reversed(range(len(plan.runs))):  # a run waits only on runs above it
        chain[i] = own[i] + max((chain[j] for j in waiting[i]), default=0.0)
    return chain


def _initial_state(plan: Plan, versions: dict[str, str], force: bool) -> list[str]:
    """'pending' or 'skipped' for each run, from the records on disk (as the serial batch decides).

    A summary is pending when any run it reads is pending: its key changes once they finish.
    """
    state: list[str] = []
    for i, run in enumerate(plan.runs):
        if force or (is_summary(run.notebook) and "pending" in (state[j] for j in plan.prerequisites(i))):
            state.append("pending")
        else:
            finished = runner.has_record(plan.profile, run, runner.run_key(plan, i, versions))
            state.append("skipped" if finished else "pending")
    return state


def _submit(executor, options: Options, plan: Plan, i: int, slot: str, threads: int, force: bool,
            only: list[str] | None, log) -> Flight:
    """Submit run i into a slot; write its job file (the driver's memory across restarts)."""
    name = runner.run_name(plan.runs[i])
    env = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "MLMLIB_EXECUTOR": options.executor, "MLMLIB_SLOT": slot}
    if slot.startswith("gpu"):  # the job sees only its GPU
        executor.update_parameters(visible_gpus=(int(slot[3:]),), gpus_per_node=1)
    job_file(plan.profile, name, "outcome").unlink(missing_ok=True)
    job = executor.submit(RunJob(), plan.profile, only, name, force, env)
    info = {"executor": options.executor, "job_id": str(job.job_id), "host": socket.gethostname(),
            "slot": slot, "threads": threads, "run": name,
            "submitted_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    write_json(job_file(plan.profile, name), info)
    log(f"[{i + 1}/{len(plan.runs)}] submit {name}: job {info['job_id']} on {slot}, {threads} thread(s)")
    return Flight(i, job, slot, info)


def _read_json(path: Path) -> dict | None:
    """A job or outcome file, or None when there is none (or it is half-written by a killed driver)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _settle(profile: str, name: str, flight: Flight, report: runner.BatchReport, log, tag: str) -> str:
    """Read what an ended job reported, put it in the report, remove its job files."""
    outcome = _read_json(job_file(profile, name, "outcome"))
    if outcome is None:
        log_hint = f"its log: {work_dir().name}/{profile}/_submitit/{flight.info['job_id']}/"
        outcome = {"status": "failed", "seconds": time.time() - flight.started,
                   "error": f"job {flight.info['job_id']} ended without reporting (killed or lost; {log_hint})"}
    job_file(profile, name).unlink(missing_ok=True)
    job_file(profile, name, "outcome").unlink(missing_ok=True)
    report.seconds[name] = float(outcome.get("seconds") or 0.0)
    if outcome["status"] == "failed":
        report.failed[name] = str(outcome.get("error"))
        log(f"{tag} FAIL {name} after {report.seconds[name]:.0f}s: {report.failed[name]}")
        return "failed"
    if outcome["status"] == "skipped":
        report.skipped.append(name)
        log(f"{tag} skip {name}: finished record exists")
        return "skipped"
    report.done.append(name)
    log(f"{tag} done {name} in {report.seconds[name]:.1f}s ({flight.slot})")
    return "done"


