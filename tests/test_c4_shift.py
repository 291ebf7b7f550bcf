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
    config = SyntheticSelective()
    lang = synthetic_task.language(config, seed=3)
    base = synthetic_task.base_corpus(lang, config.base_domain, 2000, config.length, seed=3)
    task, _ = labelled_set(lang, config.task_set, 2000, config.length, seed=3)
    d1, d2 = (bigrams(lang.chains[c], config.n_sets) for c in ("D1", "D2"))
    assert seen(base, config.n_sets) <= d1  # every transition the base reads is one of D1's
    assert (base >= config.n_sets).mean() == pytest.approx(0.5, abs=0.02)  # both alphabets
    task_pairs = seen(task, config.n_sets)
    assert task_pairs <= d2 and (task < config.n_sets).all()  # alphabet A
    # most of what the task's text does, the base never saw
    assert len(task_pairs - d1) > 0.8 * len(task_pairs)


@pytest.mark.parametrize("override, match", [
    ({"task_set": "A-D1"}, "synthetic.task_set 'A-D1' lies inside the base's pretraining domain"),
    ({"base_domain": "D3"}, "synthetic.base_domain must be one of"),
    ({"task_set": "C-D2"}, "synthetic.task_set must be"),
    ({"doses": [0, 100, 30]}, "synthetic.doses must be strictly increasing")])
def test_a_shift_that_is_no_shift_or_a_bad_dose_list_is_refused(override, match):
    with pytest.raises(ValueError, match=match):
        configs.build(SyntheticSelective, override, "synthetic")
