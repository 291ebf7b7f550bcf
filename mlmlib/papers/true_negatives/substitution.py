"""The robustness test set: content words swapped for held-out WordNet synonyms."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mlmlib.data.content_words import POS_WORDS, content_words, fragment, synonym_replacement
from mlmlib.data.synonyms import SynonymTable
from mlmlib.papers.true_negatives.config import SUBSTITUTION_POS

SAMPLES_PER_TASK = 10


@dataclass
class Substitution:
    """A test set with held-out synonyms substituted: texts, unchanged labels, what changed."""

    text: list[str]
    label: list[int]
    n_substituted: list[int]
    samples: list[dict]  # the first swap of each changed text: fragment, word, substitute, pos


def check_substitution_pos(pos_rule: str) -> None:
    """The word-choice rule of the robustness test must be one of SUBSTITUTION_POS."""
    if pos_rule not in SUBSTITUTION_POS:
        raise ValueError(f"substitution_pos must be one of {SUBSTITUTION_POS}, got {pos_rule!r}")


def swap_word(text: str, start: int, end: int, new: str) -> str:
    """Text with characters [start, end) replaced; an "a"/"an" just before follows the new word."""
    article = "an" if new[:1].lower() in "aeiou" else "a"  # by the letter: "a hour" stays wrong
    before = re.sub(r"\b([Aa])n?(\s+)$", lambda m: m[1] + article[1:] + m[2], text[:start])
    return before + new + text[end:]


def synonym_test_set(texts: Sequence[str], labels: Sequence[int], table: SynonymTable, *,
                     rate: float = 0.5, seed: int = 0, pos_rule: str = "unambiguous") -> Substitution:
    """Swap each content word for a held-out synonym of its part of speech, with probability `rate`.

    Content words are nouns, verbs and adjectives, never stop words (`content_words`). The
    synonym shares a synset of `table` (the held-out WordNet part) with the word's lemma under
    the word's part of speech and takes the word's inflection. pos_rule "unambiguous" swaps
    only words that WordNet lists under one part of speech; "guessed" also words whose part of
    speech context cues guess (paper A's rule). Labels are kept; same seed, same test set.
    """
    if not 0.0 < rate <= 1.0:
        raise ValueError(f"rate must be in (0, 1], got {rate!r}")
    if len(texts) != len(labels):
        raise ValueError(f"texts and labels differ in length: {len(texts)} vs {len(labels)}")
    check_substitution_pos(pos_rule)
    rng = np.random.default_rng(seed)
    out, counts, samples = [], [], []
    for text in texts:
        swaps = []
        for word in content_words(text, table, unambiguous=pos_rule == "unambiguous"):
            if rng.random() >= rate:
                continue
            new = synonym_replacement(word, table, rng)
            if new is not None:
                swaps.append((word, new))
        changed = text
        for word, new in reversed(swaps):  # from the end: earlier spans keep their offsets
            changed = swap_word(changed, word.start, word.end, new)
        if swaps:
            word, new = swaps[0]
            samples.append({"fragment": fragment(text, word.start, word.end), "word": word.text,
                            "substitute": new, "pos": POS_WORDS[word.pos]})
        out.append(changed)
        counts.append(len(swaps))
    return Substitution(out, [int(v) for v in labels], counts, samples)
