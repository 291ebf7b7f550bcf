"""C4, the controlled analogue: selective masking where the task's word list is known exactly.

Paper A's synthetic languages (`mlmlib.data.synthetic`) label a sequence by whether the synonym
sets of one of its patterns occur in order, so the tokens the task depends on are known: every
token of a pattern's sets, in both alphabets. Here paper C's scoring and masking run on that
exact list (list tokens score 1, the others 0; `selective.build_word_probs` calibrates the
exponential function to the random arm's rate), continued MLM runs on the task's training
sequences from an encoder pretrained from scratch to convergence on the language (core
`pretrain`), and a few-label classifier is fine-tuned at every dose. Paper A's package is not
used (papers never import each other): the encoder and its vocabulary are built here.

The domain shift: the base pretrains on one chain (`base_domain`, both alphabets mixed) and the
task's sequences come from the other (`task_set`), as a general-domain base meets a task's
domain in paper C; the continued MLM is the adaptation, and selective masking is compared with
random masking where adapting matters.

Vocabulary: the generator's two alphabets and [MASK] (`LanguageConfig.mask_id`), then [PAD] and
[CLS]; every sequence starts with [CLS], so mean pooling and special-token handling are BERT's.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import torch

from mlmlib.papers.selective_masking import dose as dose_response
from mlmlib.papers.selective_masking import selective as sel
from mlmlib.papers.selective_masking.composition import list_share_of_masked
from mlmlib.papers.selective_masking.config import SyntheticSelective

ARMS = ("random", "exponential")  # the calibrated selective arm against random, as in C2


def second_arm(beta: float) -> str:
    """The name of the exponential arm at a second strength `beta` (config.second_beta)."""
    return f"exponential-b{beta:g}"


def arm_names(config: SyntheticSelective) -> tuple[str, ...]:
    """The arms a run trains: ARMS, and the second strength's where one is set."""
    return ARMS if config.second_beta is None else (*ARMS, second_arm(config.second_beta))


def language(config: SyntheticSelective, seed: int):
    """The synthetic language of `seed` at the config's sizes."""
    from mlmlib.data.synthetic import LanguageConfig, make_language

    return make_language(LanguageConfig(
        n_sets=config.n_sets, n_states=config.n_states, n_patterns=config.n_patterns,
        pattern_length=config.pattern_length, pattern_set_size=config.pattern_set_size, seed=seed))


def task_word_list(lang) -> np.ndarray:
    """The exact task word list: every token of every pattern's synonym sets, both alphabets."""
    sets = np.unique(lang.patterns)
    return np.sort(np.concatenate([sets, sets + lang.config.n_sets]))


def specials(n_sets: int) -> dict[str, int]:
    """[MASK] (the generator's), [PAD] and [CLS] (added here)."""
    return {"mask": 2 * n_sets, "pad": 2 * n_sets + 1, "cls": 2 * n_sets + 2}


def as_data(tokens: np.ndarray, n_sets: int, labels: np.ndarray | None = None) -> dict:
    """Sequences as encoder tensors: [CLS] first; every token its own word (word_ids)."""
    cls = specials(n_sets)["cls"]
    n, length = tokens.shape
    ids = torch.from_numpy(np.concatenate([np.full((n, 1), cls), tokens], axis=1)).long()
    word_ids = torch.cat([torch.full((n, 1), -1), torch.arange(length).repeat(n, 1)], dim=1)
    special = torch.zeros_like(ids)
    special[:, 0] = 1
    data = {"input_ids": ids, "attention_mask": torch.ones_like(ids),
            "special_tokens_mask": special, "word_ids": word_ids}
    if labels is not None:
        data["labels"] = torch.from_numpy(np.asarray(labels)).long()
    return data


