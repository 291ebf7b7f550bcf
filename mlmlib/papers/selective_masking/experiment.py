"""Paper C's experiment: selective vs random masking for continued MLM, then fine-tuning.

The pieces (task scores in `lexicons`, calibrated word probabilities in `selective`, masking in
`masking`) meet here on a real tokenized corpus:

1. `tokenized_corpus`: the task's unlabelled text, cut to length (`shorten_texts`) and tokenized
   once, each position tagged with the id of its whole word in the corpus' word vocabulary.
2. `score_corpus`: every word type scored against a small task word list with word vectors
   (a sample of the lexicon drawn with a seed, or the whole lexicon).
3. `prepare_arms`: per-position masking probabilities (N, L) for each arm, calibrated so every
   arm masks the same expected share of tokens; all checks happen here, before any training.
4. `continued_mlm` per (arm, seed), cached; `finetune_arm` with few and with all labels.
5. `realised_rates` draws masks with the real `mask_tokens`; `masking_overhead` times a training
   step with random vs selective masking in one interleaved run.

Arms: "scratch" (no pretraining at all: a randomly initialised encoder of the base's size, the
floor every pretrained arm should clear), "none" (the base, no continued MLM), "random"
(uniform whole-word masking at the target rate),
"random-count" (Train No Evil's control: as many masked words per sentence as a selective draw
of `count_match`), and the selective functions "step", "linear", "exponential".
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch

from mlmlib import cache
from mlmlib.masking import mask_tokens
from mlmlib.papers.selective_masking import selective as sel
from mlmlib.papers.selective_masking.config import (
    LABEL_REGIMES,
    TRUNCATIONS,
    MaskingConfig,
    WordList,
)
from mlmlib.papers.selective_masking.lexicons import TaskScores, task_scores
from mlmlib.tokenize import encode, encode_split

SELECTIVE = sel.FUNCTIONS  # ("step", "linear", "exponential")
ARMS = ("scratch", "none", "random", "random-count", *SELECTIVE)


def check_arms(arms) -> list[str]:
    """Validate a list of arm names; returns it as a list."""
    if isinstance(arms, str) or not arms:
        raise ValueError(f"arms must be a non-empty list of names from {ARMS}, got {arms!r}")
    bad = [a for a in arms if a not in ARMS]
    if bad:
        raise ValueError(f"arms: unknown arm(s) {bad}; allowed: {ARMS}")
    return list(arms)


# ---------------------------------------------------------------- the corpus

# What a text longer than max_length keeps. "head": its first pieces (BERT's usual cut, and
# the default). "head+tail": its first quarter and last three quarters of pieces, cut at
# whole words (Sun et al. 2019 found 128 + 382 of 512 best for long reviews; the papers do
# not say how they cut). Our reconstruction: switchable per run (config.TRUNCATIONS).

def shorten_texts(tokenizer, texts: list[str], max_length: int, truncation: str = "head") -> list[str]:
    """Texts that fit in `max_length` tokens (special tokens included) as `truncation` says.

    "head" returns the texts unchanged (the tokenizer cuts their tail when it encodes them).
    "head+tail" joins the whole words of the first quarter of the pieces a text may keep to those
    of its last three quarters, so a review keeps its opening and its verdict at the same cost.
    """
    if truncation not in TRUNCATIONS:
        raise ValueError(f"truncation must be one of {TRUNCATIONS}, got {truncation!r}")
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings, not one string")
    budget = max_length - tokenizer.num_special_tokens_to_add()
    if budget < 4:
        raise ValueError(f"max_length={max_length} leaves {budget} word pieces: give at least "
                         f"{tokenizer.num_special_tokens_to_add() + 4}")
    if truncation == "head":
        return list(texts)
    # every piece of every text is read to find where to cut: verbose=False keeps transformers
    # from warning that a text is longer than the model takes, which is the point here
    enc = tokenizer(list(texts), add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    out = []
    for b, text in enumerate(texts):
        words, offsets = enc.word_ids(b), enc["offset_mapping"][b]
        n = len(words)
        if n <= budget:
            out.append(text)
            continue
        cut = budget // 4  # head: pieces [0, cut), rounded down to a whole word
        while cut > 0 and words[cut] == words[cut - 1]:
            cut -= 1
        start = n - (budget - budget // 4)  # tail: pieces [start, n), rounded up to a whole word
        while start < n and words[start] == words[start - 1]:
            start += 1
        head = text[:offsets[cut - 1][1]] if cut else ""
        tail = text[offsets[start][0]:] if start < n else ""
        out.append(f"{head} {tail}".strip())
    return out


@dataclass
class TokenizedCorpus:
    """A tokenized corpus whose positions know their word type (whole word, all pieces)."""

    data: dict[str, torch.Tensor]  # input_ids, attention_mask, special_tokens_mask, word_ids (N, L)
    words: list[str]               # the corpus' word types (pieces joined, as the tokenizer normalises)
    word_type: torch.Tensor        # (N, L) index into `words`, -1 on special / pad
    token_counts: np.ndarray       # (len(words),) token positions per word type

    @property
    def n_tokens(self) -> int:
        """Positions that may be masked (not special, not padding)."""
        return int((self.word_type >= 0).sum())


def encode_task_split(tokenizer, split, max_length: int, truncation: str = "head") -> dict[str, torch.Tensor]:
    """A labelled split (datasets.Dataset or dict of columns) cut as `truncation` says, then tokenized."""
    columns = split.to_dict() if hasattr(split, "column_names") else dict(split)
    columns["text"] = shorten_texts(tokenizer, list(columns["text"]), max_length, truncation)
    return encode_split(tokenizer, columns, max_length)


def tokenized_corpus(tokenizer, texts: list[str], max_length: int = 64,
                     truncation: str = "head") -> TokenizedCorpus:
    """Tokenize texts once (cut as `truncation` says) and tag every position with its whole word's type."""
    if not texts:
        raise ValueError("texts is empty: give the task's unlabelled training text")
    data = encode(tokenizer, shorten_texts(tokenizer, list(texts), max_length, truncation),
                  max_length=max_length)
    word_ids = data["word_ids"]
    index: dict[str, int] = {}
    word_type = torch.full_like(word_ids, -1)
    # One Python pass over the corpus, once; every later step only indexes tensors.
    for b in range(word_ids.shape[0]):
        pieces = tokenizer.convert_ids_to_tokens(data["input_ids"][b].tolist())
        row = word_ids[b].tolist()
        t, length = 0, len(row)
        while t < length:
            w = row[t]
            if w < 0:
                t += 1
                continue
            end = t
            while end < length and row[end] == w:
                end += 1
            word = pieces[t] + "".join(p.removeprefix("##") for p in pieces[t + 1:end])
            word_type[b, t:end] = index.setdefault(word, len(index))
            t = end
    counts = np.bincount(word_type[word_type >= 0].numpy(), minlength=len(index)).astype(np.float64)
    return TokenizedCorpus(data, list(index), word_type, counts)


