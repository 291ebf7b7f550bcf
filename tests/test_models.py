"""Model builders: sizes, ELECTRA pairs, classifiers from pretrained encoders, save/load."""

import pytest
import torch

from mlmlib.models import (
    ModelSize,
    bert_classifier,
    bert_mlm,
    electra,
    electra_classifier,
    electra_from_bert,
    load_model,
    save_model,
    size_of,
)

SIZE = ModelSize(vocab_size=60, hidden=32, layers=2, heads=2, max_len=32)


def test_size_defaults_and_validation():
    assert SIZE.intermediate == 128
    with pytest.raises(ValueError, match="heads"):
        ModelSize(vocab_size=60, hidden=30, heads=4)
    with pytest.raises(ValueError, match="vocab_size"):
        ModelSize(vocab_size=0)
    with pytest.raises(ValueError, match="dropout"):
        ModelSize(vocab_size=60, dropout=1.0)
    with pytest.raises(TypeError, match="size_or_name"):
        bert_mlm(60)


def test_bert_uses_sdpa_and_seed():
    a, b = bert_mlm(SIZE, seed=3), bert_mlm(SIZE, seed=3)
    assert a.config._attn_implementation == "sdpa"
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_electra_pair_shapes_and_tied_embeddings():
    pair = electra(SIZE, generator_fraction=0.25, seed=0)
    gen, disc = pair.generator, pair.discriminator
    assert gen.config.hidden_size == 8 and gen.config.num_hidden_layers == SIZE.layers
    assert disc.config.hidden_size == 32
    shared = disc.electra.embeddings.word_embeddings.weight
    assert gen.electra.embeddings.word_embeddings.weight is shared
    assert gen.generator_lm_head.weight is shared
    for bad in (0.0, 1.5, -0.25):
        with pytest.raises(ValueError, match="generator_fraction"):
            electra(SIZE, generator_fraction=bad)


def test_electra_from_bert_runs_the_bert_encoder_and_starts_its_heads_fresh():
    bert = bert_mlm(SIZE, seed=0).eval()
    pair = electra_from_bert(bert, generator_fraction=0.25, seed=1)
    disc = pair.discriminator.eval()
    assert size_of(disc.config) == SIZE and size_of(bert.config) == SIZE
    ids = torch.randint(0, SIZE.vocab_size, (2, 12))
    with torch.no_grad():
        same = torch.equal(disc.electra(ids).last_hidden_state, bert.bert(ids).last_hidden_state)
    assert same  # every encoder weight copied, none left at its initialisation
    assert pair.generator.electra.embeddings.word_embeddings.weight is \
        disc.electra.embeddings.word_embeddings.weight  # the generator shares the copied embeddings
    fresh = electra(SIZE, generator_fraction=0.25, seed=1).discriminator
    assert torch.equal(disc.discriminator_predictions.dense.weight,
                       fresh.discriminator_predictions.dense.weight)  # the head: seeded, not copied
    with pytest.raises(ValueError, match="no 'bert"):
        electra_from_bert(fresh, seed=0)


def test_electra_from_bert_can_take_the_masked_lm_itself_as_its_generator():
    bert = bert_mlm(SIZE, seed=0).eval()
    pair = electra_from_bert(bert, seed=1, generator="copy")
    gen = pair.generator.eval()
    assert gen.config.hidden_size == SIZE.hidden  # as wide as the discriminator
    ids = torch.randint(0, SIZE.vocab_size, (2, 12))
    with torch.no_grad():
        same = torch.allclose(gen(ids).logits, bert(ids).logits, atol=1e-6)
    assert same  # encoder and MLM head copied: the generator predicts what the masked LM does
    assert gen.generator_lm_head.weight is pair.discriminator.electra.embeddings.word_embeddings.weight
    pair.freeze_generator_encoder()
    trainable = {name for name, p in gen.named_parameters() if p.requires_grad}
    assert not any(".encoder." in name for name in trainable)
    assert {"generator_predictions.dense.weight", "generator_lm_head.bias"} <= trainable
    assert pair.discriminator.electra.encoder.layer[0].output.dense.weight.requires_grad
    with pytest.raises(ValueError, match="generator must be one of"):
        electra_from_bert(bert, generator="big")
    with pytest.raises(ValueError, match="needs a BertForMaskedLM"):
        electra_from_bert(bert_classifier(SIZE, 2, seed=0), generator="copy")


