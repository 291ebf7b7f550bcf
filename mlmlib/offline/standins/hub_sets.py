"""Stand-ins of the hub's task sets and corpus: GLUE, IMDb, the hate speech tweets, OpenWebText, SQuAD."""

from __future__ import annotations

import hashlib
import re

from mlmlib.offline.standins.texts import (
    CORPUS_TEXTS,
    GLUE_SPLITS,
    as_question,
    austen_sentences,
    drop_one,
    first_sentence,
    profanity,
    reviews,
    rows_in,
    seed_of,
    shuffled,
    split_tokens,
    window,
)

GLUE_LABELS = {
    "sst2": ["negative", "positive"], "cola": ["unacceptable", "acceptable"],
    "mrpc": ["not_equivalent", "equivalent"], "qqp": ["not_duplicate", "duplicate"],
    "mnli": ["entailment", "neutral", "contradiction"], "qnli": ["entailment", "not_entailment"],
    "rte": ["entailment", "not_entailment"],
}
MNLI_SPLITS = ("train", "validation_matched", "validation_mismatched", "test_matched", "test_mismatched")
NOT_TRUE = "It is not true that"


def features_of(columns: dict[str, str | list[str]]):
    """datasets Features, in order, from column -> dtype (a Value) or label names (a ClassLabel)."""
    from datasets import ClassLabel, Features, Value

    return Features({name: ClassLabel(names=kind) if isinstance(kind, list) else Value(kind)
                     for name, kind in columns.items()})


def dataset_dict(splits: dict[str, dict[str, list]], features):
    """A DatasetDict with the columns in the order the features give them."""
    from datasets import Dataset, DatasetDict

    return DatasetDict({name: Dataset.from_dict({k: columns[k] for k in features}, features=features)
                        for name, columns in splits.items()})


def _hidden(split: str) -> bool:
    """GLUE's test splits hide their labels: the hub serves them as -1."""
    return split.startswith("test")


def pair_row(task: str, split: str, i: int) -> tuple[str, str | None, int]:
    """Row i of a GLUE task: (first text, second text or None, label); see the module docstring."""
    pool = austen_sentences(split)
    s, following, far = pool[i], pool[i + 1], pool[(i + 37) % len(pool)]
    kind = i % len(GLUE_LABELS[task])
    seed = seed_of(task, split, i)
    if task == "cola":
        short = " ".join(s.split()[:20])
        return (shuffled(short, seed) if kind == 0 else short), None, kind
    if task == "mnli":
        hypothesis = {0: window(s, seed), 1: window(following, seed), 2: f"{NOT_TRUE} {window(s, seed)}"}[kind]
        return s, hypothesis + ".", kind
    if task == "rte":
        return s, (window(s, seed) if kind == 0 else window(far, seed)) + ".", kind
    if task == "qnli":
        question = f"Where is it said that {window(s, seed)}?"
        return question, (s if kind == 0 else far), kind
    if task == "mrpc":
        return s, (following if kind == 0 else drop_one(s, seed)), kind
    if task == "qqp":
        return as_question(s), as_question(far if kind == 0 else drop_one(s, seed)), kind
    raise ValueError(f"no pair row for task {task!r}")


def glue(task: str):
    """GLUE's copy of one task: its text columns, label, idx; test labels -1."""
    from mlmlib.data.tasks import HUB_TASKS

    spec = HUB_TASKS[task]
    text_columns = [c for c in (spec.text, spec.text_pair) if c]
    splits = {}
    for split in (MNLI_SPLITS if task == "mnli" else GLUE_SPLITS):
        n = rows_in(split)
        if task == "sst2":
            # tokenised and lower-cased, as GLUE has SST's sentences (the trees' leaves)
            rows = [(" ".join(split_tokens(first_sentence(t))).lower(), None, label) for t, label in reviews(split)[:n]]
        else:
            rows = [pair_row(task, split, i) for i in range(n)]
        columns = {c: [row[k] for row in rows] for k, c in enumerate(text_columns)}
        columns["label"] = [-1 if _hidden(split) else row[2] for row in rows]
        columns["idx"] = list(range(n))
        splits[split] = columns
    return dataset_dict(splits, features_of({**dict.fromkeys(text_columns, "string"), "label": GLUE_LABELS[task],
                                            "idx": "int32"}))


