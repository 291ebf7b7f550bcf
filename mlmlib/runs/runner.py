"""Papermill batch runner: execute each run of a plan, skip finished ones, set failures aside."""

from __future__ import annotations

import atexit
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cache
from importlib import metadata
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets.config import Config

from mlmlib.atomic import remove_dead_temps, temp_name, without_nan, write_json
from mlmlib.code_digest import notebook_modules, notebook_version, paper_of
from mlmlib.paths import project_root, runs_dir, work_dir
from mlmlib.runs import disk, plans, records
from mlmlib.runs.plans import Plan, Run, full_params, is_summary, load_plan, notebooks_dir
from mlmlib.runs.records import record_paths

KERNEL = os.environ.get("MLMLIB_KERNEL", "mlmlib")
# Kernels talk to the runner over local sockets (IPC), not TCP: nothing is exposed on the
# network, and the kernel has no reason to warn about unencrypted TCP on every run.
# The socket files go to a folder of this process (not the notebooks' folder): runs executing
# side by side in several processes would otherwise pick the same names and talk to each
# other's kernels (jupyter_client takes the first unused 'kernel-ipc-N' in the working folder).


def kernel_config() -> Config:
    """The kernel manager's config: IPC transport, socket files in this process's own folder."""
    return Config({"KernelManager": {"transport": "ipc", "ip": str(_ipc_folder() / "kernel")}})


@cache
def _ipc_folder() -> Path:
    """This process's socket folder, removed at exit; folders of dead processes are removed here."""
    base = Path(tempfile.gettempdir()) / "mlmlib-ipc"
    remove_dead_temps(base, "ipc")  # left by killed runners
    folder = temp_name(base, "ipc")
    folder.mkdir(mode=0o700, exist_ok=True)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
HEARTBEAT_S = 30


class QuietShutdownKernelManager(AsyncKernelManager):
    """A kernel manager that does not interrupt (SIGINT) a kernel it is shutting down.

    jupyter_client interrupts every kernel before its shutdown request; a kernel caught while it
    still handles a message then logs "KeyboardInterrupt caught in kernel" as an ERROR on the
    runner's console. The runner shuts a kernel down only once its cells have finished or timed
    out, and the shutdown request (then SIGTERM, then SIGKILL) still stops a busy one, so the
    interrupt adds nothing there. `interrupt_kernel()` itself still interrupts.
    """

    async def _async_interrupt_kernel(self) -> None:
        if not self.shutting_down:
            await super()._async_interrupt_kernel()

    async def start_kernel(self, **kw) -> None:
        await super().start_kernel(**kw)
        LIVE_KERNELS.add(self)

    async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
        try:
            await super().shutdown_kernel(now=now, restart=restart)
        finally:
            LIVE_KERNELS.discard(self)


LIVE_KERNELS: set[QuietShutdownKernelManager] = set()


def kill_live_kernels() -> int:
    """Kill the kernels this process started and has not shut down; return how many.

    A job stopped for a requeue calls this first: its kernel must not train on (and write
    checkpoints) beside the job's next attempt.
    """
    killed = 0
    for manager in list(LIVE_KERNELS):
        process = getattr(manager.provisioner, "process", None)
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=10)
            killed += 1
        LIVE_KERNELS.discard(manager)
    return killed

FAILED = "_failed"
SUPERSEDED = "_superseded"  # records of runs whose latest rerun failed
LOGS = "_logs"
VERSIONED = ("mlmlib", "torch", "transformers", "datasets", "accelerate", "tokenizers",
             "numpy", "pandas", "scikit-learn", "papermill", "jupyter-book")


