"""One seed of paper C's experiment (C2): every arm's masking, continued MLM and fine-tuning.

The C2 page calls `run_seed` and draws what it returns. The steps run in a fixed order, which the
random draws and so the C2 records depend on: seed, checks, base, task splits, text, masking per
(arm, word list), then `experiment.run_arms`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

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
    dose_rows: list[dict] = field(default_factory=list)  # per (arm, word list, dose): `dose`


def pretrain_config(mlm: ContinuedMLM, target_rate: float):
    """The continued-MLM `PretrainConfig`: whole words at the masking's target rate."""
    from mlmlib.pretrain import PretrainConfig

    return PretrainConfig(steps=mlm.steps, batch_size=mlm.batch_size, lr=mlm.lr,
                          mask_rate=target_rate, whole_word=True, log_every=max(1, mlm.steps // 4),
                          checkpoint_every=mlm.checkpoint_every)


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
             finetune: FineTuning, progress: bool | None = False,
             checkpoint_dir: Path | None = None) -> SeedResult:
    """Every arm for one seed, all from the same cached base; bad input fails before training.

    With mlm.checkpoint_every > 0 each arm's continued MLM checkpoints in `checkpoint_dir` (the
    run's folder) and a rerun of the seed resumes it there."""
    if mlm.checkpoint_every and checkpoint_dir is None:
        raise ValueError("mlm.checkpoint_every > 0 needs a checkpoint_dir (the run's folder)")
    checkpoint_dir = checkpoint_dir if mlm.checkpoint_every else None
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
    maskings, listed = {}, {}
    general = [a for a in arms if a in ("scratch", "none", "random")]
    for arm, m in (se.prepare_arms(general, corpus, None, masking).items() if general else ()):
        maskings[(arm, "-")] = m
    specific = [a for a in arms if a not in general]
    if specific:
        glove = load_vectors(masking.vectors)
        for word_list in lists:
            scores, listed[word_list.label] = se.score_corpus(corpus, word_list, masking, glove)
            check_list_in_text(word_list, listed[word_list.label], corpus.words)
            for arm, m in se.prepare_arms(specific, corpus, scores, masking, seed=seed,
                                          word_list=word_list).items():
                maskings[(arm, word_list.label)] = m  # "vader", or "vader, 100 words"
    summary = (f"{task}: {len(train_texts)} training texts ({corpus.n_tokens} maskable tokens), "
               f"{len(valid)} validation, {len(test)} test; {len(maskings)} arms: "
               + ", ".join(f"{a}/{wl} ({m.expected_rate:.3f})" for (a, wl), m in maskings.items()))

    if mlm.doses:  # a dose-response: nested chains, the probe at every dose
        rows, dose_rows = _dose_rows(base_model, tokenizer, maskings, splits, valid, corpus, listed,
                                     arms, pretraining, regimes, seed=seed, masking=masking,
                                     text=text, mlm=mlm, finetune=finetune, progress=progress,
                                     checkpoint_dir=checkpoint_dir)
        named = {w.label: {"lexicon": w.name, "list_size": w.size} for w in lists}
        rows = [{**r, "task": task, **named.get(r["word_list"], {"lexicon": "-", "list_size": 0})}
                for r in rows]
        return SeedResult(rows=rows, dose_rows=[{**r, "task": task} for r in dose_rows],
                          expected_rates=[{"arm": a, "word_list": wl, "rate": m.expected_rate}
                                          for (a, wl), m in maskings.items()],
                          majority=se.majority_scores(splits["test"]["labels"]), summary=summary)
    cache_key = {"base": asdict(base), "task": task, "train_size": text.train_size,
                 "max_length": text.max_length, "truncation": text.truncation}
    rows = se.run_arms(base_model, maskings, splits, pretraining, regimes,
                       few_labels=finetune.few_labels, seed=seed,
                       mask_id=tokenizer.mask_token_id, num_special=first_word_id(tokenizer),
                       cache_key=cache_key, progress=progress, pooling=finetune.pooling,
                       checkpoint_dir=checkpoint_dir)
    named = {w.label: {"lexicon": w.name, "list_size": w.size} for w in lists}
    rows = [{**r, "task": task, **named.get(r["word_list"], {"lexicon": "-", "list_size": 0})}
            for r in rows]
    return SeedResult(rows=rows,
                      expected_rates=[{"arm": a, "word_list": wl, "rate": m.expected_rate}
                                      for (a, wl), m in maskings.items()],
                      majority=se.majority_scores(splits["test"]["labels"]), summary=summary)


