"""Run a plan's runs side by side through submitit: local slots (CPU or GPUs) or a SLURM cluster.

The driver (this process) decides what runs, as the serial batch does, from the records on disk.
It submits a run once the runs it waits for have finished (a summary waits for every run above
it, a fine-tuning entry for the entries it `needs`), keeps each job's id beside the records
(`<profile>/_jobs/`) so that a restarted driver adopts a live job instead of submitting it twice.
A job executes one run with the serial batch's code (`runner.execute_run`).

submitit does the process and scheduler work: local subprocesses, `sbatch`, and the requeue of
a job stopped by its time limit or by preemption (the notebook resumes from the checkpoint in
its work folder). We add the plan's order, slots, threads and GPUs per run (one GPU for a
`device: gpu` entry: a notebook cannot be spread over several), the job files, the runs that
sbatch refuses (they fail, the others go on) and the jobs the cluster ends without a word
(preempted, cancelled: submitted again, --max-requeue times, else reported with their state).

The record key of a run is computed when its job is first submitted and travels with the job.
A SLURM job runs the code snapshot its driver took at submission (mlmlib.runs.snapshot), so
editing the tree changes no queued run. Without a snapshot, an attempt that starts after the code
it depends on was edited does not run the edited code under the old key, nor touch the work
folder of the earlier attempt's checkpoints; it fails.
"""

from __future__ import annotations

import difflib
import errno
import fcntl
import json
import math
import os
import re
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
from mlmlib.runs import runner, snapshot
from mlmlib.runs.plans import Plan, chain_times, is_summary, load_plan
from mlmlib.runs.slurm_queue import (  # noqa: F401 (part of this module's interface)
    SLURM_ENDED,
    SLURM_LIVE,
    SLURM_RESUBMIT,
    slurm_alive,
    slurm_end_states,
)

EXECUTORS = ("serial", "local", "slurm")
JOBS = "_jobs"
SLURM_KEYS = {"partition", "time_min", "cpus_per_run", "mem_gb", "gpus_per_run", "max_parallel",
              "args", "setup"}
# sbatch options that the executor sets itself (from the options above, or for submitit's own
# bookkeeping): a pass-through `--slurm-arg` may not set them behind the executor's back
SLURM_RESERVED = {"partition": "--partition", "time": "--time-min", "mem": "--mem-gb",
                  "mem-per-cpu": "--mem-gb", "mem-per-gpu": "--mem-gb", "cpus-per-task": "--cpus-per-run",
                  "cpus-per-gpu": "--cpus-per-run", "gpus": "--gpus-per-run", "gpus-per-node": "--gpus-per-run",
                  "gpus-per-task": "--gpus-per-run", "ntasks": "one task per run",
                  "ntasks-per-node": "one task per run", "nodes": "one node per run",
                  "signal": "--signal-delay (submitit's requeue)", "output": "submitit's logs",
                  "error": "submitit's logs", "open-mode": "submitit's logs", "array": "one job per run",
                  "requeue": "submitit's requeue"}
SLURM_ARG = re.compile(r"^[a-z][a-z0-9-]*$")
# file systems whose flock is node-local or off unless the mount says otherwise
LOCAL_LOCK_OPTIONS = {"nfs": ("nolock", "local_lock=all", "local_lock=flock"),
                      "nfs4": ("local_lock=all", "local_lock=flock"),
                      "lustre": ("localflock", "noflock")}
SLURM_POLL_S = 10.0  # SLURM is asked about each job at most this often
EXTRA = "extra"  # an adopted job beyond the slots a restarted driver was given: not a slot
LOCAL_TIME_MIN = 7 * 24 * 60  # local jobs are not killed for time: each cell has its own timeout


class ExecutorError(ValueError):
    """Executor options that cannot work here: names the option and what is allowed."""