def arm_probs(tokens: np.ndarray, listed: np.ndarray, config: SyntheticSelective) -> dict:
    """Per-position masking probabilities (N, 1 + L) of each arm, calibrated to the same rate.

    Paper C's functions on the exact list: score 1 for a list token, 0 otherwise; exponential
    weights exp(beta * score), one scale c by bisection over the corpus' token positions."""
    types, counts = np.unique(tokens, return_counts=True)
    in_list = np.isin(types, listed)
    if not in_list.any():
        raise ValueError("synthetic: no token of the task word list occurs in the task's "
                         "sequences; raise task_size or pattern_set_size")
    words = [str(t) for t in types]
    index = np.searchsorted(types, tokens)
    word_type = torch.cat([torch.full((len(tokens), 1), -1), torch.from_numpy(index)], dim=1)

    def exponential(beta: float) -> torch.Tensor:
        probs = sel.build_word_probs(dict(zip(words, counts.tolist())),
                                     dict(zip(words, in_list.astype(float).tolist())), "exponential",
                                     config.target_rate, beta=beta, normalise=False)
        return sel.word_mask_probs(word_type, probs.probs)

    out = {"random": sel.matched_random_probs(word_type, config.target_rate),
           "exponential": exponential(config.beta), "word_type": word_type, "in_list": in_list}
    if config.second_beta is not None:
        out[second_arm(config.second_beta)] = exponential(config.second_beta)
    return out


def mix_alphabets(ids: np.ndarray, n_sets: int, rng: np.random.Generator) -> np.ndarray:
    """Set ids as tokens, each switched to its alphabet-B synonym with probability 0.5 (paper A's
    `mix`: the two alphabets share every context)."""
    return np.where(rng.random(ids.shape) < 0.5, ids + n_sets, ids)


def base_corpus(lang, domain: str, n: int, length: int, seed: int,
                alphabet: str = "mix") -> np.ndarray:
    """The base's pretraining sequences (n, length): chain `domain` only, in alphabet A or with
    the alphabets mixed (`mix_alphabets`). The other chain, where the task's sequences come from,
    is never sampled."""
    rng = np.random.default_rng(seed)
    ids = lang.chains[domain].sample(n, length, lang.config.p_next, rng)
    return mix_alphabets(ids, lang.config.n_sets, rng) if alphabet == "mix" else ids


def task_draw(lang, task_set: str, n: int, length: int, seed: int, balanced: bool = False):
    """The task's labelled sequences '<A, B or mix>-<chain>': tokens and labels, each class half
    of them when `balanced` (the data layer's rejection draw). The label is the generator's: it
    reads set ids, so mixing the alphabets leaves it unchanged."""
    from mlmlib.data.synthetic import balanced_labelled_set, labelled_set

    draw = balanced_labelled_set if balanced else labelled_set
    alphabet, _, chain = task_set.partition("-")
    if alphabet != "mix":
        return draw(lang, task_set, n, length, seed=seed)
    ids, labels = draw(lang, f"A-{chain}", n, length, seed=seed)
    return mix_alphabets(ids, lang.config.n_sets, np.random.default_rng([seed, 1])), labels


def base_replace_ids(config: SyntheticSelective) -> torch.Tensor:
    """The tokens the base's MLM may put in as random replacements: its own alphabet(s) only, so
    a base of alphabet A never reads a B token."""
    return torch.arange((2 if config.base_alphabet == "mix" else 1) * config.n_sets)


