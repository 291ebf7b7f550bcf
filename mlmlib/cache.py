"""Artifacts (pretrained models, tokenizers) cached under a hash of the config that made them.

Several runs share one expensive artifact (e.g. a pretrained base model used by every
masking arm); the first run that needs it builds it, the others load it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mlmlib.paths import work_dir

DONE = "config.json"  # written last: its presence means the artifact is complete


def config_hash(config: dict[str, Any]) -> str:
    """A short stable hash of a JSON-able config."""
    blob = json.dumps(config, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def artifact_dir(kind: str, config: dict[str, Any]) -> Path:
    """The folder an artifact of this kind and config lives in (complete or not)."""
    return work_dir() / "cache" / kind / config_hash(config)


def cached(kind: str, config: dict[str, Any], build: Callable[[Path], None]) -> Path:
    """Return the artifact's folder, building it with build(tmp_folder) first if it is missing."""
    final = artifact_dir(kind, config)
    if (final / DONE).exists():
        return final
    tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        build(tmp)
        (tmp / DONE).write_text(json.dumps(config, indent=1, sort_keys=True, default=str))
        if final.exists():  # an incomplete leftover of a killed build
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final