def small_word_list(word_list: dict[str, float], size: int, vectors, seed: int = 0) -> list[str]:
    """A sample of `size` list words with a vector, drawn with `seed` (the paper's small list); 0: all."""
    from mlmlib.data.wordlists import sample_words

    if not word_list:
        raise ValueError("word_list is empty: give at least one task word")
    with_vector = [w for w in word_list if w in vectors.index]
    if not with_vector:
        example = list(word_list)[:3]
        raise ValueError(f"word_list: none of its {len(word_list)} words (e.g. {example}) has a vector")
    if isinstance(size, int) and size > len(with_vector):
        raise ValueError(f"word_list_size={size} is more than the {len(with_vector)} words of the "
                         "list that have a vector: give a smaller size, or 0 for the whole list")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ValueError(f"word_list_size must be an int >= 0 (0: the whole list), got {size!r}")
    return sample_words(with_vector, size, seed)


def score_corpus(corpus: TokenizedCorpus, word_list: WordList, config: MaskingConfig,
                 vectors=None) -> tuple[TaskScores, list[str]]:
    """Task score of every word type of the corpus; returns (scores, the list words used)."""
    from mlmlib.data import load_vectors, load_word_list

    vectors = vectors if vectors is not None else load_vectors(config.vectors)
    words = small_word_list(load_word_list(word_list.name), word_list.size, vectors, word_list.seed)
    return task_scores(corpus.words, words, vectors, method=config.score_method), words


