"""Tests for task scores (lexicons) and selective masking probabilities (paper C)."""

from collections import Counter

import numpy as np
import pytest
import torch

from mlmlib.papers.selective_masking import lexicons
from mlmlib.papers.selective_masking import selective as sel

WORDS = ["good", "great", "bad", "table", "chair", "Awful", "zzz"]
VECS = (["good", "great", "bad", "awful", "table", "chair", "nice"],
        np.array([[1, 0, 0], [0.9, 0.3, 0], [-1, 0, 0.1], [-0.8, 0.2, 0.2], [0, 1, 0],
                  [0.1, 0.9, 0.3], [0.7, 0.1, 0.7]], dtype=np.float32))


def test_task_scores_basic():
    ts = lexicons.task_scores(WORDS, {"good": 1.0, "awful": -1.0, "notaword": 0.5}, VECS)
    s = ts.as_dict()
    assert s["good"] == 1.0 and s["Awful"] == 1.0  # list words, lower-cased lookup
    assert 0.9 < s["great"] < 1.0  # close to "good"
    assert s["table"] < s["great"] and 0.0 <= s["table"]
    bad, awful = VECS[1][2], VECS[1][3]
    cos = bad @ awful / np.linalg.norm(bad) / np.linalg.norm(awful)
    assert s["bad"] == pytest.approx(cos, rel=1e-5)  # max cosine: to "awful", not "good"
    assert s["zzz"] == 0.0 and ts.missing == ["zzz"] and ts.n_missing == 1
    assert ts.list_found == 2 and ts.list_missing == 1
    assert ((ts.scores >= 0) & (ts.scores <= 1)).all()


def test_task_scores_topk_mean_not_above_max_and_clipped():
    mx = lexicons.task_scores(WORDS, ["good", "great"], VECS, method="max").scores
    tk = lexicons.task_scores(WORDS, ["good", "great"], VECS, method="topk-mean", k=2).scores
    assert (tk <= mx + 1e-6).all() and (tk < mx).any()
    # "bad" points away from every list word: its cosine is negative, clipped to 0
    assert lexicons.task_scores(["bad"], ["good", "great"], VECS).scores[0] == 0.0


@pytest.mark.parametrize("kwargs, match", [
    ({"word_list": []}, "word_list is empty"),
    ({"word_list": ["qqq", "rrr"]}, "no word of word_list"),
    ({"word_list": ["good"], "method": "mean"}, "method must be one of"),
    ({"word_list": ["good"], "k": 0}, "k must be"),
])
def test_task_scores_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        lexicons.task_scores(WORDS, vectors=VECS, **kwargs)


@pytest.mark.parametrize("function", sel.FUNCTIONS)
def test_functions_monotone(function):
    s = np.sort(np.random.default_rng(0).uniform(size=500))
    w = sel.masking_weights(s, function)
    assert (w >= 0).all() and (np.diff(w) >= 0).all() and w[-1] > w[0]
    cal = sel.calibrate(w, 0.2)
    assert (np.diff(cal.probs) >= 0).all()


def test_step_and_linear_values():
    s = np.array([0.0, 0.4, 0.5, 1.0])
    assert sel.masking_weights(s, "step", tau=0.5, ratio=3.0).tolist() == [1, 1, 3, 3]
    assert sel.masking_weights(s, "linear", p_min=0.0, p_max=1.0).tolist() == pytest.approx(s)
    assert sel.masking_weights(s, "exponential", beta=0.0).tolist() == [1, 1, 1, 1]