class SubmitRefused(RuntimeError):
    """The scheduler refused one job (sbatch's message): that run fails, the others go on."""


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
    max_requeue: int = 3  # requeues after a timeout, resubmissions after a preemption or node failure
    signal_delay_s: int = 60  # the job is told this long before its time limit (to stop cleanly)
    poll_s: float = 2.0
    slurm_args: dict[str, Any] = field(default_factory=dict)  # sbatch options passed through
    slurm_setup: list[str] = field(default_factory=list)  # shell lines before the job (module load)


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
    if options.slurm_args or options.slurm_setup:
        slurm_given += ["slurm_arg" if options.slurm_args else "slurm_setup"]
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
        for key in SLURM_KEYS - {"args", "setup"}:  # the command line wins over the plan
            if getattr(options, key) in (None, 0) and plan.slurm.get(key) is not None:
                setattr(options, key, plan.slurm[key])
        planned_args = plan.slurm.get("args") or {}
        if not isinstance(planned_args, dict):
            raise ExecutorError(f"{plan.path.name}: slurm: args must map sbatch options to values "
                                "(e.g. {account: proj42, qos: normal})")
        options.slurm_args = {**planned_args, **options.slurm_args}
        planned_setup = plan.slurm.get("setup") or []
        if not isinstance(planned_setup, list) or not all(isinstance(x, str) for x in planned_setup):
            raise ExecutorError(f"{plan.path.name}: slurm: setup must be a list of shell lines")
        options.slurm_setup = list(options.slurm_setup) or list(planned_setup)
        check_slurm_args(options.slurm_args)
        check_setup(options.slurm_setup)
        check_shared_locks(work_dir())
    if options.gpus_per_run is not None and options.gpus_per_run != 1:
        raise ExecutorError(
            f"--gpus-per-run {options.gpus_per_run}: one run trains on one GPU, so give 1 (or leave "
            "it out for CPU jobs). Runs are notebooks, which a multi-GPU launcher cannot start, and "
            "the models here are small: for several GPUs, run one run per GPU side by side "
            "(--max-parallel N jobs of 1 GPU each)")
    if options.time_min is not None and options.time_min <= 0:
        raise ExecutorError(f"--time-min {options.time_min}: give a positive number of minutes")
    if options.time_min is not None and options.executor == "serial":
        raise ExecutorError("--time-min: a job time limit of --executor local or slurm")
    if options.max_requeue < 0:
        raise ExecutorError(f"--max-requeue {options.max_requeue}: give 0 or more")
    if options.executor == "slurm":  # submitit checks its parameters here, before any sbatch
        make_executor(options, plan.profile)
    return options


