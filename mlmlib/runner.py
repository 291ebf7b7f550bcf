"""Papermill batch runner: execute each run of a plan, skip finished ones, set failures aside."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from mlmlib import results
from mlmlib.atomic import write_json
from mlmlib.paths import PACKAGE_DIR, project_root, runs_dir, work_dir
from mlmlib.plans import Plan, Run, notebook_parameters, notebooks_dir
from mlmlib.results import record_paths

KERNEL = os.environ.get("MLMLIB_KERNEL", "mlmlib")
FAILED = "_failed"
LOGS = "_logs"
VERSIONED = ("mlmlib", "torch", "transformers", "datasets", "accelerate", "tokenizers",
             "numpy", "pandas", "scikit-learn", "papermill", "jupyter-book")


@dataclass
class BatchReport:
    """What a batch did: runs executed, skipped and failed (with their error)."""

    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when no run failed."""
        return not self.failed


# Orchestration only: editing these never changes what a notebook measures.
NOT_VERSIONED = {"runner.py", "plans.py", "book.py", "cli.py", "__main__.py"}


def code_version(notebook: str) -> str:
    """Hash of the library's sources, the shipped data manifest and the notebook's cells."""
    h = hashlib.sha256()
    sources = [p for p in sorted(PACKAGE_DIR.rglob("*.py")) if p.name not in NOT_VERSIONED]
    for path in sources + sorted(PACKAGE_DIR.rglob("MANIFEST.json")):
        h.update(path.relative_to(PACKAGE_DIR).as_posix().encode())
        h.update(path.read_bytes())
    nb = json.loads((notebooks_dir() / f"{notebook}.ipynb").read_text())
    for cell in nb["cells"]:
        h.update(cell["cell_type"].encode())
        h.update("".join(cell["source"]).encode())
    return h.hexdigest()[:16]


def record_path(profile: str, run: Run) -> Path:
    """Where a run's record lives; its executed notebook sits beside it (.ipynb)."""
    return runs_dir(profile) / run.notebook / f"{run.slug}.json"


def run_plan(plan: Plan, force: bool = False, log=print) -> BatchReport:
    """Execute every run of a plan in order; a failure is kept aside and the batch goes on."""
    report = BatchReport()
    versions = {nb: code_version(nb) for nb in {r.notebook for r in plan.runs}}
    _check_kernel()
    for i, run in enumerate(plan.runs, 1):
        name = f"{run.notebook}/{run.slug}"
        rec_path = record_path(plan.profile, run)
        earlier = [record_path(plan.profile, r) for r in plan.runs[: i - 1]]
        key = run.key(versions[run.notebook] + _inputs_digest(plan.profile, run, earlier))
        if not force and _has_record(rec_path, key):
            log(f"[{i}/{len(plan.runs)}] skip {name}: finished record exists ({rec_path.name})")
            report.skipped.append(name)
            continue
        log(f"[{i}/{len(plan.runs)}] run  {name} ...")
        start = time.time()
        try:
            _execute(plan.profile, run, key, versions[run.notebook])
        except Exception as exc:  # noqa: BLE001 - any failure is reported, the batch goes on
            message = _error_text(exc)
            lines = message.strip().splitlines() or [repr(exc)]
            report.failed[name] = lines[0] if hasattr(exc, "ename") else lines[-1]
            log(f"[{i}/{len(plan.runs)}] FAIL {name} after {time.time() - start:.0f}s: "
                f"{report.failed[name]}")
            continue
        log(f"[{i}/{len(plan.runs)}] done {name} in {time.time() - start:.1f}s")
        report.done.append(name)
    return report


