"""Extractive question answering on SQuAD v1.1: data, windows, fine-tuning, answers and scores.

The answer to a question is a span of its context. The model (transformers'
`BertForQuestionAnswering` / `ElectraForQuestionAnswering`, built by
`mlmlib.models.question_answerer`) gives every token a start and an end logit; the answer is
the best-scoring valid span. What is ours, and why:
- windows (`encode_squad`): a context longer than the model reads is cut into overlapping
  windows with the fast tokenizer's offset mapping, and the answer's characters become start
  and end token labels ([CLS] when the window does not hold the whole answer);
- answers (`best_span`, `predict_answers`): transformers has no SQuAD post-processing, only
  the model;
- scores (`squad_scores`): the official SQuAD v1.1 exact match and F1, written from their
  definition, since transformers 5 ships no SQuAD metric and `evaluate` fetches its
  metric scripts from the hub. They are fractions in [0, 1], as every other score of mlmlib
  (the official script prints percentages);
- the fine-tuning loop (`finetune_qa`): `mlmlib.finetune`'s loop for classifiers with the
  span loss and the span scores, for the same reasons (best-on-validation weights in memory,
  one seeded batch order) and with the same `FinetuneConfig` (its `metric` is not used: the
  best weights are those of the highest validation F1).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch is imported where it is used: the scores and claims' tables need none
    import torch
    from torch import nn

    from mlmlib.finetune import FinetuneConfig

SQUAD_PATH = "rajpurkar/squad"  # SQuAD v1.1 on the hub: train and validation (the dev set)
SQUAD_CONFIG = None
SQUAD_COLUMNS = ("id", "title", "context", "question", "answers")
QA_TASKS = ("squad",)
SCORE_METRIC = "squad_f1"  # the headline score of a QA row: F1 (the paper's tables also give EM)
EXACT_METRIC = "squad_em"
MAX_ANSWER_TOKENS = 30  # longest answer considered, in tokens (BERT's and ELECTRA's SQuAD setting)
N_BEST = 20  # start and end candidates per window
ALTERNATIVE = 'task "amazon-food" (no question-answering set is embedded)'


# --------------------------------------------------------------------------- scores


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles a/an/the, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the normalised answers are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    """F1 of the normalised answers' bags of words (SQuAD v1.1: no overlap, or nothing left, is 0)."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def squad_scores(predictions: Sequence[str], golds: Sequence[Sequence[str]]) -> dict[str, float]:
    """Exact match and F1 as fractions: each question scores its best gold answer, questions are averaged."""
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions for {len(golds)} questions")
    if not len(golds) or any(not g for g in golds):
        raise ValueError("every question needs at least one gold answer")
    em = [max(exact_match(p, g) for g in gs) for p, gs in zip(predictions, golds)]
    f1 = [max(token_f1(p, g) for g in gs) for p, gs in zip(predictions, golds)]
    return {"exact_match": float(np.mean(em)), "f1": float(np.mean(f1))}


# --------------------------------------------------------------------------- data


def load_squad(**kwargs):
    """SQuAD v1.1 (train, validation) from the hub or the mirror (MLMLIB_HUB_MIRROR); a copy that
    lacks a split or column fails here, naming it, not deep inside a run."""
    from mlmlib.data.hub import load_hub_dataset

    data = load_hub_dataset("task 'squad'", ALTERNATIVE, SQUAD_PATH, SQUAD_CONFIG, **kwargs)
    missing = [s for s in ("train", "validation") if s not in data]
    if missing:
        raise ValueError(f"task 'squad': the dataset lacks split(s) {missing}; it has {list(data)}")
    for split, ds in data.items():
        lacking = [c for c in SQUAD_COLUMNS if c not in ds.column_names]
        if lacking:
            raise ValueError(f"task 'squad': split {split!r} lacks column(s) {lacking}; it has {ds.column_names}")
    return data


@dataclass
class Windows:
    """Question + context windows as the model reads them, and what maps them back to answers.

    `tensors`: input_ids, attention_mask (token_type_ids) and the start/end labels of each
    window; `example[w]`: the question window w belongs to; `offsets[w, t]`: the characters
    [first, end) of its context that token t covers, (-1, -1) outside the context (an int32
    array: SQuAD's training set has over 10 million tokens, too many for Python tuples);
    `contexts`, `answers`: per question, its context and its gold answer texts.
    """

    tensors: dict[str, torch.Tensor]
    example: list[int]
    offsets: np.ndarray  # (windows, tokens, 2)
    contexts: list[str]
    answers: list[list[str]]
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.example)