def check_list_in_text(word_list, words, text_words) -> None:
    """A whole word list none of whose words occurs in the task's training text is bad input (no
    masking can favour it): an error before any training. A small sample of a list may miss a
    small text: a note, and its list share is 0 (C3's masking control says so)."""
    if set(words) & set(text_words):
        return
    if not word_list.size:
        raise ValueError(f"word_lists: no word of {word_list.name!r} occurs in the task's training text; "
                         "no masking can favour it: choose a list of the task's domain")
    print(f"No word of {word_list.label!r} occurs in the task's training text; its masking "  # noqa: T201
          "cannot favour the list (C3's masking control will say so)")


def _dose_rows(base_model, tokenizer, maskings, splits, valid, corpus, listed, arms, pretraining,
               regimes, *, seed, masking, text, mlm, finetune, progress, checkpoint_dir=None):
    """The dose path of `run_seed`: every continued arm's chain read at `mlm.doses` (`dose`);
    returns (fine-tuned rows as `run_arms` gives them, one per arm at the top dose and `none` at
    0; the dose rows)."""
    from mlmlib.papers.selective_masking import dose as dose_response
    from mlmlib.papers.selective_masking.composition import list_share_of_masked
    from mlmlib.tokenize import first_word_id

    in_list = {}
    for label, words in listed.items():  # the list words of the task's text
        words = set(words)
        in_list[label] = np.array([w in words for w in corpus.words])
    arms_in = {}
    for (arm, wl), m in maskings.items():
        if arm == "scratch":  # no encoder to read at a dose: fine-tuned below, from scratch
            continue
        if m.data is None or m.data["mask_prob"].shape != corpus.word_type.shape:
            share = float("nan")  # the base, or pre-drawn copies (random-count)
        else:  # random ("-") masks every list alike: its share of each list
            share = {label: list_share_of_masked(m.data["mask_prob"], corpus.word_type, il)
                     for label, il in in_list.items() if wl in ("-", label)} or float("nan")
        arms_in[(arm, wl)] = (m.data, share)
    num_special = first_word_id(tokenizer)
    heldout = dose_response.heldout_batches(
        se.tokenized_corpus(tokenizer, valid["text"], text.max_length, text.truncation).data,
        masking.target_rate, seed, mask_id=tokenizer.mask_token_id,
        vocab_size=base_model.get_input_embeddings().weight.shape[0], num_special=num_special)
    train = splits["train"]
    few = {k: v[se.few_label_indices(train["labels"], finetune.few_labels, seed)]
           for k, v in train.items()}
    top = mlm.doses[-1]
    dose_rows = dose_response.run_doses(
        base_model, arms_in, mlm.doses, pretraining, heldout=heldout, few=few,
        validation=splits["validation"], test=splits["test"],
        finetune={r: (few if r == "few" else train, c) for r, c in regimes.items()},
        finetune_doses={0, top} if "none" in arms else {top}, seed=seed, mask_id=tokenizer.mask_token_id,
        num_special=num_special, warmup_steps=mlm.warmup_steps, pooling=finetune.pooling,
        progress=progress, checkpoint_dir=checkpoint_dir)
    rows = []
    if "scratch" in arms:  # the floor: the same encoder never pretrained, fine-tuned once
        for regime, config in regimes.items():
            out = se.finetune_arm(base_model, few if regime == "few" else train, splits["validation"],
                                  splits["test"], config, seed, progress=progress, pretrained=False,
                                  pooling=finetune.pooling)
            rows.append({"arm": "scratch", "word_list": "-", "labels": regime, "seed": seed, "dose": 0,
                         "train_examples": int((few if regime == "few" else train)["labels"].shape[0]),
                         "mlm_loss": float("nan"), "mlm_s": 0.0, **out})
    for r in dose_rows:
        is_base = r["arm"] == "none"
        if ("finetuned" not in r) or (r["dose"] != top and not is_base) or (is_base and r["dose"]):
            continue
        for regime, out in r["finetuned"].items():
            rows.append({"arm": r["arm"], "word_list": r["word_list"], "labels": regime,
                         "seed": seed, "dose": r["dose"], "mlm_loss": r.get("train_loss", float("nan")),
                         "mlm_s": r.get("chain_s", float("nan")), **out})
    # one dose row per word list: random's chain is shared by the lists, its share is per list
    dose_rows = [r | {"word_list": label, "list_share": share} for r in dose_rows
                 for label, share in (r["list_share"].items() if isinstance(r["list_share"], dict)
                                      else [(r["word_list"], r["list_share"])])]
    dose_rows = [{k: v for k, v in r.items() if k != "finetuned"}
                 | {f"{regime}_{k}": v for regime, out in r.get("finetuned", {}).items()
                    for k, v in out.items() if k in ("accuracy", "f1")}
                 for r in dose_rows]
    return rows, dose_rows
