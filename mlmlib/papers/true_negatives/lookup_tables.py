"""The correction's lookup table for a tokenizer, and the held-out WordNet pairs kept from it.

The correction may use one table (WordNet's synonyms or word-vector neighbours); the robustness
test swaps in only WordNet pairs held out of every correction table, so it is not circular.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from mlmlib.data.synonyms import SynonymTable
from mlmlib.papers.true_negatives import negatives as neg
from mlmlib.papers.true_negatives.config import Table
from mlmlib.papers.true_negatives.sources import SYNONYM_SOURCES, load_source


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
        table = neg.synonym_lookup(used, vocab, special_tokens=special_tokens)
    else:
        # Reconstructed: only alphabetic tokens, or punctuation and digits become "synonyms"
        # (GloVe puts ',' next to 'one'); an empty entry is skipped by the lookup builders.
        words = [t if t.isalpha() else "" for t in vocab]
        table = neg.neighbour_lookup(load_source(config.source), words, top_k=config.top_k,
                                     threshold=config.threshold, special_tokens=special_tokens)
    held = neg.synonym_lookup(heldout, vocab, special_tokens=special_tokens)
    keys = table.keys[~torch.isin(table.keys, held.keys)]
    correction = neg.PairLookup(keys, table.vocab_size, table.source)
    info = {"source": config.source, "correction_pairs": len(correction),
            "heldout_pairs_in_vocab": len(held), "heldout_pairs": len(heldout),
            "removed_heldout_overlap": len(table) - len(correction)}
    return Tables(correction, heldout, config.source, info)
