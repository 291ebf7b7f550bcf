"""Run every notebook template top to bottom as JupyterLab would: its own defaults, no papermill.

Nothing is injected: each template keeps `run_dir = ""`, so it writes its checkpoints to a fresh
temporary folder and records nothing. Templates run in the smoke plan's order (a fine-tuning
page finds the models a pretraining page built in the shared cache); summary pages read the
records of the profile named in their parameters. One edit is made, as a user would make it:
A3 fine-tunes the models of both corpora, so A2 runs a second time with `corpus = "shift"`
set at the end of its parameters cell. An edit of a parameter group gives the fields it
changes (`{"setup": {"steps": 5}}`), merged into the group's overrides as a user would type it
(`setup = {**setup, "steps": 5}`).

Templates run two at a time by default (`--parallel`), each in its own process with one torch
thread, as `make book` runs a batch: a template waits for the templates its smoke-plan entry
`needs` (A3 for both runs of A2), and an entry marked `alone` (it measures time) runs alone.

Usage:  python scripts/lab_check.py [--only NOTEBOOK ...] [--timeout SECONDS] [--out FOLDER]
                                    [--parallel N]
Prints one line per template (ok or the error, wall time) and exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

from mlmlib.paths import work_dir
from mlmlib.runs.plans import load_plan, notebook_groups, notebook_parameters, notebooks_dir
from mlmlib.runs.runner import KERNEL, QuietShutdownKernelManager, kernel_config

# template: the parameter edits of its extra runs (each after the run with the defaults); a
# group's edit is a mapping of the fields it changes
EDITS = {"A2_synthetic_pretrain": [{"corpus": "shift"}]}


def edit_lines(name: str, edit: dict) -> str:
    """The lines a user would append to the template's parameters cell to make `edit`."""
    path = str(notebooks_dir() / f"{name}.ipynb")
    declared, groups = notebook_parameters(path), notebook_groups(path)
    lines = []
    for key, value in edit.items():
        if key not in declared:
            raise ValueError(f"{name}: no parameter {key!r} to edit; it has {sorted(declared)}")
        if key in groups:
            if not isinstance(value, dict):
                raise ValueError(f"{name}: {key} is a group ({groups[key].__name__}): edit its fields "
                                 f"with a mapping, got {value!r}")
            fields = ", ".join(f"{field!r}: {v!r}" for field, v in value.items())
            lines.append(f"\n{key} = {{**{key}, {fields}}}")
        else:
            lines.append(f"\n{key} = {value!r}")
    return "".join(lines)


def edit_label(edit: dict) -> str:
    """'corpus=shift', 'setup.steps=5': an edit as a file-name-safe label."""
    parts = []
    for key, value in edit.items():
        if isinstance(value, dict):
            parts += [f"{key}.{field}={v}" for field, v in value.items()]
        else:
            parts.append(f"{key}={value}")
    return ",".join(parts)


def templates_in_plan_order(profile: str = "smoke") -> list[str]:
    """Each template once, in the order the plan runs them."""
    return list(dict.fromkeys(run.notebook for run in load_plan(profile).runs))


def run_template(name: str, timeout: int, out: Path, edit: dict | None = None
                 ) -> tuple[bool, float, str]:
    """Execute one template with its defaults (or `edit` appended to its parameters cell); save
    the executed copy under `out`."""
    nb = nbformat.read(notebooks_dir() / f"{name}.ipynb", as_version=4)
    if edit:
        cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        cell.source += edit_lines(name, edit)
    client = NotebookClient(nb, kernel_name=KERNEL, timeout=timeout, config=kernel_config(),
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
        suffix = f"_{edit_label(edit)}" if edit else ""
        nbformat.write(nb, out / f"{name}{suffix}.ipynb")
    return ok, time.perf_counter() - start, message


def waits(profile: str = "smoke") -> tuple[dict[str, set[str]], set[str]]:
    """{template: the templates it waits for}, and the templates that run alone (the plan's)."""
    plan = load_plan(profile)
    needs = {run.notebook: set(run.needs) for run in plan.runs}
    return needs, {run.notebook for run in plan.runs if run.alone}


def run_side_by_side(names: list[str], args, parallel: int) -> int:
    """Each template in a process of its own (this script with --only), `parallel` at a time in
    the plan's order, once the templates it needs have ended; returns the failed count."""
    needs, alone = waits()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    pending, running, ended, failed = list(names), {}, set(), 0
    while pending or running:
        for name in list(pending):
            busy = len(running) >= parallel or (running and (name in alone or
                                                             set(running) & alone))
            if busy or not (needs.get(name, set()) & set(names)) <= ended:
                continue
            cmd = [sys.executable, __file__, "--only", name, "--timeout", str(args.timeout),
                   "--out", str(args.out), "--parallel", "1"]
            running[name] = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
            pending.remove(name)
        time.sleep(0.5)
        for name, proc in list(running.items()):
            if proc.poll() is None:
                continue
            lines = proc.stdout.read().splitlines()
            print("\n".join(lines[:-1]), flush=True)  # its template lines, not its summary
            failed += proc.returncode != 0
            ended.add(name)
            del running[name]
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="run only this template (repeatable)")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds per cell")
    parser.add_argument("--out", type=Path, default=work_dir() / "lab-check",
                        help="where the executed copies go")
    parser.add_argument("--parallel", type=int, default=2,
                        help="templates run at once, one torch thread each (1: in this process)")
    args = parser.parse_args(argv)
    args.out = args.out.resolve()
    names = args.only or templates_in_plan_order()
    unknown = sorted(set(names) - set(templates_in_plan_order()))
    if unknown:
        parser.error(f"--only: unknown templates {unknown}; known: {templates_in_plan_order()}")
    if args.parallel < 1:
        parser.error(f"--parallel must be at least 1, got {args.parallel}")
    runs = [(name, edit) for name in names for edit in [None, *EDITS.get(name, [])]]
    for name, edit in runs:  # an edit that no longer fits its template fails before anything runs
        try:
            edit_lines(name, edit or {})
        except ValueError as exc:
            parser.error(f"EDITS: {exc}")
    if args.parallel > 1 and len(names) > 1:
        failed = run_side_by_side(names, args, args.parallel)
        print(f"{len(names) - failed} of {len(names)} templates went top to bottom (defaults, "
              f"and the edits in EDITS); executed copies in {args.out}")
        return 1 if failed else 0
    failed = 0
    for name, edit in runs:
        ok, seconds, message = run_template(name, args.timeout, args.out, edit)
        failed += not ok
        label = name + (f" ({edit_label(edit)})" if edit else "")
        print(f"{label:44s} {'ok    ' if ok else 'FAILED'} {seconds:7.1f} s  {'' if ok else message}",
              flush=True)
    print(f"{len(runs) - failed} of {len(runs)} runs of {len(names)} templates went top to bottom"
          f" (defaults, and the edits in EDITS); executed copies in {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
