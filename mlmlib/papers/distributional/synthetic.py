"""Paper A's synthetic experiment: MLM pretraining WITH and WITHOUT the distributional property.

The language comes from `mlmlib.data.synthetic` (ids 0..2n-1 for the two alphabets, [MASK] = 2n).
This module adds two special ids the encoder needs, so vocab_size = 2n + 3:

* [PAD] = 2n + 1. The sequences all have one length and are never padded, but BERT's embedding
  keeps the row of `pad_token_id` at zero and never trains it, so it must not be a real token.
* [CLS] = 2n + 2, prepended to every sequence (pretraining and fine-tuning): the classifier
  reads the first position, as BERT does.

Pretrained models are cached under a hash of everything that made them (`mlmlib.cache`), so the
pretraining notebook builds them once and every fine-tuning run loads the same weights. The
parameter groups (Setup, Sweep, CbowConfig) live in the torch-free `config` module beside this one.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import torch

from mlmlib import cache, stats
from mlmlib.atomic import write_json
from mlmlib.data import synthetic as syn
from mlmlib.models import saved_files
from mlmlib.papers.distributional.config import (  # noqa: F401 - special_ids, vocab_size: the pages'
    MODELS,
    SCRATCH_INITS,
    CbowConfig,
    Setup,
    Sweep,
    special_ids,
    vocab_size,
)

MODEL_LABELS = {
    "scratch": "scratch",
    "with": "WITH (mix)",
    "without": "WITHOUT (shift)",
    "shuffled": "shuffled WITH",
    "cbow": "CBOW embeddings",
    "cbow-frozen": "CBOW embeddings, frozen",
}
CBOW_MODELS = ("cbow", "cbow-frozen")  # both start from the same vectors; the second never trains its embeddings
PRETRAINED_FROM = {"with": "mix", "without": "shift", "shuffled": "mix"}  # model -> corpus
MLM_KIND = "paper_a_mlm"
CBOW_KIND = "paper_a_cbow"
# what save_model writes (mlmlib.models CONFIG and WEIGHTS), and the MLM history
MODEL_FILES = (*saved_files(), "history.json")


class NotConvergedError(RuntimeError):
    """The MLM's final loss is above the threshold: fine-tuning it would measure an untrained model."""


# ---------------------------------------------------------------- vocabulary and tensors


def encode(tokens: np.ndarray, n_sets: int, labels: np.ndarray | None = None) -> dict[str, torch.Tensor]:
    """Tensors for the training core: [CLS] + tokens, attention mask, special-token mask, labels."""
    ids = torch.as_tensor(np.asarray(tokens), dtype=torch.long)
    if ids.dim() != 2:
        raise ValueError(f"tokens must be a (N, L) array, got shape {tuple(ids.shape)}")
    if ids.numel() and (ids.min() < 0 or ids.max() >= 2 * n_sets):
        raise ValueError(f"tokens must be ids of the two alphabets, in [0, {2 * n_sets})")
    cls = torch.full((ids.shape[0], 1), special_ids(n_sets)["cls"], dtype=torch.long)
    ids = torch.cat([cls, ids], dim=1)
    special = torch.zeros_like(ids)
    special[:, 0] = 1
    data = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "special_tokens_mask": special}
    if labels is not None:
        data["labels"] = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    return data


# ---------------------------------------------------------------- pretraining and convergence


# A fine-tuning page's pretrain_seed that means "the page's own seed": one plan entry then pairs
# each fine-tuning seed with its own pretraining seed (a grid over seed, not an entry per seed).
OWN_SEED = -1


def pretraining_seed(pretrain_seed: int, seed: int) -> int:
    """The pretraining seed whose models a fine-tuning page loads: pretrain_seed, or seed for OWN_SEED."""
    if pretrain_seed == OWN_SEED:
        return seed
    if pretrain_seed < 0:
        raise ValueError(f"pretrain_seed={pretrain_seed}: give a pretraining seed (>= 0) or {OWN_SEED} "
                         "for the page's own seed")
    return pretrain_seed


