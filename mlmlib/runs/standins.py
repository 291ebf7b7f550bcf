"""Tiny stand-ins for the hub resources a plan needs, built offline, to rehearse the plan end to end.

`build_standins(root, resources)` writes, for each resource the mirror at root lacks, a tiny copy in
the mirror layout (mlmlib.data.hub) with the hub copy's own schema: the same split names (GLUE's
hidden test labels as -1), columns, ClassLabel names, `idx` columns, model classes and tokenizers.
The real loaders read them unchanged, so `python -m mlmlib run --profile paper --rehearse` can walk
every code path of the paper plan (hub names, tokenizers, schemas) at tiny size without the network.

THESE ARE STAND-INS FOR REHEARSING CODE PATHS, NEVER RESULTS. Nothing trained or scored on them
says anything about the papers. What they are made of:

* Texts come from the embedded bundle only: Jane Austen's sentences and the amazon-food reviews.
* Sentiment labels (GLUE SST-2, IMDb, the root of SST's trees) are the reviews' own labels
  (5 stars = positive). Every other label is a deterministic function of how the row was built,
  balanced by row number, not a human judgement:
  - CoLA: acceptable = an Austen sentence as written; unacceptable = its words in a seeded shuffle.
  - MNLI (GLUE and multi_nli): entailment = a word window of the premise; neutral = a window of
    the next sentence; contradiction = "It is not true that" + a window of the premise.
  - RTE: entailment = a window of the first sentence; not_entailment = a window of another one.
  - QNLI: the question asks about a window of a sentence; entailment when the sentence given is
    that one, not_entailment when it is another.
  - MRPC and QQP: equivalent/duplicate = the text with one word dropped; not = another sentence.
  - Hate speech: a review sentence as a "tweet"; every fourth gets a word of better-profanity's
    list appended, and the label is whether the tweet holds a listed word.
* SST's PTB trees are a balanced binary bracketing of the tokens (no parser), node labels the
  rounded mean of the children's, leaves from VADER's score, the root from the review's label
  (every tenth root neutral, 2, so the neutral-dropping path runs). MultiNLI's parses are a fixed
  NP / VP bracketing (first words, then a head word and the rest), not a parse.
* SQuAD: contexts of four consecutive Austen sentences; each question is one sentence with its
  last words replaced by "what?", the answer those words, at their character offset.
* OpenWebText: paragraphs of Austen sentences and whole reviews.
* Models are randomly initialised (seeded): a tiny BERT (MLM head, pooler) with bert-base-uncased's
  real tokenizer (the vocabulary shipped with the MiniLM package), and tiny FSMT translators with
  a character-level vocabulary of English stand-in text (no BPE merges), the same on both sides (they
  "translate" into garbage, which is all a rehearsal needs).
* Vectors have the real dimensionality (300) over the stand-in texts' words and the task word
  lists; each word's vector is a seeded random direction, plus a shared direction for words of
  one sentiment polarity and one for words that share their first five letters, so the
  nearest-neighbour and task-score code finds some neighbours.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import numpy as np

from mlmlib.atomic import remove_dead_temps, temp_name
from mlmlib.runs.mirror import Resource

TRAIN_ROWS = 200  # enough for few-label subsets and a selection holdout once an overlay shrinks them
EVAL_ROWS = 60
CORPUS_TEXTS = 300
VECTOR_DIM = 300
SEED = 0

GLUE_LABELS = {
    "sst2": ["negative", "positive"], "cola": ["unacceptable", "acceptable"],
    "mrpc": ["not_equivalent", "equivalent"], "qqp": ["not_duplicate", "duplicate"],
    "mnli": ["entailment", "neutral", "contradiction"], "qnli": ["entailment", "not_entailment"],
    "rte": ["entailment", "not_entailment"],
}
GLUE_SPLITS = ("train", "validation", "test")
MNLI_SPLITS = ("train", "validation_matched", "validation_mismatched", "test_matched", "test_mismatched")
# Austen has train and validation only: the other evaluation splits read the validation sentences
# from these offsets, so no two splits share a row.
EVAL_OFFSETS = {"validation": 0, "validation_matched": 0, "validation_mismatched": 100, "test": 200,
                "test_matched": 200, "test_mismatched": 300}
NOT_TRUE = "It is not true that"


# ---------------------------------------------------------------- the embedded texts


@cache
def _sentences(split: str) -> tuple[str, ...]:
    """Austen sentences of 6 to 30 words; for an evaluation split, validation sentences from its offset."""
    from mlmlib.data.corpora import embedded_rows

    source = "train" if split == "train" else "validation"
    rows = [r["text"] for r in embedded_rows("austen.jsonl.xz") if r["split"] == source]
    chosen = [t for t in rows if 6 <= len(t.split()) <= 30 and "(" not in t and ")" not in t]
    return tuple(chosen[EVAL_OFFSETS.get(split, 0):])


@cache
def _reviews(split: str) -> tuple[tuple[str, int], ...]:
    """Amazon-food reviews of a split as (text, 1 if 5 stars else 0), alternating the two labels."""
    from mlmlib.data.corpora import embedded_rows

    source = {"unsupervised": "validation"}.get(split, split)
    rows = [r for r in embedded_rows("amazon-food.jsonl.xz") if r["split"] == source]
    great = [(_clean(r["text"]), 1) for r in rows if r["label"] == "great"]
    other = [(_clean(r["text"]), 0) for r in rows if r["label"] != "great"]
    return tuple(row for pair in zip(great, other) for row in pair)


def _clean(text: str) -> str:
    """A review without HTML tags or doubled spaces."""
    return " ".join(re.sub(r"<[^>]+>", " ", text).split())


def _first_sentence(text: str, max_words: int = 30) -> str:
    """The review's first sentence (two when the first is very short), at most max_words words."""
    parts = re.split(r"(?<=[.!?])\s+", text)
    sentence = parts[0] if len(parts[0].split()) >= 5 or len(parts) == 1 else " ".join(parts[:2])
    return " ".join(sentence.split()[:max_words])