@dataclass
class BatchReport:
    """What a batch did: runs executed, skipped and failed (with their error)."""

    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when no run failed."""
        return not self.failed


def notebook_papers(notebook: str) -> list[str]:
    """The paper packages whose modules a notebook runs (`mlmlib.papers.<name>`)."""
    modules = notebook_modules(notebooks_dir() / f"{notebook}.ipynb", plans.code_package())
    return sorted({paper for paper in map(paper_of, modules) if paper})


def code_version(notebook: str) -> str:
    """Digest of the code a notebook's results depend on: the modules it runs, and its cells."""
    # Only the modules its cells import, followed through their own imports (code_digest), so
    # an edit reruns the runs whose notebooks reach the edited module and no others: a paper's
    # claims module reruns the notebooks that import it, not the training runs that never do.
    return notebook_version(notebooks_dir() / f"{notebook}.ipynb", plans.code_package())


def record_path(profile: str, run: Run) -> Path:
    """Where a run's record lives; its executed notebook sits beside it (.ipynb)."""
    return runs_dir(profile) / run.notebook / f"{run.slug}.json"


def remove_unplanned_records(plan: Plan, log=print) -> list[str]:
    """Remove the records (and executed notebooks) of the batch's notebooks whose run ids the
    whole plan does not have (a seed or grid point outside it); return those run ids.

    A summary reads every record of its notebooks' folders, so a leftover of an older plan
    would mix into its claims while its key, built from the plan's runs, never saw it.
    """
    planned = {run_name(r) for r in load_plan(plan.profile).runs}
    notebooks = {r.notebook for r in plan.runs}
    removed = []
    for path in record_paths(plan.profile):
        name = f"{path.parent.name}/{path.stem}"
        if path.parent.name in notebooks and name not in planned:
            log(f"removing the record {name}: the plan has no such run any more")
            path.unlink()
            path.with_suffix(".ipynb").unlink(missing_ok=True)
            removed.append(name)
    return removed


def run_plan(plan: Plan, force: bool = False, log=print) -> BatchReport:
    """Execute every run of a plan in order; a failure is kept aside and the batch goes on."""
    report = BatchReport()
    versions = {nb: code_version(nb) for nb in {r.notebook for r in plan.runs}}
    _check_kernel()
    n = len(plan.runs)
    # Expected seconds per run, from its last record (any code version): an estimate of what is left.
    expected = [None if force else last_wall_time(plan, r) for r in plan.runs]
    for i, run in enumerate(plan.runs, 1):
        name = run_name(run)
        key = run_key(plan, i - 1, versions)
        # the notebook of a killed (forced) rerun, also when this batch skips the run
        remove_dead_temps(record_path(plan.profile, run).with_suffix(".ipynb"), "ipynb")
        if not force and has_record(plan.profile, run, key):
            log(f"[{i}/{n}] skip {name}: finished record exists ({record_path(plan.profile, run).name})")
            report.skipped.append(name)
            continue
        log(f"[{i}/{n}] run  {name}{_estimate(expected[i - 1:], i, plan, versions)}")
        seconds, error = execute_run(plan.profile, run, key, versions[run.notebook], log)
        report.seconds[name] = seconds
        if error is not None:
            report.failed[name] = error
            log(f"[{i}/{n}] FAIL {name} after {seconds:.0f}s: {error}")
            continue
        log(f"[{i}/{n}] done {name} in {seconds:.1f}s")
        report.done.append(name)
    return report


def initial_state(plan: Plan, versions: dict[str, str], force: bool) -> list[str]:
    """'pending' or 'skipped' for each run, from the records on disk (as the serial batch decides).

    A summary is pending when any run it reads is pending: its key changes once they finish.
    """
    state: list[str] = []
    for i, run in enumerate(plan.runs):
        if force or (is_summary(run.notebook) and "pending" in (state[j] for j in plan.prerequisites(i))):
            state.append("pending")
        else:
            finished = has_record(plan.profile, run, run_key(plan, i, versions))
            state.append("skipped" if finished else "pending")
    return state


def run_name(run: Run) -> str:
    """'notebook/slug': how logs, reports and job files name a run."""
    return f"{run.notebook}/{run.slug}"