def imdb():
    """IMDb: text, label (neg/pos) in train and test; an unlabelled `unsupervised` split (label -1)."""
    splits = {}
    for split in ("train", "test", "unsupervised"):
        rows = reviews(split)[:rows_in(split)]
        splits[split] = {"text": [t for t, _ in rows],
                         "label": [-1 if split == "unsupervised" else label for _, label in rows]}
    return dataset_dict(splits, features_of({"text": "string", "label": ["neg", "pos"]}))


def tweets():
    """The hate speech set: label then tweet, as the hub orders them; its test labels are hidden (-1)."""
    listed = set(profanity())
    splits = {}
    for split in ("train", "test"):
        tweets = []
        for i, (text, _) in enumerate(reviews(split)[:rows_in(split)]):
            tweet = f"@user {first_sentence(text, 25)}"
            if i % 4 == 0:
                tweet += f" {profanity()[seed_of('tweet', split, i) % len(listed)]}"
            tweets.append(tweet)
        labels = [int(any(w.lower() in listed for w in re.findall(r"[\w'-]+", t))) for t in tweets]
        splits[split] = {"tweet": tweets, "label": [-1] * len(tweets) if split == "test" else labels}
    return dataset_dict(splits, features_of({"label": ["no-hate-speech", "hate-speech"], "tweet": "string"}))


def openwebtext():
    """OpenWebText: one split, train, of `text`: Austen paragraphs of six sentences and whole reviews."""
    sentences = austen_sentences("train")[5000:]
    texts = []
    for i in range(CORPUS_TEXTS):
        if i % 2 == 0:
            texts.append(" ".join(sentences[3 * i:3 * i + 6]))
        else:
            texts.append(reviews("train")[i][0])
    return dataset_dict({"train": {"text": texts}}, features_of({"text": "string"}))


def _squad_row(split: str, i: int) -> dict:
    """One SQuAD question on a context of four sentences; the answer is the asked sentence's last words."""
    pool = austen_sentences(split)[2000 if split == "train" else 400:]
    sentences = pool[4 * i:4 * i + 4]
    asked = i % 4
    starts, offset = [], 0
    for s in sentences:
        starts.append(offset)
        offset += len(s) + 1
    context = " ".join(sentences)
    words = sentences[asked].rstrip(".!?;:,\"'").split()
    answer = " ".join(words[-2:]).strip(",;:\"'")
    question = " ".join(words[:-2]).rstrip(",;:") + " what?"
    start = starts[asked] + sentences[asked].rindex(answer)
    if not answer or context[start:start + len(answer)] != answer:
        raise AssertionError(f"squad stand-in {split} {i}: the answer {answer!r} is not at {start}")
    texts, answer_starts = [answer], [start]
    if split != "train":  # the dev set has several annotators' answers: the span twice and its last word
        last = answer.split()[-1]
        texts += [answer, last]
        answer_starts += [start, start + answer.rindex(last)]
    return {"id": hashlib.sha1(f"squad {split} {i}".encode()).hexdigest()[:24], "title": "Jane_Austen",
            "context": context, "question": question,
            "answers": {"text": texts, "answer_start": answer_starts}}


def squad():
    """SQuAD v1.1: id, title, context, question, answers {text, answer_start}; train and validation."""
    from datasets import Features, List, Value

    features = Features({"id": Value("string"), "title": Value("string"), "context": Value("string"),
                         "question": Value("string"),
                         "answers": {"text": List(Value("string")), "answer_start": List(Value("int32"))}})
    splits = {}
    for split in ("train", "validation"):
        rows = [_squad_row(split, i) for i in range(rows_in(split))]
        splits[split] = {c: [r[c] for r in rows] for c in features}
    return dataset_dict(splits, features)
