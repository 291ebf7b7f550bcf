"""Paper C's experiment plumbing on real tokenized text: rates, whole words, specials, seeds, controls."""

from __future__ import annotations

from copy import deepcopy
from pathlib import Path

import numpy as np
import pytest
import torch

from mlmlib.masking import mask_tokens
from mlmlib.papers.selective_masking import experiment as se
from mlmlib.runs.plans import notebook_parameters

TEXTS = [
    "this coffee is absolutely delicious and the price was great",
    "terrible taste, stale and overpriced; i would not buy it again",
    "my dog loves these treats but the bag arrived torn",
    "good tea, nice aroma, a bit weak for my liking",
    "the worst chips i have ever had: soggy, bland and greasy",
    "an excellent snack for kids, healthy and tasty",
] * 30
VADER = se.WordList("vader")
WORDS = ["good", "great", "excellent", "delicious", "tasty", "nice", "bad", "terrible", "worst",
         "awful", "coffee", "tea", "dog", "price", "bag", "the", "and", "it", "i"]


@pytest.fixture(scope="module")
def tokenizer():
    # A real WordPiece tokenizer trained on the test texts (seconds, unlike the embedded corpus);
    # its small vocabulary splits rarer words into several pieces.
    from mlmlib.tokenize import train_wordpiece

    return train_wordpiece(TEXTS, vocab_size=120, min_frequency=1, cache=False)


@pytest.fixture(scope="module")
def corpus(tokenizer):
    return se.tokenized_corpus(tokenizer, TEXTS, max_length=64)  # long enough: nothing truncated


@pytest.fixture(scope="module")
def vectors():
    # Small deterministic vectors: sentiment words near one of two directions, others random.
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(len(WORDS), 8)).astype(np.float32)
    matrix[:6] += 4 * np.eye(8, dtype=np.float32)[0]
    matrix[6:10] += 4 * np.eye(8, dtype=np.float32)[1]

    from mlmlib.data import WordVectors

    return WordVectors(words=WORDS, vectors=matrix)


@pytest.fixture(scope="module")
def scores(corpus, vectors):
    from mlmlib.papers.selective_masking.lexicons import task_scores

    return task_scores(corpus.words, ["good", "bad"], vectors)


def _draw(tokenizer, data, seed):
    special = data["special_tokens_mask"].bool() | ~data["attention_mask"].bool()
    return mask_tokens(data["input_ids"], data["mask_prob"], generator=torch.Generator().manual_seed(seed),
                       mask_id=tokenizer.mask_token_id, vocab_size=len(tokenizer), special_mask=special,
                       word_ids=data["word_ids"])


def test_word_types_cover_words(corpus, tokenizer):
    assert "delicious" in corpus.words and "coffee" in corpus.words
    valid = corpus.data["word_ids"] >= 0
    assert torch.equal(corpus.word_type >= 0, valid)
    assert corpus.token_counts.sum() == corpus.n_tokens == int(valid.sum())
    assert corpus.data["input_ids"].shape[1] < 64  # padded to the longest row: none truncated
    # a word type always has the same pieces: the string round-trips through the tokenizer
    i = corpus.words.index("overpriced")
    pieces = tokenizer.tokenize("overpriced")
    assert corpus.token_counts[i] == 30 * len(pieces)


@pytest.mark.parametrize("function", se.SELECTIVE)
def test_realised_rate_close_to_target(corpus, scores, tokenizer, function):
    cfg = se.MaskingConfig(target_rate=0.2, tau=0.9)
    arms = se.prepare_arms(["random", function], corpus, scores, cfg, word_list=VADER)
    assert arms[function].expected_rate == pytest.approx(0.2, abs=1e-4)
    rows = se.realised_rates(arms, mask_id=tokenizer.mask_token_id, vocab_size=len(tokenizer), repeats=20)
    assert [row["arm"] for row in rows] == ["random", function]
    for row in rows:
        assert abs(row["realised_rate"] - 0.2) < 0.02, row  # ~2.4k tokens x 20 draws


