"""Free disk space before a run starts: an entry that states `disk_gb` (the GB one of its runs
writes at its peak: checkpoints in its work folder, artifacts in the shared cache, both under
the work folder) refuses to start where the work folder's file system has less free, naming the
entry, the setting, the folder and the space missing. A run that fills the disk fails hours in,
after a checkpoint half-written; this fails before the notebook loads anything."""

from __future__ import annotations

import shutil
from pathlib import Path

from mlmlib.paths import work_dir
from mlmlib.runs.plans import Run

GB = 1e9


def free_gb(folder: Path) -> float:
    """Free space (GB) on the file system of `folder`, or of its nearest existing parent."""
    folder = Path(folder).resolve()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return shutil.disk_usage(folder).free / GB


def space_refusal(profile: str, run: Run, folder: Path | None = None) -> str | None:
    """Why `run` must not start for lack of disk (its entry's `disk_gb` against the free space of
    `folder`, default the work folder), or None."""
    if run.disk_gb is None:
        return None
    folder = Path(folder or work_dir())
    free = free_gb(folder)
    if free >= run.disk_gb:
        return None
    return (f"{run.notebook}/{run.slug}: its entry in notebooks/plans/{profile}.yaml sets "
            f"`disk_gb: {run.disk_gb:g}`, and the work folder {folder} has {free:.1f} GB free "
            f"({run.disk_gb - free:.1f} GB missing); nothing ran. Free space there, or point "
            "MLMLIB_WORK at a larger disk")


def disk_lines(runs: list[Run]) -> list[str]:
    """The dry run's disk lines: per entry (notebook and its runs), GB per run and in all."""
    by: dict[str, list[Run]] = {}
    for run in runs:
        by.setdefault(run.notebook, []).append(run)
    stated = {k: v for k, v in by.items() if any(r.disk_gb for r in v)}
    if not stated:
        return []
    lines = ["Disk (GB one run writes at its peak, and the sum if every run's work folder stays):"]
    for notebook, mine in stated.items():
        per = max(r.disk_gb or 0.0 for r in mine)
        total = sum(r.disk_gb or 0.0 for r in mine)
        lines.append(f"  {notebook:34s} {len(mine):4d} runs  {per:7.1f} GB/run  {total:8.1f} GB")
    return lines