def synthetic_corpus(seed=0, n_sent=2000, width=30, n_words=3000):
    """Zipf-distributed word-vocabulary ids (B, W) with random sentence lengths, -1 = pad."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, n_words + 1)
    ids = rng.choice(n_words, size=(n_sent, width), p=(1 / ranks) / (1 / ranks).sum())
    lengths = rng.integers(5, width + 1, size=n_sent)
    ids[np.arange(width)[None, :] >= lengths[:, None]] = -1
    scores = rng.beta(0.5, 2.0, size=n_words)
    return ids, scores


@pytest.mark.parametrize("function", sel.FUNCTIONS)
def test_calibration_realised_rate(function):
    ids, scores = synthetic_corpus()
    words = [f"w{i}" for i in range(len(scores))]
    counts = Counter(words[i] for i in ids[ids >= 0])
    wp = sel.build_word_probs(counts, dict(zip(words, scores)), function, 0.2, tau=0.3)
    assert wp.rate == pytest.approx(0.2, abs=1e-5)
    sent_words = [[words[i] for i in row if i >= 0] for row in ids]
    word_vocab_ids = wp.ids(sent_words)
    per_word = wp.lookup(word_vocab_ids)  # (B, W), 0 at padding
    # positions: one piece per word here; word_ids index the sentence's words
    word_ids = torch.as_tensor(np.where(word_vocab_ids >= 0, np.arange(ids.shape[1]), -1))
    probs = sel.word_mask_probs(word_ids, per_word)
    g = torch.Generator().manual_seed(0)
    n_real = int((word_ids >= 0).sum())
    masked = sum(int(sel.sample_word_masks(probs, word_ids, g).sum()) for _ in range(10))
    assert masked / (10 * n_real) == pytest.approx(0.2, abs=0.005)
    # the uniform control at the same rate
    rnd = sel.matched_random_probs(word_ids, 0.2)
    masked = sum(int(sel.sample_word_masks(rnd, word_ids, g).sum()) for _ in range(10))
    assert masked / (10 * n_real) == pytest.approx(0.2, abs=0.005)


def test_calibrate_counts_equal_repeated_weights():
    w = np.array([0.1, 1.0, 3.0])
    a = sel.calibrate(w, 0.3, counts=[5, 2, 1])
    b = sel.calibrate(np.repeat(w, [5, 2, 1]), 0.3)
    assert a.scale == pytest.approx(b.scale, rel=1e-5)


def test_calibrate_unreachable_and_bad_rates():
    w = np.array([0.0] * 9 + [1.0])  # only 10% non-zero
    with pytest.raises(ValueError, match="cannot be reached"):
        sel.calibrate(w, 0.2)
    assert sel.calibrate(w, 0.05).rate == pytest.approx(0.05, abs=1e-6)
    for bad in (0.0, 1.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="target_rate"):
            sel.calibrate([1.0, 2.0], bad)
        with pytest.raises(ValueError, match="rate"):
            sel.matched_random_probs(torch.zeros(1, 3, dtype=torch.long), bad)


def test_selective_errors():
    with pytest.raises(ValueError, match="function must be one of"):
        sel.masking_weights([0.1, 0.2], "cubic")
    with pytest.raises(ValueError, match="scores"):
        sel.masking_weights([], "linear")
    with pytest.raises(ValueError, match="ratio"):
        sel.masking_weights([0.1], "step", ratio=0.5)
    with pytest.raises(ValueError, match="counts is empty"):
        sel.build_word_probs({}, {}, "linear")


# [CLS] un ##believ ##able movie [SEP] [PAD]  |  [CLS] good ##ness me [SEP] [PAD] [PAD]
WORD_IDS = torch.tensor([[-1, 0, 0, 0, 1, -1, -1], [-1, 0, 0, 1, -1, -1, -1]])
PER_WORD = torch.tensor([[0.9, 0.1], [0.3, 0.6]])


def test_word_mask_probs_whole_word_and_special():
    probs = sel.word_mask_probs(WORD_IDS, PER_WORD)
    assert probs[0].tolist() == pytest.approx([0, 0.9, 0.9, 0.9, 0.1, 0, 0])
    assert probs[1].tolist() == pytest.approx([0, 0.3, 0.3, 0.6, 0, 0, 0])
    special = torch.zeros_like(WORD_IDS, dtype=torch.bool)
    special[0, 4] = True
    assert sel.word_mask_probs(WORD_IDS, PER_WORD, special_mask=special)[0, 4] == 0
    # a 1-d table indexed by word-vocabulary ids
    table = torch.tensor([0.5, 0.25, 0.125])
    vocab_ids = torch.tensor([[-1, 2, 2, 0, -1]])
    assert sel.word_mask_probs(vocab_ids, table)[0].tolist() == [0, 0.125, 0.125, 0.5, 0]
    with pytest.raises(ValueError, match="word_ids reach"):
        sel.word_mask_probs(torch.tensor([[0, 3]]), table)


def test_sampled_masks_whole_word_deterministic():
    word_ids = WORD_IDS.repeat(200, 1)
    probs = sel.word_mask_probs(word_ids, PER_WORD.repeat(200, 1))
    m1 = sel.sample_word_masks(probs, word_ids, torch.Generator().manual_seed(3))
    m2 = sel.sample_word_masks(probs, word_ids, torch.Generator().manual_seed(3))
    m3 = sel.sample_word_masks(probs, word_ids, torch.Generator().manual_seed(4))
    assert torch.equal(m1, m2) and not torch.equal(m1, m3)
    assert not m1[word_ids < 0].any()  # never a special or pad position
    assert torch.equal(m1[::2, 1], m1[::2, 2]) and torch.equal(m1[::2, 1], m1[::2, 3])  # pieces agree
    assert m1[::2, 1].float().mean() > 0.8 and m1[::2, 4].float().mean() < 0.2


def test_matched_count_masks():
    word_ids = WORD_IDS.repeat(100, 1)
    probs = sel.word_mask_probs(word_ids, PER_WORD.repeat(100, 1))
    g = torch.Generator().manual_seed(0)
    selective = sel.sample_word_masks(probs, word_ids, g)
    control = sel.matched_count_masks(selective, word_ids, g)

    def words_masked(m):
        out = torch.zeros(m.shape[0], 2, dtype=torch.long)
        return out.scatter_add_(1, word_ids.clamp(min=0), (m & (word_ids >= 0)).long()).gt(0).sum(1)

    assert torch.equal(words_masked(selective), words_masked(control))
    assert not control[word_ids < 0].any()
    assert torch.equal(control[::2, 1], control[::2, 3])  # whole words
    # random, not a copy: word 1 of the first sentence is masked about half as often as word 0
    # among single-word draws
    single = words_masked(selective)[::2] == 1
    assert 0.2 < control[::2][single][:, 4].float().mean() < 0.8
    again = sel.matched_count_masks(selective, word_ids, torch.Generator().manual_seed(5))
    assert torch.equal(again, sel.matched_count_masks(selective, word_ids,
                                                      torch.Generator().manual_seed(5)))