def test_selective_prefers_task_words(corpus, scores):
    arms = se.prepare_arms(["linear"], corpus, scores, se.MaskingConfig(), word_list=VADER)
    p = dict(zip(corpus.words, arms["linear"].word_probs))
    assert p["good"] > p["coffee"] and p["terrible"] > p["dog"]


def test_whole_words_and_no_specials(corpus, scores, tokenizer):
    data = se.prepare_arms(["exponential"], corpus, scores, se.MaskingConfig(),
                           word_list=VADER)["exponential"].data
    _, masked = _draw(tokenizer, data, 0)
    assert masked.any()
    special = data["special_tokens_mask"].bool() | ~data["attention_mask"].bool()
    assert not (masked & special).any()
    wid = data["word_ids"]
    multi = 0
    for b in range(wid.shape[0]):
        for w in wid[b][wid[b] >= 0].unique():
            m = masked[b][wid[b] == w]
            assert m.all() or not m.any()  # all pieces of a word together
            multi += int(len(m) > 1 and m.all())
    assert multi > 0  # some multi-piece words were masked, so the check above was exercised


def test_determinism_by_seed(corpus, scores, tokenizer):
    arms = se.prepare_arms(["step", "random-count"], corpus, scores, se.MaskingConfig(tau=0.9), seed=3,
                           word_list=VADER)
    again = se.prepare_arms(["step", "random-count"], corpus, scores, se.MaskingConfig(tau=0.9), seed=3,
                           word_list=VADER)
    other = se.prepare_arms(["random-count"], corpus, scores, se.MaskingConfig(tau=0.9), seed=4,
                           word_list=VADER)
    assert torch.equal(arms["random-count"].data["mask_prob"], again["random-count"].data["mask_prob"])
    assert not torch.equal(arms["random-count"].data["mask_prob"], other["random-count"].data["mask_prob"])
    a, b, c = (_draw(tokenizer, arms["step"].data, s)[1] for s in (1, 1, 2))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_count_control_matches_a_selective_draw(corpus, scores):
    cfg = se.MaskingConfig(count_match="exponential", count_copies=3)
    arm = se.prepare_arms(["exponential"], corpus, scores, cfg, word_list=VADER)["exponential"]
    gen = torch.Generator().manual_seed(0)
    data = se._count_matched_data(arm.data["mask_prob"], corpus, 3, torch.Generator().manual_seed(0))
    # redo the same draws to compare the per-sentence word counts
    from mlmlib.papers.selective_masking import selective as sel

    wid = corpus.data["word_ids"]
    for copy in range(3):
        chosen = sel.sample_word_masks(arm.data["mask_prob"], wid, gen)
        control = sel.matched_count_masks(chosen, wid, gen)
        got = data["mask_prob"][copy * wid.shape[0]:(copy + 1) * wid.shape[0]].bool()
        assert torch.equal(got, control)

        def words(mask):
            return torch.tensor([len(wid[b][mask[b]].unique()) for b in range(wid.shape[0])])

        assert torch.equal(words(got), words(chosen))
    assert 0.1 < data["mask_prob"][data["word_ids"] >= 0].mean() < 0.3


def test_few_label_indices_stratified_and_seeded():
    labels = torch.tensor([0] * 70 + [1] * 30)
    idx = se.few_label_indices(labels, 20, seed=1)
    assert len(idx) == 20 and len(idx.unique()) == 20 and int(labels[idx].sum()) == 6
    assert torch.equal(idx, se.few_label_indices(labels, 20, seed=1))
    assert not torch.equal(idx, se.few_label_indices(labels, 20, seed=2))


@pytest.mark.parametrize("kwargs, match", [
    ({"target_rate": 0.0}, "target_rate"),
    ({"target_rate": 1.0}, "target_rate"),
    ({"count_match": "cubic"}, "count_match must be one of"),
    ({"score_method": "mean"}, "score_method must be one of"),
    ({"count_copies": 0}, "count_copies must be an int >= 1"),
])
def test_bad_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        se.MaskingConfig(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    ({"name": "emoji"}, "word_list must be one of"),
    ({"size": -1}, "word_list_size"),
    ({"size": 2.5}, "word_list_size"),
])
def test_bad_word_list(kwargs, match):
    with pytest.raises(ValueError, match=match):
        se.WordList(**kwargs)


