"""Paper A's real-text experiment, the steps after fine-tuning: perturb the test inputs, then
measure Delta-pred for every fine-tuned model and Delta-distribution for the pretrained MLM.

The A5 page fine-tunes the family (`perturbation_deltas.finetune_family`), calls these two steps
and draws; the correlations are computed from its records on the summary page.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mlmlib.papers.distributional import perturb
from mlmlib.papers.distributional import perturbation_deltas as pdl


def load_splits(task: str, templates: list[str], verbalizers: dict[str, list[str]] | None, *,
                test_split: str, selection_split: str, holdout: int, seed: int):
    """(the task's dataset, its train / selection / test splits), after checking that the templates'
    slots suit the task (a pair task's {premise} and {hypothesis})."""
    from mlmlib.data import load_task, task_splits

    data = load_task(task)
    pdl.check_templates(templates, verbalizers, pairs="text_pair" in data["train"].column_names)
    return data, task_splits(data, test_split=test_split, selection_split=selection_split,
                             holdout=holdout, seed=seed)


def setup_splits(task: str, setup, seed: int):
    """`load_splits` with the splits, templates and verbalizers of A5's `setup` group
    (real_text_config.RealTextSetup)."""
    return load_splits(task, setup.templates, setup.verbalizers, test_split=setup.test_split,
                       selection_split=setup.selection_split, holdout=setup.selection_holdout,
                       seed=seed)


def encoded(tokenizer, rows, max_length: int, n: int = 0) -> dict:
    """A split's first n rows (0: all) as the tensors the classifier takes."""
    from mlmlib.tokenize import encode_split

    rows = rows if not n else rows.select(range(min(n, len(rows))))
    return encode_split(tokenizer, rows, max_length=max_length)


def finetune_models(mlm, base_name: str, tokenizer, splits, num_labels: int, config, *, train_size: int,
                    max_length: int, checkpoints: list[float], ratios: list[float], folder, seed: int):
    """Fine-tune the family from the base MLM's encoder (`perturbation_deltas.finetune_family`):
    snapshots of one run on all the training data, and runs on fractions of it; one row per model."""
    from mlmlib.basemodel import classifier_size
    from mlmlib.models import bert_classifier

    train, selection = encoded(tokenizer, splits["train"], max_length, train_size), \
        encoded(tokenizer, splits["selection"], max_length)
    size = classifier_size(base_name, mlm)  # the base here or shipped: its encoder is copied
    family = pdl.finetune_family(lambda: bert_classifier(size, num_labels, from_encoder=mlm, seed=seed),
                                 train, selection, config, checkpoints=checkpoints, ratios=ratios,
                                 folder=folder, seed=seed)
    return pd.DataFrame(family)


def perturb_test_inputs(reference, tokenizer, test, kinds: list[str], templates: list[str], *, synonyms,
                        task: str = "", test_size: int = 0, n_replace: int = 4, max_phrase_words: int = 4,
                        max_length: int = 64, max_text_tokens: int = 48, tag_template: bool = False,
                        seed: int = 0, translator=None) -> tuple[list, pd.DataFrame]:
    """Every kind's perturbations of `test_size` test inputs (shuffled with `seed`), and per kind
    what was found and kept.

    test: the test split (text, label, and text_pair for a pair task); each text is cut to
    max_text_tokens so that every template fits. reference: the classifier that ranks the
    important words (phrases). The word level runs offline; a phrase level reads the task's parsed
    test inputs (hub) and back-translates (`translator`, default the wmt19 models: network). A
    perturbation whose filled template would put [MASK] past max_length is left out and counted
    ("too long for a template").
    """
    test = test.shuffle(seed=seed).select(range(min(test_size, len(test))))
    texts = [perturb.fit_text(tokenizer, t, max_text_tokens) for t in test["text"]]
    text_pairs = ([perturb.fit_text(tokenizer, t, max_text_tokens) for t in test["text_pair"]]
                  if "text_pair" in test.column_names else None)
    labels = test["label"]
    perturbed, counts = [], []
    for kind in kinds:
        if kind == "word":
            found, count = perturb.word_perturbations(
                reference, tokenizer, texts, synonyms, n_replace=n_replace, max_length=max_length,
                seed=seed, labels=labels, text_pairs=text_pairs)
        else:
            parsed = perturb.load_parsed_test(task, limit=test_size)
            found, count = perturb.parsed_perturbations(
                reference, tokenizer, parsed, kind, translator or perturb.BackTranslator(),
                max_words=max_phrase_words, max_length=max_length, max_text_tokens=max_text_tokens,
                labels=None if task == "sst2" else perturb.PHRASE_LABELS)
        # a longer synonym or paraphrase can push a template's [MASK] past max_length
        found, too_long = pdl.fitting_templates(found, templates, tokenizer, max_length=max_length,
                                                tag_matched=tag_template)
        count["kept"] = len(found)
        perturbed += found
        counts.append({"kind": kind, **count, "too long for a template": too_long.get(kind, 0)})
    return perturbed, pd.DataFrame(counts).fillna(0)


def too_few(counts: pd.DataFrame, min_examples: int) -> list[str]:
    """A warning for each perturbation kind that kept fewer than min_examples perturbed inputs."""
    return [f"TOO FEW: {row.kind} perturbations kept {row.kept} < min_examples={min_examples}"
            for row in counts.itertuples() if row.kept < min_examples]


def measure_deltas(models: pd.DataFrame, load_model, evaluate, tokenizer, perturbed: list, test_data: dict,
                   mlm, templates: list[str], verbalizers: dict[str, list[str]] | None = None, *,
                   max_length: int = 64, metric: str = "l1", tag_template: bool = False):
    """(Delta-pred per fine-tuned model, test accuracy per model, Delta-distribution per template).

    models: finetune_family's rows (model, path). A saved model that several rows name (the full
    run's last checkpoint is also "ratio 1") is loaded and measured once.
    """
    by_path = {}
    for path in models["path"].unique():
        model = load_model(path)
        by_path[path] = (pdl.delta_pred(model, tokenizer, perturbed, max_length=max_length, metric=metric),
                         evaluate(model, test_data)["accuracy"])
    delta_pred = {row.model: by_path[row.path][0] for row in models.itertuples()}
    test_accuracy = {row.model: by_path[row.path][1] for row in models.itertuples()}
    delta_dist = pdl.delta_distributions(mlm, tokenizer, perturbed, templates, verbalizers,
                                         tag_matched=tag_template, max_length=max_length, metric=metric)
    return delta_pred, test_accuracy, delta_dist


def delta_summary(delta_pred: dict[str, np.ndarray], delta_dist: dict[str, np.ndarray]) -> pd.DataFrame:
    """Mean and median of each measure: Delta-pred per model, Delta-distribution per template
    (a unit with no tag-matched template has no Delta-distribution: NaN, left out)."""
    rows = ([{"measure": "Delta-pred", "of": m, "mean": v.mean(), "median": np.median(v), "n": len(v)}
             for m, v in delta_pred.items()]
            + [{"measure": "Delta-distribution", "of": t, "mean": np.nanmean(v), "median": np.nanmedian(v),
                "n": int(np.isfinite(v).sum())} for t, v in delta_dist.items()])
    return pd.DataFrame(rows, columns=["measure", "of", "mean", "median", "n"])


def check_setup(setup) -> None:
    """`check_settings` of A5's `setup` group (real_text_config.RealTextSetup)."""
    check_settings(setup.perturbations, setup.checkpoints, setup.train_ratios, setup.templates,
                   setup.verbalizers, setup.delta_metric)


def check_settings(kinds: list[str], checkpoints: list[float], train_ratios: list[float],
                   templates: list[str], verbalizers: dict[str, list[str]] | None, metric: str) -> None:
    """Fail on bad settings before any data is loaded, any model trained or any inference run."""
    for kind in kinds:
        perturb.check_kind(kind)
    pdl.check_fractions("checkpoints", checkpoints)
    pdl.check_fractions("train_ratios", train_ratios)
    pdl.check_templates(templates, verbalizers)
    if metric not in pdl.DISTANCES:
        raise ValueError(f"delta_metric={metric!r}; allowed: {pdl.DISTANCES}")


def perturbation_table(perturbed: list) -> pd.DataFrame:
    """One row per perturbed input: kind, side, tag, original and replacement, the texts."""
    return pd.DataFrame(perturb.as_rows(perturbed))


def example_rows(examples: pd.DataFrame, pair_task: bool, n: int = 12) -> pd.DataFrame:
    """The first n perturbations as the page shows them (the side only for a pair task)."""
    columns = ["kind", "side", "pos", "original", "replacement", "importance", "perturbed"]
    shown = examples[columns if pair_task else columns[:1] + columns[2:]].head(n)
    return shown.rename(columns={"pos": "tag", "perturbed": "perturbed text"})


def model_rows(models: pd.DataFrame, test_accuracy: dict[str, float]) -> list[dict]:
    """The fine-tuned models as the record keeps them: no local path, with their test accuracy."""
    return (models.drop(columns="path").assign(test_accuracy=models["model"].map(test_accuracy))
            .to_dict("records"))
