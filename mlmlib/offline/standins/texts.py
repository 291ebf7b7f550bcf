"""The embedded texts the stand-ins are made of, and the seeded edits that make rows of them."""

from __future__ import annotations

import hashlib
import re
from functools import cache

import numpy as np

TRAIN_ROWS = 200  # enough for few-label subsets and a selection holdout once an overlay shrinks them
EVAL_ROWS = 60
CORPUS_TEXTS = 300
SEED = 0
GLUE_SPLITS = ("train", "validation", "test")
# Austen has train and validation only: the other evaluation splits read the validation sentences
# from these offsets, so no two splits share a row.
EVAL_OFFSETS = {"validation": 0, "validation_matched": 0, "validation_mismatched": 100, "test": 200,
                "test_matched": 200, "test_mismatched": 300}


@cache
def austen_sentences(split: str) -> tuple[str, ...]:
    """Austen sentences of 6 to 30 words; for an evaluation split, validation sentences from its offset."""
    from mlmlib.data.corpora import embedded_rows

    source = "train" if split == "train" else "validation"
    rows = [r["text"] for r in embedded_rows("austen.jsonl.xz") if r["split"] == source]
    chosen = [t for t in rows if 6 <= len(t.split()) <= 30 and "(" not in t and ")" not in t]
    return tuple(chosen[EVAL_OFFSETS.get(split, 0):])


@cache
def reviews(split: str) -> tuple[tuple[str, int], ...]:
    """Amazon-food reviews of a split as (text, 1 if 5 stars else 0), alternating the two labels."""
    from mlmlib.data.corpora import embedded_rows

    source = {"unsupervised": "validation"}.get(split, split)
    rows = [r for r in embedded_rows("amazon-food.jsonl.xz") if r["split"] == source]
    great = [(_clean(r["text"]), 1) for r in rows if r["label"] == "great"]
    other = [(_clean(r["text"]), 0) for r in rows if r["label"] != "great"]
    return tuple(row for pair in zip(great, other) for row in pair)


def _clean(text: str) -> str:
    """A review without HTML tags or doubled spaces."""
    return " ".join(re.sub(r"<[^>]+>", " ", text).split())


def first_sentence(text: str, max_words: int = 30) -> str:
    """The review's first sentence (two when the first is very short), at most max_words words."""
    parts = re.split(r"(?<=[.!?])\s+", text)
    sentence = parts[0] if len(parts[0].split()) >= 5 or len(parts) == 1 else " ".join(parts[:2])
    return " ".join(sentence.split()[:max_words])


def split_tokens(text: str) -> list[str]:
    """Words (with an apostrophe inside) and punctuation marks; no brackets, which trees reserve."""
    return re.findall(r"\w+(?:'\w+)?|[^\w\s()]", text)


def seed_of(*parts) -> int:
    """A stable seed from any values (Python's hash() changes between processes)."""
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big")


def window(sentence: str, seed: int) -> str:
    """A contiguous run of about two thirds of the sentence's words, its start picked by seed."""
    words = sentence.split()
    size = max(3, 2 * len(words) // 3)
    start = seed % (len(words) - size + 1)
    return " ".join(words[start:start + size]).rstrip(".,;:!?")


def drop_one(sentence: str, seed: int) -> str:
    """The sentence with one word (picked by seed) left out."""
    words = sentence.split()
    del words[seed % len(words)]
    return " ".join(words)


def shuffled(sentence: str, seed: int) -> str:
    """The sentence's words in a seeded order other than the original."""
    words = sentence.split()
    order = np.random.default_rng(seed).permutation(len(words))
    if list(order) == sorted(order):
        order = order[::-1]
    return " ".join(words[i] for i in order)


def as_question(sentence: str) -> str:
    """'Is it true that <sentence>?'"""
    body = sentence.rstrip(".!?;:,")
    return f"Is it true that {body[:1].lower()}{body[1:]}?"


def rows_in(split: str) -> int:
    return TRAIN_ROWS if split == "train" else EVAL_ROWS


@cache
def vader() -> dict[str, float]:
    from mlmlib.data.wordlists import load_word_list

    return load_word_list("vader")


@cache
def profanity() -> tuple[str, ...]:
    from mlmlib.data.wordlists import load_word_list

    return tuple(sorted(load_word_list("profanity")))
