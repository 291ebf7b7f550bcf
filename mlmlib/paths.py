"""Where the project keeps its runs, records, caches and shipped data."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
EMBEDDED_DIR = PACKAGE_DIR / "data" / "embedded"


def project_root() -> Path:
    """Return the book's root: MLMLIB_ROOT, else the nearest folder above cwd holding _config.yml."""
    if os.environ.get("MLMLIB_ROOT"):
        return Path(os.environ["MLMLIB_ROOT"]).resolve()
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "_config.yml").exists() and (folder / "mlmlib").is_dir():
            return folder
    if (PACKAGE_DIR.parent / "_config.yml").exists():
        return PACKAGE_DIR.parent
    return here


def runs_dir(profile: str) -> Path:
    """Return the folder holding the executed notebooks and records of one profile."""
    return project_root() / "book" / "runs" / profile


def work_dir() -> Path:
    """Return the git-ignored folder for checkpoints and caches shared across runs."""
    return Path(os.environ.get("MLMLIB_WORK", project_root() / ".work"))
