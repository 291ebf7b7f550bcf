"""Selective masking (paper C): task scores -> calibrated per-word masking probabilities.

Flow: `masking_weights(scores, function)` -> `calibrate(weights, target_rate, counts)` ->
a per-word probability table (`build_word_probs`) computed once per corpus ->
`word_mask_probs(word_ids, word_probs)` gives the (B, L) tensor that
`mask_tokens(..., mask_prob=probs, word_ids=word_ids)` takes. Controls at the same rate:
`matched_random_probs` (uniform) and `matched_count_masks` (same number of masked words per
sentence as a selective draw, Train No Evil's control).

Reconstructed (see the paper notes): the three functions' forms, min-max normalisation of
the scores over the corpus' words, and one scale c per arm found by bisection so that the
corpus-average of min(1, c * f(s)) equals the random baseline's rate (20%).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from mlmlib.papers.selective_masking.config import FUNCTIONS


def _check_rate(name: str, rate: float) -> None:
    """Raise unless 0 < rate < 1."""
    if not (isinstance(rate, (int, float)) and 0.0 < rate < 1.0):
        raise ValueError(f"{name} must be in the open interval (0, 1), got {rate!r}")


def normalise_scores(scores: np.ndarray) -> np.ndarray:
    """Min-max normalise scores to [0, 1] (all zeros when every score is equal)."""
    s = np.asarray(scores, dtype=np.float64)
    lo, hi = float(s.min()), float(s.max())
    return np.zeros_like(s) if hi <= lo else (s - lo) / (hi - lo)


def masking_weights(
    scores: np.ndarray | list[float],
    function: str = "linear",
    *,
    tau: float = 0.9,  # as MaskingConfig.tau: the step threshold on the task score
    ratio: float = 4.0,
    p_min: float = 0.1,
    p_max: float = 1.0,
    beta: float = 3.0,
    normalise: bool = True,
) -> np.ndarray:
    """Unnormalised masking weights f(s) >= 0, monotone non-decreasing in the score.

    step: `ratio` if s >= tau else 1 (raw score s). linear: p_min + (p_max - p_min) * s_norm.
    exponential: exp(beta * s_norm). s_norm: min-max over the given scores when `normalise`
    (pass the scores of the corpus' words), else the raw score. Only ratios matter:
    `calibrate` rescales.
    """
    if function not in FUNCTIONS:
        raise ValueError(f"function must be one of {FUNCTIONS}, got {function!r}")
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"scores must be a non-empty 1-d array, got shape {s.shape}")
    if np.isnan(s).any():
        raise ValueError("scores must not contain NaN")
    s_norm = normalise_scores(s) if normalise else s
    if function == "step":
        if not 0.0 <= tau <= 1.0:
            raise ValueError(f"tau must be in [0, 1], got {tau}")
        if not ratio >= 1.0:
            raise ValueError(f"ratio must be >= 1 (p_hi / p_lo), got {ratio}")
        return np.where(s >= tau, float(ratio), 1.0)
    if function == "linear":
        if not 0.0 <= p_min <= p_max:
            raise ValueError(f"need 0 <= p_min <= p_max, got p_min={p_min}, p_max={p_max}")
        return p_min + (p_max - p_min) * s_norm
    if not beta >= 0.0:
        raise ValueError(f"beta must be >= 0, got {beta}")
    return np.exp(beta * s_norm)


@dataclass
class Calibration:
    """One scale c with probs min(1, c * weights) averaging `rate` over token occurrences."""

    scale: float
    rate: float  # the realised expected rate
    target_rate: float
    probs: np.ndarray  # min(1, c * weights), same shape as the weights


def _mean_rate(c: float, w: np.ndarray, counts: np.ndarray, total: float) -> float:
    """Count-weighted mean of min(1, c * w)."""
    return float((np.minimum(1.0, c * w) * counts).sum() / total)


def calibrate(
    weights: np.ndarray | list[float],
    target_rate: float = 0.20,
    tol: float = 1e-6,
    *,
    counts: np.ndarray | list[float] | None = None,
    max_iter: int = 200,
) -> Calibration:
    """Find c by bisection so that the average of min(1, c * weights) equals `target_rate`.

    `weights` are per token occurrence, or per word with `counts` (occurrences per word,
    or pieces x occurrences to calibrate a token-level rate). Raises ValueError when the
    target is out of reach (the rate can reach at most the share of non-zero weights).
    """
    _check_rate("target_rate", target_rate)
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    w = np.asarray(weights, dtype=np.float64)
    if w.size == 0:
        raise ValueError("weights is empty: nothing to calibrate")
    if (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("weights must be finite and >= 0")
    n = np.ones_like(w) if counts is None else np.asarray(counts, dtype=np.float64)
    if n.shape != w.shape or (n < 0).any():
        raise ValueError(f"counts must be >= 0 with the shape of weights {w.shape}, got {n.shape}")
    total = float(n.sum())
    if total <= 0:
        raise ValueError("counts sum to 0: nothing to calibrate")
    reachable = float(n[w > 0].sum()) / total
    if target_rate > reachable - tol:
        raise ValueError(f"target_rate={target_rate} cannot be reached: only {reachable:.4f} of "
                         "token occurrences have a non-zero weight (raise p_min or lower the rate)")
    lo, hi = 0.0, 1.0 / float(w[w > 0].min())  # at hi every non-zero weight is clipped to 1
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        r = _mean_rate(mid, w, n, total)
        if abs(r - target_rate) <= tol:
            lo = hi = mid
            break
        lo, hi = (mid, hi) if r < target_rate else (lo, mid)
    c = 0.5 * (lo + hi)
    rate = _mean_rate(c, w, n, total)
    if abs(rate - target_rate) > tol:
        raise ValueError(f"calibration did not converge: rate {rate:.6f} vs target {target_rate}")
    return Calibration(c, rate, float(target_rate), np.minimum(1.0, c * w))


@dataclass
class WordProbs:
    """Per-word masking probabilities for one corpus: a vocabulary-sized lookup array."""

    words: list[str]
    index: dict[str, int]
    probs: np.ndarray  # float32, (len(words),)
    scale: float
    rate: float  # expected rate over the calibration counts
    function: str

    def ids(self, sentences: list[list[str]], pad: int = -1) -> np.ndarray:
        """Word-vocabulary ids (B, W_max) of tokenised sentences; `pad` past the end or if unknown."""
        width = max((len(s) for s in sentences), default=0)
        out = np.full((len(sentences), width), pad, dtype=np.int64)
        for b, sent in enumerate(sentences):
            out[b, : len(sent)] = [self.index.get(w, pad) for w in sent]
        return out

    def lookup(self, word_vocab_ids: np.ndarray | torch.Tensor) -> torch.Tensor:
        """Probabilities at word-vocabulary ids (any shape); ids < 0 (pad, unknown) give 0."""
        ids = torch.as_tensor(word_vocab_ids, dtype=torch.long)
        table = torch.cat([torch.from_numpy(self.probs).float(), torch.zeros(1)])
        return table[torch.where(ids < 0, torch.full_like(ids, len(self.probs)), ids)]


def build_word_probs(
    counts: Mapping[str, float],
    scores: Mapping[str, float] | Any,
    function: str = "linear",
    target_rate: float = 0.20,
    *,
    pieces: Mapping[str, int] | None = None,
    tol: float = 1e-6,
    **function_params: float,
) -> WordProbs:
    """Calibrated per-word masking probabilities for a corpus, computed once.

    `counts`: word -> occurrences in the corpus; `scores`: word -> task score (a mapping or
    a `TaskScores`); words without a score get 0. With `pieces` (word -> WordPiece count) the
    calibration targets a token rate instead of a word rate. `function_params` go to
    `masking_weights` (tau, ratio, p_min, p_max, beta, normalise).
    """
    if not counts:
        raise ValueError("counts is empty: give word -> occurrences for the corpus")
    if hasattr(scores, "as_dict"):
        scores = scores.as_dict()
    words = list(counts)
    s = np.array([float(scores.get(w, 0.0)) for w in words])
    n = np.array([float(counts[w]) for w in words])
    if pieces is not None:
        n = n * np.array([float(pieces.get(w, 1)) for w in words])
    weights = masking_weights(s, function, **function_params)
    cal = calibrate(weights, target_rate, tol, counts=n)
    return WordProbs(words, {w: i for i, w in enumerate(words)}, cal.probs.astype(np.float32),
                     cal.scale, cal.rate, function)


def word_mask_probs(
    word_ids: torch.Tensor,
    word_probs: torch.Tensor | np.ndarray,
    special_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-position masking probabilities (B, L): every piece gets its word's probability.

    `word_ids` (B, L): the word index of each position, -1 on special / pad positions.
    `word_probs`: (B, W) probabilities per sentence word (word_ids index its columns), or a
    1-d table (V_words,) when `word_ids` hold word-vocabulary ids. Special, pad (-1) and
    `special_mask` positions get 0.
    """
    word_ids = torch.as_tensor(word_ids, dtype=torch.long)
    wp = torch.as_tensor(word_probs, dtype=torch.float32)
    if word_ids.dim() != 2:
        raise ValueError(f"word_ids must be (B, L), got shape {tuple(word_ids.shape)}")
    if wp.dim() == 2 and wp.shape[0] != word_ids.shape[0]:
        raise ValueError(f"word_probs (B, W) must have B={word_ids.shape[0]} rows, got {wp.shape[0]}")
    if wp.dim() not in (1, 2):
        raise ValueError(f"word_probs must be (B, W) or (V_words,), got shape {tuple(wp.shape)}")
    width = wp.shape[-1]
    if _words_per_row(word_ids) > width:
        raise ValueError(f"word_ids reach {int(word_ids.max())} but word_probs has only {width} words")
    if ((wp < 0) | (wp > 1)).any():
        raise ValueError("word_probs must be probabilities in [0, 1]")
    valid = word_ids >= 0
    safe = word_ids.clamp(min=0)
    probs = wp[safe] if wp.dim() == 1 else wp.gather(1, safe)
    probs = torch.where(valid, probs, torch.zeros_like(probs))
    if special_mask is not None:
        probs = probs.masked_fill(torch.as_tensor(special_mask).bool(), 0.0)
    return probs


def matched_random_probs(
    word_ids: torch.Tensor, rate: float = 0.20, special_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """The random control: probability `rate` at every word position, 0 at special / pad."""
    _check_rate("rate", rate)
    word_ids = torch.as_tensor(word_ids, dtype=torch.long)
    probs = (word_ids >= 0).float() * rate
    if special_mask is not None:
        probs = probs.masked_fill(torch.as_tensor(special_mask).bool(), 0.0)
    return probs


def _words_per_row(word_ids: torch.Tensor) -> int:
    """Columns needed for a per-sentence word table."""
    return int(word_ids.max()) + 1 if word_ids.numel() else 0


def sample_word_masks(
    probs: torch.Tensor, word_ids: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """A whole-word Bernoulli draw (B, L) bool: one coin per word, with its first piece's probability.

    For controls and checks; training uses `mask_tokens`, which adds the 80/10/10 replacement.
    """
    word_ids = torch.as_tensor(word_ids, dtype=torch.long)
    bsz, width = word_ids.shape[0], max(_words_per_row(word_ids), 1)
    valid = word_ids >= 0
    safe = word_ids.clamp(min=0)
    # the first piece of a word is where the word id changes; scatter only those (unique per row)
    prev = torch.cat([torch.full_like(word_ids[:, :1], -1), word_ids[:, :-1]], dim=1)
    first = valid & (word_ids != prev)
    pw = torch.zeros(bsz, width).scatter_add_(
        1, safe, torch.where(first, torch.as_tensor(probs).float(), torch.zeros(())))
    coin = torch.rand(bsz, width, generator=generator) < pw
    return coin.gather(1, safe) & valid


def matched_count_masks(
    selective_masks: torch.Tensor, word_ids: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """Random whole-word masks (B, L) with as many masked words per sentence as `selective_masks`.

    Train No Evil's control. `word_ids` are per-sentence word indices (0..W-1, -1 special/pad).
    """
    word_ids = torch.as_tensor(word_ids, dtype=torch.long)
    sel = torch.as_tensor(selective_masks).bool()
    if sel.shape != word_ids.shape:
        raise ValueError(f"selective_masks {tuple(sel.shape)} and word_ids {tuple(word_ids.shape)} differ")
    bsz, width = word_ids.shape[0], max(_words_per_row(word_ids), 1)
    valid = word_ids >= 0
    safe = word_ids.clamp(min=0)
    exists = torch.zeros(bsz, width, dtype=torch.long).scatter_add_(1, safe, valid.long()) > 0
    chosen_sel = torch.zeros(bsz, width, dtype=torch.long).scatter_add_(1, safe, (sel & valid).long()) > 0
    k = chosen_sel.sum(dim=1, keepdim=True)
    # random ranks among the words that exist; non-words sort last
    keys = torch.rand(bsz, width, generator=generator).masked_fill(~exists, 2.0)
    rank = keys.argsort(dim=1).argsort(dim=1)
    chosen = (rank < k) & exists
    return chosen.gather(1, safe) & valid