def test_bad_arms(corpus, scores):
    with pytest.raises(ValueError, match="arms: unknown arm"):
        se.prepare_arms(["random", "cubic"], corpus, scores, se.MaskingConfig(), word_list=VADER)
    with pytest.raises(ValueError, match="arms must be a non-empty list"):
        se.prepare_arms([], corpus, scores, se.MaskingConfig())
    with pytest.raises(ValueError, match="scores"):
        se.prepare_arms(["linear"], corpus, None, se.MaskingConfig())
    with pytest.raises(ValueError, match="word list"):  # it keys the continued-MLM cache
        se.prepare_arms(["linear"], corpus, scores, se.MaskingConfig())


def test_unknown_function_and_unreachable_rate(corpus, scores):
    from mlmlib.papers.selective_masking import selective as sel

    with pytest.raises(ValueError, match="function must be one of"):
        sel.masking_weights(scores.scores, "cubic")
    # linear with p_min = 0: words scored 0 never mask, so a rate above their complement is out of reach
    cfg = se.MaskingConfig(p_min=0.0, target_rate=0.99)
    with pytest.raises(ValueError, match="target_rate=0.99 cannot be reached"):
        se.prepare_arms(["linear"], corpus, scores, cfg, word_list=VADER)


def test_bad_word_lists(corpus, vectors):
    with pytest.raises(ValueError, match="word_list: none of its"):
        se.small_word_list({"qqq": 1.0, "zzz": -1.0}, 0, vectors)
    with pytest.raises(ValueError, match="word_list is empty"):
        se.small_word_list({}, 0, vectors)
    with pytest.raises(ValueError, match="word_list_size=3 is more than the 2 words"):
        se.small_word_list({"bad": -3.0, "good": 1.0, "qqq": 4.0}, 3, vectors)
    with pytest.raises(ValueError, match="word_list_size must be an int >= 0"):
        se.small_word_list({"bad": -3.0, "good": 1.0}, -1, vectors)


def test_word_list_sample_is_drawn_from_the_seed(vectors):
    lexicon = {w: 1.0 for w in [*WORDS, "qqq"]}  # "qqq" has no vector: never drawn
    whole = se.small_word_list(lexicon, 0, vectors, seed=3)
    assert sorted(whole) == sorted(WORDS)  # 0: every word with a vector
    sample = se.small_word_list(lexicon, 5, vectors, seed=3)
    assert len(sample) == 5 == len(set(sample)) and set(sample) <= set(WORDS)
    assert se.small_word_list(lexicon, 5, vectors, seed=3) == sample  # the same seed, the same list
    draws = {tuple(se.small_word_list(lexicon, 5, vectors, seed=s)) for s in range(6)}
    assert len(draws) > 1  # other seeds, other samples


def test_score_corpus_uses_the_config_sample(corpus, vectors, monkeypatch):
    from mlmlib import data

    monkeypatch.setattr(data, "load_word_list", lambda name: {w: 1.0 for w in WORDS[:10]})
    word_list = se.WordList("vader", size=4, seed=7)
    scores, words = se.score_corpus(corpus, word_list, se.MaskingConfig(), vectors)
    assert words == se.small_word_list({w: 1.0 for w in WORDS[:10]}, 4, vectors, seed=7)
    assert scores.list_found == 4
    assert word_list.label == "vader, 4 words" and se.WordList("vader").label == "vader"


def test_majority_scores_match_sklearn():
    from sklearn.metrics import accuracy_score, f1_score

    labels = np.array([1, 1, 1, 0, 1, 2, 1, 1])  # majority class 1: 6 of 8
    always = np.ones_like(labels)
    got = se.majority_scores(labels)
    assert got["majority_accuracy"] == pytest.approx(accuracy_score(labels, always)) == 0.75
    assert got["majority_f1"] == pytest.approx(f1_score(labels, always, average="macro", zero_division=0))
    assert got["majority_f1"] == pytest.approx(2 * 0.75 / 1.75 / 3)  # one class of three scores
    # the hate speech task's shape: 93% one class; its accuracy says 0.93, its macro-F1 under 0.5
    skewed = se.majority_scores([0] * 93 + [1] * 7)
    assert skewed["majority_accuracy"] == pytest.approx(0.93) and skewed["majority_f1"] < 0.5


