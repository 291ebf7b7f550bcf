"""Content words of English text with a guessed part of speech, and same-POS synonym swaps.

Shared by paper A's word-level perturbations and paper B's robustness test. Offline there is
no POS tagger with shipped data (NLTK's and spaCy's taggers download theirs), so the part of
speech is guessed: lemminflect's lexicon lists the parts of speech a form can have, the
synonym table (WordNet) must list the lemma under it, and a few context cues (a determiner,
"to", a degree adverb or copula before the word) break ties; `unambiguous=True` keeps only the
words that need no tie broken. Stop words (scikit-learn's list and a few more) are never
content words; only nouns, verbs and adjectives are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

WORDNET_TO_UPOS = {"n": "NOUN", "v": "VERB", "a": "ADJ"}
POS_WORDS = {"n": "noun", "v": "verb", "a": "adjective"}
_WORD = re.compile(r"[A-Za-z]+")
# Closed-class words never count as content words (lemminflect lists "it" as a noun).
_EXTRA_STOP = {"someone", "somebody", "don", "didn", "doesn", "isn", "wasn", "t", "s", "ll", "ve", "re", "d", "m"}
_DETERMINERS = {"a", "an", "the", "this", "that", "these", "those", "my", "your", "his", "her", "its",
                "our", "their", "some", "any", "no", "every", "each", "another", "such", "of"}
_VERB_CUES = {"to", "i", "we", "you", "they", "will", "would", "can", "could", "should", "may",
              "might", "must", "do", "does", "did", "don", "didn", "doesn", "not", "never", "just"}
_ADJ_CUES = {"very", "so", "too", "really", "quite", "extremely", "pretty", "is", "are", "was",
             "were", "be", "been", "more", "most", "less", "least", "seems", "looks", "tastes"}


def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS) | _EXTRA_STOP


@dataclass(frozen=True)
class Word:
    """A content word of a text: its character span, guessed WordNet POS, lemma and Penn tag."""

    start: int
    end: int
    text: str
    pos: str      # WordNet letter: n, v, a
    lemma: str
    tag: str      # Penn Treebank tag of the form (NN, NNS, VBD, JJR, ...)


def _candidates(form: str, synonyms) -> dict[str, str]:
    """The WordNet parts of speech (with lemma) lemminflect and WordNet both allow for a form."""
    from lemminflect import getAllLemmas

    out = {}
    for pos, upos in WORDNET_TO_UPOS.items():
        lemmas = getAllLemmas(form, upos=upos).get(upos, ())
        for lemma in lemmas:
            if pos in synonyms.pos_of(lemma):
                out[pos] = lemma
                break
    return out


def _one_pos(form: str, cands: dict[str, str], synonyms) -> bool:
    """True if the table lists the form, and every lemma lemminflect gives it, under one POS only."""
    from lemminflect import getAllLemmas

    lemmas = {form}.union(*getAllLemmas(form).values())
    listed = set().union(*(synonyms.pos_of(lemma) for lemma in lemmas))
    return len(cands) == 1 and listed == set(cands)


def _choose_pos(cands: dict[str, str], prev: str, next_cands: dict[str, str]) -> str:
    """Break a part-of-speech tie with the previous word (and whether the next can be a noun)."""
    if len(cands) == 1:
        return next(iter(cands))
    if prev in _ADJ_CUES and "a" in cands:
        return "a"
    if prev in _VERB_CUES and "v" in cands:
        return "v"
    if prev in _DETERMINERS:
        if "a" in cands and "n" in next_cands:
            return "a"
        if "n" in cands:
            return "n"
    for pos in ("a", "n", "v"):  # no cue: adjective, then noun, then verb
        if pos in cands:
            return pos
    raise AssertionError("unreachable: cands is not empty")


def penn_tag(form: str, lemma: str, pos: str) -> str | None:
    """The Penn tag under which lemminflect inflects `lemma` to `form`, or None."""
    from lemminflect import getAllInflections

    forms = getAllInflections(lemma, upos=WORDNET_TO_UPOS[pos])
    for tag, variants in forms.items():  # a canonical form first ("food" is NN before NNS)
        if variants and variants[0] == form:
            return tag
    for tag, variants in forms.items():
        if form in variants:
            return tag
    return None


def content_words(text: str, synonyms, unambiguous: bool = False) -> list[Word]:
    """The nouns, verbs and adjectives of a text (POS guessed as the module docstring says).

    unambiguous: keep only words that the table (and lexicon) list under one part of speech
    (any of WordNet's four), so that no context cue has to guess it.
    """
    stop = _stop_words()
    tokens = list(_WORD.finditer(text))
    lower = [m.group().lower() for m in tokens]
    cands = [{} if w in stop else _candidates(w, synonyms) for w in lower]
    out = []
    for i, m in enumerate(tokens):
        if not cands[i] or (unambiguous and not _one_pos(lower[i], cands[i], synonyms)):
            continue
        prev = lower[i - 1] if i else ""
        nxt = cands[i + 1] if i + 1 < len(tokens) else {}
        pos = _choose_pos(cands[i], prev, nxt)
        lemma = cands[i][pos]
        tag = penn_tag(lower[i], lemma, pos)
        if tag is None:
            continue
        out.append(Word(m.start(), m.end(), m.group(), pos, lemma, tag))
    return out


def inflect(lemma: str, tag: str) -> str | None:
    """The form of `lemma` for a Penn tag, from lemminflect's lexicon only (None if it has none)."""
    from lemminflect import getInflection

    forms = getInflection(lemma, tag=tag, inflect_oov=False)
    return forms[0] if forms else None


def synonym_replacement(word: Word, synonyms, rng: np.random.Generator) -> str | None:
    """A re-inflected WordNet synonym of the same POS that differs from the word, or None."""
    options = []
    for syn in sorted(synonyms.synonyms(word.lemma, word.pos)):
        form = inflect(syn, word.tag)
        if form and form.isalpha() and form.lower() != word.text.lower():
            options.append(form)
    if not options:
        return None
    form = options[int(rng.integers(len(options)))]
    return form.capitalize() if word.text[0].isupper() else form


def fragment(text: str, start: int, end: int, words: int = 4) -> str:
    """The text around characters [start, end): up to `words` words either side, '...' where cut."""
    spans = [m.span() for m in re.finditer(r"\S+", text)]
    before = [s for s, e in spans if e <= start]
    after = [e for s, e in spans if s >= end]
    left = before[-words] if len(before) > words else 0
    right = after[words - 1] if len(after) > words else len(text)
    shown = " ".join(text[left:right].split())
    return ("... " if left else "") + shown + (" ..." if right < len(text) else "")
