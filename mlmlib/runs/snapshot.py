"""The code a SLURM job runs: a snapshot of the project's code, taken when the plan is submitted.

A job may wait in the queue for hours while the tree is edited. The driver copies the code once
per submission, the mlmlib package and the notebooks folder (templates and plans), into a folder
named by the digest of what it copies, `<work folder>/_code/<digest>/`: written under a temporary
name beside it, then renamed, so a folder of that name is always complete (and shared by the
submissions of the same code). Each job script names it in MLMLIB_CODE, puts it first on
PYTHONPATH and starts from it, so the job process, the plan it reads, its notebook and the
notebook's kernel all run the snapshot; MLMLIB_ROOT and MLMLIB_WORK keep its records, logs and
checkpoints in the project. The driver computes the record keys from the same snapshot, so a job
runs under the code version it was submitted with, whatever is edited after.

No snapshot (the work folder refuses the copy, or the folder is gone by the time a job starts):
the job runs the project's tree, and one whose code was edited after submission runs nothing and
fails, saying so (executors.RunJob).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mlmlib.atomic import remove_dead_temps, temp_name
from mlmlib.paths import PACKAGE_DIR, project_root, work_dir
from mlmlib.runs.plans import CODE_ENV

SNAPSHOTS = "_code"  # under the work folder, which every node of a cluster sees (executors)
SHA_ENV = "MLMLIB_GIT_SHA"  # the commit the driver saw, for the job's record (runner.git_sha)
SKIPPED = {"__pycache__", ".ipynb_checkpoints"}
SOURCE_PACKAGE = PACKAGE_DIR  # the package a snapshot copies (tests point it at a copy)


def code_files() -> list[tuple[str, Path]]:
    """(name in the snapshot, file) for each file a job reads as code: the mlmlib package and the
    notebooks folder, without caches, hidden files (temporaries) and anything not a plain file."""
    found: list[tuple[str, Path]] = []
    sources = (("mlmlib", Path(SOURCE_PACKAGE)), ("notebooks", project_root() / "notebooks"))
    for name, folder in sources:
        if not folder.is_dir():
            raise OSError(f"{folder}: no such folder to copy")
        for path in sorted(folder.rglob("*")):
            parts = path.relative_to(folder).parts
            skipped = any(p in SKIPPED or p.startswith(".") for p in parts) or path.suffix == ".pyc"
            if not skipped and path.is_file():
                found.append((f"{name}/{'/'.join(parts)}", path))
    return found


def take() -> Path:
    """Copy the code into `<work>/_code/<digest>/` (kept if a folder of that digest exists);
    return that folder. Each file is read once: the digest names exactly the bytes copied."""
    blobs = [(name, path.read_bytes()) for name, path in code_files()]
    digest = hashlib.sha256()
    for name, data in blobs:
        digest.update(f"{name}\0{len(data)}\0".encode() + data)
    target = work_dir().resolve() / SNAPSHOTS / digest.hexdigest()[:16]
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_temps(target, "tmp")  # left by a killed driver
    tmp = temp_name(target, "tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        for name, data in blobs:
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_bytes(data)
        os.rename(tmp, target)
    except OSError:
        if not target.is_dir():  # else another driver renamed the same code into place first
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def take_or_explain(log=print) -> Path | None:
    """take(), or None with the reason logged: the jobs then run the project's tree."""
    try:
        code = take()
    except OSError as exc:
        log(f"no code snapshot ({exc}): each job runs the project's code as it is when the job "
            "starts; a job whose code was edited after submission runs nothing and fails, "
            "saying so")
        return None
    log(f"code snapshot {code}: the jobs run it, whatever is edited after submission")
    return code


@contextmanager
def code_root(code: Path | None) -> Iterator[None]:
    """While the block runs, this process reads notebooks, plans and code versions from `code`
    (nothing changes for None); MLMLIB_GIT_SHA holds the commit seen when it was taken."""
    from mlmlib.runs.runner import git_sha

    saved = {k: os.environ.get(k) for k in (CODE_ENV, SHA_ENV)}
    if code is not None:
        os.environ[SHA_ENV] = git_sha()  # before MLMLIB_CODE: the project's commit
        os.environ[CODE_ENV] = str(code)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def job_setup() -> list[str]:
    """Shell lines of a job script, before the job starts: the project's folders, and the code
    snapshot this driver uses (code_root), if it still exists when the job starts."""
    code = os.environ.get(CODE_ENV)
    if not code:
        return []
    q = shlex.quote
    where = f"MLMLIB_ROOT={q(str(project_root()))} MLMLIB_WORK={q(str(work_dir().resolve()))}"
    sha = os.environ.get(SHA_ENV)
    use = (f"if [ -d {q(code + '/mlmlib')} ]; then export {CODE_ENV}={q(code)} "
           f"PYTHONPATH={q(code)}${{PYTHONPATH:+:$PYTHONPATH}}; cd {q(code)}; "
           f"else unset {CODE_ENV}; echo 'mlmlib: the code snapshot' {q(code)} 'is gone: this "
           "job runs the project code' >&2; fi")
    return [f"export {where}" + (f" {SHA_ENV}={q(sha)}" if sha else ""), use]