def test_run_arms_scratch_is_fresh_and_none_is_the_base(corpus, tokenizer, monkeypatch):
    from mlmlib.finetune import FinetuneConfig
    from mlmlib.models import ModelSize, bert_mlm
    from mlmlib.pretrain import PretrainConfig

    base = bert_mlm(ModelSize(vocab_size=len(tokenizer), hidden=16, layers=1, heads=2, max_len=64), seed=3)
    with torch.no_grad():  # a recognisable base: every weight shifted
        for p in base.parameters():
            p.add_(1.0)
    maskings = {(a, "-"): m for a, m in se.prepare_arms(["scratch", "none"], corpus, None,
                                                         se.MaskingConfig()).items()}
    assert all(m.data is None for m in maskings.values())
    labels = torch.tensor([i % 2 for i in range(len(TEXTS))])
    data = {"input_ids": corpus.data["input_ids"], "attention_mask": corpus.data["attention_mask"],
            "labels": labels}
    splits = {"train": data, "validation": data, "test": data}
    seen = {}

    def spy(mlm_model, num_labels, seed, *, pretrained=True, pooling="mean"):
        clf = real(mlm_model, num_labels, seed, pretrained=pretrained, pooling=pooling)
        seen[pretrained] = clf.encoder.embeddings.word_embeddings.weight.detach().clone()
        return clf

    real = se.classifier_from
    monkeypatch.setattr(se, "classifier_from", spy)
    rows = se.run_arms(base, maskings, splits, PretrainConfig(steps=1),
                       {"few": FinetuneConfig(max_steps=1, batch_size=4, lr=1e-9)}, few_labels=8,
                       seed=0, mask_id=tokenizer.mask_token_id, num_special=5)
    assert [r["arm"] for r in rows] == ["scratch", "none"]
    base_emb = base.bert.embeddings.word_embeddings.weight
    assert torch.equal(seen[True], base_emb) and not torch.allclose(seen[False], base_emb)


LONG = ("first the package arrived late and the box was torn , but the coffee inside was "
        "fresh ; we brewed it every morning for a month and in the end it was absolutely delicious")


def test_head_truncation_leaves_the_texts_to_the_tokenizer(tokenizer):
    assert se.shorten_texts(tokenizer, [LONG, TEXTS[0]], 32, "head") == [LONG, TEXTS[0]]


def test_head_tail_keeps_the_opening_and_the_end_at_whole_words(tokenizer):
    short, cut = se.shorten_texts(tokenizer, [TEXTS[0], LONG], 32, "head+tail")
    assert short == TEXTS[0]  # fits: unchanged
    pieces = tokenizer(cut)["input_ids"]
    assert len(pieces) <= 32 < len(tokenizer(LONG)["input_ids"])
    words, kept = LONG.split(), cut.split()
    assert kept[0] == words[0] and kept[-1] == words[-1]  # the opening and the verdict
    head = next(i for i in range(len(kept)) if kept[:i + 1] != words[:i + 1])
    assert kept[head:] == words[len(words) - len(kept) + head:]  # whole words: a head, then a tail
    assert 0 < head < len(kept) - 1
    # the same cut as the corpus' positions see it: the last word is in the encoded text
    corpus = se.tokenized_corpus(tokenizer, [LONG], max_length=32, truncation="head+tail")
    assert corpus.words[-1] == "delicious" and corpus.data["input_ids"].shape[1] <= 32
    assert "delicious" not in se.tokenized_corpus(tokenizer, [LONG], max_length=32).words


