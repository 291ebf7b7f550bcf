"""The base MLM's held-out check: masked pieces, their predictions, the unigram baseline."""

from __future__ import annotations

import pytest
import torch

from mlmlib import basemodel
from mlmlib.tokenize import load_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("embedded-wordpiece-8k")


def always_predicting(monkeypatch, tokenizer, piece: str):
    """Replace the MLM by one that predicts `piece` everywhere (and sees [MASK] where masked)."""
    token = tokenizer.convert_tokens_to_ids(piece)

    def logits_of(model, input_ids, attention_mask, masked):
        assert (input_ids[masked] == tokenizer.mask_token_id).all()
        logits = torch.zeros(int(masked.sum()), len(tokenizer))
        logits[:, token] = 1.0
        return logits

    monkeypatch.setattr(basemodel, "masked_lm_logits", logits_of)


@pytest.mark.parametrize("predicted, expected", [("the", 1.0), ("cat", 0.0)])
def test_masked_accuracy_compares_predictions_with_the_original_pieces(monkeypatch, tokenizer,
                                                                       predicted, expected):
    always_predicting(monkeypatch, tokenizer, predicted)
    texts = ["the the the the the the the the"] * 4
    assert basemodel.masked_accuracy(torch.nn.Linear(1, 1), tokenizer, texts, mask_rate=0.5) == expected


def test_masked_predictions_name_their_text_and_cover_batches(monkeypatch, tokenizer):
    always_predicting(monkeypatch, tokenizer, "the")
    texts = ["the the the the the the"] * 3 + ["cat cat cat cat cat cat"] * 3
    rows, targets, predictions = basemodel.masked_predictions(
        torch.nn.Linear(1, 1), tokenizer, texts, mask_rate=0.5, batch_size=4)
    assert len(rows) == len(targets) == len(predictions) > 0
    the, cat = tokenizer.convert_tokens_to_ids(["the", "cat"])
    assert set(targets[rows < 3].tolist()) == {the} and set(targets[rows >= 3].tolist()) == {cat}
    assert (predictions == the).all()  # rows of both batches were predicted


def test_masked_predictions_refuse_a_rate_out_of_range(tokenizer):
    with pytest.raises(ValueError, match="mask_rate"):
        basemodel.masked_predictions(torch.nn.Linear(1, 1), tokenizer, ["a b"], mask_rate=1.0)


def test_most_frequent_piece_ignores_special_tokens(tokenizer):
    piece = basemodel.most_frequent_piece(tokenizer, ["the cat", "the dog", "a cat the"])
    assert tokenizer.convert_ids_to_tokens(piece) == "the"


def test_a_classifier_copies_a_base_built_or_shipped_here_and_loads_a_hub_base_by_name():
    from mlmlib.models import ModelSize, bert_classifier, bert_mlm

    size = ModelSize(vocab_size=40, hidden=16, layers=1, heads=2, max_len=24)
    mlm = bert_mlm(size, seed=0)
    for name in (basemodel.EMBEDDED, "minilm-l6"):  # neither is a hub name: never looked up online
        assert basemodel.classifier_size(name, mlm) == size
    assert basemodel.classifier_size("bert-base-uncased", mlm) == "bert-base-uncased"
    clf = bert_classifier(basemodel.classifier_size("minilm-l6", mlm), 2, from_encoder=mlm, seed=0)
    assert torch.equal(clf.bert.encoder.layer[0].output.dense.weight,
                       mlm.bert.encoder.layer[0].output.dense.weight)
