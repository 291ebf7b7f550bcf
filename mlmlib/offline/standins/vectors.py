"""Stand-ins of gensim's word vectors: the real dimensionality over the stand-in texts' words."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from mlmlib.offline.standins.texts import (
    CORPUS_TEXTS,
    GLUE_SPLITS,
    austen_sentences,
    reviews,
    seed_of,
    vader,
)

VECTOR_DIM = 300


def _vector_words() -> list[str]:
    """The stand-in texts' lower-cased words and the task word lists' words, sorted."""
    from mlmlib.data.wordlists import load_word_list

    # the ranges the recipes draw from (openwebtext's paragraphs reach furthest)
    texts = [*austen_sentences("train")[:6000], *austen_sentences("validation"),
             *(t for split in GLUE_SPLITS for t, _ in reviews(split)[:CORPUS_TEXTS])]
    words = {w.lower() for t in texts for w in re.findall(r"[A-Za-z]+(?:'[a-z]+)?", t)}
    for name in ("vader", "bing", "profanity"):
        words |= set(load_word_list(name))
    return sorted(words)


def _unit_rows(name: str, what: str, n: int) -> np.ndarray:
    """n seeded random unit vectors (rows)."""
    m = np.random.default_rng(seed_of(name, what)).standard_normal((n, VECTOR_DIM))
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def word_vectors(name: str, file: Path) -> None:
    """gensim KeyedVectors of dimension 300: a word's own seeded direction, plus shared ones (see the docstring)."""
    from gensim.models import KeyedVectors

    from mlmlib.data.wordlists import load_word_list

    polarity = {w: np.sign(s) for w, s in load_word_list("bing").items()}
    polarity.update({w: np.sign(s) for w, s in vader().items() if s})
    words = _vector_words()
    prefixes, prefix_of = np.unique([w[:5] for w in words], return_inverse=True)
    long_enough = np.array([len(w) >= 5 for w in words])[:, None]
    sign = np.array([polarity.get(w, 0.0) for w in words])[:, None]
    poles = _unit_rows(name, "polarity", 2)
    matrix = (_unit_rows(name, "words", len(words))
              + 1.5 * long_enough * _unit_rows(name, "prefixes", len(prefixes))[prefix_of]
              + 0.7 * (sign > 0) * poles[0] + 0.7 * (sign < 0) * poles[1])
    kv = KeyedVectors(vector_size=VECTOR_DIM)
    kv.add_vectors(words, matrix.astype(np.float32))
    kv.save(str(file), separately=[])  # one file: the rename below makes it whole at once
