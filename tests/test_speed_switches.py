"""The speed group (precision, torch.compile, CPU threads) of B1, B2 and B4: one torch-free
dataclass the pages take, passed through the arm's configuration into the training loop, where
the switches take effect."""

from __future__ import annotations

import pytest
import torch

from mlmlib import configs
from mlmlib import pretrain as pt
from mlmlib.data.synonyms import SynonymTable
from mlmlib.models import ModelSize
from mlmlib.papers.true_negatives import (
    arm_config,
    arm_pretraining,
    lookup_tables,
    overhead,
    synthetic_testbed,
)
from mlmlib.papers.true_negatives import negatives as neg
from mlmlib.papers.true_negatives.config import Pretraining
from mlmlib.papers.true_negatives.synthetic_config import SyntheticSetup
from mlmlib.pretrain import PretrainConfig
from mlmlib.runs.plans import full_params, load_plan
from mlmlib.speed import PRECISIONS, Speed

NOTEBOOKS = ("B1_true_negatives_pretrain", "B2_true_negatives_overhead")
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCAB = SPECIALS + [f"w{i}" for i in range(20)]
SIZE = ModelSize(vocab_size=len(VOCAB), hidden=16, layers=1, heads=2, max_len=12)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("compile_step", [False, True])
def test_the_speed_group_reaches_every_pages_training_config(precision, compile_step, monkeypatch):
    """B1's and B2's config (Pretraining.pretrain_config) and B4's (synthetic_testbed) take the
    group's precision and compile."""
    monkeypatch.setattr(pt, "compile_unavailable", lambda: None)
    speed = configs.build(Speed, {"precision": precision, "compile": compile_step}, "speed")
    b1_b2 = Pretraining().pretrain_config(0, speed)
    b4 = synthetic_testbed.pretrain_config(SyntheticSetup(), 0, speed)
    assert (b1_b2.precision, b1_b2.compile) == (b4.precision, b4.compile) == (precision, compile_step)


def test_the_paper_plan_trains_b_in_bf16_without_compile():
    runs = [run for run in load_plan("paper").runs if run.notebook in NOTEBOOKS]
    assert {run.notebook for run in runs} == set(NOTEBOOKS), "the paper plan lacks a B run"
    for run in runs:
        speed = full_params(run.notebook, run.params)["speed"]
        assert speed["precision"] == "bf16" and not speed["compile"], run.slug


def test_threads_are_set_only_when_asked(monkeypatch):
    calls = []
    monkeypatch.setattr(torch, "set_num_threads", calls.append)
    Speed().apply_threads()
    Speed(torch_threads=2).apply_threads()
    assert calls == [2]


def test_a_switch_torch_cannot_honour_is_refused_naming_it(monkeypatch):
    """What the page's PretrainConfig(...) raises before any training, for a plan's bad value."""
    monkeypatch.setattr(pt, "compile_unavailable", lambda: "torch 9.9 has no torch.compile")
    with pytest.raises(ValueError, match="compile=True: torch 9.9 has no torch.compile; set compile to false"):
        PretrainConfig(compile=True)
    with pytest.raises(ValueError, match=r"precision must be one of \('auto', 'fp32', 'bf16'\)"):
        PretrainConfig(precision="fp16")
    with pytest.raises(ValueError, match=r"^speed: precision must be one of \('auto', 'fp32'"):
        configs.build(Speed, {"precision": "fp16"}, "speed")


def _tables():
    ids = list(range(len(SPECIALS), len(VOCAB)))
    pairs = neg.PairLookup.from_pairs([i for i in ids for j in ids if i < j],
                                      [j for i in ids for j in ids if i < j], len(VOCAB))
    return lookup_tables.Tables(pairs, SynonymTable({}), "test")


def _data():
    ids = torch.randint(len(SPECIALS), len(VOCAB), (16, 12), generator=torch.Generator().manual_seed(0))
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


@pytest.fixture
def logits_dtypes(monkeypatch):
    """The dtype of every masked-position logits tensor the training loop computes."""
    seen = []
    real = pt.masked_lm_logits

    def spy(*args, **kwargs):
        logits = real(*args, **kwargs)
        seen.append(logits.dtype)
        return logits

    monkeypatch.setattr(pt, "masked_lm_logits", spy)
    return seen


@pytest.mark.parametrize("precision, dtype", [("fp32", torch.float32), ("bf16", torch.bfloat16),
                                              ("auto", torch.float32)])  # auto: fp32 on a CPU
@pytest.mark.parametrize("spec", ["electra/shield", "electra/relabel", "electra/sr-word",
                                  "electra/sr-sentence", "mlm/shield"])
def test_an_arm_trains_in_the_precision_it_is_given(spec, precision, dtype, logits_dtypes):
    """B1's path: the arm's config (`for_objective`) keeps the switches, and the loop autocasts."""
    config = PretrainConfig(steps=2, batch_size=8, log_every=1, seed=0, precision=precision)
    arm = arm_config.parse_arm(spec)
    assert arm_pretraining.for_objective(config, arm.objective).precision == precision
    result = arm_pretraining.pretrain_arm(arm, _tables(), VOCAB, _data(), SIZE, config, mask_id=4,
                                          num_special=len(SPECIALS), generator_fraction=0.5)
    assert [r["step"] for r in result.history] == [1, 2]
    assert set(logits_dtypes) == {dtype}


def test_b2s_timed_loop_runs_in_the_precision_it_is_given(logits_dtypes):
    config = PretrainConfig(steps=1, batch_size=8, seed=0, precision="bf16")
    arms = {"electra/plain": None, **{spec: arm_config.parse_arm(spec) for spec in (
        "electra/shield", "electra/sr-word", "electra/sr-sentence")}}
    rows = overhead.measure_step_overhead(arms, _tables(), VOCAB, _data(), SIZE, config, mask_id=4,
                                          num_special=len(SPECIALS), generator_fraction=0.5,
                                          reps=1, warmup=0)
    assert {r["arm"] for r in rows} == set(arms) and set(logits_dtypes) == {torch.bfloat16}


def test_compile_reaches_the_arms_training_loop(monkeypatch):
    compiled = []
    monkeypatch.setattr(pt, "compile_unavailable", lambda: None)
    monkeypatch.setattr(torch, "compile", lambda module, **kw: compiled.append(kw) or module)
    config = PretrainConfig(steps=1, batch_size=8, log_every=1, seed=0, compile=True)
    arm_pretraining.pretrain_arm(arm_config.parse_arm("electra/none"), _tables(), VOCAB, _data(), SIZE,
                                 config, mask_id=4, num_special=len(SPECIALS), generator_fraction=0.5)
    assert compiled == [{"dynamic": True}]


def test_paper_a_setup_passes_the_speed_switches_and_keeps_compile_out_of_the_key():
    from mlmlib.papers.distributional import config as a_config
    from mlmlib.pretrain import PRECISIONS

    assert a_config.PRECISIONS == PRECISIONS
    setup = a_config.Setup(precision="fp32")
    assert setup.pretrain_config().precision == "fp32" and setup.pretrain_config().compile is False
    assert "compile" not in setup.key("mix") and setup.key("mix")["precision"] == "fp32"
    with pytest.raises(ValueError, match="precision must be one of"):
        a_config.Setup(precision="fp16")
