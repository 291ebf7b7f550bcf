"""What a masking masks: the share of list-word tokens among the tokens an arm masks.

Selective masking can only matter if it masks task words more often than random masking does.
This is the positive control of paper C's claim: computed from the per-position probabilities
an arm trains with (`ArmMasking.data["mask_prob"]`), so it is the exact expectation of what the
masking draws, with no sampling noise.
"""

from __future__ import annotations

import numpy as np
import torch


def list_share_of_masked(mask_prob: torch.Tensor, word_type: torch.Tensor, in_list: np.ndarray) -> float:
    """Expected share of list-word tokens among masked tokens: sum(p * listed) / sum(p) over the
    maskable positions (word_type >= 0; -1 marks special tokens and padding); 0 when no token of
    the corpus is a list word."""
    if mask_prob.shape != word_type.shape:
        raise ValueError(f"mask_prob {tuple(mask_prob.shape)} and word_type {tuple(word_type.shape)} "
                         "must cover the same positions")
    in_list = torch.as_tensor(np.asarray(in_list, dtype=bool))
    if int(word_type.max()) >= len(in_list):
        raise ValueError(f"in_list has {len(in_list)} word types; word_type reaches {int(word_type.max())}")
    valid = word_type >= 0
    listed = in_list[word_type.clamp(min=0)] & valid
    if not bool(listed.any()):  # no list word in the text: no masking can mask one
        return 0.0
    masked = (mask_prob * valid).sum()
    return float((mask_prob * listed).sum() / masked) if masked > 0 else float("nan")


def masked_composition(maskings: dict, word_type: torch.Tensor, in_list: np.ndarray) -> list[dict]:
    """One row per arm that masks (`ArmMasking` with data): its expected list share of masked
    tokens; arms whose data are not the corpus' positions (pre-drawn copies) are left out."""
    rows = []
    for arm, m in maskings.items():
        if m.data is None or m.data["mask_prob"].shape != word_type.shape:
            continue
        rows.append({"arm": arm, "list_share": list_share_of_masked(m.data["mask_prob"], word_type, in_list)})
    return rows