def test_head_tail_reads_long_texts_without_a_warning(tokenizer, capfd, caplog):
    # transformers warns once per tokenizer about a text longer than the model takes; reading
    # every piece to find the cut is meant, and the warning would print on the book's pages
    def fresh():
        tok = deepcopy(tokenizer)
        tok.model_max_length, tok.deprecation_warnings = 16, {}
        return tok

    def printed() -> str:  # to the terminal or to the log, wherever transformers sends it
        text = capfd.readouterr().err + caplog.text
        caplog.clear()
        return text

    fresh()(LONG)
    assert "longer than the specified maximum" in printed()  # the warning exists
    se.shorten_texts(fresh(), [LONG], 16, "head+tail")
    assert "longer than the specified maximum" not in printed()


def test_bad_truncation(tokenizer):
    with pytest.raises(ValueError, match="truncation must be one of"):
        se.shorten_texts(tokenizer, [LONG], 32, "tail")
    with pytest.raises(ValueError, match="max_length=4"):
        se.shorten_texts(tokenizer, [LONG], 4, "head+tail")
    with pytest.raises(TypeError, match="list of strings"):
        se.shorten_texts(tokenizer, LONG, 32, "head+tail")


def test_encode_task_split_cuts_every_text(tokenizer):
    split = {"text": [LONG, TEXTS[1]], "label": [1, 0]}
    enc = se.encode_task_split(tokenizer, split, 32, "head+tail")
    assert enc["input_ids"].shape[1] <= 32 and enc["labels"].tolist() == [1, 0]
    last = tokenizer.convert_tokens_to_ids(tokenizer.tokenize("delicious"))[-1]
    row = enc["input_ids"][0][enc["attention_mask"][0].bool()].tolist()
    assert row[-2] == last  # before [SEP]: the review's last word piece


@pytest.mark.parametrize("notebook, groups", [
    ("C1_task_scores", {"base", "masking", "text"}),
    ("C2_selective_mlm", {"base", "masking", "text", "mlm", "finetune"}),
])
def test_notebooks_take_the_paper_groups(notebook, groups):
    # the page's parameters cell names each group's dataclass: its defaults are the page's
    from mlmlib.runs.plans import notebook_groups

    path = Path(__file__).resolve().parents[1] / "notebooks" / f"{notebook}.ipynb"
    assert set(notebook_groups(str(path))) == groups
    params = notebook_parameters(str(path))
    assert all(params[name] == {} for name in groups)  # every default comes from the dataclass


@pytest.mark.parametrize("cls, overrides, match", [
    ("FineTuning", {"label_regimes": ("few", "some")}, "label_regimes must be a non-empty list"),
    ("FineTuning", {"label_regimes": ()}, "label_regimes must be a non-empty list"),
    ("FineTuning", {"pooling": "max"}, "pooling must be one of"),
    ("FineTuning", {"all_max_steps": -1}, "all_max_steps must be an int >= 0"),
    ("ContinuedMLM", {"steps": 0}, "steps must be an int >= 1"),
    ("ContinuedMLM", {"lr": 0.0}, "lr must be a number > 0"),
    ("TaskText", {"truncation": "tail"}, "truncation must be one of"),
])
def test_bad_groups_name_the_field(cls, overrides, match):
    from mlmlib import configs
    from mlmlib.papers.selective_masking import config

    with pytest.raises(ValueError, match=match):
        configs.build(getattr(config, cls), overrides, cls)


@pytest.mark.parametrize("cls, table, parameter", [
    ("ContinuedMLM", "MLM_PRESETS", "mlm"), ("FineTuning", "FINETUNING_PRESETS", "finetune"),
    ("SyntheticSelective", "SYNTHETIC_PRESETS", "synthetic")])
def test_each_preset_builds_resolves_to_its_numbers_and_an_unknown_one_stops(cls, table,
                                                                              parameter):
    import dataclasses

    from mlmlib import configs
    from mlmlib.papers.selective_masking import config

    cls, presets = getattr(config, cls), getattr(config, table)
    fields = set(presets["smoke"])
    assert all(f.default is None for f in dataclasses.fields(cls) if f.name in fields)
    for name, values in presets.items():
        assert set(values) == fields, name  # every preset sets the same fields
        built = configs.build(cls, {"preset": name}, parameter)
        given = {k: v for k, v in values.items() if v is not None}  # None: the language's size
        assert {k: getattr(built, k) for k in given} == given
        resolved = configs.resolve(cls, {"preset": name})  # what a record carries
        assert resolved == {k: list(v) if isinstance(v, tuple) else v
                            for k, v in dataclasses.asdict(built).items()}
    assert cls().preset == "smoke" and len(presets) >= 2
    with pytest.raises(ValueError, match=rf"^{parameter}: preset must be one of \['smoke', "):
        configs.build(cls, {"preset": "huge"}, parameter)


