"""A synonym table: unordered pairs of single words that share a WordNet synset, by part of speech."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

import numpy as np

POS_NAMES = {"n": "n", "noun": "n", "v": "v", "verb": "v", "a": "a", "adj": "a", "s": "a", "r": "r", "adv": "r"}


def normalise_pos(pos: str | None) -> str | None:
    """Map a part-of-speech name (n/noun, v/verb, a/adj/s, r/adv) to WordNet's letter."""
    if pos is None:
        return None
    if pos not in POS_NAMES:
        raise ValueError(f"pos={pos!r} is unknown; allowed: None, {', '.join(POS_NAMES)}")
    return POS_NAMES[pos]


def single_word(lemma: str) -> str | None:
    """Lowercase a lemma and return it if it is one alphabetic word, else None ("ice_cream", "3-D")."""
    word = lemma.lower()
    return word if word.isascii() and word.isalpha() else None


class SynonymTable:
    """Synonym pairs {a, b} (a != b) with the parts of speech under which they are synonyms."""

    def __init__(self, pairs: dict[tuple[str, str], frozenset[str]], word_pos: dict[str, set[str]] | None = None):
        self._pairs = {tuple(sorted(p)): frozenset(pos) for p, pos in pairs.items() if p[0] != p[1]}
        self._index: dict[str, dict[str, set[str]]] = {}  # word -> synonym -> parts of speech
        for (a, b), pos in self._pairs.items():
            self._index.setdefault(a, {}).setdefault(b, set()).update(pos)
            self._index.setdefault(b, {}).setdefault(a, set()).update(pos)
        self._word_pos = word_pos if word_pos is not None else {
            w: set().union(*syn.values()) for w, syn in self._index.items()
        }

    @classmethod
    def from_synsets(cls, synsets: Iterable[tuple[str, Iterable[str]]]) -> SynonymTable:
        """Build from (pos, lemmas) per synset; only single-word lemmas are kept, lowercased."""
        pairs: dict[tuple[str, str], set[str]] = {}
        word_pos: dict[str, set[str]] = {}
        for pos, lemmas in synsets:
            pos = normalise_pos(pos)
            words = sorted({w for w in map(single_word, lemmas) if w})
            for w in words:
                word_pos.setdefault(w, set()).add(pos)
            for i, a in enumerate(words):
                for b in words[i + 1 :]:
                    pairs.setdefault((a, b), set()).add(pos)
        return cls({p: frozenset(s) for p, s in pairs.items()}, word_pos)

    def __len__(self) -> int:
        return len(self._pairs)

    def __contains__(self, word: str) -> bool:
        return word in self._index

    def __repr__(self) -> str:
        return f"SynonymTable({len(self._pairs)} pairs, {len(self._index)} words)"

    def synonyms(self, word: str, pos: str | None = None) -> set[str]:
        """The synonyms of a word (never the word itself), optionally under one part of speech."""
        pos = normalise_pos(pos)
        return {s for s, p in self._index.get(word, {}).items() if pos is None or pos in p}

    def is_synonym(self, a: str, b: str, pos: str | None = None) -> bool:
        """True if a and b are different words that share a synset (under pos, if given)."""
        pos = normalise_pos(pos)
        found = self._index.get(a, {}).get(b)
        return bool(found) and (pos is None or pos in found)

    def words(self) -> list[str]:
        """The words that have at least one synonym, sorted."""
        return sorted(self._index)

    def pairs(self, pos: str | None = None) -> list[tuple[str, str]]:
        """The unordered synonym pairs (a < b), sorted, optionally under one part of speech."""
        pos = normalise_pos(pos)
        return sorted(p for p, s in self._pairs.items() if pos is None or pos in s)

    def pos_of(self, word: str) -> set[str]:
        """The parts of speech (WordNet letters n, v, a, r) the source lists the word under."""
        return set(self._word_pos.get(word, set()))

    def split(self, fraction: float, seed: int = 0) -> tuple[SynonymTable, SynonymTable]:
        """Partition the pairs at random: `fraction` of them in the first table, the rest in the second."""
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"fraction={fraction!r} must be in [0, 1]")
        pairs = sorted(self._pairs)
        order = np.random.default_rng(seed).permutation(len(pairs))
        cut = round(fraction * len(pairs))
        first = {pairs[i]: self._pairs[pairs[i]] for i in order[:cut]}
        second = {pairs[i]: self._pairs[pairs[i]] for i in order[cut:]}
        return SynonymTable(first, self._word_pos), SynonymTable(second, self._word_pos)


@cache
def load_synonyms(source: str = "wordnet") -> SynonymTable:
    """Load a synonym table: "wordnet" (embedded WordNet 3.0) or "nltk-wordnet" (needs NLTK and its data).

    Built once per process and shared: a SynonymTable has no methods that change it.
    """
    if source == "wordnet":
        from mlmlib.data.corpora import embedded_rows

        return SynonymTable.from_synsets((r["pos"], r["lemmas"]) for r in embedded_rows("wordnet.jsonl.xz"))
    if source == "nltk-wordnet":
        try:
            from nltk.corpus import wordnet as wn

            synsets = [(s.pos(), s.lemma_names()) for s in wn.all_synsets()]
        except (ImportError, LookupError) as err:
            raise RuntimeError(
                "load_synonyms('nltk-wordnet') needs `pip install nltk` and `nltk.download('wordnet')`; "
                "load_synonyms('wordnet') uses the embedded WordNet 3.0 instead"
            ) from err
        return SynonymTable.from_synsets(synsets)
    raise ValueError(f"load_synonyms: source={source!r} is unknown; known sources: wordnet, nltk-wordnet")
