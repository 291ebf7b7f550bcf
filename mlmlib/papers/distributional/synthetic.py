"""Paper A's synthetic experiment: MLM pretraining WITH and WITHOUT the distributional property.

The language comes from `mlmlib.data.synthetic` (ids 0..2n-1 for the two alphabets, [MASK] = 2n).
This module adds two special ids the encoder needs, so vocab_size = 2n + 3:

* [PAD] = 2n + 1. The sequences all have one length and are never padded, but BERT's embedding
  keeps the row of `pad_token_id` at zero and never trains it, so it must not be a real token.
* [CLS] = 2n + 2, prepended to every sequence (pretraining and fine-tuning): the classifier
  reads the first position, as BERT does.

Pretrained models are cached under a hash of everything that made them (`mlmlib.cache`), so the
pretraining notebook builds them once and every fine-tuning run loads the same weights.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from mlmlib import cache, stats
from mlmlib.atomic import write_json
from mlmlib.data import synthetic as syn
from mlmlib.models import saved_files

MODELS = ("scratch", "with", "without", "shuffled", "cbow", "cbow-frozen")
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


def special_ids(n_sets: int) -> dict[str, int]:
    """Ids of [MASK] (the generator's), [PAD] and [CLS] (added here)."""
    return {"mask": 2 * n_sets, "pad": 2 * n_sets + 1, "cls": 2 * n_sets + 2}


def vocab_size(n_sets: int) -> int:
    """Both alphabets plus [MASK], [PAD], [CLS]."""
    return 2 * n_sets + 3


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


# ---------------------------------------------------------------- setup of a pretrained model


@dataclass
class Setup:
    """Everything that defines a pretrained model: language, corpus, encoder shape, MLM training.

    Defaults are the smoke scale; the authors' constants are in the `paper` plan.
    """

    n_sets: int = 100
    n_states: int = 500
    n_patterns: int = 4
    pattern_length: int = 2
    pattern_set_size: int = 2
    language_seed: int = 0
    corpus_size: int = 4000
    corpus_length: int = 32
    hidden: int = 64
    layers: int = 2
    heads: int = 2
    max_len: int = 64
    dropout: float = 0.0
    steps: int = 1000
    batch_size: int = 64
    lr: float = 2e-3
    warmup_frac: float = 0.05
    weight_decay: float = 0.01
    beta2: float = 0.999
    pretrain_seed: int = 0

    def __post_init__(self) -> None:
        self.language()  # validates the language sizes
        if self.corpus_length + 1 > self.max_len:
            raise ValueError(f"corpus_length + 1 ([CLS]) must be <= max_len ({self.max_len}), "
                             f"got {self.corpus_length}")
        if self.corpus_size < self.batch_size:
            raise ValueError(f"corpus_size ({self.corpus_size}) must be >= batch_size ({self.batch_size})")

    def language(self) -> syn.LanguageConfig:
        """The generator's config."""
        return syn.LanguageConfig(
            n_sets=self.n_sets, n_states=self.n_states, n_patterns=self.n_patterns,
            pattern_length=self.pattern_length, pattern_set_size=self.pattern_set_size,
            seed=self.language_seed,
        )

    def model_size(self):
        """The encoder's shape (ModelSize), with [PAD] as the padding id."""
        from mlmlib.models import ModelSize

        return ModelSize(vocab_size=vocab_size(self.n_sets), hidden=self.hidden, layers=self.layers,
                         heads=self.heads, max_len=self.max_len, dropout=self.dropout, pad_id=special_ids(self.n_sets)["pad"])

    def pretrain_config(self):
        """The MLM training settings (PretrainConfig): 15% masking, 80/10/10, AdamW, linear decay."""
        from mlmlib.pretrain import PretrainConfig

        return PretrainConfig(steps=self.steps, batch_size=self.batch_size, lr=self.lr,
                              warmup_frac=self.warmup_frac, weight_decay=self.weight_decay,
                              betas=(0.9, self.beta2), eps=1e-6, seed=self.pretrain_seed,
                              log_every=max(1, self.steps // 40))

    def corpus(self, kind: str, lang: syn.Language | None = None) -> np.ndarray:
        """The pretraining corpus `mix` or `shift` (the same draw for the MLM and for CBOW)."""
        lang = lang or syn.make_language(self.language())
        return syn.pretraining_corpus(lang, kind, self.corpus_size, self.corpus_length,
                                      seed=self.pretrain_seed + 1)

    def key(self, corpus: str) -> dict:
        """The cache key of the model pretrained on `corpus`."""
        if corpus not in syn.CORPORA:
            raise ValueError(f"corpus must be one of {syn.CORPORA}, got {corpus!r}")
        return {"corpus": corpus, **asdict(self)}


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


def pretrain_mlm(setup: Setup, corpus: str, progress: bool | None = None) -> Path:
    """Pretrain the MLM on `mix` or `shift` (or find it in the cache); return its folder."""
    from mlmlib.models import bert_mlm, save_model
    from mlmlib.pretrain import pretrain

    key = setup.key(corpus)

    def build(folder: Path) -> None:
        data = encode(setup.corpus(corpus), setup.n_sets)
        model = bert_mlm(setup.model_size(), seed=setup.pretrain_seed)
        history = pretrain(model, data, setup.pretrain_config(),
                           mask_id=special_ids(setup.n_sets)["mask"],
                           replace_ids=torch.arange(2 * setup.n_sets),  # random tokens: never specials
                           progress=progress)
        save_model(model, folder / "model")
        write_json(folder / "history.json", history)

    return cache.cached(MLM_KIND, key, build, code_of=__name__, expect=MODEL_FILES)


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


@dataclass
class CbowConfig:
    """word2vec CBOW settings (gensim) and the scale of the vectors in the embedding layer.

    The dimension is the encoder's width. The authors' code trains 5 epochs, then 10 more (15),
    with window 5, and rescales the whole vector matrix to a standard deviation of 0.03.
    """

    window: int = 5
    epochs: int = 15
    std: float = 0.03  # standard deviation of the vectors placed in the embedding layer

    def __post_init__(self) -> None:
        for name in ("window", "epochs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"cbow {name} must be an int >= 1, got {value!r}")
        if isinstance(self.std, bool) or not isinstance(self.std, int | float) or not self.std > 0:
            raise ValueError(f"cbow std must be a number > 0, got {self.std!r}")


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
    key = {"corpus": "mix", **asdict(setup), "window": cbow.window, "epochs": cbow.epochs}

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


@dataclass
class Sweep:
    """One fine-tuning seed's sweep: models x training-set sizes x B-D2 fractions, four test sets."""

    models: list[str] = field(default_factory=lambda: list(MODELS))
    train_ratios: list[float] = field(default_factory=lambda: [0.25, 0.5, 1.0])
    bd2_fractions: list[float] = field(default_factory=lambda: [0.0])
    # Models fine-tuned at the B-D2 fractions above 0; None: all `models`.
    bd2_models: list[str] | None = None
    # True: the mixtures are fine-tuned at every train ratio (the paper's learning curves);
    # False: at the largest only (cheaper: smoke).
    bd2_curves: bool = False
    test_sets: list[str] = field(default_factory=lambda: list(syn.TEST_SETS))
    pool_size: int = 3200  # labelled training examples at ratio 1.0 (the paper: 100k)
    valid_size: int = 300
    test_size: int = 800
    length: int = 32  # tokens per labelled sequence (the paper: 100)
    lr: float = 1e-3
    batch_size: int = 32
    max_steps: int = 200  # cap per run (the paper: 30k)
    eval_every: int = 50
    patience: int = 3  # validations without improvement before stopping
    loss_threshold: float = 2.5  # the pretrained models must be below it
    cbow: CbowConfig = field(default_factory=CbowConfig)

    def check(self, setup: Setup) -> None:
        """Fail before anything trains: unknown names, impossible sizes."""
        bad = [m for m in self.models if m not in MODELS]
        if bad or not self.models:
            raise ValueError(f"models must be a non-empty list from {MODELS}, got {self.models!r}")
        if self.bd2_models is not None and (not self.bd2_models
                                            or any(m not in self.models for m in self.bd2_models)):
            raise ValueError(f"bd2_models must be None or a non-empty list from models {self.models!r}, "
                             f"got {self.bd2_models!r}")
        if not isinstance(self.bd2_curves, bool):
            raise ValueError(f"bd2_curves must be true (mixtures at every train ratio) or false "  # noqa: TRY004
                             f"(at the largest only), got {self.bd2_curves!r}")
        bad = [t for t in self.test_sets if t not in syn.TEST_SETS]
        if bad or not self.test_sets:
            raise ValueError(f"test_sets must be a non-empty list from {syn.TEST_SETS}, got {self.test_sets!r}")
        if not self.train_ratios or any(not 0 < r <= 1 for r in self.train_ratios):
            raise ValueError(f"train_ratios must be fractions in (0, 1] of pool_size ({self.pool_size}): "
                             f"a training set cannot be larger than the generated pool; got {self.train_ratios!r}")
        if not self.bd2_fractions or any(not 0 <= f < 1 for f in self.bd2_fractions):
            raise ValueError(f"bd2_fractions must be in [0, 1), got {self.bd2_fractions!r}")
        for name in ("pool_size", "valid_size", "test_size", "length", "batch_size", "max_steps", "eval_every"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be an int >= 1, got {getattr(self, name)!r}")
        if min(self.train_ratios) * self.pool_size < 2:
            raise ValueError(f"the smallest training set (train_ratios x pool_size = "
                             f"{min(self.train_ratios)} x {self.pool_size}) must hold at least 2 examples")
        if self.length + 1 > setup.max_len:
            raise ValueError(f"length + 1 ([CLS]) must be <= max_len ({setup.max_len}), got {self.length}")

    def plan_at(self, fraction: float) -> tuple[list[float], list[str]]:
        """The train ratios and the models fine-tuned at one B-D2 fraction."""
        if fraction == 0:
            return list(self.train_ratios), list(self.models)
        ratios = list(self.train_ratios) if self.bd2_curves else [max(self.train_ratios)]
        return ratios, list(self.models if self.bd2_models is None else self.bd2_models)

    def planned_runs(self) -> list[tuple[float, float, str]]:
        """Every (B-D2 fraction, train ratio, model) fine-tuned by one seed, in run order."""
        return [(fraction, ratio, model) for fraction in self.bd2_fractions
                for ratio in self.plan_at(fraction)[0] for model in self.plan_at(fraction)[1]]


def _draw(lang: syn.Language, name: str, n: int, length: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    return syn.labelled_set(lang, name, n, length, seed=seed)


def training_set(lang: syn.Language, pool_size: int, length: int, size: int, bd2_fraction: float,
                 seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`size` labelled examples: A-D1 with a fraction `bd2_fraction` of them replaced by B-D2.

    The A-D1 and B-D2 pools are drawn once per seed; smaller sets are prefixes of them (nested).
    """
    if not 0 < size <= pool_size:
        raise ValueError(f"training size must be in [1, pool_size={pool_size}], got {size}")
    a_tok, a_lab = _draw(lang, "A-D1", pool_size, length, seed)
    b_tok, b_lab = _draw(lang, "B-D2", pool_size, length, seed + 1)
    n_b = round(bd2_fraction * size)
    tokens = np.concatenate([a_tok[:size - n_b], b_tok[:n_b]])
    labels = np.concatenate([a_lab[:size - n_b], b_lab[:n_b]])
    return tokens, labels


def test_sets(lang: syn.Language, names: list[str], size: int, length: int, seed: int) -> dict:
    """The labelled test sets (fixed by the language seed, shared by every fine-tuning run)."""
    return {name: _draw(lang, name, size, length, seed=10_000 + 97 * seed + i)
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


def build_classifier(model: str, setup: Setup, seed: int, pretrained: dict[str, Path] | None = None,
                     cbow_vectors: np.ndarray | None = None, cbow_std: float = CbowConfig.std):
    """A fresh classifier for one arm: scratch, WITH, WITHOUT, shuffled WITH, or CBOW (frozen) embeddings."""
    from mlmlib.models import bert_classifier, load_state

    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    size = setup.model_size()
    if model == "scratch":
        return bert_classifier(size, 2, seed=seed)
    if model in CBOW_MODELS:
        return cbow_classifier(setup, seed, cbow_vectors, cbow_std, frozen=model == "cbow-frozen")
    if not pretrained or PRETRAINED_FROM[model] not in pretrained:
        raise ValueError(f"model {model!r} needs the model pretrained on {PRETRAINED_FROM[model]!r}")
    state = load_state(Path(pretrained[PRETRAINED_FROM[model]]) / "model")
    if model == "shuffled":
        state = shuffle_weights(state, seed=seed)
    return bert_classifier(size, 2, from_encoder=state, seed=seed)


def prepare(setup: Setup, sweep: Sweep) -> dict[str, Path]:
    """Check the sweep and find (and check the convergence of) the pretrained models it needs."""
    sweep.check(setup)
    pretrained = {}
    for corpus in sorted({PRETRAINED_FROM[m] for m in sweep.models if m in PRETRAINED_FROM}):
        folder = pretrained_dir(setup, corpus)
        check_converged(load_history(folder), sweep.loss_threshold, corpus)
        pretrained[corpus] = folder
    return pretrained


def run_sweep(setup: Setup, sweep: Sweep, seed: int, progress: bool | None = False, log=print) -> list[dict]:
    """Fine-tune every model at every size and B-D2 fraction with one seed; one row per test set."""
    from mlmlib.finetune import FinetuneConfig, finetune, metrics_from_probs, predict

    pretrained = prepare(setup, sweep)  # all checks before anything trains
    lang = syn.make_language(setup.language())
    tests = {k: (encode(t, setup.n_sets), y) for k, (t, y) in
             test_sets(lang, sweep.test_sets, sweep.test_size, sweep.length, setup.language_seed).items()}
    vectors = cached_cbow(setup, sweep.cbow) if set(CBOW_MODELS) & set(sweep.models) else None
    rows = []
    for fraction in sweep.bd2_fractions:
        val_tok, val_lab = training_set(lang, sweep.valid_size, sweep.length, sweep.valid_size,
                                        fraction, seed=100_000 + 10 * seed + 5)
        valid = encode(val_tok, setup.n_sets, val_lab)
        ratios, models = sweep.plan_at(fraction)
        for ratio in ratios:
            size = max(2, round(ratio * sweep.pool_size))
            tok, lab = training_set(lang, sweep.pool_size, sweep.length, size, fraction,
                                    seed=100_000 + 10 * seed)
            train = encode(tok, setup.n_sets, lab)
            for model in models:
                clf = build_classifier(model, setup, seed, pretrained, vectors, sweep.cbow.std)
                config = FinetuneConfig(max_steps=sweep.max_steps, batch_size=sweep.batch_size, lr=sweep.lr,
                                        eval_every=sweep.eval_every, patience=sweep.patience, seed=seed)
                result = finetune(clf, train, valid, config, progress=progress)
                accs = {}
                for name, (data, labels) in tests.items():
                    acc = metrics_from_probs(predict(clf, data), labels)["accuracy"]
                    accs[name] = acc
                    rows.append({"model": model, "bd2_fraction": fraction, "train_ratio": ratio,
                                 "train_size": size, "test_set": name, "accuracy": acc,
                                 "prior": stats.class_prior(labels), "steps": result.steps,
                                 "best_step": result.best_step, "fine_tune_seed": seed})
                if log:
                    log(f"B-D2 {fraction:.2f} | n={size:5d} | {model:11s} | steps {result.steps:4d} | "
                        + " ".join(f"{k} {v:.3f}" for k, v in accs.items()))
    return rows
