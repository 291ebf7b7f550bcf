"""One seed of paper C's experiment (C2): every arm's masking, continued MLM and fine-tuning.

The C2 page calls `run_seed` and draws what it returns; the steps and their order are those the
page ran inline before (its records must not move): seed, checks, base, task splits, text,
masking per (arm, word list), then `experiment.run_arms`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from mlmlib.base_config import BaseModelConfig
from mlmlib.papers.selective_masking import experiment as se
from mlmlib.papers.selective_masking.config import (
    ContinuedMLM,
    FineTuning,
    MaskingConfig,
    TaskText,
    WordList,
)


@dataclass
class SeedResult:
    """What one seed measured: a row per (arm, word list, label regime) and what it masked."""

    rows: list[dict]
    expected_rates: list[dict]  # per (arm, word list): the expected share of tokens masked
    majority: dict[str, float]  # majority_accuracy, majority_f1 on this task's test set
    summary: str                # the data and the arms, in one line


def pretrain_config(mlm: ContinuedMLM, target_rate: float):
    """The continued-MLM `PretrainConfig`: whole words at the masking's target rate."""
    from mlmlib.pretrain import PretrainConfig

    return PretrainConfig(steps=mlm.steps, batch_size=mlm.batch_size, lr=mlm.lr,
                          mask_rate=target_rate, whole_word=True, log_every=max(1, mlm.steps // 4))


def finetune_configs(finetune: FineTuning) -> dict:
    """Label regime -> `FinetuneConfig`, in the order of `finetune.label_regimes`."""
    from mlmlib.finetune import FinetuneConfig

    configs = {
        "few": FinetuneConfig(epochs=finetune.few_epochs, batch_size=finetune.batch_size,
                              lr=finetune.lr),
        "all": FinetuneConfig(epochs=finetune.all_epochs, max_steps=finetune.all_max_steps or None,
                              batch_size=finetune.batch_size, lr=finetune.lr),
    }
    return {regime: configs[regime] for regime in finetune.label_regimes}


def _sized(split, size: int):
    """`size` seeded examples of a split (0: all of it), as the page always drew them."""
    return split if not size else split.shuffle(seed=0).select(range(min(size, len(split))))


def run_seed(task: str, word_lists: list[str], word_list_size: int, arms: list[str], seed: int, *,
             base: BaseModelConfig, masking: MaskingConfig, text: TaskText, mlm: ContinuedMLM,
             finetune: FineTuning, progress: bool | None = False) -> SeedResult:
    """Every arm for one seed, all from the same cached base; bad input fails before training."""
    from mlmlib import stats
    from mlmlib.basemodel import pretrained_base
    from mlmlib.data import load_task, load_vectors, task_splits
    from mlmlib.tokenize import first_word_id

    stats.seed_everything(seed)
    arms = se.check_arms(arms)
    if not word_lists and any(a in se.SELECTIVE or a == "random-count" for a in arms):
        raise ValueError("word_lists: the selective arms need at least one word list")
    lists = [WordList(name, word_list_size, seed) for name in word_lists]
    pretraining, regimes = pretrain_config(mlm, masking.target_rate), finetune_configs(finetune)

    base_model, tokenizer, _ = pretrained_base(base, progress=False)
    data = task_splits(load_task(task), test_split=finetune.test_split,
                       selection_split=finetune.selection_split,
                       holdout=finetune.selection_holdout, seed=0)
    train_texts = data["train"] if not text.train_size else data["train"].shuffle(seed=0).select(
        range(text.train_size))
    valid, test = _sized(data["selection"], finetune.validation_size), _sized(data["test"],
                                                                            finetune.test_size)
    splits = {name: se.encode_task_split(tokenizer, split, text.max_length, text.truncation)
              for name, split in (("train", train_texts), ("validation", valid), ("test", test))}
    corpus = se.tokenized_corpus(tokenizer, train_texts["text"], text.max_length, text.truncation)

    # the masking of every (arm, word list); scratch, none and random do not depend on the list
    maskings = {}
    general = [a for a in arms if a in ("scratch", "none", "random")]
    for arm, m in (se.prepare_arms(general, corpus, None, masking).items() if general else ()):
        maskings[(arm, "-")] = m
    specific = [a for a in arms if a not in general]
    if specific:
        glove = load_vectors(masking.vectors)
        for word_list in lists:
            scores, _ = se.score_corpus(corpus, word_list, masking, glove)
            for arm, m in se.prepare_arms(specific, corpus, scores, masking, seed=seed,
                                          word_list=word_list).items():
                maskings[(arm, word_list.label)] = m  # "vader", or "vader, 100 words"
    summary = (f"{task}: {len(train_texts)} training texts ({corpus.n_tokens} maskable tokens), "
               f"{len(valid)} validation, {len(test)} test; {len(maskings)} arms: "
               + ", ".join(f"{a}/{wl} ({m.expected_rate:.3f})" for (a, wl), m in maskings.items()))

    cache_key = {"base": asdict(base), "task": task, "train_size": text.train_size,
                 "max_length": text.max_length, "truncation": text.truncation}
    rows = se.run_arms(base_model, maskings, splits, pretraining, regimes,
                       few_labels=finetune.few_labels, seed=seed,
                       mask_id=tokenizer.mask_token_id, num_special=first_word_id(tokenizer),
                       cache_key=cache_key, progress=progress, pooling=finetune.pooling)
    named = {w.label: {"lexicon": w.name, "list_size": w.size} for w in lists}
    rows = [{**r, "task": task, **named.get(r["word_list"], {"lexicon": "-", "list_size": 0})}
            for r in rows]
    return SeedResult(rows=rows,
                      expected_rates=[{"arm": a, "word_list": wl, "rate": m.expected_rate}
                                      for (a, wl), m in maskings.items()],
                      majority=se.majority_scores(splits["test"]["labels"]), summary=summary)