def test_save_load_roundtrip(tmp_path):
    pair = electra(SIZE, seed=1)
    save_model(pair, tmp_path / "pair")
    back = load_model(tmp_path / "pair")
    for (k, x), y in zip(pair.state_dict().items(), back.state_dict().values()):
        assert torch.equal(x, y), k
    assert back.generator.generator_lm_head.weight is back.get_input_embeddings().weight
    assert back.generator.electra.embeddings is back.discriminator.electra.embeddings  # tied again
    mlm = bert_mlm(SIZE, seed=2)
    save_model(mlm, tmp_path / "bert")
    loaded = load_model(tmp_path / "bert")
    assert all(torch.equal(x, y) for x, y in zip(mlm.state_dict().values(), loaded.state_dict().values()))
    assert loaded.training and loaded.config._attn_implementation == "sdpa"  # as a built model


def _tiny_tokenizer():
    from mlmlib.tokenize import train_wordpiece

    return train_wordpiece(["the cat sat on the mat", "a dog ate the cat food"] * 5, vocab_size=40,
                           cache=False)


def test_saved_models_load_with_transformers_own_classes(tmp_path):
    from transformers import AutoModel, AutoModelForMaskedLM, AutoModelForPreTraining, AutoTokenizer

    mlm, tokenizer = bert_mlm(SIZE, seed=2), _tiny_tokenizer()
    save_model(mlm, tmp_path / "bert", tokenizer)
    theirs = AutoModelForMaskedLM.from_pretrained(tmp_path / "bert")
    assert type(theirs).__name__ == "BertForMaskedLM"
    assert all(torch.equal(x, y) for x, y in zip(mlm.state_dict().values(), theirs.state_dict().values()))
    assert torch.equal(AutoModel.from_pretrained(tmp_path / "bert").embeddings.word_embeddings.weight,
                       mlm.bert.embeddings.word_embeddings.weight)
    assert AutoTokenizer.from_pretrained(tmp_path / "bert").get_vocab() == tokenizer.get_vocab()

    pair = electra(SIZE, seed=1)
    save_model(pair, tmp_path / "pair", tokenizer)
    halves = {"generator": AutoModelForMaskedLM, "discriminator": AutoModelForPreTraining}
    for part, auto in halves.items():
        half = auto.from_pretrained(tmp_path / "pair" / part)
        ours = getattr(pair, part)
        assert type(half) is type(ours)
        assert all(torch.equal(x, y) for x, y in zip(ours.state_dict().values(), half.state_dict().values()))
        assert AutoTokenizer.from_pretrained(tmp_path / "pair" / part).get_vocab() == tokenizer.get_vocab()


def test_a_pairs_weights_and_its_discriminator_read_from_its_folder(tmp_path):
    from mlmlib.models import load_state

    pair = electra(SIZE, seed=5)
    save_model(pair, tmp_path / "pair")
    state = load_state(tmp_path / "pair")
    assert torch.equal(state["discriminator.electra.encoder.layer.0.output.dense.weight"],
                       pair.discriminator.electra.encoder.layer[0].output.dense.weight)
    assert any(k.startswith("generator.generator_predictions.") for k in state)
    clf = electra_classifier(SIZE, 2, from_encoder=tmp_path / "pair", seed=0)
    assert torch.equal(clf.electra.encoder.layer[1].attention.self.key.weight,
                       pair.discriminator.electra.encoder.layer[1].attention.self.key.weight)


def test_saving_replaces_a_folder_whole_and_a_failed_save_keeps_the_earlier_one(tmp_path):
    first, second = bert_mlm(SIZE, seed=1), bert_mlm(SIZE, seed=2)
    save_model(electra(SIZE, seed=0), tmp_path / "m")  # a pair's folders, then a single model
    save_model(first, tmp_path / "m")
    assert not (tmp_path / "m" / "generator").exists()  # nothing of the earlier save is left
    assert torch.equal(load_model(tmp_path / "m").cls.predictions.bias, first.cls.predictions.bias)

    class Broken:
        def save_pretrained(self, folder):
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        save_model(second, tmp_path / "m", Broken())
    assert torch.equal(load_model(tmp_path / "m").bert.embeddings.word_embeddings.weight,
                       first.bert.embeddings.word_embeddings.weight)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no temporary folder left behind
    with pytest.raises(TypeError, match="transformers model or ElectraPair"):
        save_model(torch.nn.Linear(2, 2), tmp_path / "linear")


