"""Balanced labelled sets of the synthetic languages (a rejection draw from the same generator),
B4's fine-tuning curve, and the pilot languages that no recorded run may use."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mlmlib.data import synthetic as syn
from mlmlib.papers.true_negatives import synthetic_claims as sc
from mlmlib.papers.true_negatives import synthetic_testbed as tb
from mlmlib.papers.true_negatives.synthetic_config import (
    PILOT_LANGUAGES,
    SyntheticFinetune,
    SyntheticSetup,
)
from mlmlib.runs import plans

# B4's cpu-plan language: at length 32 its A-D1 labels are about nine in ten positive.
LANG = syn.make_language(syn.LanguageConfig(n_sets=50, n_states=250, n_patterns=4, pattern_length=2,
                                            pattern_set_size=2, seed=3))


@pytest.mark.parametrize("n", [2, 7, 400])
@pytest.mark.parametrize("test_set", syn.TEST_SETS)
def test_a_balanced_set_has_exact_halves(n, test_set):
    tokens, labels = syn.balanced_labelled_set(LANG, test_set, n, 32, seed=5)
    assert tokens.shape == (n, 32) and len(labels) == n
    assert (labels == 0).sum() == n // 2 and (labels == 1).sum() == n - n // 2


def test_the_unbalanced_generator_is_far_from_half_here():
    _, labels = syn.labelled_set(LANG, "A-D1", 2000, 32, seed=5)
    assert labels.mean() > 0.75  # what the balancing is for


def test_balancing_keeps_the_generators_sequences_and_their_labels():
    n = 300
    tokens, labels = syn.balanced_labelled_set(LANG, "B-D1", n, 32, seed=9)
    # the first chunk is the unbalanced draw of the same seed: the rejection keeps, in draw order,
    # its first n // 2 sequences of class 0 and first n - n // 2 of class 1, with their labels
    pool, pool_labels = syn.labelled_set(LANG, "B-D1", syn.BALANCE_CHUNK * n, 32, seed=9)
    keep = np.zeros(len(pool), dtype=bool)
    for cls, half in ((0, n // 2), (1, n - n // 2)):
        keep[np.flatnonzero(pool_labels == cls)[:half]] = True
    first = int(keep.sum())
    assert 0 < first < n  # this seed needs a second chunk for class 0: both parts are checked
    assert np.array_equal(tokens[:first], pool[keep]) and np.array_equal(labels[:first], pool_labels[keep])
    ids = tokens - LANG.config.n_sets  # alphabet B back to set ids
    assert np.array_equal(labels, syn.label(ids, LANG.patterns))


def test_a_class_the_patterns_cannot_give_stops_naming_the_pattern_settings():
    rare = syn.make_language(syn.LanguageConfig(n_sets=60, n_states=600, n_patterns=1, pattern_length=3,
                                                pattern_set_size=1, seed=0))
    with pytest.raises(ValueError, match=r"n_patterns=1, pattern_length=3, pattern_set_size=1"):
        syn.balanced_labelled_set(rare, "A-D1", 200, 3, seed=0)
    with pytest.raises(ValueError, match="n >= 2"):
        syn.balanced_labelled_set(LANG, "A-D1", 1, 32, seed=0)


def test_b4_draws_balanced_sets_by_default_and_as_is_when_asked():
    ft = SyntheticFinetune(train_size=100, valid_size=20, test_size=50)
    sets = tb.labelled_sets(LANG, ft, 3)
    assert all(float(s["labels"].float().mean()) == 0.5 for s in sets.values())
    raw = tb.labelled_sets(LANG, SyntheticFinetune(train_size=100, valid_size=20, test_size=50,
                                                   balanced=False), 3)
    assert float(raw["A-D1"]["labels"].float().mean()) > 0.75


def test_a_finetune_set_the_generator_cannot_balance_stops_naming_the_parameter():
    rare = syn.make_language(syn.LanguageConfig(n_sets=60, n_states=600, n_patterns=1, pattern_length=3,
                                                pattern_set_size=1, seed=0))
    with pytest.raises(ValueError, match=r"parameter finetune \(train set, 200 examples\)"):
        tb.labelled_sets(rare, SyntheticFinetune(train_size=200, length=3), 0)


@pytest.mark.parametrize("value", [(1,), (10, 10), [10, 20], (True,)])
def test_curve_sizes_are_checked(value):
    with pytest.raises(ValueError, match="curve_sizes"):
        SyntheticFinetune(curve_sizes=value)


def test_majority_baselines_of_a_record_before_balancing_use_its_unbalanced_sets():
    setup = {"n_sets": 50, "n_states": 250, "n_patterns": 4, "pattern_length": 2, "pattern_set_size": 2}
    old = {"info": {"language_seed": 3, "pretrain_seed": 3}, "setup": setup,
           "finetune": {"train_size": 50, "valid_size": 20, "test_size": 400}}
    new = {**old, "finetune": {**old["finetune"], "balanced": True, "curve_sizes": [20]}}
    rows = sc.majority_baselines(pd.DataFrame([old, new])).to_dict("records")
    assert rows[0]["a_d1"] > 0.75 and rows[1]["a_d1"] == 0.5


# ---------------------------------------------------------------- pilot languages


def test_a_recorded_run_may_not_use_a_pilot_language():
    language = PILOT_LANGUAGES[0]
    assert tb.language_of(language, -1) == language  # the pilot itself does not record
    with pytest.raises(ValueError, match="parameter seed: language .* pilot"):
        tb.language_of(language, -1, recording=True)
    with pytest.raises(ValueError, match="parameter language_seed: language .* pilot"):
        tb.language_of(0, language, recording=True)
    assert tb.language_of(0, -1, recording=True) == 0


@pytest.mark.parametrize("profile", ["smoke", "cpu", "paper"])
def test_no_plan_records_a_pilot_language(profile):
    runs = [r for r in plans.load_plan(profile).runs if r.notebook == "B4_synthetic_true_negatives"]
    assert runs, f"{profile} has no B4 run"
    for run in runs:
        params = plans.full_params(run.notebook, run.params)
        assert tb.language_of(params["seed"], params["language_seed"]) not in PILOT_LANGUAGES


def test_the_curve_rows_hold_every_arm_and_scratch_at_every_size():
    setup = SyntheticSetup(preset="tiny", steps=2, log_every=1)  # the test plan's, shorter
    ft = SyntheticFinetune(preset="tiny", max_steps=2, eval_every=1)  # its curve: sizes 8 and 16
    run = tb.run_seed(setup, ft, ["electra/none", "electra/relabel"], ["mix"], seed=1, log=None)
    curve = pd.DataFrame(run.curve)
    assert sorted(curve.groupby("arm")["train_size"].apply(tuple).items()) == [
        ("electra/none", (8, 16)), ("electra/relabel", (8, 16)), ("scratch", (8, 16))]
    assert curve["a_d1"].between(0, 1).all() and "curve" in run.metrics()


@pytest.mark.parametrize("kwargs, match", [
    ({"extra_arms": ["electra/shield"], "extra_seeds": []}, "go together"),
    ({"extra_arms": ["electra/none"], "extra_seeds": [0]}, "repeats arms"),
    ({"extra_arms": "electra/shield", "extra_seeds": [0]}, "extra_arms must be a list"),
    ({"extra_arms": ["electra/shield"], "extra_seeds": ["0"]}, "int seeds"),
])
def test_extra_arms_are_checked(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tb.arms_of_run(["electra/none"], seed=0, **kwargs)


def test_extra_arms_run_on_their_seeds_only():
    arms, extra = ["electra/none", "electra/relabel"], ["electra/shield"]
    assert tb.arms_of_run(arms, extra, [0, 1], 1) == [*arms, *extra]
    assert tb.arms_of_run(arms, extra, [0, 1], 2) == arms
    assert tb.arms_of_run(arms, [], [], 2) == arms
