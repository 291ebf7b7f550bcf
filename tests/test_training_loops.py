"""The paper plan's training loops on a GPU's terms, checked on the CPU: no host read per step
(each one stalls a GPU until its queue drains) and the precision each loop is given.

Counted: explicit reads of a tensor's value (item, tolist, float(), int(), bool() ...) made by
the loop's own code; a loop passes when it makes as many for 16 steps as for 4. B1's hook and
fine-tuning have their own counts (test_true_negatives, test_finetune).
"""

from __future__ import annotations

import sys

import pytest
import torch

from mlmlib.papers.selective_masking import dose

SYNC_READS = ("item", "tolist", "numpy", "__float__", "__int__", "__bool__", "__index__")
VOCAB, LENGTH = 24, 12


def _chain_setup(precision: str = "fp32", steps: int = 4):
    from mlmlib.models import ModelSize, bert_mlm
    from mlmlib.pretrain import PretrainConfig

    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(3, VOCAB, (64, LENGTH), generator=gen)
    ids[:, 0] = 1  # [CLS]
    special = torch.zeros_like(ids)
    special[:, 0] = 1
    data = {"input_ids": ids, "attention_mask": torch.ones_like(ids),
            "special_tokens_mask": special, "mask_prob": torch.full(ids.shape, 0.2)}
    size = ModelSize(vocab_size=VOCAB, hidden=16, layers=1, heads=1, max_len=LENGTH, dropout=0.0,
                     pad_id=0)
    config = PretrainConfig(steps=steps, batch_size=8, lr=1e-3, mask_rate=0.2, seed=1,
                            precision=precision)
    return bert_mlm(size, seed=0), data, config


def _count_reads(monkeypatch, filename: str) -> list[str]:
    reads: list[str] = []
    for name in SYNC_READS:
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            if sys._getframe(1).f_code.co_filename == filename:
                reads.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    return reads


def test_the_continued_mlm_chain_reads_nothing_back_per_step(monkeypatch):
    """C2's chain (selective_masking/dose.py): reads at each dose, none per step."""
    reads = _count_reads(monkeypatch, dose.__file__)
    counts = {}
    for steps in (4, 16):
        model, data, config = _chain_setup(steps=steps)
        reads.clear()
        rows = dose.chain(model, data, config, [steps], lambda d, m: None, mask_id=2,
                          num_special=3, progress=None)  # its 8 progress lines read the loss
        assert rows[-1]["dose"] == steps and rows[-1]["train_loss"] > 0
        counts[steps] = len(reads)
    assert counts[4] == counts[16], counts
    assert counts[4] <= 2, counts  # the dose's finite check and its training loss


def test_the_chain_stops_on_a_non_finite_loss_naming_the_step(monkeypatch):
    model, data, config = _chain_setup(steps=4)
    from mlmlib import pretrain

    original = pretrain.Objective.__call__

    def poisoned(self, step, *args, **kwargs):
        loss, stats = original(self, step, *args, **kwargs)
        return (loss * float("nan") if step == 3 else loss), stats

    monkeypatch.setattr(pretrain.Objective, "__call__", poisoned)
    with pytest.raises(FloatingPointError, match="non-finite loss at step 3"):
        dose.chain(model, data, config, [4], lambda d, m: None, mask_id=2, num_special=3)


@pytest.mark.parametrize("precision, dtype", [("bf16", torch.bfloat16), ("fp32", torch.float32),
                                              ("auto", torch.float32)])
def test_the_chain_trains_in_the_precision_it_is_given(precision, dtype):
    """`auto` is bf16 on a GPU that has it and fp32 here, as in `pretrain`."""
    model, data, config = _chain_setup(precision, steps=2)
    seen = []

    def on_forward(module, args, output):
        if module.training:
            seen.append(output.dtype)

    linear = next(m for m in model.modules() if isinstance(m, torch.nn.Linear))
    handle = linear.register_forward_hook(on_forward)
    try:
        dose.chain(model, data, config, [2], lambda d, m: None, mask_id=2, num_special=3)
    finally:
        handle.remove()
    assert seen and set(seen) == {dtype}, seen


def test_the_batch_order_is_checkpointed_as_generator_states_not_the_permutation():
    """A sampler restored from its state reads the batches the saved one reads next, across an
    epoch's end, and the state holds no index list (71M indices at paper size)."""
    from mlmlib.pretrain import BatchSampler

    for taken in (1, 2, 3, 5):  # within the first epoch, at its end, and in the second
        sampler = BatchSampler(10, 4, seed=7)
        for _ in range(taken):
            sampler.next()
        state = sampler.state_dict()
        restored = BatchSampler(10, 4, seed=99)
        restored.load_state_dict(state)
        ahead = [sampler.next().tolist() for _ in range(4)]
        assert [restored.next().tolist() for _ in range(4)] == ahead, taken
        assert all(not isinstance(v, torch.Tensor) or v.numel() < 10_000 for v in state.values())
        assert set(state) == {"rng", "epoch_rng", "pos"}


def test_the_relabel_and_sentence_corrections_read_nothing_back(monkeypatch):
    """Paper B's corrections that branched on their input (any false negative? any mask?) are
    computed without a host read, and give 0 with the graph kept when there is nothing to do."""
    from mlmlib.papers.true_negatives import negatives as neg

    reads = _count_reads(monkeypatch, neg.__file__)
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(6, VOCAB, generator=gen, requires_grad=True)
    targets, samples = torch.randint(0, VOCAB, (6,), generator=gen), torch.arange(6)
    for fn in (torch.tensor([1, 0, 0, 1, 0, 0]).bool(), torch.zeros(6, dtype=torch.bool)):
        loss = neg.relabel_mlm_correction(logits, targets, samples, fn)
        loss.backward()
        assert (loss.detach() == 0) == (not fn.any())
    ids = torch.randint(3, VOCAB, (2, 5), generator=gen)
    embeddings = torch.randn(VOCAB, 4, generator=gen)
    for masked in (torch.tensor([[0, 1, 0, 0, 1], [0, 0, 0, 0, 0]]).bool(),
                   torch.zeros(2, 5, dtype=torch.bool)):
        n = int(masked.sum())
        out = neg.sr_sentence_loss(logits[:n], ids, masked, embeddings)
        assert out.isfinite() and (out.detach() == 0) == (n == 0)
    assert reads == [], reads