def test_c_presets_hold_their_plans_numbers_and_take_a_field_on_top():
    from mlmlib import configs
    from mlmlib.papers.selective_masking.config import ContinuedMLM, FineTuning, SyntheticSelective

    mlm = configs.resolve(ContinuedMLM, {"preset": "paper"})
    assert (mlm["steps"], mlm["doses"], mlm["checkpoint_every"]) == (10000, [0, 1000, 3160, 10000],
                                                                     2000)
    paper = configs.build(FineTuning, {"preset": "paper", "test_split": "validation"}, "finetune")
    assert (paper.label_regimes, paper.lr, paper.test_split) == (("few", "all"), 2e-5, "validation")
    tiny = configs.build(FineTuning, {"preset": "tiny", "all_max_steps": 3}, "finetune")
    assert (tiny.few_labels, tiny.all_max_steps) == (16, 3)
    c4 = configs.build(SyntheticSelective, {"preset": "paper", "base_steps": 5}, "synthetic")
    assert (c4.language, c4.n_sets, c4.hidden, c4.base_steps) == ("paper", 1000, 128, 5)
    assert configs.build(SyntheticSelective, {"preset": "tiny"}, "synthetic").n_sets == 20


def test_run_seed_runs_every_arm_at_tiny_size(tmp_path, monkeypatch):
    from mlmlib.base_config import BaseModelConfig
    from mlmlib.papers.selective_masking import seed_run
    from mlmlib.papers.selective_masking.config import (
        ContinuedMLM,
        FineTuning,
        MaskingConfig,
        TaskText,
    )

    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))
    result = seed_run.run_seed(
        "amazon-food", ["vader"], 50, ["scratch", "none", "random", "exponential"], 3,
        base=BaseModelConfig(steps=2, hidden=16, layers=1, heads=1, max_sentences=100,
                             max_length=32),
        masking=MaskingConfig(), text=TaskText(max_length=32, train_size=80),
        mlm=ContinuedMLM(steps=2, batch_size=8),
        finetune=FineTuning(few_labels=16, few_epochs=1, validation_size=16, test_size=16))
    assert [(r["arm"], r["word_list"], r["labels"]) for r in result.rows] == [
        ("scratch", "-", "few"), ("none", "-", "few"), ("random", "-", "few"),
        ("exponential", "vader, 50 words", "few")]
    assert all(r["seed"] == 3 and r["task"] == "amazon-food" and r["train_examples"] == 16
               for r in result.rows)
    assert result.rows[-1]["lexicon"] == "vader" and result.rows[-1]["list_size"] == 50
    rates = {(r["arm"], r["word_list"]): r["rate"] for r in result.expected_rates}
    assert rates[("random", "-")] == 0.2 and rates[("exponential", "vader, 50 words")] == pytest.approx(0.2, abs=0.01)
    assert 0 < result.majority["majority_accuracy"] <= 1 and "4 arms" in result.summary


def test_a_whole_word_list_missing_from_the_text_stops_and_a_sample_gets_a_note(capsys):
    from mlmlib.papers.selective_masking.config import WordList
    from mlmlib.papers.selective_masking.seed_run import check_list_in_text

    with pytest.raises(ValueError, match="word_lists: no word of 'vader' occurs in the task's training text"):
        check_list_in_text(WordList("vader"), ["good", "bad"], ["the", "film"])
    check_list_in_text(WordList("vader", size=2), ["good", "bad"], ["the", "film"])
    assert "No word of 'vader, 2 words' occurs" in capsys.readouterr().out
    check_list_in_text(WordList("vader"), ["good", "bad"], ["a", "good", "film"])  # one word is enough
    assert capsys.readouterr().out == ""
