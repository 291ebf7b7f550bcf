"""Task word lists with scores: sentiment lexicons and an offensive-word list."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import numpy as np

from mlmlib.data.corpora import embedded_lines

WORD_LISTS = ("vader", "bing", "afinn", "profanity")
_WORD = re.compile(r"^[a-z][a-z'\-]*$")


def load_word_list(name: str, words_only: bool = True) -> dict[str, float]:
    """Load a word list as word -> score: sentiment signed (VADER [-4, 4], AFINN [-5, 5], Bing +-1), profanity 1.0.

    words_only keeps lowercase alphabetic entries (dropping emoticons such as ":)").
    """
    if name not in WORD_LISTS:
        raise ValueError(f"load_word_list: name={name!r} is unknown; known lists: {', '.join(WORD_LISTS)}")
    scores = dict(_LOADERS[name]())
    if words_only:
        scores = {w: s for w, s in scores.items() if _WORD.match(w)}
    return scores


def sample_words(words: Iterable[str], size: int, seed: int = 0) -> list[str]:
    """`size` of the words drawn without replacement with `seed` (same seed, same sample); 0: all.

    The words are sorted first, so the sample depends on the set of words and the seed only.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ValueError(f"size must be an int >= 0 (0: every word), got {size!r}")
    pool = sorted(set(words))
    if size > len(pool):
        raise ValueError(f"size={size} is more than the {len(pool)} words to draw from")
    if size == 0:
        return pool
    picked = np.random.default_rng(seed).choice(len(pool), size=size, replace=False)
    return [pool[i] for i in sorted(picked)]


@cache
def _vader() -> tuple[tuple[str, float], ...]:
    # Embedded copy (MIT) of vaderSentiment's lexicon: token, mean human rating.
    return tuple((w, float(s)) for w, s in (line.split("\t") for line in embedded_lines("vader.tsv.xz")))


@cache
def _bing() -> tuple[tuple[str, float], ...]:
    # A handful of words are listed as both positive and negative; they are ambiguous, so dropped.
    labels: dict[str, set[str]] = {}
    for line in embedded_lines("bing.tsv.xz"):
        word, sentiment = line.split("\t")
        labels.setdefault(word, set()).add(sentiment)
    return tuple(
        (w, 1.0 if s == {"positive"} else -1.0) for w, s in labels.items() if len(s) == 1
    )


@cache
def _afinn() -> tuple[tuple[str, float], ...]:
    # AFINN is ODbL, so it is read from its own package at run time, never copied into the bundle.
    import afinn

    path = Path(afinn.__file__).parent / "data" / "AFINN-en-165.txt"
    rows = (line.rsplit("\t", 1) for line in path.read_text(encoding="utf-8").splitlines() if "\t" in line)
    return tuple((w.strip(), float(s)) for w, s in rows)


@cache
def _profanity() -> tuple[tuple[str, float], ...]:
    # better-profanity's own list (MIT), read from the installed package.
    import better_profanity

    path = Path(better_profanity.__file__).parent / "profanity_wordlist.txt"
    words = sorted({w.strip().lower() for w in path.read_text(encoding="utf-8").splitlines() if w.strip()})
    return tuple((w, 1.0) for w in words)


_LOADERS = {"vader": _vader, "bing": _bing, "afinn": _afinn, "profanity": _profanity}
