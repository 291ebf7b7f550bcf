"""Atomic file writes: write to a temporary file beside the target, then rename."""

from __future__ import annotations

import fcntl
import json
import math
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; move it into place only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        os.chmod(tmp, 0o644)  # mkstemp makes owner-only files; results are for everyone to read
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_json(path: str | Path, data: Any) -> None:
    """Write `data` as indented JSON, atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True, default=_jsonable) + "\n")


def _jsonable(value: Any) -> Any:
    """Turn numpy and torch scalars and arrays into plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def temp_name(path: str | Path, tag: str = "tmp") -> Path:
    """A sibling name no other process on any host uses: '.<name>.<host>.<pid>.<tag>'."""
    path = Path(path)
    return path.with_name(f".{path.name}.{socket.gethostname()}.{os.getpid()}.{tag}")


def remove_dead_temps(path: str | Path, tag: str = "tmp") -> None:
    """Delete temp_name() leftovers of `path` whose process on this host is gone (killed runs)."""
    path = Path(path)
    prefix = f".{path.name}.{socket.gethostname()}."
    for leftover in path.parent.glob(f"{prefix}*.{tag}"):
        pid = leftover.name[len(prefix):-len(tag) - 1]
        if pid.isdigit() and not pid_alive(int(pid)):
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)


def pid_alive(pid: int) -> bool:
    """True when a process with this id runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def file_lock(path: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing; never deleted, so never raced)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def without_nan(value: Any) -> tuple[Any, list[dict]]:
    """`value` with NaN and infinities replaced by None (strict JSON), and where each one was:
    [{"path": [key or index, ...], "value": "nan" | "inf" | "-inf"}]; with_nan() undoes it."""
    nulls: list[dict] = []

    def walk(v: Any, at: list) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            nulls.append({"path": at, "value": repr(v)})
            return None
        if isinstance(v, dict):
            return {k: walk(x, [*at, k]) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x, [*at, i]) for i, x in enumerate(v)]
        return v

    return walk(value, []), nulls


def with_nan(value: Any, nulls: list[dict]) -> Any:
    """Put back the non-finite numbers that without_nan() replaced by None."""
    for null in nulls:
        *parents, last = null["path"]
        target = value
        for key in parents:
            target = target[key]
        target[last] = float(null["value"])
    return value