# ---------------------------------------------------------------- the arms


@dataclass
class ArmMasking:
    """What an arm trains on: per-position probabilities, or pre-drawn masks (random-count)."""

    arm: str
    data: dict[str, torch.Tensor] | None  # the MLM data with "mask_prob" (N', L); None for "none"
    expected_rate: float                  # expected masked share of maskable tokens
    scale: float = float("nan")           # the calibrated c of min(1, c * f(s)); nan if none
    word_probs: np.ndarray | None = None  # per word type (selective arms)
    key: dict | None = None               # what defines this masking (for the model cache)


def _selective_word_probs(function: str, corpus: TokenizedCorpus, scores: TaskScores,
                          config: MaskingConfig) -> sel.WordProbs:
    """Calibrated per-word-type probabilities; the counts are token positions: a token rate."""
    counts = dict(zip(corpus.words, corpus.token_counts.tolist()))
    return sel.build_word_probs(counts, scores, function, config.target_rate, **config.function_params())


def _count_matched_data(probs: torch.Tensor, corpus: TokenizedCorpus, copies: int,
                        generator: torch.Generator) -> dict[str, torch.Tensor]:
    """`copies` of the corpus, each with a random whole-word mask of a selective draw's size per sentence.

    The masks are drawn here, once (static, like BERT's duplicated data), and passed as 0/1
    probabilities so that `mask_tokens` keeps exactly them and adds the 80/10/10 replacement.
    """
    word_ids = corpus.data["word_ids"]
    masks = []
    for _ in range(copies):
        chosen = sel.sample_word_masks(probs, word_ids, generator)
        masks.append(sel.matched_count_masks(chosen, word_ids, generator).float())
    data = {k: v.repeat(copies, 1) for k, v in corpus.data.items()}
    data["mask_prob"] = torch.cat(masks)
    return data


def prepare_arms(arms, corpus: TokenizedCorpus, scores: TaskScores | None, config: MaskingConfig,
                 seed: int = 0, word_list: WordList | None = None) -> dict[str, ArmMasking]:
    """Masking of every arm, calibrated to the same expected rate; raises before any training.

    The selective and random-count arms need the task `scores` and the `word_list` they came from
    (it keys the continued-MLM cache).
    """
    arms = check_arms(arms)
    needs_scores = any(a in SELECTIVE or a == "random-count" for a in arms)
    if needs_scores and (scores is None or word_list is None):
        raise ValueError("scores: the selective and random-count arms need the task scores and "
                         "their word list (score_corpus)")
    listed = {"word_list": word_list.name, "word_list_size": word_list.size,
              "word_list_seed": word_list.seed} if word_list else {}
    valid = corpus.word_type >= 0
    out: dict[str, ArmMasking] = {}
    word_probs: dict[str, sel.WordProbs] = {}
    for function in {*(a for a in arms if a in SELECTIVE), *([config.count_match] if "random-count" in arms else [])}:
        word_probs[function] = _selective_word_probs(function, corpus, scores, config)

    def position_probs(function: str) -> torch.Tensor:
        # corpus word-type ids -> the precomputed per-type table: one gather, no Python loop
        return sel.word_mask_probs(corpus.word_type, word_probs[function].probs)

    for arm in arms:
        if arm in ("scratch", "none"):
            out[arm] = ArmMasking(arm, None, 0.0)
        elif arm == "random":
            probs = sel.matched_random_probs(corpus.word_type, config.target_rate)
            out[arm] = ArmMasking(arm, corpus.data | {"mask_prob": probs}, config.target_rate, 1.0,
                                  key={"target_rate": config.target_rate})
        elif arm == "random-count":
            probs = position_probs(config.count_match)
            gen = torch.Generator().manual_seed(seed)
            data = _count_matched_data(probs, corpus, config.count_copies, gen)
            rate = float(data["mask_prob"][data["word_ids"] >= 0].mean())
            out[arm] = ArmMasking(arm, data, rate, key=asdict(config) | listed | {"seed": seed})
        else:
            wp = word_probs[arm]
            probs = position_probs(arm)
            out[arm] = ArmMasking(arm, corpus.data | {"mask_prob": probs},
                                  float(probs[valid].mean()), wp.scale, wp.probs, key=asdict(config) | listed)
    return out


