"""C4's domain shift: the base pretrains on one chain, the task comes from the other."""

from __future__ import annotations

import numpy as np
import pytest

from mlmlib import configs
from mlmlib.data.synthetic import labelled_set
from mlmlib.papers.selective_masking import synthetic_task
from mlmlib.papers.selective_masking.config import SyntheticSelective


def bigrams(chain, n_sets: int) -> set[tuple[int, int]]:
    """Every pair of consecutive synonym sets the chain can emit."""
    states = np.arange(len(chain.emit))
    nxt = chain.emit[(states + 1) % len(states)]
    return set(zip(chain.emit.tolist(), nxt.tolist())) | set(zip(chain.emit.tolist(),
                                                                 chain.emit[chain.jump].tolist()))


def seen(tokens: np.ndarray, n_sets: int) -> set[tuple[int, int]]:
    sets = tokens % n_sets  # both alphabets: a token and its synonym are one set
    return set(zip(sets[:, :-1].ravel().tolist(), sets[:, 1:].ravel().tolist()))


def test_the_base_never_sees_the_task_domain():
    # the chain-only shift (both alphabets in the base, the task in alphabet A)
    config = configs.build(SyntheticSelective, {"base_alphabet": "mix", "task_set": "A-D2"},
                           "synthetic")
    lang = synthetic_task.language(config, seed=3)
    base = synthetic_task.base_corpus(lang, config.base_domain, 2000, config.length, seed=3,
                                      alphabet=config.base_alphabet)
    task, _ = labelled_set(lang, config.task_set, 2000, config.length, seed=3)
    d1, d2 = (bigrams(lang.chains[c], config.n_sets) for c in ("D1", "D2"))
    assert seen(base, config.n_sets) <= d1  # every transition the base reads is one of D1's
    assert (base >= config.n_sets).mean() == pytest.approx(0.5, abs=0.02)  # both alphabets
    task_pairs = seen(task, config.n_sets)
    assert task_pairs <= d2 and (task < config.n_sets).all()  # alphabet A
    # most of what the task's text does, the base never saw
    assert len(task_pairs - d1) > 0.8 * len(task_pairs)


def test_a_base_of_alphabet_a_never_reads_the_words_the_mixed_task_text_adds():
    config = SyntheticSelective()  # the default: the vocabulary shift
    assert (config.base_alphabet, config.task_set) == ("A", "mix-D2")
    lang = synthetic_task.language(config, seed=4)
    base = synthetic_task.base_corpus(lang, config.base_domain, 2000, config.length, seed=4,
                                      alphabet=config.base_alphabet)
    assert (base < config.n_sets).all()  # no B token in the base's text...
    assert synthetic_task.base_replace_ids(config).max().item() == config.n_sets - 1  # ...or noise
    tokens, labels = synthetic_task.task_draw(lang, config.task_set, 2000, config.length, seed=4)
    assert (tokens >= config.n_sets).mean() == pytest.approx(0.5, abs=0.02)  # the task's B words
    ids, same_labels = labelled_set(lang, "A-D2", 2000, config.length, seed=4)
    assert (tokens % config.n_sets == ids).all()  # the same sequences, their alphabets mixed...
    assert (labels == same_labels).all()  # ...with the generator's labels unchanged
    assert seen(tokens, config.n_sets) <= bigrams(lang.chains["D2"], config.n_sets)


@pytest.mark.parametrize("override, match", [
    ({"base_alphabet": "B"}, "synthetic.base_alphabet must be one of"),
    ({"task_set": "mix-D1"}, "synthetic.task_set 'mix-D1' lies inside the base's pretraining"),
    ({"task_set": "A-D1"}, "synthetic.task_set 'A-D1' lies inside the base's pretraining domain"),
    ({"base_domain": "D3"}, "synthetic.base_domain must be one of"),
    ({"task_set": "C-D2"}, "synthetic.task_set must be"),
    ({"doses": [0, 100, 30]}, "synthetic.doses must be strictly increasing"),
    ({"second_beta": 3.0}, "synthetic.second_beta must be a number > 0 other than beta"),
    ({"second_beta": 0}, "synthetic.second_beta must be a number > 0")])
def test_a_shift_that_is_no_shift_or_a_bad_dose_list_is_refused(override, match):
    with pytest.raises(ValueError, match=match):
        configs.build(SyntheticSelective, override, "synthetic")


def test_a_recorded_run_may_not_use_a_pilot_language():
    from mlmlib.papers.selective_masking.config import PILOT_LANGUAGES

    config = configs.build(SyntheticSelective, {"preset": "tiny"}, "synthetic")
    with pytest.raises(ValueError, match="parameter seed: language 104 is a pilot language"):
        synthetic_task.run_seed(config, 104, recording=True)  # before anything is drawn
    assert 104 in PILOT_LANGUAGES


@pytest.mark.parametrize("profile", ["test", "smoke", "cpu", "paper"])
def test_no_plan_records_a_c4_pilot_language(profile):
    from mlmlib.papers.selective_masking.config import PILOT_LANGUAGES
    from mlmlib.runs.plans import load_plan

    seeds = [run.params.get("seed", 0) for run in load_plan(profile).runs
             if run.notebook == "C4_synthetic_selective"]
    assert seeds and not set(seeds) & set(PILOT_LANGUAGES)


def test_a_second_strength_masks_list_tokens_between_random_and_the_calibrated_exponential():
    config = configs.build(SyntheticSelective, {"preset": "tiny"}, "synthetic")  # beta 3 and 1
    assert synthetic_task.arm_names(config) == ("random", "exponential", "exponential-b1")
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 2 * config.n_sets, size=(200, 16))
    listed = np.arange(0, 2 * config.n_sets, 7)  # about a seventh of the tokens
    probs = synthetic_task.arm_probs(tokens, listed, config)
    listed_at = np.isin(tokens, listed)
    shares, rates = {}, {}
    for arm in synthetic_task.arm_names(config):
        p = probs[arm][:, 1:].numpy()  # position 0 is [CLS]
        rates[arm], shares[arm] = p.mean(), p[listed_at].sum() / p.sum()
    assert all(r == pytest.approx(config.target_rate, rel=0.02) for r in rates.values())
    assert shares["random"] < shares["exponential-b1"] < shares["exponential"]
    assert synthetic_task.arm_names(configs.build(SyntheticSelective, {"preset": "smoke"},
                                                  "synthetic")) == synthetic_task.ARMS
