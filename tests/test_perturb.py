"""Perturbations and the Delta-pred / Delta-distribution measures of paper A's real-text analysis."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from mlmlib import verdicts
from mlmlib.data import task_splits
from mlmlib.data.synonyms import SynonymTable
from mlmlib.papers.distributional import perturb, real_text_claims
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
    assert strong.mean > 0.9 and real_text_claims.low_correlation_verdict(strong) == verdicts.CONTRADICTED
    assert abs(none.mean) < 0.2 and real_text_claims.low_correlation_verdict(none) == verdicts.REPRODUCED
    assert real_text_claims.low_correlation_verdict(pdl.correlation(x[:5], x[:5])) == verdicts.NOT_RESOLVED
    assert pdl.correlation(x[:2], x[:2]).n == 2 and np.isnan(pdl.correlation(x[:2], x[:2]).mean)
    assert np.isnan(pdl.pearson([1, 1, 1, 1], [1, 2, 3, 4]))


def test_delta_distribution_with_a_tiny_mlm(tok):
    from mlmlib.models import ModelSize, bert_mlm

    mlm = bert_mlm(ModelSize(vocab_size=len(tok), hidden=16, layers=1, heads=2, max_len=32), seed=0)
    same = pdl.delta_distribution(mlm, tok, ["good [MASK]"], ["good [MASK]"], max_length=32)
    assert same[0] == pytest.approx(0.0, abs=1e-6)
    perturbations = [perturb.Perturbation(0, "word", "a good day", "a fine day", "good", "fine", "a", 0.1),
                     perturb.Perturbation(1, "word", "a bad day", "an awful day", "bad", "awful", "a", 0.1)]
    before, after = pdl.filled_templates("{sentence} It was [MASK] .", perturbations)
    assert after == ["a fine day It was [MASK] .", "an awful day It was [MASK] ."]
    diff = pdl.delta_distribution(mlm, tok, before, after, words=["great", "bad"], max_length=32)
    assert diff.shape == (2,) and np.all((diff >= 0) & (diff <= 2))
    out = pdl.delta_distributions(mlm, tok, perturbations, ["{x} [MASK]"], tag_matched=True, max_length=32)
    assert set(out) == {"{x} [MASK]", pdl.TAG_MATCHED} and np.all(np.isfinite(out[pdl.TAG_MATCHED]))
    with pytest.raises(ValueError, match="outside max_length"):
        pdl.mask_distributions(mlm, tok, ["word " * 40 + "[MASK]"], max_length=16)
    with torch.no_grad():
        probs = pdl.mask_distributions(mlm, tok, ["a [MASK] day"], words=["great", "bad"])
    assert probs.shape == (1, 2) and probs.sum() == pytest.approx(1.0, abs=1e-5)


def toy_classifier_task(n: int):
    """n random token sequences with labels, and a builder of a tiny classifier for them."""
    from mlmlib.models import ModelSize, bert_classifier

    gen = torch.Generator().manual_seed(0)
    data = {"input_ids": torch.randint(5, 60, (n, 8), generator=gen),
            "attention_mask": torch.ones(n, 8, dtype=torch.long),
            "labels": torch.randint(0, 2, (n,), generator=gen)}
    size = ModelSize(vocab_size=64, hidden=16, layers=1, heads=2, max_len=16)
    return data, lambda: bert_classifier(size, 2, seed=0)


def test_finetune_family_checkpoints_and_ratios(tmp_path):
    from mlmlib.finetune import FinetuneConfig

    data, build = toy_classifier_task(32)
    rows = pdl.finetune_family(build, data, data,
                               FinetuneConfig(epochs=1, batch_size=8, lr=1e-3), checkpoints=[0.5, 1.0],
                               ratios=[0.5, 1.0], folder=tmp_path)
    by = {r["model"]: r for r in rows}
    assert [r["model"] for r in rows] == ["checkpoint 0.5", "checkpoint 1", "ratio 0.5", "ratio 1"]
    assert by["checkpoint 0.5"]["steps"] == 2 and by["checkpoint 1"]["steps"] == 4
    assert by["ratio 1"]["path"] == by["checkpoint 1"]["path"]  # the full run, not the previous ratio
    assert by["ratio 0.5"]["path"] != by["checkpoint 1"]["path"]
    with pytest.raises(ValueError, match="checkpoints"):
        pdl.finetune_family(lambda: None, data, data, FinetuneConfig(), checkpoints=[], ratios=[1.0], folder=tmp_path)


def test_checkpoints_are_snapshots_of_one_schedule(tmp_path):
    """The learning rate at each snapshot lies on one warm-up + linear decay over the whole run: no restart."""
    from mlmlib.finetune import FinetuneConfig
    from mlmlib.models import load_model

    data, build = toy_classifier_task(40)
    config = FinetuneConfig(epochs=2, batch_size=4, lr=1e-3, warmup_frac=0.1)  # 20 steps, 2 of warm-up
    rows = pdl.finetune_family(build, data, data, config,
                               checkpoints=[0.25, 0.5, 0.75, 1.0], ratios=[1.0], folder=tmp_path)
    snaps = [r for r in rows if r["group"] == "checkpoint"]
    assert [r["steps"] for r in snaps] == [5, 10, 15, 20]
    # the step before step s uses the rate of step s - 1 on one curve: lr * (20 - (s - 1)) / (20 - 2)
    assert [r["lr"] for r in snaps] == pytest.approx([1e-3 * (21 - s) / 18 for s in (5, 10, 15, 20)])
    assert all(a["lr"] > b["lr"] for a, b in itertools.pairwise(snaps))
    weights = [load_model(r["path"]).classifier.weight for r in snaps]
    assert all(not torch.equal(a, b) for a, b in itertools.pairwise(weights))  # saved along the way
    with pytest.raises(ValueError, match="same step"):
        pdl.snapshot_steps([0.1, 0.2], total=4)


def toy_task(n_train=50, n_validation=12, n_test=10):
    from datasets import Dataset, DatasetDict

    def split(name, n):
        return Dataset.from_dict({"text": [f"{name} {i}" for i in range(n)], "label": [i % 2 for i in range(n)]})

    return DatasetDict({"train": split("train", n_train), "validation": split("validation", n_validation),
                        "test": split("test", n_test)})


def test_test_and_selection_splits_are_disjoint():
    data = toy_task()
    for splits in (task_splits(data, test_split="test"),
                   task_splits(data, test_split="validation", selection_split="train-holdout", holdout=8),
                   task_splits(data, test_split="validation", selection_split="test")):
        texts = {k: set(v["text"]) for k, v in splits.items()}
        assert not texts["train"] & texts["selection"] and not texts["train"] & texts["test"]
        assert not texts["selection"] & texts["test"] and all(texts.values())
    holdout = task_splits(data, test_split="validation", selection_split="train-holdout", holdout=8)
    assert len(holdout["selection"]) == 8 and len(holdout["train"]) == 42
    with pytest.raises(ValueError, match="is the test split"):
        task_splits(data, test_split="validation", selection_split="validation")
    with pytest.raises(ValueError, match="test_split"):
        task_splits(data, test_split="train")
    with pytest.raises(ValueError, match="holdout"):
        task_splits(data, test_split="test", selection_split="train-holdout", holdout=50)


# ---- pair inputs (MNLI): the other text stays in every classification

PREMISE = "(ROOT (S (NP (DT the) (NN coffee)) (VP (VBD was) (ADJP (RB really) (JJ great)))))"
HYPOTHESIS = "(ROOT (S (NP (DT the) (NN drink)) (VP (VBD tasted) (ADJP (JJ good)))))"


@pytest.fixture
def recorded(monkeypatch):
    """class_probs replaced by a recorder: every (text, text_pair) classified; masking a word flips it."""
    calls = []

    def fake(model, tokenizer, texts, max_length, batch_size=256, text_pairs=None):
        pairs = [None] * len(texts) if text_pairs is None else list(text_pairs)
        calls.extend(zip(texts, pairs))
        return np.array([[0.2, 0.8] if "[MASK]" in f"{t} {p}" else [0.9, 0.1] for t, p in zip(texts, pairs)])

    monkeypatch.setattr(perturb, "class_probs", fake)
    return calls


def check_pairs_kept(perturbations, premise, hypothesis):
    for p in perturbations:
        before, after = p.original_input(), p.perturbed_input()
        kept = 1 if p.side == "text" else 0
        assert before[kept] == after[kept] == (hypothesis if p.side == "text" else premise)
        assert before[1 - kept] != after[1 - kept]


def test_mnli_word_perturbations_keep_the_pair(tok, table, recorded):
    premise, hypothesis = "I loved the tasty food", "The food was great"
    out, counts = perturb.word_perturbations(None, tok, [premise], table, text_pairs=[hypothesis], labels=[0])
    assert {p.side for p in out} == {"text", "text_pair"} and counts["sentences"] == 2
    check_pairs_kept(out, premise, hypothesis)
    assert all(pair is not None for _, pair in recorded)  # every classification saw its pair
    assert {(t, pair) for t, pair in recorded} >= {(premise, hypothesis)}
    only = perturb.word_perturbations(None, tok, [premise], table, text_pairs=[hypothesis], sides=["text_pair"])[0]
    assert {p.side for p in only} == {"text_pair"}
    with pytest.raises(ValueError, match="single texts"):
        perturb.word_perturbations(None, tok, [premise], table, sides=["text_pair"])


@pytest.mark.parametrize("kind", ["long-phrase", "short-phrase"])
def test_mnli_phrase_perturbations_keep_the_pair(tok, recorded, kind):
    parsed = {"trees": [PREMISE], "pair_trees": [HYPOTHESIS], "texts": ["The coffee was really great."],
              "text_pairs": ["The drink tasted good."], "labels": [0]}
    out, counts = perturb.parsed_perturbations(None, tok, parsed, kind, lambda xs: [f"{x} indeed" for x in xs])
    assert counts["sentences"] == 2 and {p.side for p in out} == {"text", "text_pair"}
    check_pairs_kept(out, parsed["texts"][0], parsed["text_pairs"][0])
    if kind == "short-phrase":  # shortest_flipping_phrase classified each side with the other text
        assert recorded and all(pair is not None for _, pair in recorded)
        assert ("the coffee was really great", "The drink tasted good.") in recorded
        assert ("The coffee was really great.", "the drink tasted good") in recorded


def test_delta_pred_uses_the_pair(recorded):
    p = perturb.Perturbation(0, "long-phrase", "the drink tasted good", "the drink tasted fine", "good", "fine",
                             "ADJP", float("nan"), text_pair="the coffee", side="text_pair")
    pdl.delta_pred(None, None, [p])
    assert recorded == [("the coffee", "the drink tasted good"), ("the coffee", "the drink tasted fine")]
    single = perturb.Perturbation(1, "word", "a b", "a c", "b", "c", "n", 0.1)
    with pytest.raises(ValueError, match="lack the second text"):
        pdl.delta_pred(None, None, [p, single])
    with pytest.raises(ValueError, match="needs the other text"):
        perturb.Perturbation(0, "word", "a", "b", "a", "b", "n", 0.1, side="text_pair")


def test_parsed_texts_are_cut_to_max_length(tok):
    long_tree = "(ROOT (S (NP (DT the) (NN coffee)) (VP (VBD was) (ADJP (RB really) (JJ great)))" + \
        "".join(f" (NP (NN word{i}) (NN thing{i}))" for i in range(40)) + "))"
    out, _ = perturb.phrase_perturbations(None, tok, [long_tree], "long-phrase",
                                          lambda xs: [x.replace("really", "truly") for x in xs],
                                          max_text_tokens=12, text_pairs=["a very long hypothesis " * 20])
    (p,) = out
    for text in (p.text, p.perturbed, p.text_pair):
        assert len(tok(text, add_special_tokens=False)["input_ids"]) <= 14  # the replacement may be longer
    assert len(tok(p.text, add_special_tokens=False)["input_ids"]) <= 12
    assert p.original == "was really great" and p.text.startswith("the coffee was really great")
    assert perturb.words_within(tok, ["the", "coffee", "was"], 2) == 2


# ---- templates: MNLI's prompt and the tag-matched phrase template

def test_mnli_template_renders_as_specified():
    p = perturb.Perturbation(0, "word", "the man sleeps", "the man slumbers", "sleeps", "slumbers", "v", 0.3,
                             text_pair="a person rests")
    before, after = pdl.filled_templates(pdl.MNLI_TEMPLATE, [p], "<mask>")
    assert before == ["the man sleeps ? <mask> , a person rests"]
    assert after == ["the man slumbers ? <mask> , a person rests"]
    hyp = perturb.Perturbation(0, "word", "a person rests", "a person relaxes", "rests", "relaxes", "v", 0.3,
                               text_pair="the man sleeps", side="text_pair")
    assert pdl.filled_templates(pdl.MNLI_TEMPLATE, [hyp])[1] == ["the man sleeps ? [MASK] , a person relaxes"]
    assert pdl.MNLI_VERBALIZERS == ["yes", "maybe", "no"]
    pdl.check_templates([pdl.MNLI_TEMPLATE], {pdl.MNLI_TEMPLATE: pdl.MNLI_VERBALIZERS}, pairs=True)
    with pytest.raises(ValueError, match="single texts"):
        pdl.check_templates([pdl.MNLI_TEMPLATE], pairs=False)
    with pytest.raises(ValueError, match="needs a pair input"):
        pdl.fill(pdl.MNLI_TEMPLATE, "x", "s")


def test_tag_matched_template():
    assert [pdl.tag_template(t) for t in ("VP", "NP", "ADJP", "VBD", "NNS", "JJ", "v", "n", "a")] == \
        ["[MASK] {x}", "{x} [MASK]", "[MASK] is {x}"] * 3
    assert pdl.tag_template("PP") is None and pdl.tag_template("3") is None


def test_back_translation_dependencies_are_installed():
    """The paper profile's phrase level back-translates with FSMT, whose tokenizer needs
    sacremoses: a missing package would only raise after hours of fine-tuning."""
    import importlib.util

    assert importlib.util.find_spec("sacremoses") is not None
    from transformers import FSMTTokenizer  # noqa: F401 - importable with it


def test_perturbations_whose_templates_overflow_are_left_out_and_counted(tok):
    """A paraphrase longer than its phrase can push a sentence template's mask past max_length."""
    short = perturb.Perturbation(0, "long-phrase", "the food was good", "the food was fine", "good", "fine",
                                 "ADJP", float("nan"))
    long = perturb.Perturbation(1, "long-phrase", "the food was good", "the food was " + "very " * 20 + "good",
                                "good", "very " * 20 + "good", "ADJP", float("nan"))
    templates = ["[MASK] {x}", "{sentence} It was [MASK] ."]
    kept, dropped = pdl.fitting_templates([short, long], templates, tok, max_length=16)
    assert kept == [short] and dropped == {"long-phrase": 1}
    kept, dropped = pdl.fitting_templates([short, long], ["[MASK] {x}"], tok, max_length=64)
    assert kept == [short, long] and dropped == {}
    # the tag-matched template counts too: an ADJP's template puts the unit before the mask
    kept, _ = pdl.fitting_templates([short], ["[MASK] {x}"], tok, max_length=16, tag_matched=True)
    assert kept == [short]


