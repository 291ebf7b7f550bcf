"""Resumable training checkpoints: weights (safetensors), optimizer/scheduler/RNG state, history.

A checkpoint is a folder `step-00000100/` inside the run's checkpoint_dir, written under a
temporary name and renamed into place, so a run killed while saving leaves the previous
checkpoint intact. Only the newest is kept. It is resumed only by a run with the same
configuration, starting weights, data and identity (its fingerprint); any other is set aside.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path

import torch
from torch import nn

WEIGHTS = "model.safetensors"
TRAINER = "trainer_state.pt"
STATE = "state.json"
PREFIX = "step-"


def _plain(value):
    """Tuples to lists, for JSON and comparison."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def tensors_digest(tensors) -> str:
    """A digest of tensors' values (weights, data): what a checkpoint must have started from."""
    h = hashlib.sha256()
    items = sorted(tensors.items()) if isinstance(tensors, dict) else enumerate(tensors)
    for key, value in items:
        if isinstance(value, torch.Tensor):
            h.update(f"{key}:{value.dtype}:{list(value.shape)}".encode())
            h.update(value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy())
    return h.hexdigest()[:16]


# A data dict may carry its own cheap identity under this key (a packed corpus of tens of GB:
# its recipe, size and sampled hash); the fingerprint then takes it instead of hashing every value.
DATA_IDENTITY = "data_identity"


def fingerprint(config, model: nn.Module, data: dict, skip=(), identity: dict | None = None) -> dict:
    """What must match for a checkpoint to be resumed: the config, the starting weights, the
    data's values (or its DATA_IDENTITY), and `identity` (anything else that decides the
    result: hook settings, arm)."""
    cfg = {k: _plain(v) for k, v in asdict(config).items() if k not in skip}
    shapes = sorted((k, list(v.shape)) for k, v in model.state_dict().items())
    model_hash = hashlib.sha256(json.dumps(shapes).encode()).hexdigest()[:16]
    data_shapes = {k: list(v.shape) for k, v in data.items() if isinstance(v, torch.Tensor)}
    values = data[DATA_IDENTITY] if isinstance(data.get(DATA_IDENTITY), str) else tensors_digest(data)
    return {"config": cfg, "model": f"{type(model).__name__}:{model_hash}", "data": data_shapes,
            "start": tensors_digest(model.state_dict()), "data_values": values,
            "identity": json.loads(json.dumps(identity or {}, sort_keys=True, default=str))}


def training_state(optimizer, scheduler, sampler, **generators: torch.Generator) -> dict:
    """What a resumed training loop needs besides the weights: the optimizer, the schedule, the
    batch order (a `BatchSampler`) and the random generators (global, CUDA's, `generators`)."""
    return {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
            "sampler": sampler.state_dict(), "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
            **{name: generator.get_state() for name, generator in generators.items()}}


def restore_training_state(state: dict, optimizer, scheduler, sampler,
                           **generators: torch.Generator) -> None:
    """Put back what `training_state` saved, into the same kinds of objects."""
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    sampler.load_state_dict(state["sampler"])
    for name, generator in generators.items():
        generator.set_state(state[name])
    torch.set_rng_state(state["torch_rng"])
    if torch.cuda.is_available() and state.get("cuda_rng") is not None:
        torch.cuda.set_rng_state_all(state["cuda_rng"])


def _mismatch(saved: dict, current: dict) -> list[str]:
    """Human-readable differences between two fingerprints."""
    out = []
    for key, value in current["config"].items():
        if saved["config"].get(key) != value:
            out.append(f"config.{key}: checkpoint {saved['config'].get(key)!r} != now {value!r}")
    for key in ("model", "data", "start", "data_values", "identity"):
        if saved.get(key) != current.get(key):
            out.append(f"{key}: checkpoint {saved.get(key)} != now {current.get(key)}")
    return out


def remove_partial(checkpoint_dir: str | Path) -> None:
    """Delete checkpoints half-written by a killed run (temporary '.step-*' folders)."""
    for partial in Path(checkpoint_dir).glob(f".{PREFIX}*"):
        if partial.is_dir() and not partial.name.endswith(".set-aside"):
            shutil.rmtree(partial, ignore_errors=True)


def latest(checkpoint_dir: str | Path) -> Path | None:
    """The newest complete checkpoint folder, or None."""
    folder = Path(checkpoint_dir)
    found = sorted(p for p in folder.glob(f"{PREFIX}*") if p.is_dir() and (p / STATE).exists())
    return found[-1] if found else None


def save(checkpoint_dir: str | Path, step: int, model: nn.Module, trainer_state: dict,
         meta: dict) -> Path:
    """Write a checkpoint atomically (temp folder, then rename) and drop older ones."""
    from safetensors.torch import save_model

    folder = Path(checkpoint_dir)
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"{PREFIX}{step:08d}"
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=folder))
    try:
        save_model(model, str(tmp / WEIGHTS))  # handles tied tensors
        torch.save(trainer_state, tmp / TRAINER)
        (tmp / STATE).write_text(json.dumps(meta, default=float))
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    for old in folder.glob(f"{PREFIX}*"):
        if old != final and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    return final


def load_latest(checkpoint_dir: str | Path, model: nn.Module, current: dict, log=print) -> dict | None:
    """Load the newest checkpoint into `model` and return its state; None when there is none.

    A checkpoint written by another configuration, or one that cannot be read, is set aside
    (renamed, with one line saying why) and None is returned: training starts fresh.
    """
    from safetensors.torch import load_file, load_model

    remove_partial(checkpoint_dir)
    path = latest(checkpoint_dir)
    if path is None:
        return None
    try:
        meta = json.loads((path / STATE).read_text())
        diff = _mismatch(meta["fingerprint"], current)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        diff, meta = [f"its {STATE} cannot be read ({type(exc).__name__}: {exc})"], None
    if not diff:
        try:  # read everything before touching the model: a bad file leaves the model as it was
            load_file(str(path / WEIGHTS))
            state = torch.load(path / TRAINER, weights_only=True, map_location="cpu")
        except Exception as exc:  # noqa: BLE001 - any unreadable file means: start fresh
            diff = [f"its files cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"]
    if diff:
        aside = path.with_name(f".{path.name}.set-aside")
        shutil.rmtree(aside, ignore_errors=True)
        path.rename(aside)
        log(f"checkpoint {path} set aside as {aside.name}, training starts fresh: " + "; ".join(diff))
        return None
    load_model(model, str(path / WEIGHTS), strict=True, device=str(next(model.parameters()).device))
    return state | meta
