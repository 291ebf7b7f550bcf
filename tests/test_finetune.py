"""Fine-tuning: learns a separable task, restores the best weights, metrics, validation."""

import numpy as np
import pytest
import torch

from mlmlib.finetune import FinetuneConfig, evaluate, finetune, metrics_from_probs, predict
from mlmlib.models import ModelSize, bert_classifier

SIZE = ModelSize(vocab_size=40, hidden=32, layers=1, heads=2, max_len=16, dropout=0.0)


def task(n, seed, regression=False):
    """Label = whether token 7 occurs (ids 5..39 otherwise); regression: its count."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(8, 40, (n, 12), generator=g)
    labels = torch.randint(0, 2, (n,), generator=g)
    pos = torch.randint(1, 12, (n,), generator=g)
    ids[labels == 1, pos[labels == 1]] = 7
    ids[:, 0] = 2
    attention = torch.ones_like(ids)
    attention[::3, 9:] = 0
    ids[attention == 0] = 0
    ids[labels == 1, pos[labels == 1].clamp(max=8)] = 7  # keep the cue inside the real tokens
    y = labels.float() if regression else labels
    return {"input_ids": ids, "attention_mask": attention, "labels": y}


def test_finetune_beats_chance_and_restores_best():
    train, val = task(256, 0), task(128, 1)
    model = bert_classifier(SIZE, 2, seed=0)
    result = finetune(model, train, val, FinetuneConfig(epochs=6, batch_size=32, lr=3e-3,
                                                        eval_every=8, seed=0))
    assert result.best_metric > 0.9
    assert result.validation["accuracy"] == pytest.approx(result.best_metric)
    assert evaluate(model, val)["accuracy"] == pytest.approx(result.best_metric)
    assert result.validation_probs.shape == (128, 2)
    np.testing.assert_allclose(result.validation_probs.sum(1), 1.0, rtol=1e-5)
    assert {"step", "train_loss", "val_accuracy", "val_f1", "val_matthews"} <= result.history[0].keys()


def test_early_stopping_and_regression():
    train, val = task(128, 2, regression=True), task(64, 3, regression=True)
    model = bert_classifier(SIZE, 1, seed=0)
    result = finetune(model, train, val, FinetuneConfig(max_steps=200, eval_every=2, lr=1e-7,
                                                        patience=2, metric="pearson"))
    assert result.steps < 200  # a tiny lr cannot improve for long: stopped early
    assert {"pearson", "spearman", "mse"} <= result.validation.keys()
    assert predict(model, val).shape == (64, 1)


def test_metrics_and_validation():
    probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    m = metrics_from_probs(probs, [0, 1, 1, 1])
    assert m["accuracy"] == 0.75 and 0 < m["f1"] < 1
    with pytest.raises(ValueError, match="metric"):
        FinetuneConfig(metric="auc")
    with pytest.raises(ValueError, match="patience"):
        FinetuneConfig(patience=0)
    model = bert_classifier(SIZE, 2)
    with pytest.raises(ValueError, match="num_labels"):
        finetune(model, task(8, 0), task(8, 1), FinetuneConfig(metric="pearson"))
    with pytest.raises(ValueError, match="labels"):
        finetune(model, {"input_ids": torch.zeros(2, 3, dtype=torch.long),
                         "attention_mask": torch.ones(2, 3)}, task(8, 1), FinetuneConfig())


@pytest.mark.parametrize("batch, given, expected", [(32, None, 256), (16, None, 128), (16, 64, 64)])
def test_the_evaluation_batch_is_a_multiple_of_the_training_batch_unless_given(batch, given,
                                                                               expected):
    """book/compute.md's rule: evaluation takes EVAL_BATCH_FACTOR (8) times the training batch."""
    config = FinetuneConfig(batch_size=batch, eval_batch_size=given)
    assert config.eval_batch_size == expected


@pytest.mark.parametrize("field, value", [("eval_batch_size", 0), ("batch_size", 0),
                                          ("eval_batch_size", 2.5)])
def test_a_bad_batch_size_is_named(field, value):
    with pytest.raises(ValueError, match=f"^{field} must be an int >= 1"):
        FinetuneConfig(**{field: value})


def test_quiet_heartbeat_prints_without_warnings(monkeypatch, capsys):
    import warnings

    import mlmlib.finetune

    monkeypatch.setattr(mlmlib.finetune, "PROGRESS_EVERY_S", 0.0)  # a heartbeat every step
    train, val = task(64, 0), task(32, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. float() of a loss that requires grad
        finetune(bert_classifier(SIZE, 2, seed=0), train, val,
                 FinetuneConfig(epochs=1, batch_size=32, eval_every=100, seed=0), progress=False)
    assert "step 1/2 | loss" in capsys.readouterr().out


def test_two_class_metrics_add_the_positive_class_f1_for_glue():
    probs = np.array([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7], [0.6, 0.4]])
    m = metrics_from_probs(probs, np.array([0, 1, 0, 1]))  # predicted 0 1 1 0
    assert m["f1_positive"] == pytest.approx(0.5)  # precision 1/2, recall 1/2
    assert "f1_positive" not in metrics_from_probs(np.eye(3), np.array([0, 1, 2]))


def test_the_training_steps_read_nothing_back_from_the_device(monkeypatch):
    """Explicit host reads (item, float(), bool() ...) made by the fine-tuning loop's own code,
    outside the batches' slicing (host data) and the validations: as many for 16 steps as for 4.
    (The model's forward pass is transformers' code and not counted: its attention-mask check
    reads a bool every step.)"""
    import sys

    import mlmlib.finetune as ft

    counting = [False]
    reads = []
    for name in ("item", "tolist", "numpy", "__float__", "__int__", "__bool__", "__index__"):
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            if counting[0] and sys._getframe(1).f_code.co_filename == ft.__file__:
                reads.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)

    def pausing(function):
        def call(*args, **kwargs):
            was, counting[0] = counting[0], False
            try:
                return function(*args, **kwargs)
            finally:
                counting[0] = was
        return call

    def counting_loop(*args, _loop=ft.train_loop, **kwargs):
        counting[0] = True
        try:
            return _loop(*args, **kwargs)
        finally:
            counting[0] = False

    monkeypatch.setattr(ft, "PROGRESS_EVERY_S", float("inf"))  # the heartbeat: by time, not step
    monkeypatch.setattr(ft, "_slice", pausing(ft._slice))
    monkeypatch.setattr(ft, "evaluate", pausing(ft.evaluate))
    monkeypatch.setattr(ft, "train_loop", counting_loop)
    train, val = task(64, 0), task(32, 1)
    per_run = []
    for steps in (4, 16):
        reads.clear()
        result = finetune(bert_classifier(SIZE, 2, seed=0), train, val,
                          FinetuneConfig(max_steps=steps, batch_size=16, eval_every=1000, seed=0),
                          progress=False)
        assert result.steps == steps and np.isfinite(result.history[-1]["train_loss"])
        per_run.append(len(reads))
    assert per_run[0] == per_run[1] <= 2, per_run  # one read at the one validation


def test_a_non_finite_loss_stops_fine_tuning_at_the_next_validation():
    train, val = task(64, 0), task(32, 1)
    model = bert_classifier(SIZE, 2, seed=0)
    with torch.no_grad():
        model.classifier.weight.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match="non-finite fine-tuning loss at step 1"):
        finetune(model, train, val, FinetuneConfig(max_steps=4, batch_size=16, eval_every=2))