# ---- the A5 page's steps (mlmlib.papers.distributional.real_text)


def test_real_text_steps_perturb_then_measure_both_deltas(tok, table, recorded):
    """The word level over a tiny test split (the classifier faked: masking a word flips it), then
    Delta-pred of two 'models' sharing one saved path and Delta-distribution of a tiny MLM."""
    import pandas as pd
    from datasets import Dataset

    from mlmlib.models import ModelSize, bert_mlm
    from mlmlib.papers.distributional import real_text

    test = Dataset.from_dict({"text": ["I love the tasty food", "The food was great", "no content here"],
                              "label": [1, 1, 0]})
    templates = ["[MASK] {x}", "{sentence} It was [MASK] ."]
    perturbed, counts = real_text.perturb_test_inputs(None, tok, test, ["word"], templates, synonyms=table,
                                                      test_size=2, max_length=32, max_text_tokens=24)
    assert perturbed and {p.kind for p in perturbed} == {"word"}
    assert list(counts["kind"]) == ["word"] and counts["kept"].iloc[0] == len(perturbed)
    assert counts["too long for a template"].iloc[0] == 0
    assert {p.sentence for p in perturbed} <= {0, 1}  # test_size inputs only
    assert real_text.too_few(counts, min_examples=len(perturbed)) == []
    assert real_text.too_few(counts, min_examples=len(perturbed) + 1)[0].startswith("TOO FEW: word")

    models = pd.DataFrame([{"model": "checkpoint 1", "path": "full"}, {"model": "ratio 1", "path": "full"},
                           {"model": "ratio 0.5", "path": "half"}])
    loaded = []
    mlm = bert_mlm(ModelSize(vocab_size=len(tok), hidden=16, layers=1, heads=2, max_len=32), seed=0)
    dp, accuracy, dd = real_text.measure_deltas(
        models, lambda path: loaded.append(path) or path, lambda model, data: {"accuracy": 0.75}, tok,
        perturbed, {}, mlm, templates, {"{sentence} It was [MASK] .": ["great", "bad"]}, max_length=32)
    assert loaded == ["full", "half"]  # a path two rows name is measured once
    assert set(dp) == set(accuracy) == {"checkpoint 1", "ratio 1", "ratio 0.5"}
    assert all(v.shape == (len(perturbed),) and np.all((v >= 0) & (v <= 2)) for v in dp.values())
    assert set(dd) == set(templates)
    summary = real_text.delta_summary(dp, dd)
    assert list(summary["measure"]) == ["Delta-pred"] * 3 + ["Delta-distribution"] * 2
    assert (summary["n"] == len(perturbed)).all()

    examples = real_text.perturbation_table(perturbed)
    assert "side" not in real_text.example_rows(examples, pair_task=False, n=1).columns
    assert list(real_text.example_rows(examples, pair_task=True).columns)[:2] == ["kind", "side"]
    rows = real_text.model_rows(models, accuracy)
    assert rows[0] == {"model": "checkpoint 1", "test_accuracy": 0.75}


def test_real_text_settings_fail_before_anything_runs():
    from mlmlib.papers.distributional import real_text

    good = {"kinds": ["word"], "checkpoints": [0.5, 1.0], "train_ratios": [1.0],
            "templates": ["[MASK] {x}"], "verbalizers": {}, "metric": "l1"}
    real_text.check_settings(**good)
    for bad, message in (({"kinds": ["sentence"]}, "sentence"), ({"checkpoints": []}, "checkpoints"),
                         ({"metric": "kl"}, "delta_metric='kl'"), ({"templates": ["{x}"]}, "MASK")):
        with pytest.raises(ValueError, match=message):
            real_text.check_settings(**{**good, **bad})
