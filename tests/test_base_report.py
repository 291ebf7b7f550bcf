"""The base-model page's report: the held-out check against the unigram, probes, the curves."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch

from mlmlib import base_report, basemodel
from mlmlib.base_config import BaseModelConfig
from mlmlib.models import ModelSize, bert_mlm
from mlmlib.tokenize import load_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("embedded-wordpiece-8k")


@pytest.fixture(autouse=True)
def headless():
    """Figures drawn off screen, and closed after each test."""
    matplotlib.use("Agg")
    yield
    plt.close("all")


def test_against_unigram_counts_hits_per_sentence_and_pools_them():
    # sentence 0: the model hits both pieces, the unigram (7) one; sentence 1: the model none,
    # the unigram one
    rows = torch.tensor([0, 0, 1, 1])
    targets = torch.tensor([7, 5, 7, 3])
    predictions = torch.tensor([7, 5, 1, 1])
    check = base_report.against_unigram(rows, targets, predictions, unigram=7, seed=0)
    assert check.masked_pieces == 4 and len(check.per_text) == 2
    assert check.per_text["model"].tolist() == [2, 0]
    assert check.per_text["baseline"].tolist() == [1, 1]
    assert check.accuracy.mean == pytest.approx(0.5)
    assert check.unigram_accuracy.mean == pytest.approx(0.5)
    assert check.gain.mean == pytest.approx(0.0)
    assert not check.learned and "no, not above the unigram baseline" in check.summary()


def test_a_model_right_everywhere_has_learned_beyond_the_unigram():
    rows = torch.arange(20).repeat_interleave(3)
    targets = torch.tensor([4, 5, 6] * 20)
    check = base_report.against_unigram(rows, targets, targets.clone(), unigram=4, seed=1)
    assert check.accuracy.mean == 1.0
    assert check.unigram_accuracy.mean == pytest.approx(1 / 3)
    assert check.gain.low > 0 and check.learned
    assert check.summary().startswith("60 masked pieces in 20 held-out sentences (seed 1)")
    assert check.summary().endswith("learned beyond the unigram: yes")
    table = check.table("embedded", "the")
    assert table.index.tolist() == ["base (embedded)", "unigram: always 'the'"]
    assert table["accuracy"].tolist() == [1.0, 0.333]


def test_heldout_check_scores_a_base_that_always_predicts_the_commonest_piece_as_the_baseline(
        monkeypatch, tokenizer):
    config = BaseModelConfig(max_sentences=200, max_length=32)
    texts = load_texts(config)
    commonest = basemodel.most_frequent_piece(tokenizer, texts, max_length=config.max_length)

    def always_commonest(model, input_ids, attention_mask, masked):
        logits = torch.zeros(int(masked.sum()), len(tokenizer))
        logits[:, commonest] = 1.0
        return logits

    monkeypatch.setattr(basemodel, "masked_lm_logits", always_commonest)
    check = base_report.heldout_check(torch.nn.Linear(1, 1), tokenizer, config, texts=30,
                                      mask_rate=0.3, seed=0)
    assert check.unigram == commonest
    assert 0 < len(check.per_text) <= 30 and check.masked_pieces > 0
    assert check.accuracy.mean == check.unigram_accuracy.mean
    assert check.gain.mean == 0.0


def load_texts(config):
    from mlmlib.data import load_corpus

    return load_corpus(config.corpus)["train"]["text"][:config.max_sentences]


def test_top_predictions_give_a_row_per_mask_with_probabilities_in_order(tokenizer):
    model = bert_mlm(ModelSize(vocab_size=len(tokenizer), hidden=16, layers=1, heads=1,
                               max_len=32), seed=0)
    probes = ["the food was [MASK] .", "she did [MASK] to [MASK] ."]
    filled = base_report.top_predictions(model, tokenizer, probes, max_length=32, top_k=3)
    assert [r["sentence"] for r in filled] == [probes[0], probes[1], probes[1]]
    for row in filled:
        assert list(row) == ["sentence", "top 1", "top 2", "top 3"]
        probs = [float(row[f"top {k}"].rsplit("(", 1)[1].rstrip(")")) for k in (1, 2, 3)]
        assert probs == sorted(probs, reverse=True)


def test_pretraining_curves_show_the_last_log_lines_or_say_there_are_none(capsys):
    history = [{"step": s, "loss": 9.0 - s, "acc": s / 10, "tokens_per_s": 100.0, "lr": 1e-3}
               for s in range(1, 6)]
    tail = base_report.pretraining_curves(history, "embedded")
    assert tail.index.tolist() == [3, 4, 5]
    assert list(tail.columns) == ["loss", "acc", "tokens_per_s"]
    assert len(plt.get_fignums()) == 2  # one figure per measure
    assert base_report.pretraining_curves([], "bert-base-uncased") is None
    assert "bert-base-uncased: pretrained elsewhere, no curve" in capsys.readouterr().out
