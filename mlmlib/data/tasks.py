"""Labelled classification tasks with one schema: `text` (+ `text_pair`), `label` (ClassLabel)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from datasets import ClassLabel, Dataset, DatasetDict, Features, Value

from mlmlib.data.corpora import (
    WORDNET_TEST_BUCKET,
    WORDNET_VALIDATION_BUCKET,
    embedded_rows,
    wordnet_bucket,
)
from mlmlib.data.hub import load_hub_dataset, mirror_dataset_dir, mirror_root

# WordNet's 45 lexicographer files, in file-number order (lexnames(5WN)); the build script
# uses this list too, so the bundle and the label names cannot drift apart.
WORDNET_LEXNAMES = [
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event",
    "noun.feeling", "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object",
    "noun.person", "noun.phenomenon", "noun.plant", "noun.possession", "noun.process",
    "noun.quantity", "noun.relation", "noun.shape", "noun.state", "noun.substance", "noun.time",
    "verb.body", "verb.change", "verb.cognition", "verb.communication", "verb.competition",
    "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl",
]
AMAZON_LABELS = ["other", "great"]  # label 1 = a 5-star review
EMBEDDED_TASKS = ("amazon-food", "wordnet-lexname")


@dataclass(frozen=True)
class HubTask:
    """Where a hub task lives and which of its columns become `text`, `text_pair`, `label`."""

    path: str
    config: str | None
    text: str
    text_pair: str | None = None
    label: str = "label"
    splits: tuple[tuple[str, str], ...] = ()  # (source split, our split) renames
    needs: tuple[str, ...] = ("train",)  # source splits a mirror copy must have, beside the renamed ones
    alternative: str = 'task "amazon-food"'


_GLUE = {
    "cola": ("sentence", None), "sst2": ("sentence", None), "mrpc": ("sentence1", "sentence2"),
    "qqp": ("question1", "question2"), "mnli": ("premise", "hypothesis"),
    "qnli": ("question", "sentence"), "rte": ("sentence1", "sentence2"), "wnli": ("sentence1", "sentence2"),
}
GLUE_TASKS = tuple(_GLUE)
# The score each GLUE task is reported by (the GLUE benchmark's convention, as paper B's tables
# use it): Matthews correlation for CoLA, F1 of the positive class for MRPC and QQP, accuracy
# for the others. Any other task is scored by accuracy.
GLUE_METRICS = {"cola": "matthews", "mrpc": "f1_positive", "qqp": "f1_positive"}


def score_metric(task: str) -> str:
    """The metric a task's headline score is (a key of mlmlib.finetune.evaluate's result)."""
    return GLUE_METRICS.get(task, "accuracy")


_MNLI_SPLITS = (("validation_matched", "validation"), ("validation_mismatched", "validation_mismatched"),
                ("test_matched", "test"), ("test_mismatched", "test_mismatched"))
HUB_TASKS: dict[str, HubTask] = {
    **{name: HubTask("nyu-mll/glue", name, a, b, splits=_MNLI_SPLITS if name == "mnli" else (),
                     needs=("train",) if name == "mnli" else ("train", "validation"))
       for name, (a, b) in _GLUE.items()},
    "imdb": HubTask("stanfordnlp/imdb", None, "text", needs=("train", "test")),
    "tweets-hate-speech": HubTask(
        "tweets-hate-speech-detection/tweets_hate_speech_detection", None, "tweet",
        alternative='task "amazon-food" (no hate speech set is embedded)'),
}


@cache
def _amazon_food() -> DatasetDict:
    rows = embedded_rows("amazon-food.jsonl.xz")
    features = Features({"text": Value("string"), "label": ClassLabel(names=AMAZON_LABELS)})
    out = {}
    for split in ("train", "validation", "test"):
        chosen = [r for r in rows if r["split"] == split]
        out[split] = Dataset.from_dict(
            {"text": [r["text"] for r in chosen], "label": [AMAZON_LABELS.index(r["label"]) for r in chosen]},
            features=features,
        )
    return DatasetDict(out)


@cache
def _wordnet_lexname() -> DatasetDict:
    # Gloss (definition) -> lexicographer file. Split by definition hash: 80/10/10. The test split's
    # glosses sit in the wordnet-glosses corpus's validation split, never in its train split.
    features = Features({"text": Value("string"), "label": ClassLabel(names=WORDNET_LEXNAMES)})
    cols: dict[str, dict[str, list]] = {s: {"text": [], "label": []} for s in ("train", "validation", "test")}
    for r in embedded_rows("wordnet.jsonl.xz"):
        b = wordnet_bucket(r["definition"])
        split = "test" if b >= WORDNET_TEST_BUCKET else "validation" if b >= WORDNET_VALIDATION_BUCKET else "train"
        cols[split]["text"].append(r["definition"])
        cols[split]["label"].append(WORDNET_LEXNAMES.index(r["lexname"]))
    return DatasetDict({s: Dataset.from_dict(c, features=features) for s, c in cols.items()})


def load_task(name: str = "amazon-food", **kwargs) -> DatasetDict:
    """Load a classification task as train/validation/test with `text`, optional `text_pair`, `label`."""
    # Built once per process; callers get their own DatasetDict (Datasets are immutable).
    if name == "amazon-food":
        return DatasetDict(_amazon_food())
    if name == "wordnet-lexname":
        return DatasetDict(_wordnet_lexname())
    if name in HUB_TASKS:
        return _hub_task(name, HUB_TASKS[name], **kwargs)
    known = [*EMBEDDED_TASKS, *HUB_TASKS]
    raise ValueError(f"load_task: name={name!r} is unknown; known tasks: {', '.join(known)}")


def _hub_task(name: str, spec: HubTask, **kwargs) -> DatasetDict:
    """Load a hub task (hub or mirror) and normalise it to our schema; unlabelled splits (label -1) are dropped."""
    data = load_hub_dataset(f"task {name!r}", spec.alternative, spec.path, spec.config, **kwargs)
    root = mirror_root()
    if root is not None:
        _check_mirror_copy(name, spec, data, mirror_dataset_dir(root, spec.path, spec.config))
    renames = dict(spec.splits)
    out = {}
    for split, ds in data.items():
        if split == "unsupervised" or min(ds[spec.label], default=-1) < 0:
            continue  # IMDb's unlabelled split, GLUE's hidden test labels
        keep = {spec.text: "text", **({spec.text_pair: "text_pair"} if spec.text_pair else {}), spec.label: "label"}
        ds = ds.select_columns(list(keep)).rename_columns({k: v for k, v in keep.items() if k != v})
        if not isinstance(ds.features["label"], ClassLabel):
            names = [str(v) for v in sorted(set(ds["label"]))]
            ds = ds.cast_column("label", ClassLabel(names=names))
        out[renames.get(split, split)] = ds
    if "validation" not in out and "train" in out:
        # No validation split at the source (IMDb, the hate speech set): carve 10%, seeded.
        parts = out["train"].train_test_split(test_size=0.1, seed=0, stratify_by_column="label")
        out["train"], out["validation"] = parts["train"], parts["test"]
    return DatasetDict(out)


def _check_mirror_copy(name: str, spec: HubTask, data, folder) -> None:
    """A mirror copy is made by hand or by another tool: check it has the hub's splits and columns the
    spec reads, so a wrong copy fails here, naming what is missing, not deep inside a run."""
    needed = [*spec.needs, *(source for source, _ in spec.splits)]
    missing = [s for s in needed if s not in data]
    if missing:
        raise ValueError(f"task {name!r}: the mirror copy in {folder} lacks split(s) {missing}; "
                         f"it has {list(data)}, the task reads {needed}")
    columns = [c for c in (spec.text, spec.text_pair, spec.label) if c]
    for split, ds in data.items():
        lacking = [c for c in columns if c not in ds.column_names]
        if lacking:
            raise ValueError(f"task {name!r}: split {split!r} of the mirror copy in {folder} lacks column(s) "
                             f"{lacking}; it has {ds.column_names}, the task reads {columns}")


SELECTION_FROM_TRAIN = "train-holdout"


def task_splits(data, *, test_split: str, selection_split: str = "validation", holdout: int = 1000,
                seed: int = 0) -> dict:
    """The task's train, selection and test splits, disjoint: selection picks the models, test is perturbed.

    selection_split is a split of `data` other than the test split, or "train-holdout": `holdout`
    seeded random training examples, taken out of train (for GLUE, whose labelled validation split is then the test).
    """
    splits = [s for s in data if s != "train"]
    if test_split not in splits:
        raise ValueError(f"test_split={test_split!r} is not a split of the task; allowed: {', '.join(splits)}")
    if selection_split == test_split:
        raise ValueError(f"selection_split={selection_split!r} is the test split: the models would be selected "
                         f"on the inputs they are tested on; use another split or {SELECTION_FROM_TRAIN!r}")
    if selection_split == SELECTION_FROM_TRAIN:
        n = len(data["train"])
        if not isinstance(holdout, int) or not 0 < holdout < n:
            raise ValueError(f"holdout must be an int in [1, {n - 1}] (training examples), got {holdout!r}")
        order = np.random.default_rng(seed).permutation(n)
        train = data["train"].select(np.sort(order[holdout:]))
        selection = data["train"].select(np.sort(order[:holdout]))
        return {"train": train, "selection": selection, "test": data[test_split]}
    if selection_split not in splits:
        raise ValueError(f"selection_split={selection_split!r} is not a split of the task; allowed: "
                         f"{', '.join(s for s in splits if s != test_split)} or {SELECTION_FROM_TRAIN!r}")
    return {"train": data["train"], "selection": data[selection_split], "test": data[test_split]}
