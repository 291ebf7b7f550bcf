"""Perturbations and the Delta-pred / Delta-distribution measures of paper A's real-text analysis."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mlmlib import stats
from mlmlib.data.synonyms import SynonymTable
from mlmlib.papers.distributional import claims, perturb
from mlmlib.papers.distributional import perturbation_deltas as pdl


@pytest.fixture(scope="module")
def table() -> SynonymTable:
    return SynonymTable.from_synsets([
        ("n", ["food", "nutrient"]), ("n", ["bag", "pouch"]), ("v", ["love", "adore"]),
        ("v", ["taste", "savor"]), ("n", ["taste", "flavor"]), ("a", ["great", "outstanding"]),
        ("a", ["tasty", "delicious"]), ("v", ["run", "operate"]),
    ])


@pytest.fixture(scope="module")
def tok():
    from mlmlib.tokenize import load_tokenizer

    return load_tokenizer()


# ---- distances

def test_distance_zero_for_identical_and_bounded():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(5), size=20)
    q = rng.dirichlet(np.ones(5), size=20)
    assert np.allclose(pdl.distance(p, p), 0)
    l1, tv = pdl.distance(p, q, "l1"), pdl.distance(p, q, "tv")
    assert np.all(l1 <= 2 + 1e-12) and np.all(tv <= 1 + 1e-12) and np.allclose(tv, l1 / 2)
    disjoint = pdl.distance([1.0, 0.0], [0.0, 1.0])
    assert disjoint[0] == pytest.approx(2.0)


def test_distance_rejects_bad_metric_and_shapes():
    with pytest.raises(ValueError, match="metric"):
        pdl.distance([1.0], [1.0], "kl")
    with pytest.raises(ValueError, match="shapes"):
        pdl.distance([0.5, 0.5], [1.0, 0.0, 0.0])


# ---- templates

def test_fill_and_slots():
    assert pdl.fill("{x} [MASK]", "dog", "a dog") == "dog [MASK]"
    assert pdl.fill('This sentence : "{sentence}" means [MASK] .', "dog", "a dog", "<m>") == \
        'This sentence : "a dog" means <m> .'
    assert pdl.template_slots("{sentence} It was [MASK] .") == {"sentence"}


@pytest.mark.parametrize("bad, message", [
    (["{x} is good"], "exactly one"),
    (["[MASK] [MASK] {x}"], "exactly one"),
    (["the [MASK] ."], "no slot"),
    (["{y} [MASK]"], "unknown slot"),
    ([], "non-empty"),
])
def test_bad_templates(bad, message):
    with pytest.raises(ValueError, match=message):
        pdl.check_templates(bad)


def test_verbalizer_must_name_a_template():
    with pytest.raises(ValueError, match="not in templates"):
        pdl.check_templates(["{x} [MASK]"], {"{sentence} It was [MASK] .": ["great", "terrible"]})


def test_empty_checkpoints_rejected():
    with pytest.raises(ValueError, match="checkpoints"):
        pdl.check_fractions("checkpoints", [])
    with pytest.raises(ValueError, match="increasing"):
        pdl.check_fractions("ratios", [0.5, 0.1])


def test_bad_kind():
    with pytest.raises(ValueError, match="allowed: word"):
        perturb.check_kind("sentence")


# ---- word level

def test_content_words_pos_and_tags(table):
    words = perturb.content_words("I loved the tasty foods in this bag", table)
    got = {w.text: (w.pos, w.lemma, w.tag) for w in words}
    assert got["loved"] == ("v", "love", "VBD")
    assert got["tasty"] == ("a", "tasty", "JJ")
    assert got["foods"] == ("n", "food", "NNS")
    assert "the" not in got and "I" not in got


def test_pos_tie_broken_by_context(table):
    # "taste" is a noun and a verb: after "the" a noun, after "to" a verb
    noun = next(w for w in perturb.content_words("the taste", table) if w.text == "taste")
    verb = next(w for w in perturb.content_words("to taste", table) if w.text == "taste")
    assert noun.pos == "n" and verb.pos == "v"


def test_synonym_replacement_keeps_pos_and_reinflects(table):
    rng = np.random.default_rng(0)
    for text, expected in [("loved", {"adored"}), ("Foods", {"Nutrients"}), ("bags", {"pouches"})]:
        (word,) = perturb.content_words(text, table)
        new = perturb.synonym_replacement(word, table, rng)
        assert new in expected and new.lower() != word.text.lower()


def test_inflect_only_from_lexicon():
    assert perturb.inflect("adore", "VBD") == "adored"
    assert perturb.inflect("pouch", "NNS") == "pouches"
    assert perturb.inflect("zzqx", "VBD") is None


def test_no_synonym_gives_none():
    empty = SynonymTable.from_synsets([("n", ["food"]), ("n", ["bag", "pouch"])])
    (word,) = perturb.content_words("bag", empty)
    assert perturb.synonym_replacement(word, empty, np.random.default_rng(0)) == "pouch"
    (lonely,) = perturb.content_words("food", empty)  # in WordNet, but alone in its synset
    assert perturb.synonym_replacement(lonely, empty, np.random.default_rng(0)) is None


def test_fit_text_cuts_at_word_boundary(tok):
    text = "the unbelievably wonderful coffee " * 20
    cut = perturb.fit_text(tok, text, 10)
    assert len(tok(cut, add_special_tokens=False)["input_ids"]) <= 10
    assert text.startswith(cut) and (len(cut) == len(text) or text[len(cut)] == " ")


# ---- phrase level (no network: a fake translator)

TREE = "(ROOT (S (NP (DT the) (NN coffee)) (VP (VBD was) (ADJP (RB really) (JJ great)))))"


def test_parse_tree_and_phrases():
    tree = perturb.parse_tree(TREE)
    assert tree.leaves() == ["the", "coffee", "was", "really", "great"]
    found = perturb.phrases(tree)
    assert (0, 2, "NP") in found and (2, 5, "VP") in found and (3, 5, "ADJP") in found
    assert perturb.longest_phrase(tree) == (2, 5, "VP")
    with pytest.raises(ValueError, match="unbalanced"):
        perturb.parse_tree("(S (NP the)")


def test_phrase_perturbation_with_fake_translator():
    def translate(xs):
        return [x.replace("really", "truly") for x in xs]

    out, counts = perturb.phrase_perturbations(None, None, [TREE], "long-phrase", translate)
    assert counts["kept"] == 1
    assert out[0].perturbed == "the coffee was truly great" and out[0].pos == "VP"
    _, counts = perturb.phrase_perturbations(None, None, [TREE], "long-phrase", lambda xs: xs)
    assert counts == {"sentences": 1, "paraphrase equals the phrase": 1}
    with pytest.raises(ValueError, match="word level"):
        perturb.phrase_perturbations(None, None, [TREE], "word", lambda xs: xs)


# ---- correlation and verdict

def test_correlation_and_verdict():
    rng = np.random.default_rng(0)
    x = rng.normal(size=400)
    strong = pdl.correlation(x, x + 0.1 * rng.normal(size=400))
    none = pdl.correlation(x, rng.normal(size=400))
    assert strong.mean > 0.9 and claims.low_correlation_verdict(strong) == stats.CONTRADICTED
    assert abs(none.mean) < 0.2 and claims.low_correlation_verdict(none) == stats.REPRODUCED
    assert claims.low_correlation_verdict(pdl.correlation(x[:5], x[:5])) == stats.NOT_RESOLVED
    assert pdl.correlation(x[:2], x[:2]).n == 2 and np.isnan(pdl.correlation(x[:2], x[:2]).mean)
    assert np.isnan(pdl.pearson([1, 1, 1, 1], [1, 2, 3, 4]))


def test_delta_distribution_with_a_tiny_mlm(tok):
    from mlmlib.models import ModelSize, bert_mlm

    mlm = bert_mlm(ModelSize(vocab_size=len(tok), hidden=16, layers=1, heads=2, max_len=32), seed=0)
    same = pdl.delta_distribution(mlm, tok, ["good"], ["good"], ["a good day"], ["a good day"], "{x} [MASK]",
                                  max_length=32)
    assert same[0] == pytest.approx(0.0, abs=1e-6)
    diff = pdl.delta_distribution(mlm, tok, ["good", "bad"], ["fine", "awful"], ["a good day", "a bad day"],
                                  ["a fine day", "an awful day"], "{sentence} It was [MASK] .",
                                  words=["great", "bad"], max_length=32)
    assert diff.shape == (2,) and np.all((diff >= 0) & (diff <= 2))
    with pytest.raises(ValueError, match="outside max_length"):
        pdl.mask_distributions(mlm, tok, ["word " * 40 + "[MASK]"], max_length=16)
    with torch.no_grad():
        probs = pdl.mask_distributions(mlm, tok, ["a [MASK] day"], words=["great", "bad"])
    assert probs.shape == (1, 2) and probs.sum() == pytest.approx(1.0, abs=1e-5)


def test_finetune_family_checkpoints_and_ratios(tmp_path):
    from mlmlib.finetune import FinetuneConfig
    from mlmlib.models import ModelSize, bert_classifier

    gen = torch.Generator().manual_seed(0)
    data = {"input_ids": torch.randint(5, 60, (32, 8), generator=gen),
            "attention_mask": torch.ones(32, 8, dtype=torch.long),
            "labels": torch.randint(0, 2, (32,), generator=gen)}
    size = ModelSize(vocab_size=64, hidden=16, layers=1, heads=2, max_len=16)
    rows = pdl.finetune_family(lambda: bert_classifier(size, 2, seed=0), data, data,
                               FinetuneConfig(epochs=1, batch_size=8, lr=1e-3), checkpoints=[0.5, 1.0],
                               ratios=[0.5, 1.0], folder=tmp_path)
    by = {r["model"]: r for r in rows}
    assert [r["model"] for r in rows] == ["checkpoint 0.5", "checkpoint 1", "ratio 0.5", "ratio 1"]
    assert by["checkpoint 0.5"]["steps"] == 2 and by["checkpoint 1"]["steps"] == 4
    assert by["ratio 1"]["path"] == by["checkpoint 1"]["path"]  # the full run, not the previous ratio
    assert by["ratio 0.5"]["path"] != by["checkpoint 1"]["path"]
    with pytest.raises(ValueError, match="checkpoints"):
        pdl.finetune_family(lambda: None, data, data, FinetuneConfig(), checkpoints=[], ratios=[1.0], folder=tmp_path)
