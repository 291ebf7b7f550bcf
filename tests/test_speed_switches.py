"""B1's and B2's speed switches (precision, torch.compile) as plan parameters: passed from the
page through the arm's configuration into the training loop, where they take effect."""

from __future__ import annotations

import ast
import dataclasses

import nbformat
import pytest
import torch

from mlmlib import pretrain as pt
from mlmlib.data.synonyms import SynonymTable
from mlmlib.models import ModelSize
from mlmlib.papers.true_negatives import arm_config, arm_pretraining, lookup_tables, overhead
from mlmlib.papers.true_negatives import negatives as neg
from mlmlib.pretrain import PretrainConfig
from mlmlib.runs.plans import load_plan, notebook_parameters, notebooks_dir

NOTEBOOKS = ("B1_true_negatives_pretrain", "B2_true_negatives_overhead")
SWITCHES = ("precision", "compile")
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCAB = SPECIALS + [f"w{i}" for i in range(20)]
SIZE = ModelSize(vocab_size=len(VOCAB), hidden=16, layers=1, heads=2, max_len=12)


def _config_keywords(notebook: str) -> dict[str, str]:
    """The keywords of the page's PretrainConfig(...) call that take a parameter of the page."""
    path = notebooks_dir() / f"{notebook}.ipynb"
    nb = nbformat.read(path, as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code"
                     and "parameters" not in c.metadata.get("tags", []))
    calls = [n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call)
             and getattr(n.func, "id", None) == "PretrainConfig"]
    assert len(calls) == 1, notebook
    return {kw.arg: kw.value.id for kw in calls[0].keywords if isinstance(kw.value, ast.Name)}


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_the_switches_are_page_parameters_passed_to_the_config(notebook):
    params = notebook_parameters(str(notebooks_dir() / f"{notebook}.ipynb"))
    passed = _config_keywords(notebook)
    defaults = {f.name: f.default for f in dataclasses.fields(PretrainConfig)}
    assert set(SWITCHES) <= set(defaults), f"PretrainConfig lacks a switch of {SWITCHES}"
    for name in SWITCHES:
        assert passed.get(name) == name, f"{notebook}: PretrainConfig({name}=...) is not the parameter"
        assert params[name] == defaults[name], f"{notebook}: {name} defaults to {params[name]!r}"


def test_the_paper_plan_trains_b_in_bf16_without_compile():
    runs = [run for run in load_plan("paper").runs if run.notebook in NOTEBOOKS]
    assert {run.notebook for run in runs} == set(NOTEBOOKS), "the paper plan lacks a B run"
    for run in runs:
        assert run.params["precision"] == "bf16" and not run.params.get("compile", False), run.slug


def test_a_switch_torch_cannot_honour_is_refused_naming_it(monkeypatch):
    """What the page's PretrainConfig(...) raises before any training, for a plan's bad value."""
    monkeypatch.setattr(pt, "compile_unavailable", lambda: "torch 9.9 has no torch.compile")
    with pytest.raises(ValueError, match="compile=True: torch 9.9 has no torch.compile; set compile to false"):
        PretrainConfig(compile=True)
    with pytest.raises(ValueError, match=r"precision must be one of \('auto', 'fp32', 'bf16'\)"):
        PretrainConfig(precision="fp16")


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