def realised_rates(maskings: dict[str, ArmMasking], *, mask_id: int, vocab_size: int,
                   seed: int = 0, repeats: int = 3, batch_size: int = 512) -> list[dict]:
    """Draw masks over the whole corpus with the real `mask_tokens`; one row per arm."""
    rows = []
    for arm, m in maskings.items():
        if m.data is None:
            continue
        gen = torch.Generator().manual_seed(seed)
        data, masked, eligible = m.data, 0, 0
        per_repeat = []
        for _ in range(repeats):
            masked_r = 0
            for start in range(0, data["input_ids"].shape[0], batch_size):
                sl = slice(start, start + batch_size)
                special = data["special_tokens_mask"][sl].bool() | ~data["attention_mask"][sl].bool()
                _, m_ = mask_tokens(data["input_ids"][sl], data["mask_prob"][sl], generator=gen,
                                    mask_id=mask_id, vocab_size=vocab_size, special_mask=special,
                                    word_ids=data["word_ids"][sl])
                masked_r += int(m_.sum())
            n = int((data["word_ids"] >= 0).sum())
            per_repeat.append(masked_r / n)
            masked, eligible = masked + masked_r, eligible + n
        rows.append({"arm": arm, "expected_rate": m.expected_rate, "realised_rate": masked / eligible,
                     "realised_sd": float(np.std(per_repeat)), "tokens": eligible // repeats,
                     "scale": m.scale})
    return rows


def example_words(corpus: TokenizedCorpus, scores: TaskScores, maskings: dict[str, ArmMasking],
                  words: list[str]) -> list[dict]:
    """Score and per-arm masking probability of chosen words (those present in the corpus)."""
    score = scores.as_dict()
    index = {w: i for i, w in enumerate(corpus.words)}
    rows = []
    for w in words:
        if w not in index:
            continue
        row = {"word": w, "score": float(score[w]), "count": int(corpus.token_counts[index[w]])}
        for arm, m in maskings.items():
            if m.word_probs is not None:
                row[arm] = float(m.word_probs[index[w]])
            elif arm == "random":
                row[arm] = m.expected_rate
        rows.append(row)
    return rows


# ---------------------------------------------------------------- training


def continued_mlm(base_model, masking: ArmMasking, config, *, mask_id: int, num_special: int,
                  seed: int, cache_key: dict | None = None, progress: bool | None = None,
                  checkpoint_dir: Path | None = None):
    """A copy of the base model after continued MLM with the arm's masking; cached by `cache_key`.

    `config` is a `PretrainConfig` (its seed is replaced by `seed`, whole-word masking forced).
    Returns (model, history); "none" returns the base model itself and an empty history. With
    `checkpoint_dir` and config.checkpoint_every > 0 the training is resumable from there.
    """
    import copy

    from mlmlib.models import load_model, save_model, saved_files
    from mlmlib.pretrain import pretrain

    if masking.data is None:
        return base_model, []
    config = replace(config, seed=seed, whole_word=True)

    def build(folder: Path) -> None:
        model = copy.deepcopy(base_model)
        resume = checkpoint_dir if config.checkpoint_every else None
        history = pretrain(model, masking.data, config, mask_id=mask_id, num_special=num_special,
                           progress=progress, checkpoint_dir=resume)
        save_model(model, folder / "model")
        (folder / "history.json").write_text(json.dumps(history))

    if cache_key is None:  # no cache: train in a throwaway folder
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp))
            return load_model(Path(tmp) / "model"), json.loads((Path(tmp) / "history.json").read_text())
    key = {**cache_key, "arm": masking.arm, "masking": masking.key, "seed": seed,
           "pretrain": asdict(config)}
    folder = cache.cached("selective-mlm", key, build, code_of=__name__,
                          expect=(*saved_files(), "history.json"))
    return load_model(folder / "model"), json.loads((folder / "history.json").read_text())


