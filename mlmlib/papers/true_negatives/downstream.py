"""Downstream accuracy and robustness: a task (GLUE-style or SQuAD) prepared with its
synonym-substituted test set, and a pretrained encoder fine-tuned and tested on both."""

from __future__ import annotations

import contextlib
import dataclasses
import io
from dataclasses import dataclass, field

import numpy as np
import torch

from mlmlib.data.synonyms import SynonymTable
from mlmlib.data.tasks import score_metric
from mlmlib.finetune import FinetuneConfig, evaluate, finetune
from mlmlib.models import (
    ElectraPair,
    ModelSize,
    bert_classifier,
    electra_classifier,
    question_answerer,
)
from mlmlib.papers.true_negatives import qa
from mlmlib.papers.true_negatives.substitution import SAMPLES_PER_TASK, synonym_test_set
from mlmlib.stats import class_prior


@dataclass
class TaskData:
    """A task encoded for fine-tuning, with its synonym-substituted test set."""

    name: str
    num_labels: int
    train: dict
    validation: dict
    test: dict
    test_synonyms: dict
    info: dict
    samples: list[dict] = field(default_factory=list)  # sample swaps of the synonym test set


def _subset(split, n: int | None, rng: np.random.Generator):
    """At most n rows of a datasets split, chosen with the run's generator."""
    if n is None or n >= len(split):
        return split
    return split.select(np.sort(rng.choice(len(split), size=n, replace=False)).tolist())


def prepare_task(name: str, tokenizer, heldout: SynonymTable, *, max_length: int = 64,
                 max_train: int | None = None, max_eval: int | None = None,
                 max_validation: int | None = None, substitution_rate: float = 0.5,
                 substitution_pos: str = "unambiguous", seed: int = 0,
                 **load_kwargs) -> TaskData | QATaskData:
    """Load a task, subsample it (seeded), encode it and build its held-out-synonym test set.

    Tasks without test labels (GLUE) are tested on their validation split, and 10% of their
    training split (seeded) picks the best fine-tuning step instead. `max_eval` limits the test
    split and, unless `max_validation` is given, the split that picks the step. "squad" is
    prepared by `prepare_qa_task` (the same splits and limits).
    """
    if name in qa.QA_TASKS:
        return prepare_qa_task(name, tokenizer, heldout, max_length=max_length, max_train=max_train,
                               max_eval=max_eval, max_validation=max_validation,
                               substitution_rate=substitution_rate,
                               substitution_pos=substitution_pos, seed=seed, **load_kwargs)
    from mlmlib.data import load_task
    from mlmlib.tokenize import encode_split

    data = load_task(name, **load_kwargs)
    if "test" not in data:
        parts = data["train"].train_test_split(test_size=0.1, seed=seed)
        data = {"train": parts["train"], "validation": parts["test"], "test": data["validation"]}
    rng = np.random.default_rng(seed)
    train = _subset(data["train"], max_train, rng)
    validation = _subset(data["validation"], max_eval if max_validation is None else max_validation, rng)
    test = _subset(data["test"], max_eval, rng)
    test = {k: list(test[k]) for k in ("text", "text_pair", "label") if k in test.column_names}
    sub = synonym_test_set(test["text"], test["label"], heldout, rate=substitution_rate, seed=seed,
                           pos_rule=substitution_pos)
    substituted = {"text": sub.text, "label": sub.label}
    n_sub = np.asarray(sub.n_substituted)
    if "text_pair" in test:  # both texts of a pair get substitutions
        other = synonym_test_set(test["text_pair"], test["label"], heldout, rate=substitution_rate,
                                 seed=seed + 1, pos_rule=substitution_pos)
        substituted["text_pair"] = other.text
        n_sub = n_sub + np.asarray(other.n_substituted)
    info = {"task": name, "train": len(train), "validation": len(validation), "test": len(test["label"]),
            "majority_accuracy": class_prior(test["label"]),
            "substituted_per_example": float(n_sub.mean()),
            "examples_changed": float((n_sub > 0).mean())}
    samples = [{"task": name, **row} for row in sub.samples[:SAMPLES_PER_TASK]]
    return TaskData(
        name, data["train"].features["label"].num_classes,
        encode_split(tokenizer, train, max_length), encode_split(tokenizer, validation, max_length),
        encode_split(tokenizer, test, max_length), encode_split(tokenizer, substituted, max_length), info,
        samples)


