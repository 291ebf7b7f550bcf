"""Masking: rates, splits, special tokens, whole words, per-position probabilities."""

import pytest
import torch

from mlmlib.masking import BERT_SPLIT, ELECTRA_SPLIT, mask_tokens, word_starts

V, MASK, NSPEC = 100, 4, 5


def batch(b=64, length=128, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(NSPEC, V, (b, length), generator=g)
    ids[:, 0] = 2  # [CLS]
    lengths = torch.randint(length // 2, length + 1, (b,), generator=g)
    pad = torch.arange(length)[None] >= lengths[:, None]
    ids[pad] = 0
    special = pad | (ids < NSPEC)
    return ids, special


def run(ids, special, prob=0.15, seed=1, **kw):
    return mask_tokens(ids, prob, generator=torch.Generator().manual_seed(seed), mask_id=MASK,
                       vocab_size=V, special_mask=special, num_special=NSPEC, **kw)


def test_rate_and_never_special():
    ids, special = batch()
    rates = []
    for seed in range(20):
        corrupted, masked = run(ids, special, 0.15, seed)
        assert not (masked & special).any()
        assert torch.equal(corrupted[special], ids[special])
        assert torch.equal(corrupted[~masked], ids[~masked])
        rates.append(masked.sum() / (~special).sum())
    assert abs(torch.stack(rates).mean().item() - 0.15) < 0.005


def test_bert_split():
    ids, special = batch()
    corrupted, masked = run(ids, special, 0.5, split=BERT_SPLIT)
    n = masked.sum().item()
    as_mask = (corrupted[masked] == MASK).sum().item() / n
    kept = (corrupted[masked] == ids[masked]).sum().item() / n
    assert abs(as_mask - 0.8) < 0.02
    assert abs(kept - 0.1) < 0.015  # a random token equal to the original is rare (1/95)
    assert abs(1 - as_mask - kept - 0.1) < 0.015
    random_tokens = corrupted[masked & (corrupted != MASK) & (corrupted != ids)]
    assert (random_tokens >= NSPEC).all()


def test_electra_split_has_no_random_tokens():
    ids, special = batch()
    corrupted, masked = run(ids, special, 0.5, split=ELECTRA_SPLIT)
    changed = corrupted != ids
    assert (corrupted[changed] == MASK).all()
    assert abs(changed.sum().item() / masked.sum().item() - 0.85) < 0.02


def test_replace_ids_restricts_random_tokens():
    ids, special = batch()
    allowed = torch.tensor([50, 60])
    corrupted, masked = run(ids, special, 0.5, split=(0.0, 1.0, 0.0), replace_ids=allowed)
    assert set(corrupted[masked].unique().tolist()) <= {50, 60}


def test_whole_word_consistency_and_rate():
    b, length = 64, 96
    ids, _ = batch(b, length)
    # words of 1-3 pieces; -1 for [CLS] and a padded tail
    g = torch.Generator().manual_seed(3)
    word_ids = torch.repeat_interleave(torch.arange(200), torch.randint(1, 4, (200,), generator=g))
    word_ids = word_ids[:length].repeat(b, 1)
    word_ids[:, 0] = -1
    word_ids[:, -10:] = -1
    special = word_ids < 0
    total_words, masked_words = 0, 0
    for seed in range(10):
        _, masked = run(ids, special, 0.2, seed, word_ids=word_ids)
        assert not (masked & special).any()
        for row in range(4):
            for w in word_ids[row].unique():
                if w < 0:
                    continue
                decisions = masked[row][word_ids[row] == w]
                assert decisions.all() or not decisions.any()
        starts = word_starts(word_ids)
        total_words += starts.sum().item()
        masked_words += (masked & starts).sum().item()
    assert abs(masked_words / total_words - 0.2) < 0.01


def test_whole_word_probability_from_first_piece():
    ids, _ = batch(8, 16)
    word_ids = torch.arange(16).div(2, rounding_mode="floor").repeat(8, 1)  # 2 pieces per word
    prob = torch.zeros(8, 16)
    prob[:, 0::2] = 0.99  # first pieces: nearly always; second pieces: never on their own
    prob[:, 1::2] = 0.0
    _, masked = run(ids, torch.zeros(8, 16, dtype=torch.bool), prob, word_ids=word_ids)
    assert masked.float().mean() > 0.9
    assert torch.equal(masked[:, 0::2], masked[:, 1::2])


def test_per_position_probabilities_realise_expected_rate():
    ids, special = batch(128, 64)
    prob = torch.zeros(128, 64)
    prob[:, ::2] = 0.4
    prob[:, 1::4] = 0.05
    rates, hot, cold = [], [], []
    for seed in range(10):
        _, masked = run(ids, special, prob, seed)
        assert not (masked & ((prob == 0) | special)).any()
        eligible = ~special
        hot.append(masked[:, ::2][eligible[:, ::2]].float().mean())
        cold.append(masked[:, 1::4][eligible[:, 1::4]].float().mean())
        expected = prob[eligible].sum()
        rates.append(masked.sum() / expected)
    assert abs(torch.stack(hot).mean().item() - 0.4) < 0.01
    assert abs(torch.stack(cold).mean().item() - 0.05) < 0.01
    assert abs(torch.stack(rates).mean().item() - 1.0) < 0.02


def test_same_seed_same_mask():
    ids, special = batch()
    a = run(ids, special, seed=7)
    b = run(ids, special, seed=7)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


@pytest.mark.parametrize("prob", [0.0, 1.0, -0.1, 1.5, "0.1", True])
def test_bad_rate(prob):
    ids, special = batch(2, 8)
    with pytest.raises(ValueError, match="mask_prob"):
        run(ids, special, prob)


@pytest.mark.parametrize("split", [(0.8, 0.1, 0.2), (0.5, 0.5), (1.1, -0.1, 0.0)])
def test_bad_split(split):
    ids, special = batch(2, 8)
    with pytest.raises(ValueError, match="split"):
        run(ids, special, split=split)


def test_bad_shapes():
    ids, special = batch(2, 8)
    with pytest.raises(ValueError, match="special_mask"):
        run(ids, special[:, :4])
    with pytest.raises(ValueError, match="mask_prob"):
        run(ids, special, torch.full((2, 4), 0.1))
    with pytest.raises(ValueError, match="mask_prob"):
        run(ids, special, torch.full((2, 8), 1.5))
