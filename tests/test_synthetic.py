"""Paper A's generator: labels, alphabets, corpora with and without the property."""

import numpy as np
import pytest

from mlmlib.data import synthetic as syn

SMALL = {"n_sets": 100, "n_states": 500, "n_patterns": 4, "pattern_length": 2, "pattern_set_size": 1}


def test_label_invariant_under_alphabet_swap():
    lang = syn.make_language(syn.LanguageConfig(**SMALL))
    tokens, labels = syn.labelled_set(lang, "A-D1", 500, 64, seed=3)
    swapped = syn.swap_alphabet(tokens, 100)
    assert (swapped >= 100).all()
    assert (syn.label(swapped % 100, lang.patterns) == labels).all()
    b_tokens, b_labels = syn.labelled_set(lang, "B-D1", 500, 64, seed=3)
    assert (b_tokens == swapped).all() and (b_labels == labels).all()


def test_positive_rate_near_half_at_default_settings():
    lang = syn.make_language(syn.LanguageConfig())
    _, labels = syn.labelled_set(lang, "A-D1", 3000, 100, seed=1)
    assert 0.4 < labels.mean() < 0.6


def test_label_function_on_hand_made_sequences():
    patterns = np.array([[[1, 2], [3, 4], [5, 6]]])
    seqs = np.array([
        [1, 0, 3, 0, 5],   # in order with gaps -> 1
        [5, 3, 1, 0, 0],   # reversed -> 0
        [2, 4, 0, 0, 6],   # other members of each slot -> 1
        [1, 3, 0, 0, 0],   # last slot missing -> 0
        [3, 1, 4, 6, 0],   # S2 before S1 but another S2 after -> 1
    ])
    assert syn.label(seqs, patterns).tolist() == [1, 0, 1, 0, 1]


def test_determinism_by_seed():
    a = syn.make_language(syn.LanguageConfig(**SMALL, seed=5))
    b = syn.make_language(syn.LanguageConfig(**SMALL, seed=5))
    c = syn.make_language(syn.LanguageConfig(**SMALL, seed=6))
    ca = syn.pretraining_corpus(a, "mix", 50, 32, seed=1)
    assert (ca == syn.pretraining_corpus(b, "mix", 50, 32, seed=1)).all()
    assert not (ca == syn.pretraining_corpus(c, "mix", 50, 32, seed=1)).all()


def test_shift_never_puts_synonyms_in_the_same_half():
    lang = syn.make_language(syn.LanguageConfig(**SMALL))
    corpus = syn.pretraining_corpus(lang, "shift", 400, 64, seed=2)
    in_a = (corpus < 100).all(axis=1)
    in_b = (corpus >= 100).all(axis=1)
    assert (in_a | in_b).all()  # every sequence is written in one alphabet
    assert in_a.sum() == in_b.sum() == 200
    sims = syn.synonym_context_similarity(corpus, 100)
    assert np.allclose(sims["synonyms"], 0.0)


def test_mix_has_the_distributional_property():
    lang = syn.make_language(syn.LanguageConfig(**SMALL))
    corpus = syn.pretraining_corpus(lang, "mix", 1000, 64, seed=2)
    assert 0.45 < (corpus >= 100).mean() < 0.55
    sims = syn.synonym_context_similarity(corpus, 100)
    assert sims["synonyms"].mean() > 0.8
    assert sims["random pairs"].mean() < 0.2


@pytest.mark.parametrize("kwargs, message", [
    ({"n_sets": 1}, "n_sets"),
    ({"n_sets": 100, "n_states": 50}, "n_states"),
    ({"n_sets": 10, "pattern_length": 3, "pattern_set_size": 4}, "pattern_length"),
    ({"p_next": 1.5}, "p_next"),
])
def test_bad_config(kwargs, message):
    with pytest.raises(ValueError, match=message):
        syn.LanguageConfig(**kwargs)


def test_unknown_names():
    lang = syn.make_language(syn.LanguageConfig(**SMALL))
    with pytest.raises(ValueError, match="A-D1"):
        syn.labelled_set(lang, "C-D3", 10, 10, seed=0)
    with pytest.raises(ValueError, match="mix"):
        syn.pretraining_corpus(lang, "blend", 10, 10, seed=0)