def test_a_folder_of_the_earlier_format_is_refused_not_misread(tmp_path):
    from safetensors.torch import save_model as st_save

    from mlmlib.models import load_state

    old = tmp_path / "old"
    old.mkdir()
    st_save(bert_mlm(SIZE, seed=0), str(old / "model.safetensors"))
    (old / "mlmlib_model.json").write_text('{"kind": "BertForMaskedLM", "config": {}}')
    for read in (load_model, load_state):
        with pytest.raises(ValueError, match="earlier model format"):
            read(old)
    with pytest.raises(FileNotFoundError, match="not a folder written by save_model"):
        load_model(tmp_path)


def test_a_saved_model_missing_a_weight_is_refused_not_initialised(tmp_path):
    from safetensors.torch import load_file, save_file

    save_model(bert_mlm(SIZE, seed=0), tmp_path / "m")
    weights = load_file(str(tmp_path / "m" / "model.safetensors"))
    del weights["bert.encoder.layer.1.output.dense.bias"]
    save_file(weights, str(tmp_path / "m" / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ValueError, match="missing_keys.*layer.1.output.dense.bias"):
        load_model(tmp_path / "m")


def test_classifier_from_encoder(tmp_path):
    mlm = bert_mlm(SIZE, seed=4)
    clf = bert_classifier(SIZE, 3, from_encoder=mlm, seed=0)
    assert torch.equal(clf.bert.encoder.layer[1].output.dense.weight,
                       mlm.bert.encoder.layer[1].output.dense.weight)
    save_model(mlm, tmp_path / "m")
    clf2 = bert_classifier(SIZE, 3, from_encoder=tmp_path / "m", seed=0)
    assert torch.equal(clf2.bert.embeddings.word_embeddings.weight,
                       mlm.bert.embeddings.word_embeddings.weight)
    pair = electra(SIZE, seed=5)
    eclf = electra_classifier(SIZE, 2, from_encoder=pair)
    assert torch.equal(eclf.electra.encoder.layer[0].attention.self.query.weight,
                       pair.discriminator.electra.encoder.layer[0].attention.self.query.weight)
    with pytest.raises(ValueError, match="from_encoder"):
        bert_classifier(SIZE, 2, from_encoder=pair)  # no bert.* weights
    with pytest.raises(ValueError, match="num_labels"):
        bert_classifier(SIZE, 0)


def test_mean_pooled_classifier_ignores_padding_and_keeps_the_encoder():
    mlm = bert_mlm(SIZE, seed=4)
    clf = bert_classifier(SIZE, 3, from_encoder=mlm, seed=0, pooling="mean").eval()
    assert torch.equal(clf.encoder.encoder.layer[1].output.dense.weight,
                       mlm.bert.encoder.layer[1].output.dense.weight)
    assert clf.encoder.pooler is None and clf.config.num_labels == 3
    ids = torch.tensor([[2, 10, 11, 12, 3]])
    padded = torch.cat([ids, torch.zeros(1, 4, dtype=torch.long)], dim=1)
    mask = (padded != 0).long()
    with torch.no_grad():
        short = clf(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
        long = clf(input_ids=padded, attention_mask=mask).logits
    assert short.shape == (1, 3)
    torch.testing.assert_close(short, long, atol=1e-5, rtol=1e-5)
    # the head reads the mean of the token states, not the [CLS] state
    with torch.no_grad():
        states = clf.encoder(input_ids=ids).last_hidden_state
        torch.testing.assert_close(short, clf.head(states.mean(1)))
    eclf = electra_classifier(SIZE, 2, from_encoder=electra(SIZE, seed=5), pooling="mean")
    assert eclf(input_ids=ids).logits.shape == (1, 2)
    with pytest.raises(ValueError, match="pooling must be one of"):
        bert_classifier(SIZE, 2, pooling="max")
