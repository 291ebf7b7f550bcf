"""The cheap identity of a packed corpus file: proof that it is the file its recipe made.

A packed corpus at paper scale is tens of GB (OpenWebText: about 9B tokens, 36 GB of int32), so
nothing reads it whole to check it: not the cache, not a checkpoint's fingerprint (which would
hash every value on every start of every arm). Its identity is its size, a hash of a few blocks
read at fixed places, and its recipe (tokenizer, corpus, max_texts, max_length, ...), written
beside it when it is packed and checked whenever it is read. That catches a truncated or
overwritten file, a damaged block among those read, and a file packed by another recipe; a
change inside a block that is not read goes unseen (files are written whole and renamed into
place, so that takes a hand or a disk fault).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

IDENTITY_FILE = "packed.json"  # beside the packed file: its recipe, size and sampled hash
SAMPLED_BLOCKS = 16  # blocks read for the identity, the first and the last among them
BLOCK_BYTES = 1 << 16  # 64 KiB each: at most 1 MiB read, whatever the file's size


class PackedFileMismatch(ValueError):
    """A packed file that is not the one its recipe made: names the file and what differs."""


def sample_offsets(size: int) -> list[int]:
    """Where the identity's blocks start: the whole file when it is small, else SAMPLED_BLOCKS
    blocks spread evenly from the first byte to the last."""
    if size <= SAMPLED_BLOCKS * BLOCK_BYTES:
        return list(range(0, size, BLOCK_BYTES))
    last = size - BLOCK_BYTES
    return [round(i * last / (SAMPLED_BLOCKS - 1)) for i in range(SAMPLED_BLOCKS)]


def sampled_digest(path: Path) -> str:
    """A hash of the file's size and of the blocks at `sample_offsets` (never the whole file)."""
    size = Path(path).stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with open(path, "rb") as handle:
        for offset in sample_offsets(size):
            handle.seek(offset)
            digest.update(handle.read(BLOCK_BYTES))
    return digest.hexdigest()[:16]


def packed_identity(path: Path, recipe: dict) -> dict:
    """What identifies a packed file: its recipe, size in bytes and sampled hash."""
    path = Path(path)
    return {"recipe": recipe, "bytes": path.stat().st_size, "sampled_sha256": sampled_digest(path),
            "sampled_blocks": len(sample_offsets(path.stat().st_size)), "block_bytes": BLOCK_BYTES}


def write_identity(path: Path, recipe: dict, **facts) -> dict:
    """Write the packed file's identity (and `facts`: rows, texts, tokens) beside it, atomically."""
    from mlmlib.atomic import write_json

    identity = packed_identity(path, recipe) | facts
    write_json(Path(path).with_name(IDENTITY_FILE), identity)
    return identity


def read_identity(path: Path) -> dict:
    """The identity written beside a packed file; PackedFileMismatch when there is none."""
    beside = Path(path).with_name(IDENTITY_FILE)
    try:
        return json.loads(beside.read_text())
    except (OSError, ValueError) as exc:
        raise PackedFileMismatch(f"{path}: its identity {beside.name} cannot be read "
                                 f"({type(exc).__name__}); pack it again") from exc


def check_packed(path: Path, recipe: dict) -> str:
    """Check a packed file against the identity beside it and `recipe`, reading a few blocks;
    return a short digest of that identity. PackedFileMismatch names what differs."""
    saved = read_identity(path)
    recipe = json.loads(json.dumps(recipe))  # as it was written: tuples as lists
    changed = sorted(k for k in {*recipe, *saved.get("recipe", {})}
                     if recipe.get(k) != saved.get("recipe", {}).get(k))
    if changed:
        diff = "; ".join(f"{k}: packed {saved.get('recipe', {}).get(k)!r}, asked {recipe.get(k)!r}"
                         for k in changed)
        raise PackedFileMismatch(f"{path} was packed by another recipe ({diff})")
    size = Path(path).stat().st_size
    if size != saved.get("bytes"):
        raise PackedFileMismatch(f"{path} has {size} bytes, {saved.get('bytes')} when it was packed")
    width = 4 * int(recipe.get("max_length", 1))
    if size % width:
        raise PackedFileMismatch(f"{path}: {size} bytes is not a whole number of rows of {width} bytes")
    if sampled_digest(path) != saved.get("sampled_sha256"):
        raise PackedFileMismatch(f"{path}: a sampled block changed since it was packed")
    blob = json.dumps({k: saved[k] for k in ("recipe", "bytes", "sampled_sha256")}, sort_keys=True)
    return "packed:" + hashlib.sha256(blob.encode()).hexdigest()[:16]


def packed_damage(path: Path, recipe: dict) -> str | None:
    """`check_packed`'s reason, or None when the file is the one its recipe made (for the cache)."""
    try:
        check_packed(path, recipe)
    except PackedFileMismatch as exc:
        return str(exc)
    except OSError as exc:
        return f"{path} cannot be read ({type(exc).__name__})"
    return None
