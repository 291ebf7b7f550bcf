"""B1 and B2's pretraining text: a corpus cut into sequences (or packed rows), cached by config.

B0 builds the cache entry once (`encoded_corpus`) in its own plan entry, on CPU, before the
GPU runs that need it; B1 and B2 then find it under the same key (`pretraining_data`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from mlmlib.papers.true_negatives.corpus_config import Corpus
from mlmlib.papers.true_negatives.packed_identity import (
    check_packed,
    packed_damage,
    read_identity,
    write_identity,
)

ENCODED_FILE = "data.pt"
PACKED_FILE = "packed.int32"
PACK_BATCH = 1000  # texts tokenized at once while packing: memory is bounded by this, not the corpus


def encoded_corpus(config: Corpus, tokenizer=None) -> Path:
    """The cache folder of the encoded corpus, built first if missing (or damaged).

    Packed: one int32 file with its identity beside it, checked (a few blocks, never the whole
    file) each time the entry is looked up; otherwise the padded tensors in ENCODED_FILE.
    """
    from mlmlib import cache

    if tokenizer is None:
        from mlmlib.tokenize import load_tokenizer

        tokenizer = load_tokenizer(config.tokenizer)

    def build(folder):
        from mlmlib.basemodel import encode_corpus
        from mlmlib.data import load_corpus

        texts = load_corpus(config.corpus)["train"]
        order = np.random.default_rng(config.seed).permutation(len(texts))
        if config.max_texts:  # 0: all
            order = order[: config.max_texts]
        texts = texts.select(np.sort(order).tolist())
        if config.pack:
            rows = pack_texts(tokenizer, texts, config.max_length, folder / PACKED_FILE)
            write_identity(folder / PACKED_FILE, config.key(), rows=rows, texts=len(texts))
        else:
            torch.save(encode_corpus(tokenizer, texts["text"], config.max_length), folder / ENCODED_FILE)

    def intact(folder):
        return packed_damage(folder / PACKED_FILE, config.key()) if config.pack else None

    # keyed by this module's code only (narrow): B0's code version holds the same code, so an edit
    # elsewhere in paper B neither reruns B0 nor has B1 and B2 pack again in their GPU jobs
    return cache.cached("true-negatives-corpus", config.key(), build, code_of=__name__,
                        expect=(PACKED_FILE if config.pack else ENCODED_FILE,), intact=intact,
                        narrow=True)


def pretraining_data(config: Corpus) -> tuple[dict, Any]:
    """(tensors for `pretrain`, tokenizer); the encoded corpus is cached under its config.

    Packed corpora are kept as one int32 file, memory-mapped: rows are read when a batch
    needs them, so a corpus larger than memory trains as well as a small one.
    """
    from mlmlib.tokenize import load_tokenizer

    tokenizer = load_tokenizer(config.tokenizer)
    folder = encoded_corpus(config, tokenizer)
    if config.pack:
        return load_packed(folder / PACKED_FILE, tokenizer, config.max_length, config.key()), tokenizer
    return torch.load(folder / ENCODED_FILE, weights_only=True), tokenizer


def corpus_summary(config: Corpus, folder: Path) -> dict:
    """What the encoded corpus holds, for B0's table: texts, rows, tokens, size on disk."""
    if config.pack:
        identity = read_identity(folder / PACKED_FILE)
        rows, size = identity["rows"], identity["bytes"]
        texts, tokens = identity.get("texts"), rows * config.max_length
        fingerprint = identity["sampled_sha256"]
    else:
        data = torch.load(folder / ENCODED_FILE, weights_only=True)
        rows, texts, size = data["input_ids"].shape[0], None, (folder / ENCODED_FILE).stat().st_size
        tokens, fingerprint = int(data["attention_mask"].sum()), "-"
    return {"corpus": config.corpus, "tokenizer": config.tokenizer, "max_texts": config.max_texts,
            "texts": texts, "packed": config.pack,
            "max_length": config.max_length, "rows": rows, "tokens": tokens,
            "megabytes": round(size / 1e6, 1), "sampled_sha256": fingerprint}


def pack_texts(tokenizer, texts, max_length: int, path: Path) -> int:
    """Concatenate the texts' tokens and write [CLS] chunk [SEP] rows of max_length to `path`.

    Streams: PACK_BATCH texts are tokenized at a time and their full rows appended to the file
    as int32, so packing billions of tokens (OpenWebText) needs the memory of one batch. The
    tail shorter than a row is dropped. `texts`: a list of strings or a Dataset with a "text"
    column. Returns the number of rows.
    """
    width = max_length - 2
    if width < 1:
        raise ValueError(f"max_length must be at least 3 to pack ([CLS] token [SEP]), got {max_length}")
    carry, rows = np.zeros(0, dtype=np.int32), 0
    with open(path, "wb") as out:
        for start in range(0, len(texts), PACK_BATCH):
            batch = texts[start:start + PACK_BATCH]
            batch = batch["text"] if isinstance(batch, dict) else list(batch)
            pieces = tokenizer(batch, add_special_tokens=False)["input_ids"]
            flat = np.concatenate([carry, *(np.asarray(p, dtype=np.int32) for p in pieces)])
            n = len(flat) // width
            block = np.empty((n, max_length), dtype=np.int32)
            block[:, 0], block[:, -1] = tokenizer.cls_token_id, tokenizer.sep_token_id
            block[:, 1:-1] = flat[: n * width].reshape(n, width)
            out.write(block.tobytes())
            carry, rows = flat[n * width:], rows + n
    if rows == 0:
        raise ValueError(f"the corpus has fewer than {width} tokens: not one row of max_length={max_length}")
    return rows


def load_packed(path: Path, tokenizer, max_length: int, recipe: dict | None = None) -> dict:
    """The packed rows as `pretrain` data: memory-mapped int32 ids (copy-on-write, never
    written) and the special ids; no attention mask, since packed rows have no padding.

    With `recipe` the file's identity is checked first (`check_packed`) and handed on as
    DATA_IDENTITY: a checkpoint's fingerprint takes it instead of hashing every value."""
    from mlmlib.checkpoint import DATA_IDENTITY

    data = {}
    if recipe is not None:
        data[DATA_IDENTITY] = check_packed(path, recipe)
    ids = np.memmap(path, dtype=np.int32, mode="c").reshape(-1, max_length)
    return data | {"input_ids": torch.from_numpy(ids),
                   "special_ids": torch.tensor(sorted(tokenizer.all_special_ids))}