def _tokens(text: str) -> list[str]:
    """Words (with an apostrophe inside) and punctuation marks; no brackets, which trees reserve."""
    return re.findall(r"\w+(?:'\w+)?|[^\w\s()]", text)


def _seed(*parts) -> int:
    """A stable seed from any values (Python's hash() changes between processes)."""
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big")


def _window(sentence: str, seed: int) -> str:
    """A contiguous run of about two thirds of the sentence's words, its start picked by seed."""
    words = sentence.split()
    size = max(3, 2 * len(words) // 3)
    start = seed % (len(words) - size + 1)
    return " ".join(words[start:start + size]).rstrip(".,;:!?")


def _drop_one(sentence: str, seed: int) -> str:
    """The sentence with one word (picked by seed) left out."""
    words = sentence.split()
    del words[seed % len(words)]
    return " ".join(words)


def _shuffled(sentence: str, seed: int) -> str:
    """The sentence's words in a seeded order other than the original."""
    words = sentence.split()
    order = np.random.default_rng(seed).permutation(len(words))
    if list(order) == sorted(order):
        order = order[::-1]
    return " ".join(words[i] for i in order)


def _as_question(sentence: str) -> str:
    """'Is it true that <sentence>?'"""
    body = sentence.rstrip(".!?;:,")
    return f"Is it true that {body[:1].lower()}{body[1:]}?"


# ---------------------------------------------------------------- datasets


def _features(columns: dict[str, str | list[str]]):
    """datasets Features, in order, from column -> dtype (a Value) or label names (a ClassLabel)."""
    from datasets import ClassLabel, Features, Value

    return Features({name: ClassLabel(names=kind) if isinstance(kind, list) else Value(kind)
                     for name, kind in columns.items()})


def _dataset_dict(splits: dict[str, dict[str, list]], features):
    """A DatasetDict with the columns in the order the features give them."""
    from datasets import Dataset, DatasetDict

    return DatasetDict({name: Dataset.from_dict({k: columns[k] for k in features}, features=features)
                        for name, columns in splits.items()})


def _size(split: str) -> int:
    return TRAIN_ROWS if split == "train" else EVAL_ROWS


def _hidden(split: str) -> bool:
    """GLUE's test splits hide their labels: the hub serves them as -1."""
    return split.startswith("test")


def _pair_row(task: str, split: str, i: int) -> tuple[str, str | None, int]:
    """Row i of a GLUE task: (first text, second text or None, label); see the module docstring."""
    pool = _sentences(split)
    s, following, far = pool[i], pool[i + 1], pool[(i + 37) % len(pool)]
    kind = i % len(GLUE_LABELS[task])
    seed = _seed(task, split, i)
    if task == "cola":
        short = " ".join(s.split()[:20])
        return (_shuffled(short, seed) if kind == 0 else short), None, kind
    if task == "mnli":
        hypothesis = {0: _window(s, seed), 1: _window(following, seed), 2: f"{NOT_TRUE} {_window(s, seed)}"}[kind]
        return s, hypothesis + ".", kind
    if task == "rte":
        return s, (_window(s, seed) if kind == 0 else _window(far, seed)) + ".", kind
    if task == "qnli":
        question = f"Where is it said that {_window(s, seed)}?"
        return question, (s if kind == 0 else far), kind
    if task == "mrpc":
        return s, (following if kind == 0 else _drop_one(s, seed)), kind
    if task == "qqp":
        return _as_question(s), _as_question(far if kind == 0 else _drop_one(s, seed)), kind
    raise ValueError(f"no pair row for task {task!r}")


def _glue(task: str):
    """GLUE's copy of one task: its text columns, label, idx; test labels -1."""
    from mlmlib.data.tasks import HUB_TASKS

    spec = HUB_TASKS[task]
    text_columns = [c for c in (spec.text, spec.text_pair) if c]
    splits = {}
    for split in (MNLI_SPLITS if task == "mnli" else GLUE_SPLITS):
        n = _size(split)
        if task == "sst2":
            # tokenised and lower-cased, as GLUE has SST's sentences (the trees' leaves)
            rows = [(" ".join(_tokens(_first_sentence(t))).lower(), None, label) for t, label in _reviews(split)[:n]]
        else:
            rows = [_pair_row(task, split, i) for i in range(n)]
        columns = {c: [row[k] for row in rows] for k, c in enumerate(text_columns)}
        columns["label"] = [-1 if _hidden(split) else row[2] for row in rows]
        columns["idx"] = list(range(n))
        splits[split] = columns
    return _dataset_dict(splits, _features({**dict.fromkeys(text_columns, "string"), "label": GLUE_LABELS[task],
                                            "idx": "int32"}))


def _imdb():
    """IMDb: text, label (neg/pos) in train and test; an unlabelled `unsupervised` split (label -1)."""
    splits = {}
    for split in ("train", "test", "unsupervised"):
        rows = _reviews(split)[:_size(split)]
        splits[split] = {"text": [t for t, _ in rows],
                         "label": [-1 if split == "unsupervised" else label for _, label in rows]}
    return _dataset_dict(splits, _features({"text": "string", "label": ["neg", "pos"]}))


@cache
def _profanity() -> tuple[str, ...]:
    from mlmlib.data.wordlists import load_word_list

    return tuple(sorted(load_word_list("profanity")))


def _tweets():
    """The hate speech set: label then tweet, as the hub orders them; its test labels are hidden (-1)."""
    listed = set(_profanity())
    splits = {}
    for split in ("train", "test"):
        tweets = []
        for i, (text, _) in enumerate(_reviews(split)[:_size(split)]):
            tweet = f"@user {_first_sentence(text, 25)}"
            if i % 4 == 0:
                tweet += f" {_profanity()[_seed('tweet', split, i) % len(listed)]}"
            tweets.append(tweet)
        labels = [int(any(w.lower() in listed for w in re.findall(r"[\w'-]+", t))) for t in tweets]
        splits[split] = {"tweet": tweets, "label": [-1] * len(tweets) if split == "test" else labels}
    return _dataset_dict(splits, _features({"label": ["no-hate-speech", "hate-speech"], "tweet": "string"}))


def _openwebtext():
    """OpenWebText: one split, train, of `text`: Austen paragraphs of six sentences and whole reviews."""
    sentences = _sentences("train")[5000:]
    texts = []
    for i in range(CORPUS_TEXTS):
        if i % 2 == 0:
            texts.append(" ".join(sentences[3 * i:3 * i + 6]))
        else:
            texts.append(_reviews("train")[i][0])
    return _dataset_dict({"train": {"text": texts}}, _features({"text": "string"}))


# ---------------------------------------------------------------- parsed tests


@cache
def _vader() -> dict[str, float]:
    from mlmlib.data.wordlists import load_word_list

    return load_word_list("vader")


def _sentiment(score: float) -> int:
    """A VADER score on SST's 0..4 scale."""
    return 0 if score <= -2 else 1 if score < 0 else 2 if score == 0 else 3 if score < 2 else 4


def _sst_tree(tokens: list[str], root: int) -> str:
    """A balanced binary PTB tree over the tokens with SST's sentiment labels (see the module docstring)."""

    def build(part: list[str]) -> tuple[str, int]:
        if len(part) == 1:
            label = _sentiment(_vader().get(part[0].lower(), 0.0))
            return f"({label} {part[0]})", label
        left, a = build(part[:len(part) // 2])
        right, b = build(part[len(part) // 2:])
        label = round((a + b) / 2)
        return f"({label} {left} {right})", label

    text, _ = build(tokens)
    return f"({root}{text[text.index(' '):]}"  # the root's label is the sentence's


def _sst_ptb():
    """SST's `ptb` config: one column, ptb_tree, in train, validation and test."""
    splits = {}
    for split in GLUE_SPLITS:
        trees = []
        for i, (text, label) in enumerate(_reviews(split)[:_size(split)]):
            root = 2 if i % 10 == 9 else 4 if label else 0
            trees.append(_sst_tree(_tokens(_first_sentence(text)), root))
        splits[split] = {"ptb_tree": trees}
    return _dataset_dict(splits, _features({"ptb_tree": "string"}))


_DETERMINERS = {"a", "an", "the", "this", "that", "these", "those", "his", "her", "their", "my", "our"}


def _tag(token: str) -> str:
    """A stand-in part-of-speech tag: punctuation as itself, determiners DT, every other word NN."""
    if not token[0].isalnum():
        return "." if token in ".!?" else token
    return "DT" if token.lower() in _DETERMINERS else "NN"


def _parses(sentence: str) -> tuple[str, str]:
    """(parse, binary parse) in MultiNLI's formats, over a fixed NP / VP bracketing of the tokens."""
    tokens = _tokens(sentence)
    end = tokens[-1] if not tokens[-1][0].isalnum() else None
    words = tokens[:-1] if end else tokens
    split = max(1, min(3, len(words) // 3))

    def leaf(token: str, tag: str | None = None) -> str:
        return f"({tag or _tag(token)} {token})"

    subject = f"(NP {' '.join(leaf(t) for t in words[:split])})"
    head, rest = words[split:split + 1], words[split + 1:]
    verb = " ".join(leaf(t, "VB") for t in head)
    predicate = f"(VP {verb}{' (NP ' + ' '.join(leaf(t) for t in rest) + ')' if rest else ''})" if head else ""
    closing = f" {leaf(end)}" if end else ""
    parse = f"(ROOT (S {subject}{' ' + predicate if predicate else ''}{closing}))"
    groups = [words[:split], head + rest]
    binary = " ".join(f"( {' '.join(g)} )" if len(g) > 1 else g[0] for g in groups if g)
    return parse, f"( ( {binary} ){' ' + end if end else ''} )"


_MULTI_NLI_COLUMNS = {"promptID": "int32", "pairID": "string", "premise": "string",
                      "premise_binary_parse": "string", "premise_parse": "string", "hypothesis": "string",
                      "hypothesis_binary_parse": "string", "hypothesis_parse": "string", "genre": "string",
                      "label": GLUE_LABELS["mnli"]}


def _multi_nli():
    """MultiNLI with its parses: train, validation_matched, validation_mismatched; the pairs are GLUE
    MNLI's stand-in rows, so its matched validation is the same set of pairs, as on the hub."""
    splits = {}
    for split in MNLI_SPLITS[:3]:
        rows = [_pair_row("mnli", split, i) for i in range(_size(split))]
        columns: dict[str, list] = {c: [] for c in _MULTI_NLI_COLUMNS}
        for i, (premise, hypothesis, label) in enumerate(rows):
            (p_parse, p_binary), (h_parse, h_binary) = _parses(premise), _parses(hypothesis)
            prompt = 10_000 * MNLI_SPLITS.index(split) + i
            values = [prompt, f"{prompt}{'enc'[label]}", premise, p_binary, p_parse, hypothesis, h_binary,
                      h_parse, "fiction" if split != "validation_mismatched" else "letters", label]
            for column, value in zip(columns, values):
                columns[column].append(value)
        splits[split] = columns
    return _dataset_dict(splits, _features(_MULTI_NLI_COLUMNS))


# ---------------------------------------------------------------- SQuAD


def _squad_row(split: str, i: int) -> dict:
    """One SQuAD question on a context of four sentences; the answer is the asked sentence's last words."""
    pool = _sentences(split)[2000 if split == "train" else 400:]
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


def _squad():
    """SQuAD v1.1: id, title, context, question, answers {text, answer_start}; train and validation."""
    from datasets import Features, List, Value

    features = Features({"id": Value("string"), "title": Value("string"), "context": Value("string"),
                         "question": Value("string"),
                         "answers": {"text": List(Value("string")), "answer_start": List(Value("int32"))}})
    splits = {}
    for split in ("train", "validation"):
        rows = [_squad_row(split, i) for i in range(_size(split))]
        splits[split] = {c: [r[c] for r in rows] for c in features}
    return _dataset_dict(splits, features)


# ---------------------------------------------------------------- models


def _tiny_bert(folder: Path) -> None:
    """A tiny, seeded BERT with bert-base-uncased's vocabulary and real tokenizer.

    Saved as the hub's checkpoint is: BertForPreTraining's weights (the pooler and the next-sentence
    head beside the MLM head) under a config naming BertForMaskedLM, so a classifier loaded from it
    gets a pooler, and an MLM leaves the same weights unused, as with the real checkpoint.
    """
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForPreTraining

    from mlmlib.minilm import minilm_dir

    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()))
    tokenizer.model_max_length = 512  # bert-base-uncased's
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model = BertForPreTraining(config)
    model.save_pretrained(folder)
    config_file = folder / "config.json"  # save_pretrained names the class saved; the hub's names BertForMaskedLM
    config_file.write_text(json.dumps({**json.loads(config_file.read_text()), "architectures": ["BertForMaskedLM"]},
                                      indent=2, sort_keys=True) + "\n")
    tokenizer.save_pretrained(folder)


@cache
def _fsmt_vocabulary() -> tuple[dict[str, int], tuple[tuple[str, str], ...]]:
    """FSMT's vocabulary (specials first, as fairseq numbers them) and no merges: every word is cut
    into its characters, the last one ending in </w>. The characters are those of stand-in text
    tokenised as FSMTTokenizer tokenises (Moses, escaped); a character-level vocabulary is all a
    random translator needs, and it spares us a BPE learner of our own."""
    from sacremoses import MosesTokenizer

    moses = MosesTokenizer(lang="en")
    texts = [*_sentences("train")[:150], *(t for t, _ in _reviews("train")[:30])]
    words = {w for t in texts for w in moses.tokenize(t, aggressive_dash_splits=True, escape=True)}
    symbols = {s for w in words for s in (*w[:-1], w[-1] + "</w>", w[-1])}
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for symbol in sorted(symbols):
        vocab.setdefault(symbol, len(vocab))
    return vocab, ()


def _tiny_fsmt(name: str, folder: Path) -> None:
    """A tiny, seeded FSMT translator for a wmt19 name (its language pair from the name) with its tokenizer."""
    import torch
    from transformers import FSMTConfig, FSMTForConditionalGeneration, FSMTTokenizer

    langs = name.rsplit("-", 2)[-2:]
    vocab, merges = _fsmt_vocabulary()
    folder.mkdir(parents=True, exist_ok=True)
    for file in ("vocab-src.json", "vocab-tgt.json"):
        (folder / file).write_text(json.dumps(vocab, ensure_ascii=False, indent=1))
    (folder / "merges.txt").write_text("".join(f"{a} {b}\n" for a, b in merges))
    tokenizer = FSMTTokenizer(langs=langs, src_vocab_file=str(folder / "vocab-src.json"),
                              tgt_vocab_file=str(folder / "vocab-tgt.json"), merges_file=str(folder / "merges.txt"))
    config = FSMTConfig(langs=langs, src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), d_model=16,
                        encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                        encoder_ffn_dim=32, decoder_ffn_dim=32, architectures=["FSMTForConditionalGeneration"])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model = FSMTForConditionalGeneration(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


# ---------------------------------------------------------------- vectors


def _vector_words() -> list[str]:
    """The stand-in texts' lower-cased words and the task word lists' words, sorted."""
    from mlmlib.data.wordlists import load_word_list

    # the ranges the recipes draw from (openwebtext's paragraphs reach furthest)
    texts = [*_sentences("train")[:6000], *_sentences("validation"),
             *(t for split in GLUE_SPLITS for t, _ in _reviews(split)[:CORPUS_TEXTS])]
    words = {w.lower() for t in texts for w in re.findall(r"[A-Za-z]+(?:'[a-z]+)?", t)}
    for name in ("vader", "bing", "profanity"):
        words |= set(load_word_list(name))
    return sorted(words)


def _unit_rows(name: str, what: str, n: int) -> np.ndarray:
    """n seeded random unit vectors (rows)."""
    m = np.random.default_rng(_seed(name, what)).standard_normal((n, VECTOR_DIM))
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _vectors(name: str, file: Path) -> None:
    """gensim KeyedVectors of dimension 300: a word's own seeded direction, plus shared ones (see the docstring)."""
    from gensim.models import KeyedVectors

    from mlmlib.data.wordlists import load_word_list

    polarity = {w: np.sign(s) for w, s in load_word_list("bing").items()}
    polarity.update({w: np.sign(s) for w, s in _vader().items() if s})
    words = _vector_words()
    prefixes, prefix_of = np.unique([w[:5] for w in words], return_inverse=True)
    long_enough = np.array([len(w) >= 5 for w in words])[:, None]
    sign = np.array([polarity.get(w, 0.0) for w in words])[:, None]
    poles = _unit_rows(name, "polarity", 2)
    matrix = (_unit_rows(name, "words", len(words))
              + 1.5 * long_enough * _unit_rows(name, "prefixes", len(prefixes))[prefix_of]
              + 0.7 * (sign > 0) * poles[0] + 0.7 * (sign < 0) * poles[1])
    kv = KeyedVectors(vector_size=VECTOR_DIM)
    kv.add_vectors(words, matrix.astype(np.float32))
    kv.save(str(file), separately=[])  # one file: the rename below makes it whole at once


# ---------------------------------------------------------------- building


def _dataset_recipe(make: Callable) -> Callable[[Resource, Path], None]:
    return lambda resource, partial: make().save_to_disk(str(partial))


RECIPES: dict[tuple[str, str, str | None], Callable[[Resource, Path], None]] = {
    **{("dataset", "nyu-mll/glue", task): _dataset_recipe(lambda task=task: _glue(task)) for task in GLUE_LABELS},
    ("dataset", "stanfordnlp/imdb", None): _dataset_recipe(_imdb),
    ("dataset", "tweets-hate-speech-detection/tweets_hate_speech_detection", None): _dataset_recipe(_tweets),
    ("dataset", "Skylion007/openwebtext", None): _dataset_recipe(_openwebtext),
    ("dataset", "stanfordnlp/sst", "ptb"): _dataset_recipe(_sst_ptb),
    ("dataset", "nyu-mll/multi_nli", None): _dataset_recipe(_multi_nli),
    ("dataset", "rajpurkar/squad", None): _dataset_recipe(_squad),
    ("model", "bert-base-uncased", None): lambda resource, partial: _tiny_bert(partial),
    **{("model", name, None): lambda resource, partial: _tiny_fsmt(resource.name, partial)
       for name in ("facebook/wmt19-en-de", "facebook/wmt19-de-en")},
    **{("vectors", name, None): lambda resource, partial: _vectors(resource.name, partial)
       for name in ("word2vec-google-news-300", "glove-wiki-gigaword-300")},
}


def _key(resource: Resource) -> tuple[str, str, str | None]:
    return resource.kind, resource.name, resource.config


def recipe_labels() -> list[str]:
    """The resources a stand-in can be built for, as labels ('dataset nyu-mll/glue/sst2', ...)."""
    return [Resource(kind, name, config).label for kind, name, config in RECIPES]


def build_standins(root: Path, resources: list[Resource]) -> list[str]:
    """Write a tiny stand-in, in the mirror layout under root, for each resource the mirror lacks.

    Every resource is checked for a recipe before anything is built (ValueError naming it and the
    recipes there are). Each is built under a temporary name beside its target and renamed when
    whole, as `mirror.fetch` does, so an interrupted build never leaves a copy that looks complete.
    Returns the labels of what was built.
    """
    root = Path(root)
    unknown = [r.label for r in resources if _key(r) not in RECIPES]
    if unknown:
        raise ValueError(f"no stand-in recipe for {', '.join(unknown)}; recipes: {', '.join(recipe_labels())}")
    built = []
    with _quiet():
        for resource in resources:
            if resource.present(root):
                continue
            _build(resource, root)
            built.append(resource.label)
    return built


@contextmanager
def _quiet():
    """No progress bars from datasets and transformers for copies of a few dozen rows; restored after."""
    import datasets
    from transformers.utils import logging as transformers_logging

    bars = (datasets.is_progress_bar_enabled(), transformers_logging.is_progress_bar_enabled())
    datasets.disable_progress_bars()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bars[0]:
            datasets.enable_progress_bars()
        if bars[1]:
            transformers_logging.enable_progress_bar()


def _build(resource: Resource, root: Path) -> None:
    target = resource.target(root)
    partial = temp_name(target, "partial")
    partial.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_temps(target, "partial")  # what a killed build left
    _remove(partial)
    try:
        RECIPES[_key(resource)](resource, partial)
    except BaseException:
        _remove(partial)
        raise
    if target.is_dir():
        shutil.rmtree(target)  # an incomplete copy (a model folder that lacked a part)
    partial.rename(target)


def _remove(path: Path) -> None:
    """Delete a file or a folder, if there is one."""
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
