"""The paper plan's training loops on a GPU's terms, checked on the CPU: no host read per step
(each one stalls a GPU until its queue drains) and the precision each loop is given.

Counted: explicit reads of a tensor's value (item, tolist, float(), int(), bool() ...) made by
the loop's own code; a loop passes when it makes as many for 16 steps as for 4. B1's hook and
fine-tuning have their own counts (test_true_negatives, test_finetune). The implicit read of a
boolean index (x[masked] has as many rows as the mask has True values) is watched inside every
training step of A2's, B1's and C2's loops, which gather the masked positions at their indices
instead, with the boolean index's loss and gradients.
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


# ---------------------------------------------------------------- masked positions without a sync
# A boolean index (x[masked]) has as many rows as the mask has True values: on a GPU, the host
# waits for the mask to learn that number, every step. The loops gather the masked positions at
# their indices, taken with the mask on the CPU (masking.masked_positions).

B_WORDS = 20
B_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *(f"w{i}" for i in range(B_WORDS)), "##x"]
B_MASK, B_SPECIAL = 4, 5


def _b_setup(spec: str, injection_rate: float = 0.5):
    """Paper B's step as B1 runs it: a fresh arm model, the arm's monitor hook (attached to the
    discriminator), synonyms injected into ELECTRA's samples; every two words are synonyms."""
    from mlmlib.models import ModelSize
    from mlmlib.papers.true_negatives import arm_config, arm_pretraining
    from mlmlib.papers.true_negatives import negatives as neg
    from mlmlib.papers.true_negatives.monitor import Injection, NegativesMonitor
    from mlmlib.pretrain import Objective, PretrainConfig

    ids = range(B_SPECIAL, B_SPECIAL + B_WORDS)
    pairs = neg.PairLookup.from_pairs([i for i in ids for j in ids if i < j],
                                      [j for i in ids for j in ids if i < j], len(B_VOCAB))
    arm = arm_config.parse_arm(spec)
    size = ModelSize(vocab_size=len(B_VOCAB), hidden=16, layers=1, heads=2, max_len=16, dropout=0.0)
    model = arm_pretraining.build_model(arm.objective, size, 0.5, seed=0)
    injection = Injection(pairs, injection_rate) if arm.objective == "electra" else None
    hook = NegativesMonitor(arm, pairs, B_VOCAB, injection=injection, seed=0).attach(model)
    config = arm_pretraining.for_objective(PretrainConfig(steps=4, batch_size=4), arm.objective)
    return model, Objective(model, config, hook), pairs, arm


def _step_loss(spec: str, batch: dict, positions):
    """One step's loss and gradients, gathering the masked positions at `positions` (None: by
    the boolean mask, as the loops did)."""
    model, objective, _, _ = _b_setup(spec)
    loss, _ = objective(1, batch["ids"], batch["attention"], batch["corrupted"], batch["masked"],
                        torch.Generator().manual_seed(5), positions)
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return loss.detach(), grads


@pytest.mark.parametrize("spec", ["mlm/none", "mlm/shield", "mlm/relabel+sr-smooth",
                                  "electra/none", "electra/shield", "electra/relabel+sr-sentence",
                                  "electra/shield+sr-word"])
@pytest.mark.parametrize("which", ["random", "none", "all"])
def test_gathering_masked_positions_at_their_indices_gives_the_boolean_index_loss(spec, which):
    """The loss and every gradient equal the boolean-index version (MLM, ELECTRA, paper B's
    corrections through B1's hook), with some, no and every position masked."""
    from mlmlib.masking import masked_positions

    gen = torch.Generator().manual_seed(len(spec))
    ids = torch.randint(B_SPECIAL, len(B_VOCAB), (4, 10), generator=gen)
    attention = torch.ones_like(ids)
    attention[1, 7:] = 0  # a padded row
    masked = {"random": torch.rand(ids.shape, generator=gen) < 0.3,
              "none": torch.zeros(ids.shape, dtype=torch.bool),
              "all": torch.ones(ids.shape, dtype=torch.bool)}[which]
    batch = {"ids": ids, "attention": attention, "masked": masked,
             "corrupted": ids.masked_fill(masked, B_MASK)}
    loss, grads = _step_loss(spec, batch, masked_positions(masked))
    reference, reference_grads = _step_loss(spec, batch, None)
    assert loss.isfinite() and abs(float(loss) - float(reference)) <= 1e-6, (loss, reference)
    assert grads.keys() == reference_grads.keys() and grads
    for name, grad in grads.items():
        torch.testing.assert_close(grad, reference_grads[name], atol=1e-6, rtol=0, msg=name)
    if which == "random":  # the masked positions decide the loss: another mask, another loss
        other = masked.roll(1, 1)
        moved = {**batch, "masked": other, "corrupted": ids.masked_fill(other, B_MASK)}
        assert float(_step_loss(spec, moved, masked_positions(other))[0]) != float(loss)