def run_key(plan: Plan, i: int, versions: dict[str, str] | None = None) -> str:
    """The record key of the plan's run i: notebook, parameters, code and, for a summary, the
    records it reads (computed when the run's turn comes: a summary's key is only final once
    those runs finished)."""
    run = plan.runs[i]
    version = (versions or {}).get(run.notebook) or code_version(run.notebook)
    whole, k = plan, i
    if plan.only and is_summary(run.notebook):  # it reads what it reads in the whole plan
        whole = load_plan(plan.profile)
        k = [run_name(r) for r in whole.runs].index(run_name(run))
    read = [record_path(plan.profile, whole.runs[j]) for j in whole.prerequisites(k)]
    return run.key(version + _inputs_digest(plan.profile, run, read))


def has_record(profile: str, run: Run, key: str) -> bool:
    """True when the run has a finished record with this key (it can be skipped)."""
    return _has_record(record_path(profile, run), key)


def execute_run(profile: str, run: Run, key: str, version: str, log=print) -> tuple[float, str | None]:
    """Execute one run; return its seconds and None, or its seconds and its error's first line.

    The serial batch and every executor's job call this: one code path for a run.
    """
    # No progress bars inside batch runs (the heartbeat reports progress): a library's tqdm bar
    # would otherwise land in the rendered page as widget or carriage-return noise.
    os.environ.setdefault("TQDM_DISABLE", "1")
    start = time.time()
    refused = device_refusal(profile, run) or disk.space_refusal(profile, run)
    if refused is not None:  # before the notebook loads any data
        return time.time() - start, refused
    try:
        _execute(profile, run, key, version, log)
    except Exception as exc:  # noqa: BLE001 - any failure is reported, the batch goes on
        message = _error_text(exc)
        lines = message.strip().splitlines() or [repr(exc)]
        return time.time() - start, lines[0] if hasattr(exc, "ename") else lines[-1]
    return time.time() - start, None


def device_refusal(profile: str, run: Run) -> str | None:
    """Why a `device: gpu` run must not start here (no CUDA), or None: a forgotten GPU flag must
    not train a paper run on a CPU for days. A rehearsal's entries declare no device."""
    if run.device != "gpu":
        return None
    found, seen = cuda_available()
    if found:
        return None
    return (f"{run_name(run)}: its entry in notebooks/plans/{profile}.yaml sets `device: gpu`, and "
            f"CUDA is not available here ({seen}); nothing ran. Run it where a GPU is: a GPU "
            "machine, `--executor local --gpus 0`, or `--executor slurm` (its job asks for a GPU); "
            f"or rehearse the plan at tiny size on CPU: python -m mlmlib run --profile {profile} --rehearse")


@cache
def cuda_available() -> tuple[bool, str]:
    """(whether torch sees a CUDA device here, what it saw), asked of torch in a subprocess: the
    runs package imports no torch (a job told to stop while torch is half-imported may not exit
    in time, #15). CUDA_VISIBLE_DEVICES is the job's own."""
    code = "import torch; print(torch.cuda.is_available(), torch.cuda.device_count(), torch.version.cuda)"
    try:
        asked = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"asking torch failed: {exc}"
    words = asked.stdout.split()
    if asked.returncode != 0 or len(words) < 3:
        return False, f"torch failed: {(asked.stderr.strip().splitlines() or ['?'])[-1]}"
    if words[-3] == "True":
        return True, f"{words[-2]} CUDA device(s)"
    seen = "torch is built without CUDA" if words[-1] == "None" else f"torch (CUDA {words[-1]}) sees no GPU"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return False, seen + (f", CUDA_VISIBLE_DEVICES={visible!r}" if visible is not None else "")


