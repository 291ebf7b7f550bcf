"""What a masking masks: the list share of masked tokens, on hand-made probabilities."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mlmlib.papers.selective_masking.composition import list_share_of_masked, masked_composition

# two sentences of four positions: word types 0 (a list word), 1, 2; -1 marks special/padding
WORD_TYPE = torch.tensor([[-1, 0, 1, 2], [-1, 1, 0, -1]])
IN_LIST = np.array([True, False, False])


def test_uniform_masking_masks_list_words_at_their_share_of_tokens():
    probs = torch.full(WORD_TYPE.shape, 0.2)
    assert list_share_of_masked(probs, WORD_TYPE, IN_LIST) == pytest.approx(2 / 5)


def test_selective_masking_shifts_the_share_toward_list_words():
    probs = torch.tensor([[0.0, 0.6, 0.1, 0.1], [0.0, 0.1, 0.6, 0.9]])  # padding's 0.9 must not count
    expected = (0.6 + 0.6) / (0.6 + 0.1 + 0.1 + 0.1 + 0.6)
    assert list_share_of_masked(probs, WORD_TYPE, IN_LIST) == pytest.approx(expected)


def test_a_text_without_list_words_has_nothing_to_mask():
    probs = torch.full(WORD_TYPE.shape, 0.2)
    assert list_share_of_masked(probs, WORD_TYPE, np.array([False, False, False])) == 0.0


def test_bad_input_is_refused():
    probs = torch.full(WORD_TYPE.shape, 0.2)
    with pytest.raises(ValueError, match="same positions"):
        list_share_of_masked(probs[:, :3], WORD_TYPE, IN_LIST)
    with pytest.raises(ValueError, match="in_list has 2 word types"):
        list_share_of_masked(probs, WORD_TYPE, np.array([True, False]))


def test_composition_rows_per_arm_leave_out_arms_without_position_probabilities():
    class Arm:
        def __init__(self, probs):
            self.data = None if probs is None else {"mask_prob": probs}

    arms = {"none": Arm(None), "random": Arm(torch.full(WORD_TYPE.shape, 0.2)),
            "random-count": Arm(torch.full((8, 4), 0.2)),  # pre-drawn copies: other positions
            "exponential": Arm(torch.tensor([[0.0, 0.6, 0.1, 0.1], [0.0, 0.1, 0.6, 0.0]]))}
    rows = {r["arm"]: r["list_share"] for r in masked_composition(arms, WORD_TYPE, IN_LIST)}
    assert set(rows) == {"random", "exponential"} and rows["exponential"] / rows["random"] > 1.5