def pretrain_mlm(setup: Setup, corpus: str, progress: bool | None = None, *, checkpoint_every: int = 0,
                 checkpoint_dir: str | Path | None = None) -> Path:
    """Pretrain the MLM on `mix` or `shift` (or find it in the cache); return its folder.

    With `checkpoint_every` > 0 the training writes a resumable checkpoint every so many steps in
    `checkpoint_dir`/mlm-<corpus> (the run's folder, which the runner keeps across restarts) and a
    restarted run resumes there with the weights an uninterrupted run reaches. It says how a run
    survives a preempting cluster, not what it trains: it stays out of the model's cache key.
    """
    from mlmlib.models import bert_mlm, save_model
    from mlmlib.pretrain import pretrain

    if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or checkpoint_every < 0:
        raise ValueError(f"checkpoint_every must be an int >= 0 (steps between resumable checkpoints; "
                         f"0: none), got {checkpoint_every!r}")
    if checkpoint_every and checkpoint_dir is None:
        raise ValueError("checkpoint_every > 0 needs a checkpoint_dir (the run's folder)")
    config = dataclasses.replace(setup.pretrain_config(), checkpoint_every=checkpoint_every)
    resume_from = Path(checkpoint_dir) / f"mlm-{corpus}" if checkpoint_every else None

    def build(folder: Path) -> None:
        data = encode(setup.corpus(corpus), setup.n_sets)
        model = bert_mlm(setup.model_size(), seed=setup.pretrain_seed)
        history = pretrain(model, data, config,
                           mask_id=special_ids(setup.n_sets)["mask"],
                           replace_ids=torch.arange(2 * setup.n_sets),  # random tokens: never specials
                           checkpoint_dir=resume_from, progress=progress)
        save_model(model, folder / "model")
        write_json(folder / "history.json", history)

    return cache.cached(MLM_KIND, setup.key(corpus), build, code_of=__name__, expect=MODEL_FILES)


def pretrained_dir(setup: Setup, corpus: str) -> Path:
    """The cached folder of the model pretrained on `corpus`; a clear error if there is none."""
    folder = cache.artifact_dir(MLM_KIND, setup.key(corpus), code_of=__name__)
    if not cache.is_complete(folder, MODEL_FILES):
        raise FileNotFoundError(
            f"no MLM pretrained on {corpus!r} with these parameters (expected {folder}); run the "
            "pretraining notebook (A2_synthetic_pretrain) first with the same language and "
            "pretraining parameters"
        )
    return folder


def load_history(folder: Path) -> list[dict]:
    """The logged MLM training history of a pretrained model folder."""
    return json.loads((Path(folder) / "history.json").read_text())


def final_loss(history: list[dict]) -> float:
    """The MLM loss of the last logged window."""
    if not history:
        raise ValueError("history is empty: nothing was logged")
    return float(history[-1]["loss"])


def check_converged(history: list[dict], threshold: float, corpus: str) -> float:
    """Return the final MLM loss; raise NotConvergedError if it is not below `threshold`."""
    loss = final_loss(history)
    if not math.isfinite(loss) or loss >= threshold:
        raise NotConvergedError(
            f"the MLM pretrained on {corpus!r} has not converged: final loss {loss:.3f} is not below "
            f"loss_threshold={threshold}. Train longer (steps) or change lr, then rerun; fine-tuning "
            "an unconverged model would not measure what pretraining gives."
        )
    return loss


def unigram_loss(tokens: np.ndarray, vocab: int) -> float:
    """Cross-entropy (nats) of the corpus's own unigram distribution: the loss of a model that ignores context."""
    counts = np.bincount(np.asarray(tokens).ravel(), minlength=vocab).astype(float)
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


# ---------------------------------------------------------------- controls


def shuffle_weights(state: dict[str, torch.Tensor], seed: int) -> dict[str, torch.Tensor]:
    """Permute the entries of every floating-point tensor: same values, structure destroyed."""
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for name, tensor in state.items():
        if tensor.is_floating_point() and tensor.numel() > 1:
            perm = torch.randperm(tensor.numel(), generator=gen)
            out[name] = tensor.flatten()[perm].view_as(tensor).clone()
        else:
            out[name] = tensor.clone()
    return out


