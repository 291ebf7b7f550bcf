"""Task scores for selective masking (paper C): how close each word is to a task word list.

Reconstructed (the paper body was not readable offline, see the paper notes):
s(w) = max over list words v of cos(e_w, e_v), or the mean of the top-k cosines, clipped to
[0, 1]; list words score 1; words without a vector score 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from mlmlib.papers.selective_masking.config import SCORE_METHODS


@dataclass
class TaskScores:
    """Scores in [0, 1] for `words`, in the same order, and what could not be scored."""

    words: list[str]
    scores: np.ndarray  # float32, (len(words),)
    missing: list[str] = field(default_factory=list)  # words without a vector: score 0
    list_found: int = 0  # list words that have a vector
    list_missing: int = 0  # list words without a vector (still score 1 if in `words`)

    @property
    def n_missing(self) -> int:
        """How many words got score 0 for lack of a vector."""
        return len(self.missing)

    def as_dict(self) -> dict[str, float]:
        """word -> score."""
        return dict(zip(self.words, self.scores.tolist()))


def _vector_parts(vectors: Any) -> tuple[dict[str, int], np.ndarray]:
    """(word -> row, matrix): see mlmlib.data.vectors.vector_parts."""
    from mlmlib.data.vectors import vector_parts

    _, index, matrix = vector_parts(vectors)
    return index, matrix


def task_scores(
    words: Iterable[str],
    word_list: Iterable[str] | Mapping[str, float],
    vectors: Any,
    method: str = "max",
    k: int = 5,
    *,
    lowercase: bool = True,
    block: int = 4096,
) -> TaskScores:
    """Score each word by its cosine closeness to the task word list, in [0, 1].

    `word_list` is an iterable of words or a mapping word -> value (e.g. a sentiment
    lexicon; only its keys are used). `vectors` has `.words` and `.vectors` (as
    `load_vectors` returns) or is a (words, matrix) pair. `method`: "max" or "topk-mean".
    """
    if method not in SCORE_METHODS:
        raise ValueError(f"method must be one of {SCORE_METHODS}, got {method!r}")
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    norm = (lambda w: w.lower()) if lowercase else (lambda w: w)
    listed = list(dict.fromkeys(norm(w) for w in word_list))
    if not listed:
        raise ValueError("word_list is empty: give at least one task word")
    index, matrix = _vector_parts(vectors)
    if lowercase:  # keep the first row of each lower-cased form
        low: dict[str, int] = {}
        for w, i in index.items():
            low.setdefault(w.lower(), i)
        index = low
    list_rows = [index[w] for w in listed if w in index]
    if not list_rows:
        raise ValueError(f"no word of word_list ({len(listed)} words, e.g. {listed[:3]}) "
                         "has a vector: check the vectors and the lower-casing")
    words = list(words)
    keys = [norm(w) for w in words]
    rows = np.array([index.get(w, -1) for w in keys], dtype=np.int64)
    has = rows >= 0
    scores = np.zeros(len(words), dtype=np.float32)
    lv = F.normalize(torch.from_numpy(matrix[list_rows]), dim=1)
    kk = min(k, len(list_rows))
    todo = np.flatnonzero(has)
    for start in range(0, len(todo), block):  # blocked: words x list may not fit at once
        sel = todo[start:start + block]
        sim = F.normalize(torch.from_numpy(matrix[rows[sel]]), dim=1) @ lv.T
        s = sim.max(dim=1).values if method == "max" else sim.topk(kk, dim=1).values.mean(dim=1)
        scores[sel] = s.clamp(0.0, 1.0).numpy()
    listed_set = set(listed)
    scores[np.array([w in listed_set for w in keys], dtype=bool)] = 1.0
    missing = [w for w, h, key in zip(words, has, keys) if not h and key not in listed_set]
    return TaskScores(words, scores, missing, list_found=len(list_rows),
                      list_missing=len(listed) - len(list_rows))