def sbatch_options() -> set[str] | None:
    """The long options this cluster's sbatch knows (from `sbatch --help`), or None if it cannot say."""
    try:
        asked = subprocess.run(["sbatch", "--help"], capture_output=True, text=True, timeout=30,
                               check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = set(re.findall(r"--([a-z][a-z0-9-]*)", asked.stdout + asked.stderr))
    return found or None


def check_slurm_args(args: dict[str, Any]) -> None:
    """Refuse pass-through sbatch options that are malformed, set by the executor itself, unknown
    to this cluster's sbatch, or that ask for several GPUs per run."""
    known = sbatch_options() if args else None
    for key, value in args.items():
        if not isinstance(key, str) or not SLURM_ARG.match(key):
            raise ExecutorError(f"--slurm-arg {key!r}: an sbatch long option without its dashes, in "
                                "lower case with '-' (e.g. mail-type, not --mail_type)")
        if key in SLURM_RESERVED:
            raise ExecutorError(f"--slurm-arg {key}: set by the executor ({SLURM_RESERVED[key]}); "
                                "use that instead")
        if known is not None and key not in known:
            near = difflib.get_close_matches(key, sorted(known), n=5)
            raise ExecutorError(f"--slurm-arg {key}: this cluster's sbatch has no --{key} option"
                                + (f"; similar: {near}" if near else "") + " (see `sbatch --help`)")
        if not (value is True or isinstance(value, (str, int, float))):
            raise ExecutorError(f"--slurm-arg {key}: give a plain value, got {value!r}")
        if key == "gres":
            counts = [int(n) for n in re.findall(r"(?:^|,)gpu(?::[^:,]+)*:(\d+)", str(value))]
            if any(n > 1 for n in counts):
                raise ExecutorError(f"--slurm-arg gres={value}: one run trains on one GPU; ask for "
                                    "gpu:1 (or gpu:<type>:1)")


def check_setup(lines: list[str]) -> None:
    """Setup lines are shell lines run before the job (module load, source an environment)."""
    for line in lines:
        if not isinstance(line, str) or not line.strip() or "\n" in line:
            raise ExecutorError(f"--slurm-setup {line!r}: give one non-empty shell line per "
                                "--slurm-setup (e.g. \"module load cuda/12.4\")")


def mount_of(folder: Path, mounts_text: str | None = None) -> tuple[str, str, list[str]]:
    """(mount point, file system type, options) of the mount holding `folder` (/proc/self/mounts)."""
    if mounts_text is None:
        try:
            mounts_text = Path("/proc/self/mounts").read_text()
        except OSError:
            return "", "", []
    path, best = str(Path(folder).resolve()), ("", "", [])
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        point = parts[1].replace("\\040", " ")
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best[0]):
            best = (point, parts[2], parts[3].split(","))
    return best