def cbow_embeddings(tokens: np.ndarray, n_sets: int, dim: int, window: int = 5, epochs: int = 5,
                    seed: int = 0) -> np.ndarray:
    """word2vec CBOW vectors (gensim) of the 2 * n_sets tokens, one row per token id: (2n, dim).

    gensim stores its vectors in frequency order (`wv.index_to_key`), not in token-id order, so
    each row is looked up by its key. (The authors' released code reshaped a (dim, vocab) matrix
    into (vocab, dim) instead of transposing it, which scrambles every vector; we do not.)
    """
    from gensim.models import Word2Vec

    sentences = [[str(t) for t in row] for row in np.asarray(tokens)]
    # workers=1: gensim's multi-threaded training is not reproducible for a given seed
    w2v = Word2Vec(sentences, vector_size=dim, window=window, min_count=1, sg=0, epochs=epochs,
                   seed=seed, workers=1)
    missing = [i for i in range(2 * n_sets) if str(i) not in w2v.wv.key_to_index]
    if missing:
        raise ValueError(f"{len(missing)} token ids never occur in the CBOW corpus (e.g. {missing[:5]}); "
                         "use a larger corpus")
    return np.stack([w2v.wv[str(i)] for i in range(2 * n_sets)]).astype(np.float32)


def scaled_to_std(vectors: np.ndarray, std: float) -> np.ndarray:
    """The vectors multiplied by one factor so that the whole matrix has standard deviation `std`."""
    spread = float(np.std(vectors))
    if not spread > 0:
        raise ValueError("the CBOW vectors are all equal: they cannot be scaled to a standard deviation")
    return (vectors * (std / spread)).astype(np.float32)


def cached_cbow(setup: Setup, cbow: CbowConfig) -> np.ndarray:
    """CBOW vectors (unscaled) trained on the MLM's own `mix` corpus, built once and cached.

    The same sequences, and so the same sequence length, as the MLM pretraining.
    """
    key = {"corpus": "mix", **setup.identity(), "window": cbow.window, "epochs": cbow.epochs}

    def build(folder: Path) -> None:
        vectors = cbow_embeddings(setup.corpus("mix"), setup.n_sets, setup.hidden, cbow.window,
                                  cbow.epochs, seed=setup.pretrain_seed)
        np.save(folder / "vectors.npy", vectors)

    folder = cache.cached(CBOW_KIND, key, build, code_of=__name__, expect=("vectors.npy",))
    return np.load(folder / "vectors.npy")


def synonym_similarity(vectors: np.ndarray, n_sets: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Cosine of the centred vectors of synonym pairs (a, a + n) and of random pairs of different sets.

    Centred: word2vec vectors share one large common direction that makes every cosine near 1.
    """
    vectors = vectors - vectors.mean(axis=0)
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    a = np.arange(n_sets)
    rng = np.random.default_rng(seed)
    other = (a + rng.integers(1, n_sets, size=n_sets)) % n_sets + n_sets * rng.integers(0, 2, size=n_sets)
    return {"synonyms": (unit[a] * unit[a + n_sets]).sum(1), "random pairs": (unit[a] * unit[other]).sum(1)}


# ---------------------------------------------------------------- fine-tuning sweep


def alternating_classes(labels: np.ndarray) -> np.ndarray:
    """The order that puts the examples' classes in turn (0, 1, 0, 1, ... each class in its draw
    order), so that every prefix of a balanced set is balanced too (within one example)."""
    labels = np.asarray(labels)
    rank = np.empty(len(labels), dtype=np.int64)
    for cls in np.unique(labels):
        rows = np.flatnonzero(labels == cls)
        rank[rows] = np.arange(len(rows))
    return np.lexsort((labels, rank))


def _draw(lang: syn.Language, name: str, n: int, length: int, seed: int,
          balanced: bool) -> tuple[np.ndarray, np.ndarray]:
    """A labelled set: the generator's own class balance, or each class half (`balanced`), its
    classes in turn so that the sweep's nested training sets (prefixes) are balanced as well."""
    if not balanced:
        return syn.labelled_set(lang, name, n, length, seed=seed)
    tokens, labels = syn.balanced_labelled_set(lang, name, n, length, seed=seed)
    order = alternating_classes(labels)
    return tokens[order], labels[order]