def _execute(profile: str, run: Run, key: str, version: str) -> None:
    """Run one notebook with papermill into a temporary file; move results into place on success."""
    import papermill as pm

    rec_path = record_path(profile, run)
    nb_out = rec_path.with_suffix(".ipynb")
    folder = work_dir() / profile / run.notebook / run.slug  # kept: checkpoints let a rerun resume
    folder.mkdir(parents=True, exist_ok=True)
    stale = folder / results.METRICS_FILE
    if stale.exists():
        stale.unlink()
    log_dir = runs_dir(profile) / LOGS
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{run.notebook}__{run.slug}.log"
    failed_dir = runs_dir(profile) / FAILED
    params = {**run.params, "run_dir": str(folder)}
    nb_out.parent.mkdir(parents=True, exist_ok=True)
    for leftover in nb_out.parent.glob(f".{nb_out.name}.*"):  # from a batch killed mid-run
        leftover.unlink()
    tmp_nb = nb_out.parent / f".{nb_out.name}.{os.getpid()}.ipynb"
    start = time.time()
    try:
        with open(log_path, "w") as log_file:
            pm.execute_notebook(
                str(notebooks_dir() / f"{run.notebook}.ipynb"), str(tmp_nb),
                parameters=params, kernel_name=KERNEL, cwd=str(notebooks_dir()),
                execution_timeout=run.timeout, progress_bar=False, log_output=False,
                stdout_file=log_file, stderr_file=log_file, report_mode=False,
            )
        metrics = results.read_metrics(folder)
    except BaseException as exc:
        failed_dir.mkdir(parents=True, exist_ok=True)
        stem = failed_dir / f"{run.notebook}__{run.slug}"
        if tmp_nb.exists():
            os.replace(tmp_nb, stem.with_suffix(".ipynb"))
        stem.with_suffix(".error.txt").write_text(_error_text(exc))
        raise
    record = {
        "notebook": run.notebook, "profile": profile, "run_id": f"{run.notebook}/{run.slug}",
        "title": run.title, "label": run.label, "chapter": run.chapter, "key": key,
        "code_version": version, "params": _full_params(run), "metrics": metrics,
        "seed": run.params.get("seed"), "git_sha": git_sha(), "versions": package_versions(),
        "device": device_info(), "wall_time_s": round(time.time() - start, 2),
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    os.replace(tmp_nb, nb_out)
    write_json(rec_path, record)  # written last: a record means the run is complete
    for old in (failed_dir / f"{run.notebook}__{run.slug}.ipynb",
                failed_dir / f"{run.notebook}__{run.slug}.error.txt"):
        if old.exists():
            old.unlink()


def _full_params(run: Run) -> dict:
    """Every parameter the run used: the notebook's defaults overridden by the plan's values."""
    defaults = notebook_parameters(str(notebooks_dir() / f"{run.notebook}.ipynb"))
    return {k: v for k, v in {**defaults, **run.params}.items() if k != "run_dir"}


def _inputs_digest(profile: str, run: Run, earlier: list[Path]) -> str:
    """For a summary notebook (one with a `profile` parameter), a hash of the records it reads.

    Its own code and parameters do not change when the experiments it summarises are rerun,
    so the records of the notebooks before it in the plan are part of what makes it finished.
    """
    if "profile" not in notebook_parameters(str(notebooks_dir() / f"{run.notebook}.ipynb")):
        return ""
    if run.params.get("profile", profile) != profile:  # it reads another profile's records
        earlier = record_paths(run.params["profile"])
    h = hashlib.sha256()
    for path in sorted(set(earlier)):
        if path.exists():
            rec = json.loads(path.read_text())
            h.update(f"{path.name}:{rec.get('key')}@{rec.get('finished_at')}".encode())
    return h.hexdigest()[:16]


def _has_record(path: Path, key: str) -> bool:
    """True when a complete record with this key and its executed notebook both exist."""
    if not path.exists() or not path.with_suffix(".ipynb").exists():
        return False
    try:
        return json.loads(path.read_text()).get("key") == key
    except json.JSONDecodeError:
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
    """The checkout's commit (with '-dirty' when it has changes), or 'unknown'."""
    try:
        root = project_root()
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
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
    info: dict[str, str | int] = {"cpu": cpu, "cores": os.cpu_count() or 0, "gpu": "none"}
    import torch

    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info
