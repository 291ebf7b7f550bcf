"""Preemption: A2's MLM pretraining and C2's continued MLM checkpoint at the interval a plan
sets, and a run stopped mid-way resumes to what an uninterrupted run gives."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pytest
import torch

from mlmlib import pretrain as pt
from mlmlib.models import ModelSize, bert_mlm, load_state
from mlmlib.papers.distributional import synthetic as dist
from mlmlib.papers.selective_masking import dose, experiment, seed_run
from mlmlib.papers.selective_masking.config import ContinuedMLM
from mlmlib.pretrain import PretrainConfig
from mlmlib.runs.plans import full_params, load_plan, notebook_parameters, notebooks_dir

A2, C2 = "A2_synthetic_pretrain", "C2_selective_mlm"
TINY_A = {"language": "tiny", "corpus_size": 64, "corpus_length": 16, "hidden": 16, "layers": 1, "heads": 2,
          "max_len": 40, "steps": 7, "batch_size": 8, "dropout": 0.1}  # dropout: the global generator is resumed too


class Stopped(Exception):
    """The machine went away (a preemption, a time limit)."""


def stop_at(monkeypatch, batch: int) -> list[int]:
    """Make the training loops raise Stopped when they ask for their `batch`-th batch (0: never);
    returns the count of batches asked for."""
    asked, real = [], pt._batch

    def counting(*args, **kwargs):
        asked.append(1)
        if len(asked) == batch:
            raise Stopped(f"stopped before batch {batch}")
        return real(*args, **kwargs)

    monkeypatch.setattr(pt, "_batch", counting)
    return asked


def _untimed(rows: list[dict]) -> str:
    """The rows without their timings, as JSON text (NaN equal to NaN)."""
    return json.dumps([{k: v for k, v in r.items() if k not in ("wall_s", "tokens_per_s", "chain_s")}
                       for r in rows], sort_keys=True)


# ---------------------------------------------------------------- A2

def test_a2_resumes_to_the_model_of_an_uninterrupted_run(tmp_path, monkeypatch):
    setup = dist.Setup(**TINY_A).with_seeds(0, 0)
    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path / "straight"))
    straight = dist.pretrain_mlm(setup, "mix")  # checkpoint_every 0: synthetic.pretrain_mlm

    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path / "preempted"))
    run = tmp_path / "run"
    with monkeypatch.context() as m:
        stop_at(m, 6)  # after the checkpoint of step 4
        with pytest.raises(Stopped):
            dist.pretrain_mlm(setup, "mix", checkpoint_every=2, checkpoint_dir=run)
    asked = stop_at(monkeypatch, 0)
    resumed = dist.pretrain_mlm(setup, "mix", checkpoint_every=2, checkpoint_dir=run)
    assert len(asked) == 3  # steps 5, 6 and 7 only
    assert resumed.name == straight.name  # the same cache entry: checkpoints change no number
    a, b = load_state(straight / "model"), load_state(resumed / "model")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert _untimed(dist.load_history(resumed)) == _untimed(dist.load_history(straight))


def test_a2s_interval_is_checked_and_needs_a_folder():
    setup = dist.Setup(**TINY_A)
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="checkpoint_every must be an int >= 0"):
            dist.pretrain_mlm(setup, "mix", checkpoint_every=bad)
    with pytest.raises(ValueError, match="needs a checkpoint_dir"):
        dist.pretrain_mlm(setup, "mix", checkpoint_every=2)


# ---------------------------------------------------------------- C2: the dose chain

def _tiny_chain():
    from mlmlib.data.synthetic import labelled_set
    from mlmlib.papers.selective_masking import synthetic_task
    from mlmlib.papers.selective_masking.config import SyntheticSelective

    syn = SyntheticSelective(n_sets=20, n_states=100, corpus_size=200, length=16, hidden=16, layers=1,
                             heads=1, base_steps=20, loss_threshold=10.0, task_size=200,
                             doses=(0, 2, 5), few_labels=40, epochs=1, validation_size=40,
                             test_size=60, heldout_size=40)
    lang = synthetic_task.language(syn, 0)
    tokens, _ = labelled_set(lang, "A-D1", 64, syn.length, seed=3)
    probs = synthetic_task.arm_probs(tokens, synthetic_task.task_word_list(lang), syn)
    data = synthetic_task.as_data(tokens, syn.n_sets) | {"mask_prob": probs["exponential"]}
    size = ModelSize(vocab_size=2 * syn.n_sets + 3, hidden=16, layers=1, heads=1,
                     max_len=syn.length + 1, dropout=0.1, pad_id=2 * syn.n_sets + 1)
    config = PretrainConfig(steps=7, batch_size=8, lr=1e-3, mask_rate=0.2, seed=4, checkpoint_every=2)
    kwargs = {"mask_id": 2 * syn.n_sets, "num_special": 0, "warmup_steps": 2,
              "replace_ids": torch.arange(2 * syn.n_sets)}
    return bert_mlm(size, seed=0), data, config, kwargs


class Measure:
    """An `on_dose` that measures something of the model and keeps its last weights."""

    def __init__(self):
        self.doses, self.weights = [], None

    def __call__(self, dose, model):
        self.doses.append(dose)
        self.weights = {k: v.clone() for k, v in model.state_dict().items()}
        torch.rand(10)  # as a fine-tuning would draw from the global generator
        return {"weight_sum": float(sum(p.detach().sum() for p in model.parameters()))}


def test_a_dose_chain_resumes_to_the_rows_and_weights_of_an_uninterrupted_one(tmp_path, monkeypatch):
    base, data, config, kwargs = _tiny_chain()
    straight = Measure()
    rows = dose.chain(base, data, dataclasses.replace(config, checkpoint_every=0), [0, 3, 7],
                      straight, **kwargs)
    with monkeypatch.context() as m:
        stop_at(m, 6)  # dose 3 measured and saved, then the checkpoint of step 4, then stopped
        with pytest.raises(Stopped):
            dose.chain(base, data, config, [0, 3, 7], Measure(), checkpoint_dir=tmp_path, **kwargs)
    asked, resumed = stop_at(monkeypatch, 0), Measure()
    again = dose.chain(base, data, config, [0, 3, 7], resumed, checkpoint_dir=tmp_path, **kwargs)
    assert resumed.doses == [7] and len(asked) == 3  # doses 0 and 3 come from the checkpoint
    assert _untimed(again) == _untimed(rows)
    assert all(torch.equal(straight.weights[k], resumed.weights[k]) for k in straight.weights)
    # a finished chain returns its rows without training or measuring again
    done = Measure()
    assert _untimed(dose.chain(base, data, config, [0, 3, 7], done, checkpoint_dir=tmp_path,
                               **kwargs)) == _untimed(rows)
    assert done.doses == [] and len(asked) == 3


def test_another_arms_checkpoint_is_set_aside(tmp_path, capsys):
    base, data, config, kwargs = _tiny_chain()
    dose.chain(base, data, config, [0, 3], Measure(), checkpoint_dir=tmp_path,
               identity={"arm": "random"}, **kwargs)
    fresh = Measure()
    dose.chain(base, data, config, [0, 3], fresh, checkpoint_dir=tmp_path,
               identity={"arm": "exponential"}, **kwargs)
    assert fresh.doses == [0, 3]
    assert "set aside" in capsys.readouterr().out


# ---------------------------------------------------------------- C2: the single-dose path

def test_continued_mlm_checkpoints_only_at_a_set_interval(tmp_path, monkeypatch):
    base = bert_mlm(ModelSize(vocab_size=30, hidden=8, layers=1, heads=1, max_len=8), seed=0)
    masking = SimpleNamespace(arm="random", data={"input_ids": torch.zeros(8, 8, dtype=torch.long)},
                              key={})
    folders = []
    monkeypatch.setattr(pt, "pretrain", lambda *a, checkpoint_dir=None, **k: folders.append(checkpoint_dir) or [])
    for every in (0, 5):
        experiment.continued_mlm(base, masking, PretrainConfig(checkpoint_every=every), mask_id=4,
                                 num_special=5, seed=0, checkpoint_dir=tmp_path / "mlm-random")
    assert folders == [None, tmp_path / "mlm-random"]
    assert experiment.arm_folder(tmp_path, "mlm", "random", "vader, 100 words") == \
        tmp_path / "mlm-random-vader__100_words"
    assert experiment.arm_folder(None, "mlm", "random", "-") is None


def test_c2s_interval_is_a_field_of_its_mlm_group():
    assert ContinuedMLM().checkpoint_every == 0
    assert seed_run.pretrain_config(ContinuedMLM(checkpoint_every=50), 0.15).checkpoint_every == 50
    with pytest.raises(ValueError, match="checkpoint_every must be an int >= 0"):
        ContinuedMLM(checkpoint_every=-1)
    from mlmlib.base_config import BaseModelConfig
    from mlmlib.papers.selective_masking.config import FineTuning, MaskingConfig, TaskText

    with pytest.raises(ValueError, match="mlm.checkpoint_every > 0 needs a checkpoint_dir"):
        seed_run.run_seed("amazon-food", ["vader"], 0, ["none"], 0, base=BaseModelConfig(),
                          masking=MaskingConfig(), text=TaskText(), finetune=FineTuning(),
                          mlm=ContinuedMLM(checkpoint_every=5))


# ---------------------------------------------------------------- the plans

def test_the_intervals_are_off_by_default_and_set_by_the_paper_plan():
    assert notebook_parameters(str(notebooks_dir() / f"{A2}.ipynb"))["checkpoint_every"] == 0
    for profile in ("paper", "paper-rehearsal"):
        runs = load_plan(profile).runs
        a2 = [full_params(A2, r.params)["checkpoint_every"] for r in runs if r.notebook == A2]
        c2 = [full_params(C2, r.params)["mlm"]["checkpoint_every"] for r in runs if r.notebook == C2]
        assert a2 and c2 and min(a2) > 0 and min(c2) > 0, profile
