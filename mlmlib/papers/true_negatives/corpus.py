"""B1 and B2's pretraining text: a corpus cut into sequences (or packed rows), cached by config."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch


@dataclass
class CorpusConfig:
    """Which text and how it is cut into pretraining sequences."""

    tokenizer: str = "embedded-wordpiece-8k"
    corpus: str = "embedded-english"  # or a hub corpus: openwebtext, wikipedia (network)
    max_texts: int | None = 8000  # texts drawn (seeded shuffle); None: all
    max_length: int = 32
    pack: bool = False  # concatenate texts into full-length chunks (long documents, paper scale)
    seed: int = 0

    def key(self) -> dict:
        """What identifies the encoded corpus (in a warm start's cache key)."""
        return dataclasses.asdict(self)


def pretraining_data(config: CorpusConfig) -> tuple[dict, Any]:
    """(tensors for `pretrain`, tokenizer); the encoded corpus is cached under its config.

    Packed corpora are kept as one int32 file, memory-mapped: rows are read when a batch
    needs them, so a corpus larger than memory trains as well as a small one.
    """
    from mlmlib import cache
    from mlmlib.tokenize import load_tokenizer

    tokenizer = load_tokenizer(config.tokenizer)

    def build(folder):
        from mlmlib.basemodel import encode_corpus
        from mlmlib.data import load_corpus

        texts = load_corpus(config.corpus)["train"]
        order = np.random.default_rng(config.seed).permutation(len(texts))
        if config.max_texts is not None:
            order = order[: config.max_texts]
        texts = texts.select(np.sort(order).tolist())
        if config.pack:
            pack_texts(tokenizer, texts, config.max_length, folder / PACKED_FILE)
        else:
            torch.save(encode_corpus(tokenizer, texts["text"], config.max_length), folder / "data.pt")

    folder = cache.cached("true-negatives-corpus", config.key(), build,
                          code_of=__name__, expect=(PACKED_FILE if config.pack else "data.pt",))
    if config.pack:
        return load_packed(folder / PACKED_FILE, tokenizer, config.max_length), tokenizer
    return torch.load(folder / "data.pt", weights_only=True), tokenizer


PACKED_FILE = "packed.int32"
PACK_BATCH = 1000  # texts tokenized at once while packing: memory is bounded by this, not the corpus


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


def load_packed(path: Path, tokenizer, max_length: int) -> dict:
    """The packed rows as `pretrain` data: memory-mapped int32 ids (copy-on-write, never
    written) and the special ids; no attention mask, since packed rows have no padding."""
    ids = np.memmap(path, dtype=np.int32, mode="c").reshape(-1, max_length)
    return {"input_ids": torch.from_numpy(ids),
            "special_ids": torch.tensor(sorted(tokenizer.all_special_ids))}