def finetune_and_test(model: torch.nn.Module | None, size: ModelSize, task: TaskData | QATaskData,
                      config: FinetuneConfig, pooling: str = "mean") -> dict:
    """Fine-tune a classifier on the pretrained encoder; clean and synonym-substituted test accuracy.

    `model=None` fine-tunes a randomly initialised encoder of `size` (ELECTRA's architecture:
    BERT's with factorised embeddings): the no-pretraining baseline. A QATaskData (SQuAD) is
    handed to `finetune_and_test_qa` (no pooling there: the span head reads every token).
    """
    if isinstance(task, QATaskData):
        return finetune_and_test_qa(model, size, task, config)
    if model is None or isinstance(model, ElectraPair):  # ELECTRA fine-tunes the discriminator
        clf = electra_classifier(size, task.num_labels, from_encoder=model, seed=config.seed,
                                 pooling=pooling)
    else:  # the MLM arms: BERT, with embeddings as wide as its layers, as `build_model` built it
        clf = bert_classifier(bert_size(size), task.num_labels, from_encoder=model, seed=config.seed,
                              pooling=pooling)
    with contextlib.redirect_stdout(io.StringIO()):  # quiet: one line per validation otherwise
        result = finetune(clf, task.train, task.validation, config, progress=False)
    clean = evaluate(clf, task.test)
    synonyms = evaluate(clf, task.test_synonyms)["accuracy"]
    metric = score_metric(task.name)  # the task's own score as the paper reports it (GLUE's)
    return {"task": task.name, "finetune_seed": config.seed, "val_accuracy": result.best_metric,
            "test_accuracy": clean["accuracy"], "synonym_accuracy": synonyms,
            "robustness_drop": clean["accuracy"] - synonyms, "test_score": clean[metric],
            "score_metric": metric, "finetune_s": result.wall_s}


def task_digest(task: TaskData | QATaskData) -> str:
    """What identifies a prepared task's numbers: its name and every encoded split's tensors."""
    from mlmlib.checkpoint import tensors_digest

    splits = [task.train, task.validation, task.test, task.test_synonyms]
    tensors = [t for split in splits for _, t in sorted(
        (split.tensors if isinstance(split, qa.Windows) else split).items())]
    return f"{task.name}:{tensors_digest(tensors)}"


def scratch_result(size: ModelSize, task: TaskData | QATaskData, config: FinetuneConfig,
                   pooling: str = "mean") -> dict:
    """`finetune_and_test` of the randomly initialised encoder (`model=None`), cached by task,
    geometry, fine-tuning settings (its seed among them) and pooling.

    Why: `scratch` does not depend on the arm or the checkpoint, and a plan that runs one arm
    per notebook (the paper plan) would otherwise fine-tune it once per arm.
    """
    import json

    from mlmlib import cache

    key = {"task": task_digest(task), "size": dataclasses.asdict(size),
           "finetune": dataclasses.asdict(config), "pooling": pooling}

    def build(folder):
        row = finetune_and_test(None, size, task, config, pooling=pooling)
        (folder / "row.json").write_text(json.dumps(row))

    folder = cache.cached("true-negatives-scratch", key, build, code_of=__name__,
                          expect=("row.json",))
    return json.loads((folder / "row.json").read_text())


def bert_size(size: ModelSize) -> ModelSize:
    """`size` as BERT builds it: no factorised embeddings (see `build_model`)."""
    return dataclasses.replace(size, embedding_size=None)


# Reconstructed: a reader that ignores its input answers with a fixed span, which is almost never
# a question's answer: its exact match is taken as 0, the floor B1 and B3 hold SQuAD's EM against
# (the classification tasks' floor is their majority class).
QA_FLOOR = 0.0