def pretrained_encoder(config: SyntheticSelective, lang, seed: int, progress=False):
    """A BERT MLM pretrained from scratch on the base's domain (`base_corpus`), cached; returns
    (model, final MLM loss). Raises when it did not converge."""
    import json

    from mlmlib import cache
    from mlmlib.models import ModelSize, bert_mlm, load_model, save_model, saved_files
    from mlmlib.pretrain import PretrainConfig, pretrain

    ids = specials(config.n_sets)
    size = ModelSize(vocab_size=2 * config.n_sets + 3, hidden=config.hidden, layers=config.layers,
                     heads=config.heads, max_len=config.length + 1, dropout=0.0, pad_id=ids["pad"])
    pretraining = PretrainConfig(steps=config.base_steps, batch_size=config.base_batch_size,
                                 lr=config.base_lr, warmup_frac=0.05, whole_word=True, seed=seed,
                                 log_every=max(1, config.base_steps // 5))

    def build(folder):
        corpus = base_corpus(lang, config.base_domain, config.corpus_size, config.length, seed,
                             config.base_alphabet)
        model = bert_mlm(size, seed=seed)
        history = pretrain(model, as_data(corpus, config.n_sets), pretraining, mask_id=ids["mask"],
                           replace_ids=base_replace_ids(config), progress=progress)
        save_model(model, folder / "model")
        (folder / "history.json").write_text(json.dumps(history))

    key = {"language": asdict(lang.config), "size": asdict(size), "pretrain": asdict(pretraining),
           "corpus_size": config.corpus_size, "length": config.length, "domain": config.base_domain,
           **({} if config.base_alphabet == "mix" else {"alphabet": config.base_alphabet})}
    folder = cache.cached("selective-synthetic-base", key, build, code_of=__name__,
                          expect=(*saved_files(), "history.json"))
    loss = json.loads((folder / "history.json").read_text())[-1]["loss"]
    if not loss < config.loss_threshold:
        raise ValueError(f"synthetic: the base's MLM loss {loss:.3f} did not reach loss_threshold "
                         f"{config.loss_threshold}: raise base_steps (it must be converged)")
    return load_model(folder / "model"), float(loss)


def run_seed(config: SyntheticSelective, seed: int, progress=False, recording=False) -> dict:
    """One seed: its language, its converged base, a chain per arm read at every dose, few-label
    fine-tuning at every dose. Returns the dose rows, the base's loss and the task's facts. A
    recorded run (`recording`) may not use a pilot language (PILOT_LANGUAGES)."""
    from mlmlib import stats
    from mlmlib.data.synthetic import check_not_pilot
    from mlmlib.papers.selective_masking.config import PILOT_LANGUAGES

    if recording:
        check_not_pilot(seed, PILOT_LANGUAGES, "seed")
    from mlmlib.finetune import FinetuneConfig
    from mlmlib.papers.selective_masking.experiment import few_label_indices, majority_scores
    from mlmlib.pretrain import PretrainConfig

    stats.seed_everything(seed)
    lang = language(config, seed)
    listed = task_word_list(lang)
    draws = {}
    for i, (name, n) in enumerate((("train", config.task_size), ("heldout", config.heldout_size),
                                   ("validation", config.validation_size),
                                   ("test", config.test_size))):
        draws[name] = task_draw(lang, config.task_set, n, config.length, seed=1000 * seed + i,
                                balanced=config.balanced)
    probs = arm_probs(draws["train"][0], listed, config)  # checks the list before any training
    base, base_loss = pretrained_encoder(config, lang, seed, progress)
    data = {name: as_data(tokens, config.n_sets, labels) for name, (tokens, labels) in draws.items()}
    corpus = {k: v for k, v in data["train"].items() if k != "labels"}
    train = data["train"]
    few = {k: v[few_label_indices(train["labels"], config.few_labels, seed)] for k, v in train.items()}
    ids = specials(config.n_sets)
    heldout = dose_response.heldout_batches(data["heldout"], config.target_rate, seed,
                                            mask_id=ids["mask"], vocab_size=2 * config.n_sets + 3,
                                            num_special=0, replace_ids=torch.arange(2 * config.n_sets))
    in_list = probs["in_list"]
    arms = {(arm, "exact task list"): (corpus | {"mask_prob": probs[arm]},
                                       list_share_of_masked(probs[arm], probs["word_type"], in_list))
            for arm in arm_names(config)}
    finetuning = FinetuneConfig(epochs=config.epochs, batch_size=config.batch_size,
                                lr=config.finetune_lr)
    rows = dose_response.run_doses(
        base, arms, config.doses, PretrainConfig(steps=config.doses[-1], batch_size=config.batch_size,
                                                 lr=config.lr, mask_rate=config.target_rate),
        heldout=heldout, few=few, validation=data["validation"], test=data["test"],
        finetune={"few": (few, finetuning)}, finetune_doses=set(config.doses), seed=seed,
        mask_id=ids["mask"], num_special=0, replace_ids=torch.arange(2 * config.n_sets),
        progress=progress)
    rows = [{k: v for k, v in r.items() if k != "finetuned"} | r["finetuned"]["few"]
            | {"task": "synthetic"} for r in rows]
    counts = np.bincount(draws["train"][0].ravel(), minlength=2 * config.n_sets)
    return {"dose_rows": rows, "base_loss": base_loss, "list_tokens": int(len(listed)),
            "list_token_share": float(counts[listed].sum() / counts.sum()),
            "positive_share": float(draws["train"][1].mean()),
            **majority_scores(draws["test"][1])}
