"""The batches of a pretraining run: its data checked, the seeded batch order (resumable), and
one batch sliced, trimmed of padding and masked on the CPU, with the masked positions' indices.

Split from mlmlib.pretrain, which imports these (and C2's chain and timing take them from there).
`config` is a pretrain.PretrainConfig.
"""

from __future__ import annotations

import torch

from mlmlib.masking import check_rate, mask_tokens, masked_positions


def check_data(data: dict, config) -> tuple[int, int]:
    """Validate the tensors of a pretraining set; returns (N, L)."""
    if not isinstance(data, dict) or "input_ids" not in data:
        raise ValueError("data must be a dict with at least 'input_ids' (N, L)")
    ids = data["input_ids"]
    if ids.dim() != 2 or ids.dtype not in (torch.int32, torch.long):
        raise ValueError("data['input_ids'] must be a (N, L) int32 or long tensor, got "
                         f"{ids.dtype} {tuple(ids.shape)}")
    for key in ("attention_mask", "special_tokens_mask", "word_ids", "mask_prob"):
        if key in data and data[key] is not None and tuple(data[key].shape) != tuple(ids.shape):
            raise ValueError(f"data['{key}'] shape {tuple(data[key].shape)} != input_ids "
                             f"{tuple(ids.shape)}")
    if config.whole_word and data.get("word_ids") is None:
        raise ValueError("whole_word=True needs data['word_ids'] (N, L), -1 for special/pad")
    if data.get("mask_prob") is not None:
        check_rate(data["mask_prob"], "data['mask_prob']")
    n = ids.shape[0]
    if config.batch_size > n:
        raise ValueError(f"batch_size ({config.batch_size}) exceeds the number of sequences ({n})")
    return n, ids.shape[1]


class BatchSampler:
    """Epochs of seeded random permutations.

    Its checkpointed state is the generator's state at the start of the epoch and now, and the
    position: the permutation is drawn again on load (at paper size it is 71M indices, 570 MB a
    checkpoint), so a resumed run reads the same batches.
    """

    def __init__(self, n: int, batch_size: int, seed: int) -> None:
        self.n, self.batch_size = n, batch_size
        self.generator = torch.Generator().manual_seed(seed)
        self._new_epoch()

    def _new_epoch(self) -> None:
        self.epoch_rng = self.generator.get_state()
        self.perm = torch.randperm(self.n, generator=self.generator)
        self.pos = 0

    def next(self) -> torch.Tensor:
        """Indices of the next batch (a new permutation when the epoch runs out)."""
        if self.pos + self.batch_size > self.n:
            self._new_epoch()
        idx = self.perm[self.pos:self.pos + self.batch_size]
        self.pos += self.batch_size
        return idx

    def state_dict(self) -> dict:
        return {"rng": self.generator.get_state(), "epoch_rng": self.epoch_rng, "pos": self.pos}

    def load_state_dict(self, state: dict) -> None:
        self.generator.set_state(state["epoch_rng"])
        self._new_epoch()
        self.generator.set_state(state["rng"])
        self.pos = int(state["pos"])


def _batch(data: dict, idx: torch.Tensor, config, sampler: BatchSampler,
           mask_id: int, vocab_size: int, num_special: int, replace_ids) -> dict:
    """Slice a batch, drop all-padding columns, and mask it with the run's generator (on CPU)."""
    if data.get("attention_mask") is not None:
        attention = data["attention_mask"][idx].bool()
        used = attention.any(0).nonzero()
        width = int(used.max()) + 1 if used.numel() else 1  # right padding: trim the padded tail
        attention = attention[:, :width]
    else:  # packed rows: no padding
        width = data["input_ids"].shape[1]
        attention = torch.ones(len(idx), width, dtype=torch.bool)
    ids = data["input_ids"][idx, :width].long()  # packed corpora are stored as int32
    special = ~attention
    if data.get("special_tokens_mask") is not None:
        special |= data["special_tokens_mask"][idx, :width].bool()
    elif data.get("special_ids") is not None:
        special |= torch.isin(ids, data["special_ids"])
    else:
        special |= ids < num_special
    prob = config.mask_rate if data.get("mask_prob") is None else data["mask_prob"][idx, :width]
    word_ids = data["word_ids"][idx, :width] if config.whole_word else None
    corrupted, masked = mask_tokens(
        ids, prob, generator=sampler.generator, mask_id=mask_id, vocab_size=vocab_size,
        special_mask=special, word_ids=word_ids, split=config.split, num_special=num_special,
        replace_ids=replace_ids,
    )
    # No padding in the batch: no mask, so SDPA can take its fastest kernel. The masked positions'
    # indices are taken here, on the CPU: the step gathers with them (no host sync on a GPU)
    return {"input_ids": ids, "attention_mask": None if bool(attention.all()) else attention.long(),
            "corrupted": corrupted, "masked": masked, "positions": masked_positions(masked),
            "tokens": int(attention.sum())}