def last_wall_time(plan: Plan, run: Run) -> float | None:
    """Seconds the run took last time (any code version), for estimates and ordering; a run never
    timed (a new grid point, fresh seeds) takes the median of its notebook's other records, so
    it is not ordered by its timeout, a bound many times its real time; None without any."""
    own = _last_wall_time(record_path(plan.profile, run))
    if own is not None:
        return own
    folder = record_path(plan.profile, run).parent
    siblings = sorted(t for t in map(_last_wall_time, sorted(folder.glob("*.json"))) if t is not None)
    return siblings[len(siblings) // 2] if siblings else None


def _last_wall_time(path: Path) -> float | None:
    """Wall time of the run's last record (whatever its code version), or None."""
    try:
        return float(records.read_record(path)["wall_time_s"])
    except (records.RecordError, KeyError, TypeError, ValueError):
        return None


def _estimate(expected: list[float | None], i: int, plan: Plan, versions: dict) -> str:
    """' (last time 58 s; about 12 min left)': this run's and the batch's expected time left."""
    this, rest = expected[0], [e for e in expected if e is not None]
    if this is None and not rest:
        return " ..."
    parts = [f"last time {this:.0f} s" if this is not None else "first time"]
    if rest:
        unknown = sum(e is None for e in expected)
        left = f"about {sum(rest) / 60:.0f} min left" if sum(rest) >= 60 else f"about {sum(rest):.0f} s left"
        parts.append(left + (f" + {unknown} run(s) never timed" if unknown else ""))
    return f" ({'; '.join(parts)})"


def work_folder(profile: str, run: Run, key: str) -> Path:
    """The run's scratch folder (checkpoints): one per record key, so a checkpoint is only ever
    resumed by the same notebook, parameters and code that wrote it; removed once the run's
    record is written."""
    return work_dir() / profile / run.notebook / run.slug / key


def _execute(profile: str, run: Run, key: str, version: str, log=print) -> None:
    """Run one notebook with papermill into a temporary file; move results into place on success."""
    import papermill as pm

    rec_path = record_path(profile, run)
    nb_out = rec_path.with_suffix(".ipynb")
    folder = work_folder(profile, run, key)
    for stale in folder.parent.glob("*"):  # work of other parameters or code: never resumed
        if stale.name != key and stale.is_dir():
            log(f"      removing stale work folder {stale.name} (other parameters or code)")
            shutil.rmtree(stale, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    _remove_temporaries(folder)
    (folder / records.METRICS_FILE).unlink(missing_ok=True)
    log_dir = runs_dir(profile) / LOGS
    log_dir.mkdir(parents=True, exist_ok=True)
    name = f"{run.notebook}__{run.slug}"
    log_path = log_dir / f"{name}.log"
    failed_dir = runs_dir(profile) / FAILED
    failed_nb, failed_error = failed_dir / f"{name}.ipynb", failed_dir / f"{name}.error.txt"
    # relative to the notebooks folder (the kernel's cwd): no local path on the rendered page; the
    # project's folder, also where the template is a SLURM job's code snapshot (notebooks_dir)
    here = project_root() / "notebooks"
    params = {**run.params, "run_dir": os.path.relpath(folder, here)}
    nb_out.parent.mkdir(parents=True, exist_ok=True)
    for leftover in nb_out.parent.glob(f".{rec_path.name}.*.tmp"):  # a record half-written
        leftover.unlink(missing_ok=True)
    tmp_nb = temp_name(nb_out, "ipynb")
    start = time.time()
    try:
        with open(log_path, "w") as log_file, heartbeat(log_path, log):
            pm.execute_notebook(
                str(notebooks_dir() / f"{run.notebook}.ipynb"), str(tmp_nb),
                parameters=params, kernel_name=KERNEL, cwd=str(here),
                execution_timeout=run.timeout, progress_bar=False, log_output=False,
                stdout_file=log_file, stderr_file=log_file, report_mode=False,
                config=kernel_config(), kernel_manager_class=QuietShutdownKernelManager,
            )
        metrics = records.read_metrics(folder)
        _tidy_for_the_book(tmp_nb, _full_params(run))
    except BaseException as exc:
        failed_dir.mkdir(parents=True, exist_ok=True)
        if tmp_nb.exists():
            os.replace(tmp_nb, failed_nb)
        failed_error.write_text(_error_text(exc))
        if isinstance(exc, Exception):  # a failed rerun: the old record is no longer current
            _supersede(profile, run, log)
        raise
    record = {
        "notebook": run.notebook, "profile": profile, "run_id": f"{run.notebook}/{run.slug}",
        "title": run.title, "label": run.label, "chapter": run.chapter, "key": key,
        "code_version": version, "params": _full_params(run), "metrics": metrics,
        "seed": run.params.get("seed"), "git_sha": git_sha(), "versions": package_versions(),
        "device": device_info(), "wall_time_s": round(time.time() - start, 2),
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    record, non_finite = without_nan(record)
    if non_finite:
        record[records.NON_FINITE] = non_finite
    os.replace(tmp_nb, nb_out)
    write_json(rec_path, record)  # written last: a record means the run is complete
    # a run with its record is never resumed: its checkpoints (C2's chains: about 1.3 GB each at
    # paper size) would only fill the disk
    shutil.rmtree(folder, ignore_errors=True)
    superseded = runs_dir(profile) / SUPERSEDED
    for old in (failed_nb, failed_error, superseded / f"{name}.json", superseded / f"{name}.ipynb"):
        old.unlink(missing_ok=True)


@contextmanager
def heartbeat(log_path: Path, log=print, every: float = HEARTBEAT_S):
    """While the block runs, print every `every` seconds the elapsed time and the run's latest
    output line (training loops print step of total, loss and tokens/s)."""
    stop = threading.Event()
    start = time.time()

    def beat() -> None:
        while not stop.wait(every):
            last = _last_line(log_path)
            log(f"      ... {time.time() - start:.0f} s" + (f" | {last}" if last else ""))

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _last_line(path: Path, limit: int = 160) -> str:
    """The last non-empty line of a log file (its tail only), shortened."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in re.split(r"[\r\n]", tail) if ln.strip()]
    return lines[-1][:limit] if lines else ""


def _tidy_for_the_book(path: Path, params: dict) -> None:
    """Show the parameters the run used (`params`, as its record holds them: every group
    resolved to every field), remove the template's defaults from the page and drop local paths
    from the metadata; `scripts/tidy_pages.py` re-tidies committed pages with the same function
    (mlmlib.runs.pages.tidy_page)."""
    from mlmlib.runs.pages import tidy_page

    tidy_page(path, params)


def _remove_temporaries(folder: Path) -> None:
    """Delete what a killed earlier attempt of this run left half-written in its work folder:
    hidden temporary files and folders (checkpoints set aside on purpose are kept)."""
    for path in sorted(folder.rglob(".*"), reverse=True):
        if path.name.endswith(".set-aside") or any(p.name.endswith(".set-aside") for p in path.parents):
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _supersede(profile: str, run: Run, log=print) -> None:
    """Move a run's previous record and page aside after a failed rerun (not shown as current)."""
    rec_path = record_path(profile, run)
    if not rec_path.exists():
        return
    aside = runs_dir(profile) / SUPERSEDED
    aside.mkdir(parents=True, exist_ok=True)
    name = f"{run.notebook}__{run.slug}"
    for src, ext in ((rec_path.with_suffix(".ipynb"), ".ipynb"), (rec_path, ".json")):
        if src.exists():
            os.replace(src, aside / f"{name}{ext}")
    log(f"      its previous record is superseded: moved to {aside.name}/{name}.json")


def _full_params(run: Run) -> dict:
    """Every parameter the run used: the notebook's defaults overridden by the plan's values,
    each parameter group resolved to every field."""
    return {k: v for k, v in full_params(run.notebook, run.params).items() if k != "run_dir"}


def _inputs_digest(profile: str, run: Run, earlier: list[Path]) -> str:
    """For a summary notebook (one with a `profile` parameter), a hash of the records it reads.

    Its own code and parameters do not change when the experiments it summarises are rerun,
    so the records it reads (those of the notebooks its entry `needs`, or else of every run
    above it in the plan) are part of what makes it finished.
    """
    if not is_summary(run.notebook):
        return ""
    if run.params.get("profile", profile) != profile:  # it reads another profile's records
        earlier = record_paths(run.params["profile"])
    h = hashlib.sha256()
    for path in sorted(set(earlier)):
        try:
            rec = records.read_record(path)
        except records.RecordError:
            continue  # missing or damaged: it will be rerun, and this summary after it
        h.update(f"{path.name}:{rec.get('key')}@{rec.get('finished_at')}".encode())
    return h.hexdigest()[:16]


def _has_record(path: Path, key: str) -> bool:
    """True when a complete record with this key and its executed notebook both exist."""
    if not path.exists() or not path.with_suffix(".ipynb").exists():
        return False
    try:
        return records.read_record(path).get("key") == key
    except records.RecordError as exc:
        print(f"      {exc}")
        return False


def _check_kernel() -> None:
    """Fail early, with the fix, when the project's Jupyter kernel is not registered."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec(KERNEL)
    except NoSuchKernel:
        raise RuntimeError(
            f"Jupyter kernel {KERNEL!r} is not registered. Run `make kernel`, or "
            f"`{sys.executable} -m ipykernel install --sys-prefix --name {KERNEL}`, "
            "or set MLMLIB_KERNEL to an existing kernel name."
        ) from None


def _error_text(exc: BaseException) -> str:
    """The most useful text of an error: papermill's cell traceback, else Python's."""
    if hasattr(exc, "ename"):
        text = f"{exc.ename}: {exc.evalue}\n\n" + "\n".join(getattr(exc, "traceback", []) or [])
    else:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return re.sub(r"\x1b\[[0-9;]*m", "", text)  # drop terminal colours from kernel tracebacks


def git_sha() -> str:
    """The checkout's commit (with '-dirty' when a tracked file other than a run's output has
    changes), or 'unknown'. The outputs under book/runs/ do not count: a batch of a profile whose
    records are committed rewrites them, and would otherwise call its own later runs dirty. A job
    running a code snapshot has the commit its driver saw when it took it (MLMLIB_GIT_SHA)."""
    if os.environ.get(plans.CODE_ENV) and os.environ.get("MLMLIB_GIT_SHA"):
        return os.environ["MLMLIB_GIT_SHA"]
    try:
        root = project_root()
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)book/runs"], cwd=root,
                               capture_output=True, text=True, check=False).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def package_versions() -> dict[str, str]:
    """Versions of Python and the packages that decide the numbers."""
    out = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def device_info() -> dict[str, str | int]:
    """The machine a run used: CPU model and cores, and the GPU if torch sees one."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info: dict[str, str | int] = {"host": platform.node(), "cpu": cpu, "cores": os.cpu_count() or 0,
                                  "gpu": "none"}
    # which slot and job of an executor ran it (empty in a serial batch)
    for field_name, variable in (("cuda_visible_devices", "CUDA_VISIBLE_DEVICES"),
                                 ("threads", "OMP_NUM_THREADS"), ("executor", "MLMLIB_EXECUTOR"),
                                 ("slot", "MLMLIB_SLOT"),
                                 ("job_id", "MLMLIB_JOB_ID")):
        if os.environ.get(variable):
            info[field_name] = os.environ[variable]
    info["gpu"] = gpu_name(os.environ.get("CUDA_VISIBLE_DEVICES"))
    return info


def gpu_name(visible: str | None) -> str:
    """The name of the first GPU a run sees, asked of nvidia-smi, or 'none'.

    Not asked of torch: importing torch takes seconds in the process that writes the record, and
    a job told to stop for a requeue while torch is half-imported may not exit in time (#15).
    """
    first = (visible or "").split(",")[0].strip()
    if visible is not None and first in ("", "-1", "NoDevFiles"):
        return "none"  # CUDA_VISIBLE_DEVICES hides every GPU
    command = ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"] + (["-i", first] if first else [])
    try:
        asked = subprocess.run(command, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "none"
    names = [line.strip() for line in asked.stdout.splitlines() if line.strip()]
    return names[0] if asked.returncode == 0 and names else "none"
