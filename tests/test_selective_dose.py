"""Paper C's dose-response and its controlled analogue: nested chains, the exact word list, the
dose claims on hand-made records."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mlmlib import verdicts
from mlmlib.papers.selective_masking import dose, dose_claims, synthetic_task
from mlmlib.papers.selective_masking.config import ContinuedMLM, SyntheticSelective, check_doses

TINY = dict(n_sets=20, n_states=100, corpus_size=200, length=16, hidden=16, layers=1, heads=1,
            base_steps=20, loss_threshold=10.0, task_size=200, doses=(0, 2, 5), few_labels=40,
            epochs=1, validation_size=40, test_size=60, heldout_size=40)


# ---------------------------------------------------------------- doses: checked before training

@pytest.mark.parametrize("doses, match", [
    ([0, 30, 20], "strictly increasing"), ([0, 10, 10], "strictly increasing"),
    ([0], "above 0"), ([], "non-empty"), ([-1, 5], "ints >= 0"), ([0, 2.5], "ints >= 0"),
])
def test_bad_doses_name_the_parameter(doses, match):
    with pytest.raises(ValueError, match=f"mlm.doses.*{match}|{match}.*mlm.doses|mlm.doses must"):
        check_doses(doses)


def test_last_dose_is_the_chain_length():
    with pytest.raises(ValueError, match="mlm.doses: the last dose .* mlm.steps"):
        ContinuedMLM(steps=60, doses=(0, 10, 30))
    assert ContinuedMLM(steps=30, doses=(0, 3, 10, 30)).doses == (0, 3, 10, 30)
    with pytest.raises(ValueError, match="synthetic.doses"):
        SyntheticSelective(doses=(0, 5, 3))


# ---------------------------------------------------------------- the nested chain

def _tiny_chain_setup():
    from mlmlib.models import ModelSize, bert_mlm
    from mlmlib.pretrain import PretrainConfig

    config = SyntheticSelective(**TINY)
    lang = synthetic_task.language(config, 0)
    tokens, _ = __import__("mlmlib.data.synthetic", fromlist=["labelled_set"]).labelled_set(
        lang, "A-D1", 64, config.length, seed=3)
    probs = synthetic_task.arm_probs(tokens, synthetic_task.task_word_list(lang), config)
    data = synthetic_task.as_data(tokens, config.n_sets) | {"mask_prob": probs["exponential"]}
    size = ModelSize(vocab_size=2 * config.n_sets + 3, hidden=16, layers=1, heads=1,
                     max_len=config.length + 1, dropout=0.1, pad_id=2 * config.n_sets + 1)
    model = bert_mlm(size, seed=0)
    return model, data, PretrainConfig(steps=5, batch_size=8, lr=1e-3, mask_rate=0.2, seed=4), config


def test_nested_dose_equals_a_direct_run_to_that_dose():
    """The chain read at dose 3 (on its way to 7) is the model a chain run to 3 alone gives, even
    when the callback at each dose trains something else (it must not disturb the chain)."""
    base, data, config, syn = _tiny_chain_setup()
    kwargs = dict(mask_id=2 * syn.n_sets, num_special=0, warmup_steps=2,
                  replace_ids=torch.arange(2 * syn.n_sets))
    nested = {}

    def keep(d, model):
        nested[d] = {k: v.clone() for k, v in model.state_dict().items()}
        torch.rand(100)  # what a fine-tuning would draw from the global generator
        torch.nn.Dropout(0.5)(torch.ones(10))

    dose.chain(base, data, config, [0, 3, 7], keep, **kwargs)
    direct = {}
    dose.chain(base, data, config, [3], lambda d, m: direct.update(
        {k: v.clone() for k, v in m.state_dict().items()}), **kwargs)
    for name, value in direct.items():
        assert torch.equal(value, nested[3][name]), name
    # and training moved the weights: the comparison is not between two untouched copies
    assert not all(torch.equal(nested[0][k], nested[7][k]) for k in nested[0])
    assert all(torch.equal(nested[0][k], v) for k, v in base.state_dict().items())


def test_heldout_loss_uses_one_fixed_masking():
    base, data, _, syn = _tiny_chain_setup()
    held = {k: v for k, v in data.items() if k != "mask_prob"}
    kw = dict(mask_id=2 * syn.n_sets, vocab_size=2 * syn.n_sets + 3, num_special=0,
              replace_ids=torch.arange(2 * syn.n_sets))
    a, b = dose.heldout_batches(held, 0.2, 5, **kw), dose.heldout_batches(held, 0.2, 5, **kw)
    assert all(torch.equal(x["masked"], y["masked"]) for x, y in zip(a, b))
    assert not any(bool(x["masked"][:, 0].any()) for x in a)  # [CLS] never masked
    loss = dose.heldout_mlm_loss(base, a)
    assert np.isfinite(loss) and loss == dose.heldout_mlm_loss(base, b)
    assert abs(loss - np.log(2 * syn.n_sets + 3)) < 1.5  # an untrained model: near uniform


# ---------------------------------------------------------------- the exact word list

def test_synthetic_task_word_list_is_every_pattern_token_in_both_alphabets():
    config = SyntheticSelective(**TINY)
    lang = synthetic_task.language(config, 1)
    listed = synthetic_task.task_word_list(lang)
    sets = set(lang.patterns.ravel().tolist())
    assert set(listed.tolist()) == sets | {s + config.n_sets for s in sets}
    # the label is decided by these tokens alone: replacing every non-list token leaves it
    from mlmlib.data.synthetic import label, labelled_set

    tokens, labels = labelled_set(lang, "A-D1", 200, config.length, seed=0)
    outside = [t for t in range(config.n_sets) if t not in sets]
    scrambled = np.where(np.isin(tokens, listed), tokens, outside[0])
    assert (label(scrambled, lang.patterns) == labels).all()


def test_selective_arm_masks_list_tokens_more_at_the_same_rate():
    config = SyntheticSelective(**TINY)
    lang = synthetic_task.language(config, 0)
    from mlmlib.data.synthetic import labelled_set

    tokens, _ = labelled_set(lang, "A-D1", 300, config.length, seed=0)
    probs = synthetic_task.arm_probs(tokens, synthetic_task.task_word_list(lang), config)
    valid = probs["word_type"] >= 0
    for arm in ("random", "exponential"):
        assert abs(float(probs[arm][valid].mean()) - config.target_rate) < 1e-4
    assert float(probs["exponential"][:, 0].max()) == 0.0  # [CLS]
    from mlmlib.papers.selective_masking.composition import list_share_of_masked

    shares = {a: list_share_of_masked(probs[a], probs["word_type"], probs["in_list"])
              for a in ("random", "exponential")}
    assert shares["exponential"] > shares["random"]


def test_a_word_list_absent_from_the_text_stops_before_training():
    config = SyntheticSelective(**TINY)
    tokens = np.zeros((10, config.length), dtype=np.int64) + 3
    with pytest.raises(ValueError, match="synthetic: no token of the task word list"):
        synthetic_task.arm_probs(tokens, np.array([5, 6]), config)


# ---------------------------------------------------------------- the claims on hand-made records

def _rows(effect: float, loss_drop: float, moved: float, ratio: float = 2.0, seeds=(0, 1, 2, 3)):
    """Dose rows of a hand-made design: random and exponential at doses 0 and 10."""
    rows = []
    for s in seeds:
        jitter = 0.001 * (s - 1.5)
        for arm, share in (("random", 0.1), ("exponential", 0.1 * ratio)):
            rows.append({"arm": arm, "word_list": "w", "seed": s, "dose": 0, "list_share": share,
                         "heldout_loss": 3.0, "accuracy": 0.7})
            rows.append({"arm": arm, "word_list": "w", "seed": s, "dose": 10, "list_share": share,
                         "heldout_loss": 3.0 - loss_drop + jitter,
                         "accuracy": 0.7 + moved + (effect if arm == "exponential" else 0) + jitter
                         * (2 if arm == "exponential" else 1)})
    return rows


def test_dose_claim_reproduced_with_every_control():
    [claim] = dose_claims.dose_claims(_rows(0.05, 0.5, 0.05), "synthetic")
    assert claim["dose"] == 10 and claim["verdict"] == verdicts.REPRODUCED
    assert all(c["passed"] for c in claim["controls"]) and len(claim["controls"]) == 3
    assert claim["list_share_ratio"] == pytest.approx(2.0)


@pytest.mark.parametrize("kwargs, failed", [
    ({"ratio": 1.2}, "list share"), ({"loss_drop": -0.2}, "held-out masked-LM loss"),
    ({"moved": 0.0}, "moves the score"),
])
def test_a_failed_control_makes_a_null_insensitive(kwargs, failed):
    args = {"effect": 0.0, "loss_drop": 0.5, "moved": 0.05} | {k: v for k, v in kwargs.items()
                                                              if k != "ratio"}
    rows = _rows(args["effect"], args["loss_drop"], args["moved"], kwargs.get("ratio", 2.0))
    [claim] = dose_claims.dose_claims(rows, "synthetic")
    assert claim["verdict"] == verdicts.INSENSITIVE
    assert [c["name"] for c in claim["controls"] if not c["passed"]][0].find(failed) >= 0 or \
        any(failed in c["name"] for c in claim["controls"] if not c["passed"])
    card = dose_claims.top_dose_card([claim])
    assert card[0]["testbed"].startswith("synthetic") and card[0]["verdict"] == verdicts.INSENSITIVE


def test_too_few_seeds_is_not_resolved_and_the_score_must_exist():
    [claim] = dose_claims.dose_claims(_rows(0.05, 0.5, 0.05, seeds=(0, 1)), "synthetic")
    assert claim["verdict"] == verdicts.NOT_RESOLVED and not claim["controls"]
    with pytest.raises(ValueError, match="probe_accuracy"):
        dose_claims.dose_claims(_rows(0.05, 0.5, 0.05), "real")