def training_set(lang: syn.Language, pool_size: int, length: int, size: int, bd2_fraction: float,
                 seed: int, balanced: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """`size` labelled examples: A-D1 with a fraction `bd2_fraction` of them replaced by B-D2.

    The A-D1 and B-D2 pools are drawn once per seed; smaller sets are prefixes of them (nested).
    """
    if not 0 < size <= pool_size:
        raise ValueError(f"training size must be in [1, pool_size={pool_size}], got {size}")
    a_tok, a_lab = _draw(lang, "A-D1", pool_size, length, seed, balanced)
    b_tok, b_lab = _draw(lang, "B-D2", pool_size, length, seed + 1, balanced)
    n_b = round(bd2_fraction * size)
    tokens = np.concatenate([a_tok[:size - n_b], b_tok[:n_b]])
    labels = np.concatenate([a_lab[:size - n_b], b_lab[:n_b]])
    return tokens, labels


def test_sets(lang: syn.Language, names: list[str], size: int, length: int, seed: int,
              balanced: bool = True) -> dict:
    """The labelled test sets (fixed by the language seed, shared by every fine-tuning run)."""
    return {name: _draw(lang, name, size, length, 10_000 + 97 * seed + i, balanced)
            for i, name in enumerate(syn.TEST_SETS) if name in names}


def freeze_embeddings(clf) -> None:
    """Stop fine-tuning from changing the embedding layer: words, positions, token types, LayerNorm.

    The whole `bert.embeddings` module, as the authors' code freezes it.
    """
    for param in clf.bert.embeddings.parameters():
        param.requires_grad_(False)


def cbow_classifier(setup: Setup, seed: int, vectors: np.ndarray | None, std: float, frozen: bool):
    """A random encoder whose token embeddings are the CBOW vectors scaled to `std`, optionally frozen."""
    from mlmlib.models import bert_classifier

    if vectors is None or vectors.shape != (2 * setup.n_sets, setup.hidden):
        raise ValueError(f"a CBOW model needs cbow_vectors of shape ({2 * setup.n_sets}, {setup.hidden})")
    clf = bert_classifier(setup.model_size(), 2, seed=seed)
    with torch.no_grad():  # the token rows only; [MASK]/[PAD]/[CLS] and positions stay random
        clf.bert.embeddings.word_embeddings.weight[: 2 * setup.n_sets] = torch.from_numpy(
            scaled_to_std(vectors, std))
    if frozen:
        freeze_embeddings(clf)
    return clf


def pretraining_init(setup: Setup) -> dict[str, torch.Tensor]:
    """The weights WITH and WITHOUT start their MLM from (`pretrain_mlm`'s model before training)."""
    from mlmlib.models import bert_mlm

    return bert_mlm(setup.model_size(), seed=setup.pretrain_seed).state_dict()


def build_classifier(model: str, setup: Setup, seed: int, pretrained: dict[str, Path] | None = None,
                     cbow_vectors: np.ndarray | None = None, cbow_std: float = CbowConfig.std,
                     scratch_init: str = "pretraining"):
    """A fresh classifier for one arm: scratch, WITH, WITHOUT, shuffled WITH, or CBOW (frozen)
    embeddings. Scratch's encoder starts where the pretrained arms' did (`scratch_init`
    "pretraining") or from a fresh init with the fine-tuning seed ("fresh")."""
    from mlmlib.models import bert_classifier, load_state

    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    if scratch_init not in SCRATCH_INITS:
        raise ValueError(f"scratch_init must be one of {SCRATCH_INITS}, got {scratch_init!r}")
    size = setup.model_size()
    if model == "scratch":
        start = pretraining_init(setup) if scratch_init == "pretraining" else None
        return bert_classifier(size, 2, from_encoder=start, seed=seed)
    if model in CBOW_MODELS:
        return cbow_classifier(setup, seed, cbow_vectors, cbow_std, frozen=model == "cbow-frozen")
    if not pretrained or PRETRAINED_FROM[model] not in pretrained:
        raise ValueError(f"model {model!r} needs the model pretrained on {PRETRAINED_FROM[model]!r}")
    state = load_state(Path(pretrained[PRETRAINED_FROM[model]]) / "model")
    if model == "shuffled":
        state = shuffle_weights(state, seed=seed)
    return bert_classifier(size, 2, from_encoder=state, seed=seed)


def prepare(setup: Setup, sweep: Sweep, build_missing: bool = False, log=print) -> dict[str, Path]:
    """Check the sweep and find (and check the convergence of) the pretrained models it needs.

    build_missing: pretrain a missing model here (cached, as A2 would) instead of stopping. A page
    run by hand has no A2 run before it; a plan's A3 waits for A2, so a missing model there is an
    error worth seeing.
    """
    sweep.check(setup)
    pretrained = {}
    for corpus in sorted({PRETRAINED_FROM[m] for m in sweep.models if m in PRETRAINED_FROM}):
        if build_missing:
            if not cache.is_complete(cache.artifact_dir(MLM_KIND, setup.key(corpus), code_of=__name__),
                                     MODEL_FILES) and log:
                log(f"no MLM pretrained on {corpus!r} with these parameters: pretraining it (cached)")
            folder = pretrain_mlm(setup, corpus, progress=False)
        else:
            folder = pretrained_dir(setup, corpus)
        check_converged(load_history(folder), setup.loss_threshold, corpus)
        pretrained[corpus] = folder
    return pretrained


def hit_cap(steps: int, sweep: Sweep) -> bool:
    """True when a run reached the step cap instead of stopping on validation patience.

    A run that stops on patience at exactly `max_steps` counts as capped too (it could not go on).
    """
    return steps >= sweep.max_steps


def run_sweep(setup: Setup, sweep: Sweep, seed: int, cbow: CbowConfig | None = None,
              build_missing: bool = False, progress: bool | None = False, log=print) -> list[dict]:
    """Fine-tune every model at every size and B-D2 fraction with one seed; one row per test set.

    Every run stops on validation patience (`finetune`'s early stopping: `sweep.patience`
    validations without a new best, every `sweep.eval_every` steps) and keeps its best weights;
    `hit_cap` marks the runs that reached `sweep.max_steps` first.

    cbow: the word2vec settings of the CBOW arms (None: CbowConfig's defaults); build_missing: see
    `prepare`.
    """
    from mlmlib.finetune import FinetuneConfig, finetune, metrics_from_probs, predict

    cbow = cbow or CbowConfig()
    pretrained = prepare(setup, sweep, build_missing, log)  # all checks before anything trains
    lang = syn.make_language(setup.language_config())
    tests = {k: (encode(t, setup.n_sets), y) for k, (t, y) in
             test_sets(lang, sweep.test_sets, sweep.test_size, sweep.length, setup.language_seed,
                       sweep.balanced).items()}
    vectors = cached_cbow(setup, cbow) if set(CBOW_MODELS) & set(sweep.models) else None
    rows = []
    for fraction in sweep.bd2_fractions:
        val_tok, val_lab = training_set(lang, sweep.valid_size, sweep.length, sweep.valid_size,
                                        fraction, seed=100_000 + 10 * seed + 5, balanced=sweep.balanced)
        valid = encode(val_tok, setup.n_sets, val_lab)
        sizes, models = sweep.plan_at(fraction)
        for size in sizes:
            tok, lab = training_set(lang, sweep.pool_size, sweep.length, size, fraction,
                                    seed=100_000 + 10 * seed, balanced=sweep.balanced)
            train = encode(tok, setup.n_sets, lab)
            for model in models:
                clf = build_classifier(model, setup, seed, pretrained, vectors, cbow.std,
                                       sweep.scratch_init)
                config = FinetuneConfig(max_steps=sweep.max_steps, batch_size=sweep.batch_size, lr=sweep.lr,
                                        eval_every=sweep.eval_every, patience=sweep.patience, seed=seed,
                                        warmup_steps=sweep.warmup_steps)
                result = finetune(clf, train, valid, config, progress=progress)
                accs = {}
                for name, (data, labels) in tests.items():
                    acc = metrics_from_probs(predict(clf, data), labels)["accuracy"]
                    accs[name] = acc
                    rows.append({"model": model, "bd2_fraction": fraction, "train_size": size,
                                 "test_set": name, "accuracy": acc, "prior": stats.class_prior(labels),
                                 "steps": result.steps, "best_step": result.best_step,
                                 "hit_cap": hit_cap(result.steps, sweep), "fine_tune_seed": seed,
                                 "language_seed": setup.language_seed})
                if log:
                    log(f"B-D2 {fraction:.2f} | n={size:5d} | {model:11s} | steps {result.steps:4d}"
                        f"{' (cap)' if hit_cap(result.steps, sweep) else ''} | "
                        + " ".join(f"{k} {v:.3f}" for k, v in accs.items()))
    return rows
