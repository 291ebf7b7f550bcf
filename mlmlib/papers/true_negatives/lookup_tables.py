"""The correction's lookup table for a tokenizer, and the held-out WordNet pairs kept from it.

The correction may use one table (WordNet's synonyms, `synonym_lookup`, or word-vector
neighbours, `neighbour_lookup`: "word2vec/GloVe neighbours"), a `negatives.PairLookup` of
whole-word vocabulary tokens; the robustness test swaps in only WordNet pairs held out of every
correction table, so it is not circular.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from mlmlib.data.synonyms import SynonymTable
from mlmlib.papers.true_negatives import negatives as neg
from mlmlib.papers.true_negatives.config import Table
from mlmlib.papers.true_negatives.sources import SYNONYM_SOURCES, load_source

# "[CLS]", "[unused3]", "<s>", "<pad>": special tokens of BERT / RoBERTa-style vocabularies.
_SPECIAL_RE = re.compile(r"^(\[[^\[\]\s]+\]|<[^<>\s]+>)$")


@dataclass
class Tables:
    """The correction table (token-id pairs) and the held-out WordNet pairs (words)."""

    correction: neg.PairLookup
    heldout: SynonymTable
    source: str
    info: dict = field(default_factory=dict)


def vocab_tokens(tokenizer) -> list[str]:
    """The tokenizer's tokens by id."""
    return tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))


def build_tables(vocab: Sequence[str], special_tokens: Sequence[str], config: Table) -> Tables:
    """The correction table for a vocabulary and the held-out WordNet part, disjoint from it.

    WordNet's pairs are split once (`heldout_fraction` held out). With a word-vector source the
    neighbour table has the held-out WordNet pairs removed too, so the robustness test never
    uses a pair the correction saw.
    """
    wordnet = load_source("wordnet" if config.source not in SYNONYM_SOURCES else config.source)
    used, heldout = wordnet.split(1.0 - config.heldout_fraction, seed=config.split_seed)
    if config.source in SYNONYM_SOURCES:
        table = synonym_lookup(used, vocab, special_tokens=special_tokens)
    else:
        # Reconstructed: only alphabetic tokens, or punctuation and digits become "synonyms"
        # (GloVe puts ',' next to 'one'); an empty entry is skipped by the lookup builders.
        words = [t if t.isalpha() else "" for t in vocab]
        table = neighbour_lookup(load_source(config.source), words, top_k=config.top_k,
                                 threshold=config.threshold, special_tokens=special_tokens)
    held = synonym_lookup(heldout, vocab, special_tokens=special_tokens)
    keys = table.keys[~torch.isin(table.keys, held.keys)]
    correction = neg.PairLookup(keys, table.vocab_size, table.source)
    info = {"source": config.source, "correction_pairs": len(correction),
            "heldout_pairs_in_vocab": len(held), "heldout_pairs": len(heldout),
            "removed_heldout_overlap": len(table) - len(correction)}
    return Tables(correction, heldout, config.source, info)


def _vocab_list(vocab: Sequence[str] | Mapping[str, int]) -> list[str]:
    """Tokens by id, from a list of tokens or a token -> id mapping."""
    if isinstance(vocab, Mapping):
        if not vocab:
            raise ValueError("vocab must not be empty")
        tokens = [""] * (max(vocab.values()) + 1)
        for tok, i in vocab.items():
            tokens[i] = tok
        return tokens
    tokens = list(vocab)
    if not tokens:
        raise ValueError("vocab must not be empty")
    return tokens


def whole_word_ids(
    vocab: Sequence[str] | Mapping[str, int], special_tokens: Iterable[str] = ()
) -> dict[str, int]:
    """Map each whole-word token to its id: no '##' continuation pieces, no special tokens."""
    special = set(special_tokens)
    out: dict[str, int] = {}
    for i, tok in enumerate(_vocab_list(vocab)):
        if not tok or tok.startswith("##") or tok in special or _SPECIAL_RE.match(tok):
            continue
        out.setdefault(tok, i)
    return out