def check_shared_locks(folder: Path, mounts_text: str | None = None) -> None:
    """Jobs on several nodes build shared cache entries under flock in the work folder: refuse a
    work folder whose mount keeps locks on one node (or has none), naming the mount."""
    probe_dir = folder = Path(folder)
    while mounts_text is None and not probe_dir.exists() and probe_dir != probe_dir.parent:
        probe_dir = probe_dir.parent  # the folder is made later, on the mount of its nearest parent
    point, fstype, opts = mount_of(probe_dir, mounts_text)
    bad = [o for o in opts if o in LOCAL_LOCK_OPTIONS.get(fstype, ())]
    fix = ("; put MLMLIB_WORK on a file system that every node sees and whose locks hold across "
           "nodes (or remount it with working locks)")
    if bad:
        raise ExecutorError(f"work folder {folder}: its mount {point} ({fstype}, {','.join(bad)}) "
                            f"keeps file locks on one node, so two jobs could build one cache entry "
                            f"at once{fix}")
    if mounts_text is not None:
        return  # a described mount (tests): nothing to probe
    try:
        with open(probe_dir / f".lock-probe-{os.getpid()}", "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(handle, fcntl.LOCK_UN)
            finally:
                os.unlink(handle.name)
    except OSError as exc:
        if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            raise ExecutorError(f"work folder {folder}: flock fails on its mount {point or '?'} "
                                f"({fstype or '?'}): {exc.strerror}{fix}") from None
        if exc.errno not in (errno.EACCES, errno.EROFS, errno.EAGAIN):
            raise


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
    if options.slurm_args:
        params["additional_parameters"] = dict(options.slurm_args)
    if options.slurm_setup:
        params["setup"] = list(options.slurm_setup)
    if options.partition:
        params["partition"] = options.partition
    if options.mem_gb:
        params["mem"] = f"{int(options.mem_gb * 1024)}M"
    if options.gpus_per_run:
        params["gpus_per_node"] = options.gpus_per_run
    try:
        executor.update_parameters(**params)
    except ValueError as exc:  # submitit's own check of the sbatch parameters
        raise ExecutorError(f"--slurm-arg / SLURM options refused by submitit: "
                            f"{str(exc).splitlines()[0]}") from None
    return executor


class RunJob:
    """One run of a plan as a submitit job; submitit requeues it (checkpoint) after a timeout."""

    def __call__(self, profile: str, only: list[str] | None, name: str, force: bool,
                 env: dict[str, str], submitted_key: str | None = None) -> dict:
        os.environ.update(env)
        os.environ["MLMLIB_JOB_ID"] = (os.environ.get("SLURM_JOB_ID")  # the job it runs in
                                       or os.environ.get("SUBMITIT_LOCAL_JOB_ID") or "")
        plan = load_plan(profile, only)
        i = [runner.run_name(r) for r in plan.runs].index(name)
        run = plan.runs[i]
        key = runner.run_key(plan, i)
        if submitted_key is not None and key != submitted_key:
            # the code or parameters changed after submission: running now would either train the
            # edited code under the old key or (runner's clean-up) delete the old key's checkpoints
            kept = runner.work_folder(profile, run, submitted_key)
            bare = "" if os.environ.get(snapshot.CODE_ENV) else " and it had no code snapshot"
            outcome = {"status": "failed", "seconds": 0.0, "error": (
                f"the code or parameters of {name} changed after its job was submitted (key "
                f"{submitted_key} -> {key}){bare}; nothing ran and its checkpoints are kept in "
                f"{kept}: restore the code to resume them, or start the driver again to rerun it")}
            write_json(job_file(profile, name, "outcome"), outcome)
            return outcome
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


def job_file(profile: str, name: str, kind: str = "job") -> Path:
    """`_jobs/<notebook>__<slug>.json` (the job's id, written by the driver) or `.outcome.json`."""
    stem = name.replace("/", "__")
    return runs_dir(profile) / JOBS / (f"{stem}.json" if kind == "job" else f"{stem}.outcome.json")


def jobs_alive(infos: list[dict]) -> list[bool]:
    """job_alive for several job files, SLURM's asked in one `squeue`."""
    slurm = slurm_alive([str(i["job_id"]) for i in infos if i.get("executor") == "slurm"])
    return [slurm[str(i["job_id"])] if i.get("executor") == "slurm" else job_alive(i) for i in infos]


def job_alive(info: dict) -> bool:
    """True when the local job a job file names has not ended (SLURM's: jobs_alive)."""
    if info.get("host") != socket.gethostname():
        return True  # a local job of another host: we cannot tell; never submit it twice
    return str(info.get("job_id", "")).isdigit() and pid_alive(int(info["job_id"]))


def run_with_executor(plan: Plan, options: Options, force: bool = False, log=print,
                      executor: Any = None, only: list[str] | None = None) -> runner.BatchReport:
    """Execute a plan's pending runs through submitit, side by side where the plan allows.

    `executor`: a submitit executor to use instead of the one the options name (tests pass
    submitit's in-process DebugExecutor). SLURM's jobs, and this driver's keys, use one code
    snapshot taken here (mlmlib.runs.snapshot).
    """
    runner._check_kernel()
    executor = executor if executor is not None else make_executor(options, plan.profile)
    code = snapshot.take_or_explain(log) if options.executor == "slurm" else None
    with snapshot.code_root(code):
        return _run_jobs(plan, options, force, log, executor, only)


def _run_jobs(plan: Plan, options: Options, force: bool, log, executor: Any,
              only: list[str] | None) -> runner.BatchReport:
    """run_with_executor's loop: submit what is ready, settle what ended, until nothing is left."""
    report = runner.BatchReport()
    n, profile = len(plan.runs), plan.profile
    names = [runner.run_name(r) for r in plan.runs]
    versions = {nb: runner.code_version(nb) for nb in {r.notebook for r in plan.runs}}
    threads = threads_per_run(options)
    free = slots_of(options, n)
    state = runner.initial_state(plan, versions, force)
    again: dict[int, tuple[int, str]] = {}  # runs to submit again: (times so far, submitted key)
    for i in (i for i, s in enumerate(state) if s == "skipped"):
        log(f"[{i + 1}/{n}] skip {names[i]}: finished record exists")
        report.skipped.append(names[i])
    flights: dict[int, Flight] = {}
    earlier = {i: _read_json(job_file(profile, names[i])) for i, s in enumerate(state) if s == "pending"}
    earlier = {i: info for i, info in earlier.items() if info}
    alive = dict(zip(earlier, jobs_alive(list(earlier.values()))))
    for i, info in earlier.items():  # jobs of an earlier driver
        if alive[i]:
            slot = info.get("slot") if info.get("slot") in free else (free[0] if free else EXTRA)
            if slot in free:
                free.remove(slot)
            flights[i], state[i] = Flight(i, None, slot, info), "running"
            log(f"[{i + 1}/{n}] adopt {names[i]}: job {info['job_id']} ({info['executor']}) still runs")
    chain = chain_times(plan, [runner.last_wall_time(plan, r) for r in plan.runs])
    last_beat = time.time()
    while any(s in ("pending", "running") for s in state):
        asked = [f for f in flights.values() if f.job is None or options.executor == "slurm"]
        alive = dict(zip((f.index for f in asked), jobs_alive([f.info for f in asked])))
        for i, flight in list(flights.items()):
            over = not alive[i] if i in alive else flight.job.done()
            if not over:
                continue
            del flights[i]
            if flight.slot != EXTRA:
                free.append(flight.slot)
            state[i] = _settle(profile, names[i], flight, report, log, f"[{i + 1}/{n}]", options, again)
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
            try:  # a QOS job limit, an option sbatch refuses: that run fails, the others go on
                flights[i] = _submit(executor, options, plan, i, free[0], threads, force, only, log,
                                     *again.get(i, (0, None)))
            except SubmitRefused as exc:
                state[i], report.failed[names[i]] = "failed", str(exc)
                log(f"[{i + 1}/{n}] FAIL {names[i]}: {exc}")
                continue
            free.pop(0)
            state[i] = "running"
        if time.time() - last_beat >= runner.HEARTBEAT_S and flights:
            last_beat = time.time()
            for flight in flights.values():
                last = runner._last_line(runs_dir(profile) / runner.LOGS / f"{names[flight.index].replace('/', '__')}.log")
                log(f"      ... {names[flight.index]}: {time.time() - flight.started:.0f} s"
                    + (f" | {last}" if last else ""))
        if flights:  # SLURM is asked about each job at most every 10 s
            time.sleep(max(options.poll_s, SLURM_POLL_S) if options.executor == "slurm" else options.poll_s)
    return report


def job_resources(resources: dict, options: Options) -> dict[str, Any]:
    """submitit's SLURM parameters for one job: the entry's `resources`, else the plan-wide ones."""
    cpus = resources.get("cpus", options.cpus_per_run or 1)
    minutes = resources.get("time_min", options.time_min or 24 * 60)
    mem_gb = resources.get("mem_gb", options.mem_gb)
    return {"cpus_per_task": int(cpus), "time": math.ceil(minutes),
            **({"mem": f"{int(mem_gb * 1024)}M"} if mem_gb else {})}


def _submit(executor, options: Options, plan: Plan, i: int, slot: str, threads: int, force: bool,
            only: list[str] | None, log, resubmits: int = 0, key: str | None = None) -> Flight:
    """Submit run i into a slot; write its job file (the driver's memory across restarts). A run
    submitted again keeps its first submission's `key`. SLURM: one GPU for a `device: gpu` entry,
    none for a `device: cpu` one, else --gpus-per-run; a node of its own for an `alone` entry; the
    entry's `resources` (cores, memory, time) in place of the plan-wide options."""
    name = runner.run_name(plan.runs[i])
    env = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "MLMLIB_EXECUTOR": options.executor, "MLMLIB_SLOT": slot}
    if slot.startswith("gpu"):  # the job sees only its GPU
        executor.update_parameters(visible_gpus=(int(slot[3:]),), gpus_per_node=1)
    gpus = {"gpu": 1, "cpu": 0}.get(plan.runs[i].device, options.gpus_per_run or 0)
    if options.executor == "slurm":  # the executor's parameters hold for its later jobs too: reset
        executor.parameters.pop("gpus_per_node", None)
        for option in ("exclusive", "mem"):
            executor.parameters.pop(option, None)
        executor.update_parameters(**({"gpus_per_node": gpus} if gpus else {}), **job_resources(
            plan.runs[i].resources, options), setup=[*options.slurm_setup, *snapshot.job_setup()])
        if plan.runs[i].alone:  # it measures time: a node of its own (sbatch --exclusive)
            executor.update_parameters(exclusive=True)
        threads = plan.runs[i].resources.get("cpus", threads)
        env |= {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    job_file(plan.profile, name, "outcome").unlink(missing_ok=True)
    key = key or runner.run_key(plan, i)  # frozen: every attempt runs under this key or not at all
    try:
        job = executor.submit(RunJob(), plan.profile, only, name, force, env, key)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:  # sbatch's own message
        said = "; ".join(ln.strip() for ln in str(exc).splitlines() if ln.strip()) or repr(exc)
        raise SubmitRefused(f"not submitted, {options.executor} refused the job: {said} (a QOS or "
                            "account limit: lower --max-parallel; then start the driver again)") from None
    info = {"executor": options.executor, "job_id": str(job.job_id), "host": socket.gethostname(),
            "slot": slot, "threads": threads, "run": name, "key": key, "resubmits": resubmits,
            "submitted_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    write_json(job_file(plan.profile, name), info)
    gpu = f", {gpus} GPU" if gpus and options.executor == "slurm" else ""
    log(f"[{i + 1}/{len(plan.runs)}] submit {name}: job {info['job_id']} on {slot}, {threads} thread(s){gpu}"
        + (f" (again, {resubmits} of at most {options.max_requeue})" if resubmits else ""))
    return Flight(i, job, slot, info)


def _read_json(path: Path) -> dict | None:
    """A job or outcome file, or None when there is none (or it is half-written by a killed driver)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _settle(profile: str, name: str, flight: Flight, report: runner.BatchReport, log, tag: str,
            options: Options, again: dict[int, tuple[int, str]]) -> str:
    """Read what an ended job reported, put it in the report, remove its job files; 'pending'
    when a job the cluster stopped (preempted, cancelled, its node failed) is to be submitted again."""
    outcome = _read_json(job_file(profile, name, "outcome"))
    job_file(profile, name).unlink(missing_ok=True)
    if outcome is None and (outcome := _lost(profile, flight, options, again)) is None:
        log(f"{tag} {name}: job {flight.info['job_id']} was stopped by the cluster; submitting it again")
        return "pending"
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


def _lost(profile: str, flight: Flight, options: Options, again: dict[int, tuple[int, str]]) -> dict | None:
    """The outcome of a job that ended silently, with its state from sacct; None: submit it again."""
    job_id = flight.info["job_id"]
    state = slurm_end_states([job_id]).get(job_id) if options.executor == "slurm" else None
    word, _, by = (state or "").partition(" by ")
    done = int(flight.info.get("resubmits") or 0)
    if state is None:
        error = f"job {job_id} ended without reporting (killed or lost)"
    elif word == "CANCELLED" and by.strip() == str(os.getuid()):
        error = f"job {job_id} was cancelled by you ({state}); not submitted again"
    elif word in SLURM_RESUBMIT and done < options.max_requeue:
        again[flight.index] = (done + 1, flight.info.get("key") or "")
        return None
    else:  # the run's own end (out of memory, its time limit past the requeues) or too many tries
        error = f"job {job_id} ended {state} without reporting" + (
            f", submitted {done} time(s) again already (--max-requeue {options.max_requeue})"
            if word in SLURM_RESUBMIT else "")
    return {"status": "failed", "seconds": time.time() - flight.started,
            "error": f"{error}; its log: {work_dir().name}/{profile}/_submitit/{job_id}/"}


