"""Artifacts (pretrained models, tokenizers, encoded corpora) cached under a hash of what made them.

Several runs share one expensive artifact (e.g. a pretrained base model used by every
masking arm); the first run that needs it builds it, the others load it. The key is the
config AND the digest of the code that builds it (core, data and the caller's paper), so an
edit to the training code never loads a model the old code trained.

Concurrency: a builder holds a file lock, so two processes asking for one artifact at once
build it once (the second waits, then loads). A build writes into a temporary folder named
with host and pid and renames it into place; nothing here ever deletes a complete artifact.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mlmlib.atomic import file_lock, remove_dead_temps, temp_name
from mlmlib.code_digest import module_version, paper_of, source_digest
from mlmlib.paths import work_dir

DONE = "config.json"  # written last: its presence means the artifact is complete


def config_hash(config: dict[str, Any]) -> str:
    """A short stable hash of a JSON-able config."""
    blob = json.dumps(config, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def keyed_config(config: dict[str, Any], code_of: str, narrow: bool = False) -> dict[str, Any]:
    """The config plus the digest of the code that builds it (`code_of`: the caller's __name__):
    the core, data and the caller's paper, or with `narrow` only the modules `code_of` runs."""
    return {**config, "_code": module_version(code_of) if narrow else source_digest(paper_of(code_of))}


def artifact_dir(kind: str, config: dict[str, Any], code_of: str) -> Path:
    """The folder an artifact of this kind, config and building code lives in (complete or not)."""
    return work_dir() / "cache" / kind / config_hash(keyed_config(config, code_of))


def is_complete(folder: Path, expect: Sequence[str] = ()) -> bool:
    """True when the artifact was finished (DONE written last) and holds every expected file or
    folder, its weights readable (safetensors files whose header and size agree)."""
    return (folder / DONE).exists() and all(_readable(folder / name) for name in expect)


def _readable(path: Path) -> bool:
    """The file exists and, for weights, safetensors can open it; a folder (a saved model) holds
    weights, and each of its weights files opens."""
    if path.is_dir():
        weights = list(path.rglob("*.safetensors"))
        return bool(weights) and all(_opens(w) for w in weights)
    return path.exists() and (path.suffix != ".safetensors" or _opens(path))


def _opens(weights: Path) -> bool:
    """safetensors can read the file's header, and its length agrees with it."""
    from safetensors import safe_open

    try:
        with safe_open(str(weights), "pt") as opened:
            opened.keys()
    except Exception:  # noqa: BLE001 - any unreadable weights file means: rebuild
        return False
    return True


def damage(folder: Path, expect: Sequence[str] = (),
           intact: Callable[[Path], str | None] | None = None) -> str | None:
    """Why the artifact in `folder` cannot be used (incomplete, or `intact(folder)`'s reason),
    or None when it can."""
    if not is_complete(folder, expect):
        return "incomplete"
    return intact(folder) if intact is not None else None


def cached(kind: str, config: dict[str, Any], build: Callable[[Path], None], *, code_of: str,
           expect: Sequence[str] = (), intact: Callable[[Path], str | None] | None = None,
           narrow: bool = False) -> Path:
    """Return the artifact's folder, building it with build(tmp_folder) first if it is missing.

    `code_of` is the calling module's __name__: its paper's code (with the core and data)
    is part of the key; with `narrow`, only the modules `code_of` runs (its imports' closure),
    for an artifact that a plan entry of its own builds: a notebook importing `code_of` has the
    same code in its code version, so the entry reruns exactly when the key changes. `expect`
    names files (or saved-model folders) a complete artifact holds; an entry missing one
    (damaged by hand or by a disk) is set aside and rebuilt, as is one for which
    `intact(folder)` gives a reason (a cheap check of its files' identity).
    """
    keyed = keyed_config(config, code_of, narrow)
    final = work_dir() / "cache" / kind / config_hash(keyed)
    if damage(final, expect, intact) is None:
        return final
    with file_lock(final.with_name(f"{final.name}.lock")):
        why = damage(final, expect, intact)
        if why is None:  # another process built it while we waited
            return final
        if final.exists():  # damaged: moved aside, not deleted (a reader may hold its files)
            aside = temp_name(final, "damaged")
            print(f"cache: {final} is {why}; set aside as {aside.name}, rebuilding")
            shutil.rmtree(aside, ignore_errors=True)  # this process's own earlier damaged copy
            os.replace(final, aside)
        remove_dead_temps(final)
        tmp = temp_name(final)
        shutil.rmtree(tmp, ignore_errors=True)  # this process's own failed attempt
        tmp.mkdir(parents=True)
        try:
            build(tmp)
            missing = [name for name in expect if not (tmp / name).exists()]
            if missing:  # a build that never writes what is expected would rebuild forever
                raise RuntimeError(f"building {kind} wrote no {missing}: the build function and "
                                   "`expect` disagree")
            if intact is not None and (why := intact(tmp)) is not None:  # the same, for `intact`
                raise RuntimeError(f"building {kind} wrote an artifact its own check refuses: {why}")
            (tmp / DONE).write_text(json.dumps(keyed, indent=1, sort_keys=True, default=str))
            os.replace(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final

