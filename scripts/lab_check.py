"""Run every notebook template top to bottom as JupyterLab would: its own defaults, no papermill.

Nothing is injected: each template keeps `run_dir = ""`, so it writes its checkpoints to a fresh
temporary folder and records nothing. Templates run in the smoke plan's order (a fine-tuning
page finds the models a pretraining page built in the shared cache, or builds them itself);
summary pages read the records of the profile named in their parameters.

Usage:  python scripts/lab_check.py [--only NOTEBOOK ...] [--timeout SECONDS] [--out FOLDER]
Prints one line per template (ok or the error, wall time) and exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

from mlmlib.paths import work_dir
from mlmlib.runs.plans import load_plan, notebooks_dir
from mlmlib.runs.runner import KERNEL, KERNEL_CONFIG, QuietShutdownKernelManager


def templates_in_plan_order(profile: str = "smoke") -> list[str]:
    """Each template once, in the order the plan runs them."""
    return list(dict.fromkeys(run.notebook for run in load_plan(profile).runs))


def run_template(name: str, timeout: int, out: Path) -> tuple[bool, float, str]:
    """Execute one template with its defaults; save the executed copy under `out`."""
    nb = nbformat.read(notebooks_dir() / f"{name}.ipynb", as_version=4)
    client = NotebookClient(nb, kernel_name=KERNEL, timeout=timeout, config=KERNEL_CONFIG,
                            kernel_manager_class=QuietShutdownKernelManager,
                            resources={"metadata": {"path": str(notebooks_dir())}})
    start = time.perf_counter()
    here = Path.cwd()
    try:  # in the notebooks' folder, as JupyterLab: the kernel's IPC sockets are relative paths
        os.chdir(notebooks_dir())
        client.execute()
        ok, message = True, "ok"
    except (CellExecutionError, CellTimeoutError) as exc:
        ok, message = False, str(exc).strip().splitlines()[-1][:200]
    finally:
        os.chdir(here)
        out.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out / f"{name}.ipynb")
    return ok, time.perf_counter() - start, message


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="run only this template (repeatable)")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds per cell")
    parser.add_argument("--out", type=Path, default=work_dir() / "lab-check",
                        help="where the executed copies go")
    args = parser.parse_args(argv)
    names = args.only or templates_in_plan_order()
    unknown = sorted(set(names) - set(templates_in_plan_order()))
    if unknown:
        parser.error(f"--only: unknown templates {unknown}; known: {templates_in_plan_order()}")
    failed = 0
    for name in names:
        ok, seconds, message = run_template(name, args.timeout, args.out)
        failed += not ok
        print(f"{name:32s} {'ok    ' if ok else 'FAILED'} {seconds:7.1f} s  {'' if ok else message}",
              flush=True)
    print(f"{len(names) - failed} of {len(names)} templates ran top to bottom with their defaults;"
          f" executed copies in {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