def _find(word: str, index: Mapping[str, int], lowercase: bool) -> int | None:
    """Id of `word` in `index`, trying its lower-cased form too when `lowercase`."""
    i = index.get(word)
    if i is None and lowercase:
        i = index.get(word.lower())
    return i


def synonym_lookup(
    table: Any,
    vocab: Sequence[str] | Mapping[str, int],
    *,
    special_tokens: Iterable[str] = (),
    lowercase: bool = True,
    symmetric: bool = True,
) -> neg.PairLookup:
    """Pairs of whole-word vocabulary tokens that the synonym table calls synonyms.

    `table` is a mapping word -> iterable of words, or any object with `.synonyms(word)`
    (e.g. the WordNet `SynonymTable`). Multi-word synonyms never match a single token.
    """
    index = whole_word_ids(vocab, special_tokens)
    get = table.synonyms if hasattr(table, "synonyms") else (lambda w: table.get(w, ()))
    a: list[int] = []
    b: list[int] = []
    for word, i in index.items():  # build time only: one pass over the vocabulary
        for syn in get(word) or ():
            j = _find(syn, index, lowercase)
            if j is not None and j != i:
                a.append(i)
                b.append(j)
    return neg.PairLookup.from_pairs(a, b, len(_vocab_list(vocab)), symmetric=symmetric,
                                 source="synonyms")


def _vector_parts(vectors: Any) -> tuple[list[str], dict[str, int], np.ndarray]:
    """(words, word -> row, matrix): see mlmlib.data.vectors.vector_parts."""
    from mlmlib.data.vectors import vector_parts

    return vector_parts(vectors)


def neighbour_lookup(
    vectors: Any,
    vocab: Sequence[str] | Mapping[str, int],
    *,
    top_k: int | None = 10,
    threshold: float | None = 0.6,
    symmetric: bool = True,
    special_tokens: Iterable[str] = (),
    lowercase: bool = True,
    block: int = 1024,
) -> neg.PairLookup:
    """Pairs of whole-word tokens that are nearest neighbours in word-vector space.

    A pair (a, b) is kept when b is among a's `top_k` cosine neighbours (None: no limit) and
    their cosine is >= `threshold` (None: no threshold). `vectors` has `.words` and
    `.vectors` (as `load_vectors` returns) or is a (words, matrix) pair.
    """
    if top_k is None and threshold is None:
        raise ValueError("neighbour_lookup needs top_k (int >= 1) or threshold (in [-1, 1]), or both")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be an int >= 1 or None, got {top_k}")
    if threshold is not None and not -1.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [-1, 1] or None, got {threshold}")
    _, vindex, matrix = _vector_parts(vectors)
    ids, rows = [], []
    for tok, i in whole_word_ids(vocab, special_tokens).items():
        r = _find(tok, vindex, lowercase)
        if r is not None:
            ids.append(i)
            rows.append(r)
    vocab_size = len(_vocab_list(vocab))
    if len(ids) < 2:
        return neg.PairLookup(torch.zeros(0, dtype=torch.long), vocab_size, "vectors")
    m = F.normalize(torch.from_numpy(matrix[rows]), dim=1)
    tok_ids = torch.tensor(ids)
    a_parts, b_parts = [], []
    for start in range(0, len(ids), block):  # blocked: the full n x n matrix may not fit
        sim = m[start:start + block] @ m.T
        own = torch.arange(start, start + sim.shape[0])
        sim[torch.arange(sim.shape[0]), own] = -2.0  # never one's own neighbour
        if top_k is not None:
            vals, cols = sim.topk(min(top_k, len(ids) - 1), dim=1)
            keep = vals >= (threshold if threshold is not None else -2.0)
            keep &= vals > -2.0
            r_idx = own.unsqueeze(1).expand_as(cols)[keep]
            c_idx = cols[keep]
        else:
            r_idx, c_idx = (sim >= threshold).nonzero(as_tuple=True)
            r_idx = r_idx + start
        a_parts.append(tok_ids[r_idx])
        b_parts.append(tok_ids[c_idx])
    return neg.PairLookup.from_pairs(torch.cat(a_parts).numpy(), torch.cat(b_parts).numpy(),
                                 vocab_size, symmetric=symmetric, source="vectors")