def arm_folder(checkpoint_dir: Path | None, kind: str, arm: str, word_list: str) -> Path | None:
    """The folder of one (arm, word list)'s checkpoints inside `checkpoint_dir` (None: none)."""
    if checkpoint_dir is None:
        return None
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{kind}-{arm}-{word_list}")
    return Path(checkpoint_dir) / name


def majority_scores(labels) -> dict[str, float]:
    """Test accuracy and macro-F1 of always answering the majority class: each metric's floor."""
    from mlmlib.finetune import metrics_from_probs

    labels = np.asarray(labels, dtype=np.int64).ravel()
    counts = np.bincount(labels)
    probs = np.zeros((len(labels), max(2, len(counts))))
    probs[:, counts.argmax()] = 1.0  # the same metric code as every arm's test scores
    scores = metrics_from_probs(probs, labels)
    return {"majority_accuracy": scores["accuracy"], "majority_f1": scores["f1"]}


def few_label_indices(labels: torch.Tensor, size: int, seed: int) -> torch.Tensor:
    """A seeded, class-stratified subset of `size` examples (the same for every arm of a seed)."""
    n = labels.shape[0]
    if not isinstance(size, int) or not 0 < size <= n:
        raise ValueError(f"few_labels must be an int in [1, {n}], got {size!r}")
    gen = torch.Generator().manual_seed(seed)
    picked = []
    classes = labels.unique()
    for i, c in enumerate(classes):
        pool = (labels == c).nonzero().squeeze(1)
        share = round(size * len(pool) / n) if i < len(classes) - 1 else size - sum(len(p) for p in picked)
        picked.append(pool[torch.randperm(len(pool), generator=gen)[:share]])
    return torch.cat(picked).sort().values


def classifier_from(mlm_model, num_labels: int, seed: int, *, pretrained: bool = True,
                    pooling: str = "mean"):
    """A BERT classifier of the masked LM's size; its encoder copied from it unless `pretrained=False`."""
    from mlmlib.models import bert_classifier, size_of

    return bert_classifier(size_of(mlm_model.config), num_labels, from_encoder=mlm_model if pretrained else None,
                           seed=seed, pooling=pooling)


def finetune_arm(mlm_model, train: dict, validation: dict, test: dict, config, seed: int,
                 progress: bool | None = None, *, pretrained: bool = True, pooling: str = "mean") -> dict:
    """Fine-tune a classifier from the arm's encoder (or a fresh one); best on validation, scored on test."""
    from mlmlib.finetune import evaluate, finetune

    num_labels = int(max(train["labels"].max(), validation["labels"].max())) + 1
    model = classifier_from(mlm_model, num_labels, seed, pretrained=pretrained, pooling=pooling)
    result = finetune(model, train, validation, replace(config, seed=seed), progress=progress)
    scores = evaluate(model, test)
    return {"val_accuracy": result.validation["accuracy"], "accuracy": scores["accuracy"],
            "f1": scores["f1"], "steps": result.steps, "finetune_s": result.wall_s}


# ---------------------------------------------------------------- the overhead of selective masks


