"""Token masking for MLM and ELECTRA: uniform, per-position (selective) and whole-word.

Our own instead of transformers' DataCollatorForLanguageModeling because the papers need
per-position probabilities, whole-word decisions from word ids, ELECTRA's split and a
seeded generator per run; it is vectorised (no Python loop over tokens).
"""

from __future__ import annotations

import torch

BERT_SPLIT = (0.8, 0.1, 0.1)  # [MASK] / random token / keep (Devlin et al. 2019)
ELECTRA_SPLIT = (0.85, 0.0, 0.15)  # ELECTRA's generator input: no random tokens


def check_split(split) -> tuple[float, float, float]:
    """Validate a ([MASK], random, keep) split: three non-negative numbers summing to 1."""
    try:
        split = tuple(float(x) for x in split)
    except TypeError:
        raise ValueError(f"split must be three numbers ([MASK], random, keep), got {split!r}")
    if len(split) != 3 or min(split) < 0 or abs(sum(split) - 1.0) > 1e-6:
        raise ValueError(
            f"split must be three non-negative numbers ([MASK], random, keep) summing to 1, got {split}"
        )
    return split


def check_rate(mask_prob, name: str = "mask_prob") -> None:
    """Validate a masking rate: a float in (0, 1), or a tensor of probabilities in [0, 1]."""
    if isinstance(mask_prob, torch.Tensor):
        if not mask_prob.is_floating_point():
            raise ValueError(f"{name} tensor must be floating point, got {mask_prob.dtype}")
        if mask_prob.numel() and (mask_prob.min() < 0 or mask_prob.max() > 1 or mask_prob.isnan().any()):
            raise ValueError(f"{name} tensor values must be probabilities in [0, 1]")
        return
    if isinstance(mask_prob, bool) or not isinstance(mask_prob, (int, float)) or not 0 < mask_prob < 1:
        raise ValueError(f"{name} must be a float in (0, 1) or a (B, L) tensor, got {mask_prob!r}")


def word_starts(word_ids: torch.Tensor) -> torch.Tensor:
    """True at the first piece of each word: a run of equal word ids >= 0 within a row."""
    prev = torch.full_like(word_ids[:, :1], -2)
    shifted = torch.cat([prev, word_ids[:, :-1]], dim=1)
    return (word_ids >= 0) & (word_ids != shifted)


def mask_tokens(
    input_ids: torch.Tensor,
    mask_prob: float | torch.Tensor,
    *,
    generator: torch.Generator,
    mask_id: int,
    vocab_size: int,
    special_mask: torch.Tensor,
    word_ids: torch.Tensor | None = None,
    split=BERT_SPLIT,
    num_special: int = 0,
    replace_ids: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Choose positions to mask and corrupt them; returns (corrupted_ids, masked_bool).

    mask_prob: a rate in (0, 1), or per-position probabilities (B, L) (selective masking).
    special_mask: True where a token must never be masked (special tokens AND padding).
    word_ids: (B, L) word index per token, -1 for special/pad: whole-word masking, one
      draw per word with the probability of its first piece, all pieces masked together.
    split: fractions of masked positions set to [MASK], to a random token, kept.
    Random tokens are drawn uniformly from `replace_ids` if given, else from
    [num_special, vocab_size) (tokenizers here put their special tokens first).
    """
    check_rate(mask_prob)
    p_mask, p_random, _ = check_split(split)
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids must be (B, L), got shape {tuple(input_ids.shape)}")
    if special_mask.shape != input_ids.shape:
        raise ValueError(
            f"special_mask shape {tuple(special_mask.shape)} != input_ids shape {tuple(input_ids.shape)}"
        )
    if isinstance(mask_prob, torch.Tensor) and mask_prob.shape != input_ids.shape:
        raise ValueError(
            f"mask_prob tensor shape {tuple(mask_prob.shape)} != input_ids shape {tuple(input_ids.shape)}"
        )
    if not 0 <= num_special < vocab_size:
        raise ValueError(f"num_special must be in [0, vocab_size={vocab_size}), got {num_special}")
    device = input_ids.device
    # Every call draws the same amount of randomness, so runs stay reproducible.
    u = torch.rand(input_ids.shape, generator=generator, device=device)
    r = torch.rand(input_ids.shape, generator=generator, device=device)
    eligible = ~special_mask.bool()
    if word_ids is None:
        masked = (u < mask_prob) & eligible
    else:
        if word_ids.shape != input_ids.shape:
            raise ValueError(
                f"word_ids shape {tuple(word_ids.shape)} != input_ids shape {tuple(input_ids.shape)}"
            )
        starts = word_starts(word_ids)
        # Number the words over the flattened batch; each piece looks up its word's draw.
        segment = starts.flatten().cumsum(0) - 1
        decision = ((u < mask_prob) & starts).flatten()[starts.flatten()]
        if decision.numel() == 0:
            masked = torch.zeros_like(eligible)
        else:
            masked = decision[segment.clamp(min=0)].view_as(input_ids) & (word_ids >= 0)
        masked &= eligible
    to_mask = masked & (r < p_mask)
    to_random = masked & (r >= p_mask) & (r < p_mask + p_random)
    corrupted = input_ids.masked_fill(to_mask, mask_id)
    if p_random > 0:
        if replace_ids is not None:
            pick = torch.randint(len(replace_ids), input_ids.shape, generator=generator, device=device)
            random_tokens = replace_ids.to(device)[pick]
        else:
            random_tokens = torch.randint(
                num_special, vocab_size, input_ids.shape, generator=generator, device=device
            )
        corrupted = torch.where(to_random, random_tokens, corrupted)
    return corrupted, masked


def masked_positions(masked: torch.Tensor) -> torch.Tensor:
    """Flat indices (N,) of a (B, L) mask's True positions, row-major: the order of x[masked].

    Taken where the mask is drawn (on the CPU, with the batch): a training step on a GPU then
    gathers the masked positions with them (`at_masked`) and never reads their number back.
    """
    return masked.flatten().nonzero().squeeze(1)


def at_masked(x: torch.Tensor, masked: torch.Tensor, positions: torch.Tensor | None = None):
    """x[masked] for x of shape (B, L, ...): the rows (N, ...) at the masked positions, gathered
    at `positions` (masked_positions) when given, without a host sync; else by the mask."""
    return x[masked] if positions is None else x.flatten(0, 1)[positions]