def cut_questions(tokenizer, questions: Sequence[str], max_tokens: int) -> list[str]:
    """Each question cut after `max_tokens` tokens (Google's BERT SQuAD code caps queries alike):
    only the context is truncated into windows, so the question must leave room for it."""
    offsets = tokenizer(list(questions), add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    return [q if len(o) <= max_tokens else q[: o[max_tokens - 1][1]] for q, o in zip(questions, offsets)]


def window_labels(offsets: np.ndarray, start_char: int, end_char: int, cls_index: int) -> tuple[int, int]:
    """Start and end token of the answer characters [start_char, end_char) in one window.

    `offsets`: (tokens, 2), each token's context characters, (-1, -1) outside the context. The
    start is the last context token that begins at or before start_char, the end the first that
    ends at or after end_char; an answer not wholly inside the window's context points at [CLS].
    """
    offsets = np.asarray(offsets)
    inside = np.flatnonzero(offsets[:, 0] >= 0)
    if not len(inside) or offsets[inside[0], 0] > start_char or offsets[inside[-1], 1] < end_char:
        return cls_index, cls_index
    start = inside[offsets[inside, 0] <= start_char].max()
    end = inside[offsets[inside, 1] >= end_char].min()
    return int(start), int(end)


def encode_squad(tokenizer, questions: Sequence[str], contexts: Sequence[str], answers: Sequence[dict],
                 max_length: int = 128, stride: int | None = None) -> Windows:
    """Question + context windows of at most `max_length` tokens, labelled with the first gold answer.

    `answers`: per question, SQuAD's {"text": [...], "answer_start": [...]}. Long contexts are
    cut into windows that overlap by `stride` tokens (default max_length // 4); questions are
    capped at max_length // 2 tokens. Needs a fast tokenizer (offset mapping).
    """
    import torch

    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"encode_squad needs a fast tokenizer (offset mapping), got {type(tokenizer).__name__}")
    if not len(questions) == len(contexts) == len(answers):
        raise ValueError(f"questions, contexts and answers differ in length: "
                         f"{len(questions)}, {len(contexts)}, {len(answers)}")
    stride = max_length // 4 if stride is None else stride
    if max_length < 8 or not 0 <= stride < max_length // 2 - 3:
        raise ValueError(f"need max_length >= 8 and 0 <= stride < max_length // 2 - 3, got {max_length}, {stride}")
    questions = cut_questions(tokenizer, [q.lstrip() for q in questions], max_length // 2)
    enc = tokenizer(questions, list(contexts), truncation="only_second", max_length=max_length, stride=stride,
                    return_overflowing_tokens=True, return_offsets_mapping=True, padding="longest",
                    return_tensors="pt")
    example = enc["overflow_to_sample_mapping"].tolist()
    offsets = enc["offset_mapping"].numpy().astype(np.int32)
    starts, ends, found = [], [], []
    for w, q in enumerate(example):
        in_context = np.array([i == 1 for i in enc.sequence_ids(w)])
        offsets[w, ~in_context] = -1
        cls_index = enc["input_ids"][w].tolist().index(tokenizer.cls_token_id)
        first = answers[q]["answer_start"][0]
        start, end = window_labels(offsets[w], first, first + len(answers[q]["text"][0]), cls_index)
        starts.append(start)
        ends.append(end)
        found.append(start != cls_index)
    tensors = {k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc}
    tensors |= {"start_positions": torch.tensor(starts), "end_positions": torch.tensor(ends)}
    info = {"questions": len(questions), "windows": len(example),
            "answer_in_window": float(np.mean(found)) if found else 0.0}
    return Windows(tensors, example, offsets, list(contexts), [list(a["text"]) for a in answers], info)


def encode_split(tokenizer, split, max_length: int = 128, stride: int | None = None) -> Windows:
    """A SQuAD-schema split (a Dataset or a dict of columns) as windows."""
    if hasattr(split, "column_names"):
        split = split.to_dict()
    return encode_squad(tokenizer, split["question"], split["context"], split["answers"], max_length, stride)


# --------------------------------------------------------------------------- answers


def best_span(start_logits: np.ndarray, end_logits: np.ndarray, offsets: np.ndarray,
              n_best: int = N_BEST, max_answer_tokens: int = MAX_ANSWER_TOKENS
              ) -> tuple[float, int, int] | None:
    """(score, first char, end char) of the best valid span of one window, or None if it has none.

    `offsets`: (tokens, 2) as in `Windows`. Valid: start and end tokens in the context, start <=
    end, at most max_answer_tokens tokens. The score is start logit + end logit; only the n_best
    highest starts and ends are paired.
    """
    inside = np.asarray(offsets)[:, 0] >= 0
    if not inside.any():
        return None
    starts = np.where(inside, start_logits, -np.inf).argsort()[::-1][:n_best]
    ends = np.where(inside, end_logits, -np.inf).argsort()[::-1][:n_best]
    best = None
    for s in starts:
        for e in ends:
            if not (inside[s] and inside[e] and s <= e < s + max_answer_tokens):
                continue
            score = float(start_logits[s] + end_logits[e])
            if best is None or score > best[0]:
                best = (score, int(offsets[s][0]), int(offsets[e][1]))
    return best


def predict_answers(start_logits: np.ndarray, end_logits: np.ndarray, windows: Windows,
                    n_best: int = N_BEST, max_answer_tokens: int = MAX_ANSWER_TOKENS) -> list[str]:
    """Each question's answer text: the best valid span over all its windows ("" if there is none)."""
    best: dict[int, tuple[float, int, int]] = {}
    for w, q in enumerate(windows.example):
        span = best_span(start_logits[w], end_logits[w], windows.offsets[w], n_best, max_answer_tokens)
        if span is not None and (q not in best or span[0] > best[q][0]):
            best[q] = span
    return [windows.contexts[q][best[q][1]:best[q][2]] if q in best else "" for q in range(len(windows.contexts))]


def predict_logits(model: nn.Module, windows: Windows, batch_size: int = 256, bf16="auto"
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Start and end logits (windows, tokens); -inf on the padding each batch leaves out."""
    import torch

    from mlmlib.finetune import _autocast, _slice

    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    n, width = windows.tensors["input_ids"].shape
    start, end = np.full((n, width), -np.inf, np.float32), np.full((n, width), -np.inf, np.float32)
    for first in range(0, n, batch_size):
        rows = slice(first, min(first + batch_size, n))
        with torch.no_grad(), _autocast(device, bf16):
            out = model(**_slice(windows.tensors, torch.arange(n)[rows], device))
        cut = out.start_logits.shape[1]
        start[rows, :cut] = out.start_logits.float().cpu().numpy()
        end[rows, :cut] = out.end_logits.float().cpu().numpy()
    model.train(was_training)
    return start, end


def evaluate_qa(model: nn.Module, windows: Windows, batch_size: int = 256, bf16="auto") -> dict[str, float]:
    """Exact match and F1 (fractions) of the model's answers against the gold answers."""
    start, end = predict_logits(model, windows, batch_size, bf16)
    return squad_scores(predict_answers(start, end, windows), windows.answers)


# --------------------------------------------------------------------------- fine-tuning


@dataclass
class QAResult:
    """Best-on-validation outcome: the model passed in holds the best weights afterwards."""

    best_f1: float
    best_step: int
    steps: int
    validation: dict  # exact match and F1 of the best model on the validation windows
    history: list[dict] = field(default_factory=list)  # one row per validation
    wall_s: float = 0.0


def finetune_qa(model: nn.Module, train: Windows, validation: Windows, config: FinetuneConfig, *,
                progress: bool | None = None) -> QAResult:
    """Fine-tune a question-answering model in place on the span loss (transformers': the mean
    of the start and end cross-entropies), in `finetune.train_loop`; the weights of the best
    validation F1 are restored."""
    from mlmlib.finetune import FinetuneConfig, _slice, train_loop

    if not isinstance(config, FinetuneConfig):
        raise TypeError("config must be a FinetuneConfig")

    def step_loss(idx, device):
        labels = {k: train.tensors[k][idx].to(device) for k in ("start_positions", "end_positions")}
        return model(**_slice(train.tensors, idx, device), **labels).loss

    loop = train_loop(model, len(train), config, step_loss,
                      lambda: evaluate_qa(model, validation, config.eval_batch_size, config.bf16), "f1",
                      progress=progress)
    best = next(r for r in loop.history if r["step"] == loop.best_step)
    return QAResult(best_f1=loop.best, best_step=loop.best_step, steps=loop.steps,
                    validation={"exact_match": best["val_exact_match"], "f1": best["val_f1"]},
                    history=loop.history, wall_s=loop.wall_s)