def masking_overhead(model, maskings: dict[str, ArmMasking], config, *, mask_id: int,
                     num_special: int, steps: int = 20, seed: int = 0) -> dict:
    """Median time of a full training step (masking + forward + backward + update) per arm.

    One interleaved run: each step trains the same model once per arm on the same batch, so
    machine load hits every arm alike. Uses the training loop's own batch builder.
    """
    import copy

    from mlmlib.pretrain import BatchSampler, Objective, _batch, param_groups

    arms = [a for a, m in maskings.items() if m.data is not None and a != "random-count"]
    if not arms:
        raise ValueError("maskings: no arm with a masking to time")
    config = replace(config, whole_word=True, seed=seed)
    model = copy.deepcopy(model).train()
    vocab_size = model.get_input_embeddings().weight.shape[0]
    objective = Objective(model, config)
    optimizer = torch.optim.AdamW(param_groups(model, 0.01), lr=config.lr)
    order = BatchSampler(maskings[arms[0]].data["input_ids"].shape[0], config.batch_size, seed)
    samplers = {a: BatchSampler(1, 1, seed + 1) for a in arms}  # only their generators are used
    times: dict[str, list[float]] = {a: [] for a in arms}
    mask_times: dict[str, list[float]] = {a: [] for a in arms}
    for step in range(steps + 2):  # the first two steps warm up
        idx = order.next()
        for a in (arms if step % 2 == 0 else arms[::-1]):  # alternate the order: no position bias
            t0 = time.perf_counter()
            batch = _batch(maskings[a].data, idx, config, samplers[a], mask_id, vocab_size,
                           num_special, None)
            t1 = time.perf_counter()
            loss, _ = objective(step + 1, batch["input_ids"], batch["attention_mask"],
                                batch["corrupted"], batch["masked"])
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            t2 = time.perf_counter()
            if step >= 2:
                times[a].append(t2 - t0)
                mask_times[a].append(t1 - t0)
    step_ms = {a: 1000 * float(np.median(t)) for a, t in times.items()}
    mask_ms = {a: 1000 * float(np.median(t)) for a, t in mask_times.items()}
    out = {"steps": steps, "batch_size": config.batch_size, "step_ms": step_ms, "mask_ms": mask_ms}
    if "random" in step_ms:
        # whole-step ratio (noisy on a shared machine) and the extra masking time per step over
        # random masking, as a share of a random-masking step (robust: both timed on the same batches)
        out["step_ratio"] = {a: step_ms[a] / step_ms["random"] for a in step_ms}
        out["overhead"] = {a: (mask_ms[a] - mask_ms["random"]) / step_ms["random"] for a in step_ms}
    return out


# ---------------------------------------------------------------- one seed, every arm


def run_arms(base_model, maskings: dict[tuple[str, str], ArmMasking], splits: dict[str, dict],
             pretrain_config, finetune_configs: dict, *, few_labels: int, seed: int, mask_id: int,
             num_special: int, cache_key: dict | None = None, progress: bool | None = None,
             pooling: str = "mean", checkpoint_dir: Path | None = None) -> list[dict]:
    """Continued MLM then fine-tuning for every (arm, word list), all with the same seed; rows of results.

    `splits`: "train", "validation", "test" task tensors. `finetune_configs`: label regime
    ("few", "all") -> FinetuneConfig; "few" trains on a seeded stratified subset of `few_labels`
    examples, the same for every arm of this seed. `pooling`: the classifier head ("mean", "cls").
    `checkpoint_dir`: where each arm's continued MLM checkpoints (a folder per arm), or None.
    """
    bad = [r for r in finetune_configs if r not in LABEL_REGIMES]
    if bad or not finetune_configs:
        raise ValueError(f"finetune_configs: label regimes must be from {LABEL_REGIMES}, got {list(finetune_configs)}")
    train = splits["train"]
    few = {k: v[few_label_indices(train["labels"], few_labels, seed)] for k, v in train.items()}
    rows = []
    for (arm, word_list), masking in maskings.items():
        t0 = time.perf_counter()
        folder = arm_folder(checkpoint_dir, "mlm", arm, word_list)
        model, history = continued_mlm(base_model, masking, pretrain_config, mask_id=mask_id,
                                       num_special=num_special, seed=seed, cache_key=cache_key,
                                       progress=progress, checkpoint_dir=folder)
        mlm_s = time.perf_counter() - t0
        for regime, ft in finetune_configs.items():
            out = finetune_arm(model, few if regime == "few" else train, splits["validation"],
                               splits["test"], ft, seed, progress=progress,
                               pretrained=arm != "scratch", pooling=pooling)
            rows.append({"arm": arm, "word_list": word_list, "labels": regime, "seed": seed,
                         "train_examples": int((few if regime == "few" else train)["labels"].shape[0]),
                         "mlm_loss": history[-1]["loss"] if history else float("nan"),
                         "mlm_s": mlm_s, **out})
    return rows

