"""Paper C's dose-response and its controlled analogue: nested chains, the exact word list, the
dose claims on hand-made records."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scorecards import check_card

from mlmlib import verdicts
from mlmlib.papers.selective_masking import dose, dose_claims, synthetic_task
from mlmlib.papers.selective_masking.config import ContinuedMLM, SyntheticSelective, check_doses

TINY = {"preset": "tiny"}  # the test plan's C4 sizes


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
    assert direct and direct.keys() == nested[3].keys()
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

def _rows(effect: float, loss_drop: float, moved: float, ratio: float = 2.0, seeds=(0, 1, 2, 3),
          majority: float | None = 0.5):
    """Dose rows of a hand-made design: random and exponential at doses 0 and 10, each with its
    run's majority class (`rows_of` copies it from the record)."""
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
    if majority is not None:
        rows = [r | {"majority_accuracy": majority} for r in rows]
    return rows


def test_dose_claim_reproduced_with_every_control():
    [claim] = dose_claims.dose_claims(_rows(0.05, 0.5, 0.05), "synthetic")
    assert claim["dose"] == 10 and claim["verdict"] == verdicts.REPRODUCED
    assert all(c["passed"] for c in claim["controls"]) and len(claim["controls"]) == 3
    assert claim["list_share_ratio"] == pytest.approx(2.0)
    # every control an interval over the four languages, with its unit
    assert {(c["unit"], c["n"]) for c in claim["controls"]} == {("languages", 4)}
    drop = next(c for c in claim["controls"] if "held-out" in c["name"])
    assert drop["measured"] == pytest.approx(0.5) and drop["judged_on"] == drop["low"] < 0.5
    assert claim["majority"] == {"exponential": (pytest.approx(0.8), 0.5),
                                 "random": (pytest.approx(0.75), 0.5)}
    [card] = check_card(dose_claims.top_dose_card([claim]))
    assert card["unit"] == "languages" and card["scale"] == verdicts.ACCURACY
    assert card["effect"].endswith("exponential 0.800, random 0.750 (majority 0.500)")
    assert card["majority"]["random"] == {"accuracy": pytest.approx(0.75), "majority": 0.5}


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
    assert [c["name"] for c in verdicts.failed_controls(claim["controls"])] == [
        c["name"] for c in claim["controls"] if failed in c["name"]]
    card = check_card(dose_claims.top_dose_card([claim]))
    assert card[0]["testbed"].startswith("synthetic") and card[0]["verdict"] == verdicts.INSENSITIVE


@pytest.mark.parametrize("effect", [0.05, -0.05])
def test_a_clear_interval_with_a_failed_control_is_insensitive(effect):
    """No exception: an interval clear of zero either way reads insensitive when the score did
    not move (the old rule kept it)."""
    [claim] = dose_claims.dose_claims(_rows(effect, 0.5, 0.0), "synthetic")
    diff = stats_interval(claim)
    assert verdicts.verdict(diff) == (verdicts.REPRODUCED if effect > 0 else verdicts.CONTRADICTED)
    assert claim["verdict"] == verdicts.INSENSITIVE
    check_card(dose_claims.top_dose_card([claim]))


def stats_interval(claim):
    from mlmlib.stats import Interval

    return Interval(claim["effect"], claim["low"], claim["high"], claim["seeds"])


def test_an_arm_at_its_majority_class_is_not_judged():
    # every arm scores 0.70 to 0.80 against a majority class of 0.74: random (0.75) is within 0.02
    [claim] = dose_claims.dose_claims(_rows(0.05, 0.5, 0.05, majority=0.74), "synthetic")
    assert claim["at_majority"] == ["random"] and claim["verdict"] == verdicts.NOT_RESOLVED
    [card] = check_card(dose_claims.top_dose_card([claim]))
    assert card["effect"].endswith("not judged: at the majority class (within 0.02): random")


def test_a_record_without_its_majority_class_is_named():
    with pytest.raises(verdicts.ControlError, match="exponential beats random .* arm 'exponential' "
                                                    "has no majority-class baseline"):
        dose_claims.dose_claims(_rows(0.05, 0.5, 0.05, majority=None), "synthetic")


def test_the_probe_rows_are_a_classifiers_accuracy_over_seeds():
    rows = [r | {"probe_accuracy": r["accuracy"]} for r in _rows(0.05, 0.5, 0.05)]
    [claim] = dose_claims.dose_claims(rows, "real")
    assert {c["unit"] for c in claim["controls"]} == {"seeds"}
    [card] = check_card(dose_claims.top_dose_card([claim]))
    assert card["scale"] == "probe accuracy difference" and card["unit"] == "seeds"
    assert set(card["majority"]) == {"exponential", "random"}


def test_rows_of_carries_each_records_majority_class():
    import pandas as pd

    records = pd.DataFrame([{"dose_rows": [{"arm": "random", "seed": 0}], "majority_accuracy": 0.6,
                             "majority_f1": 0.4},
                            {"dose_rows": None, "majority_accuracy": 0.7, "majority_f1": 0.4}])
    assert dose_claims.rows_of(records) == [{"arm": "random", "seed": 0, "majority_accuracy": 0.6,
                                             "majority_f1": 0.4}]
    assert dose_claims.majority_field("probe_f1") == "majority_f1"


def test_too_few_seeds_is_not_measured_and_the_score_must_exist():
    [claim] = dose_claims.dose_claims(_rows(0.05, 0.5, 0.05, seeds=(0, 1)), "synthetic")
    assert claim["verdict"] == verdicts.NOT_MEASURED
    assert {c["status"] for c in claim["controls"]} == {verdicts.UNMEASURED}
    check_card(dose_claims.top_dose_card([claim]))
    with pytest.raises(ValueError, match="probe_accuracy"):
        dose_claims.dose_claims(_rows(0.05, 0.5, 0.05), "real")


def test_the_card_names_a_c4_setting_chosen_after_a_control_failed():
    import pandas as pd

    [claim] = dose_claims.dose_claims(_rows(0.05, 0.5, 0.05), "synthetic")
    runs = pd.DataFrame({"synthetic": [{"base_alphabet": "A", "task_set": "mix-D2"}] * 3})
    departures = dose_claims.synthetic_departures(runs)
    assert list(departures) == ["synthetic.base_alphabet A"]
    [card] = check_card(dose_claims.top_dose_card([claim], departures={"synthetic": departures}))
    assert "departs from the paper: synthetic.base_alphabet A: a vocabulary shift" in card["dose"]
    assert "failed on sixteen languages" in card["dose"]
    # the chain-only design (the default) departs from nothing
    plain = pd.DataFrame({"synthetic": [{"base_alphabet": "mix", "task_set": "A-D2"}] * 3})
    assert dose_claims.synthetic_departures(plain) == {}
    [card] = check_card(dose_claims.top_dose_card(
        [claim], departures={"synthetic": dose_claims.synthetic_departures(plain)}))
    assert "departs" not in card["dose"]