class _MaskIndexing(torch.overrides.TorchFunctionMode):
    """Records each boolean-mask index and each op whose output size is read from values
    (nonzero, masked_select ...) that the library's own code makes while the mode is on."""

    INDEXING = frozenset({torch.Tensor.__getitem__, torch.Tensor.__setitem__,
                          torch.Tensor.index_put_, torch.Tensor.index_put, torch.index_put})
    SIZED_BY_VALUES = frozenset({torch.nonzero, torch.Tensor.nonzero, torch.masked_select,
                                 torch.Tensor.masked_select, torch.argwhere, torch.Tensor.argwhere})

    def __init__(self):
        super().__init__()
        self.found: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        index = args[1] if len(args) > 1 else None
        index = index if isinstance(index, (tuple, list)) else (index,)
        if func in self.SIZED_BY_VALUES or (func in self.INDEXING and any(
                isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in index)):
            where = _library_caller()
            if where is not None:
                self.found.append(f"{getattr(func, '__name__', func)} at {where}")
        return func(*args, **(kwargs or {}))


def _library_caller() -> str | None:
    """'file:line' of the first caller outside torch, when it is mlmlib's code."""
    from pathlib import Path

    from mlmlib.paths import PACKAGE_DIR

    frame, torch_dir = sys._getframe(2), str(Path(torch.__file__).parent)
    while frame is not None and frame.f_code.co_filename.startswith(torch_dir):
        frame = frame.f_back
    if frame is None or not frame.f_code.co_filename.startswith(str(PACKAGE_DIR)):
        return None
    return f"{Path(frame.f_code.co_filename).relative_to(PACKAGE_DIR)}:{frame.f_lineno}"


def test_the_paper_loops_index_no_masked_position_by_a_boolean_mask(monkeypatch):
    """A2's and B1's loop (pretrain, with B1's hook and its corrections), and C2's chain: inside
    each training step (the objective, the hook, the discriminator's watch) no boolean-mask index
    and no op sized by values, in the library's code."""
    from mlmlib import pretrain
    from mlmlib.masking import at_masked
    from mlmlib.papers.true_negatives import arm_pretraining, lookup_tables
    from mlmlib.papers.true_negatives.monitor import Injection

    mode = _MaskIndexing()
    steps = []
    forward = pretrain.Objective.forward

    def watched(self, *args, **kwargs):
        steps.append(1)
        with mode:
            return forward(self, *args, **kwargs)

    monkeypatch.setattr(pretrain.Objective, "forward", watched)
    with mode:  # the watch itself sees a boolean index in the library's code
        at_masked(torch.zeros(2, 3), torch.eye(2, 3, dtype=torch.bool))
    assert len(mode.found) == 1, mode.found
    assert mode.found[0].startswith("__getitem__ at masking.py"), mode.found
    mode.found.clear()
    gen = torch.Generator().manual_seed(0)
    data = {"input_ids": torch.randint(B_SPECIAL, len(B_VOCAB), (16, 10), generator=gen)}
    data["attention_mask"] = torch.ones_like(data["input_ids"])
    for spec in ("electra/shield+sr-sentence", "electra/relabel", "mlm/shield+sr-word"):
        model, _, pairs, arm = _b_setup(spec)
        config = pretrain.PretrainConfig(steps=3, batch_size=4, log_every=3, seed=0)
        tables = lookup_tables.Tables(pairs, None, "test")
        arm_pretraining.pretrain_arm(arm, tables, B_VOCAB, data, None, config, mask_id=B_MASK,
                                     num_special=B_SPECIAL, model=model,
                                     injection=Injection(pairs, 0.5))
    model, chain_data, config = _chain_setup(steps=3)
    pretrain.pretrain(model, chain_data, config, mask_id=2, num_special=3)  # A2's loop
    dose.chain(model, chain_data, config, [3], lambda d, m: None, mask_id=2, num_special=3)
    assert len(steps) == 3 * 3 + 3 + 3  # every step was watched
    assert mode.found == [], mode.found