@dataclass
class QATaskData:
    """SQuAD encoded as windows (`qa.Windows`), with its synonym-substituted test set:
    held-out synonyms are swapped in the questions only, so every gold answer stays a span of
    its unchanged context."""

    name: str
    train: qa.Windows
    validation: qa.Windows
    test: qa.Windows
    test_synonyms: qa.Windows
    info: dict
    samples: list[dict] = field(default_factory=list)


def prepare_qa_task(name: str, tokenizer, heldout: SynonymTable, *, max_length: int = 128,
                    max_train: int | None = None, max_eval: int | None = None,
                    max_validation: int | None = None, substitution_rate: float = 0.5,
                    substitution_pos: str = "unambiguous", seed: int = 0,
                    **load_kwargs) -> QATaskData:
    """SQuAD v1.1 as `prepare_task` prepares a GLUE task: the dev set is the test set, 10% of the
    training questions (seeded) pick the best fine-tuning step, max_train / max_eval
    (max_validation) questions at most, windows of max_length tokens."""
    if name not in qa.QA_TASKS:
        raise ValueError(f"prepare_qa_task: name={name!r} is not a question-answering task; known: {qa.QA_TASKS}")
    data = qa.load_squad(**load_kwargs)
    parts = data["train"].train_test_split(test_size=0.1, seed=seed)
    rng = np.random.default_rng(seed)
    train = _subset(parts["train"], max_train, rng)
    validation = _subset(parts["test"], max_eval if max_validation is None else max_validation, rng)
    test = _subset(data["validation"], max_eval, rng).to_dict()
    sub = synonym_test_set(test["question"], [0] * len(test["question"]), heldout, rate=substitution_rate,
                           seed=seed, pos_rule=substitution_pos)
    windows = {key: qa.encode_split(tokenizer, split, max_length)
               for key, split in (("train", train), ("validation", validation), ("test", test),
                                  ("test_synonyms", {**test, "question": sub.text}))}
    n_sub = np.asarray(sub.n_substituted)
    info = {"task": name, "train": len(train), "validation": len(validation), "test": len(test["question"]),
            "majority_accuracy": QA_FLOOR, "substituted_per_example": float(n_sub.mean()),
            "examples_changed": float((n_sub > 0).mean()),
            "train_windows": len(windows["train"]), "test_windows": len(windows["test"]),
            "test_answer_in_window": windows["test"].info["answer_in_window"]}
    samples = [{"task": name, **row} for row in sub.samples[:SAMPLES_PER_TASK]]
    return QATaskData(name, windows["train"], windows["validation"], windows["test"],
                      windows["test_synonyms"], info, samples)


def finetune_and_test_qa(model: torch.nn.Module | None, size: ModelSize, task: QATaskData,
                         config: FinetuneConfig) -> dict:
    """Fine-tune a span reader on the pretrained encoder (the discriminator for ELECTRA, `None`:
    from scratch); a row like `finetune_and_test`'s, with SQuAD's scores.

    The accuracies are exact matches (a question answered exactly is a correct one), the drop
    is clean minus question-substituted exact match, and `test_score` is F1 (SQuAD's headline
    score, `score_metric` "squad_f1"); `exact_match` repeats the clean exact match under its own name.
    """
    if model is None or isinstance(model, ElectraPair):
        reader = question_answerer(size, from_encoder=model, kind="electra", seed=config.seed)
    else:
        reader = question_answerer(bert_size(size), from_encoder=model, kind="bert", seed=config.seed)
    with contextlib.redirect_stdout(io.StringIO()):
        result = qa.finetune_qa(reader, task.train, task.validation, config, progress=False)
    clean = qa.evaluate_qa(reader, task.test, config.eval_batch_size, config.bf16)
    synonyms = qa.evaluate_qa(reader, task.test_synonyms, config.eval_batch_size, config.bf16)
    return {"task": task.name, "finetune_seed": config.seed, "val_accuracy": result.validation["exact_match"],
            "test_accuracy": clean["exact_match"], "synonym_accuracy": synonyms["exact_match"],
            "robustness_drop": clean["exact_match"] - synonyms["exact_match"], "test_score": clean["f1"],
            "score_metric": qa.SCORE_METRIC, "exact_match": clean["exact_match"],
            "synonym_f1": synonyms["f1"], "finetune_s": result.wall_s}
