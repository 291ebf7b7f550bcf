"""Paper A's parameter groups: the synthetic setup, the fine-tuning sweep and the CBOW control.

Each group is the one source of its fields and defaults (mlmlib.configs): the notebooks take it
as a dict of overrides (`setup = {}`), the plans give only what differs. `Setup` and `Sweep` have
named presets (SETUP_PRESETS, SWEEP_PRESETS: `smoke`, their defaults; `tiny`, the test suite's;
`paper`, the authors' constants), chosen by name (`setup: {preset: paper}`), single fields still
overridable. Standard library only at import, so the plan loader reads these classes without
torch; the methods that need the generator or the model import it when called.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from itertools import pairwise

from mlmlib.configs import fill_preset, resolve_preset

# The fine-tuned arms; "cbow" and "cbow-frozen" start from the same word2vec vectors.
MODELS = ("scratch", "with", "without", "shuffled", "cbow", "cbow-frozen")
# PretrainConfig's precisions (mlmlib.pretrain.PRECISIONS; a test keeps them equal): checked here
# without torch, when a plan is loaded.
PRECISIONS = ("auto", "fp32", "bf16")
# The generator's labelled test sets (mlmlib.data.synthetic.TEST_SETS; a test keeps them equal).
TEST_SETS = ("A-D1", "B-D1", "A-D2", "B-D2")
# How the scratch arm starts: "pretraining", the very weights WITH and WITHOUT started from
# before their MLM (the same init and weight scale: "minus scratch" then measures what the MLM
# learned), or "fresh", a new init with the fine-tuning seed (the authors' code; our
# reconstruction keeps it switchable).
SCRATCH_INITS = ("pretraining", "fresh")
# Languages the dose pilot draws (scripts/pilot_a_dose.py) and a recorded run may not: the
# records' languages then say nothing about the settings chosen on them.
PILOT_LANGUAGES = (300, 301, 302, 303)


def check_recorded_language(language_seed: int, recording: bool) -> None:
    """Stop a recorded run (`recording`: it writes a record) on a pilot language."""
    from mlmlib.data.synthetic import check_not_pilot

    if recording:
        check_not_pilot(language_seed, PILOT_LANGUAGES, "language_seed")


# The vocabulary the sizes imply (mlmlib.papers.distributional.synthetic adds [PAD] and [CLS] to
# the generator's alphabets and [MASK]; it explains why).
def special_ids(n_sets: int) -> dict[str, int]:
    """Ids of [MASK] (the generator's), [PAD] and [CLS] (the encoder's, added by `synthetic`)."""
    return {"mask": 2 * n_sets, "pad": 2 * n_sets + 1, "cls": 2 * n_sets + 2}


def vocab_size(n_sets: int) -> int:
    """Both alphabets plus [MASK], [PAD], [CLS]."""
    return 2 * n_sets + 3


_SMOKE_SETUP = {
    "language": "smoke", "corpus_size": 4000, "corpus_length": 32, "hidden": 64, "layers": 2,
    "heads": 2, "max_len": 64, "dropout": 0.0, "steps": 1000, "batch_size": 64, "lr": 2e-3,
    "warmup_frac": 0.05, "weight_decay": 0.01, "beta2": 0.999, "loss_threshold": 2.5,
}
# The named setups (Setup.preset); each gives every field that defaults to None in Setup.
SETUP_PRESETS: dict[str, dict] = {
    # the smoke profile's, and the cpu profile's at 3x its steps and corpus: an encoder this small
    # learns the smoke language's task in minutes on a CPU only at a far higher learning rate
    # than the paper's (book/paper_a.md); A2 checks that its MLM ended below the threshold
    "smoke": _SMOKE_SETUP,
    # the test suite's and, by its numbers, the rehearsals': plumbing only, a few MLM steps, so
    # the convergence threshold sits above the unigram loss
    "tiny": {**_SMOKE_SETUP, "language": "tiny", "corpus_size": 64, "corpus_length": 16,
             "hidden": 16, "layers": 1, "max_len": 40, "steps": 6, "batch_size": 8,
             "loss_threshold": 10.0},
    # the authors' constants (book/paper_a.md): 200k sequences of 256 tokens, BERT's shape at 6
    # layers, 23,438 steps (15 epochs of 200k sequences at batch 128); the threshold is ours
    "paper": {"language": "paper", "corpus_size": 200000, "corpus_length": 256, "hidden": 768,
              "layers": 6, "heads": 12, "max_len": 512, "dropout": 0.1, "steps": 23438,
              "batch_size": 128, "lr": 5e-5, "warmup_frac": 0.1, "weight_decay": 0.001,
              "beta2": 0.98, "loss_threshold": 2.0},
}


@dataclass
class Setup:
    """Everything that defines a pretrained model: language, corpus, encoder shape, MLM training.

    `preset` names a set of them (SETUP_PRESETS); a field left None takes the preset's value, any
    other replaces it, and the built group holds the values. The fields that make the model are
    its cache key (`key`, `identity`). The language and pretraining seeds are not fields a page
    overrides: the claims' intervals vary them, so the pages take them as grid parameters (A2:
    `language_seed` and `seed`; A3: `language_seed` and `pretrain_seed`) and set them with
    `with_seeds`.
    """

    preset: str = "smoke"  # one of SETUP_PRESETS: "smoke", "tiny" or "paper"
    # The synthetic language: a preset of mlmlib.data.synthetic.LANGUAGES. A size given below
    # replaces the language's; None keeps it (built, the group holds the sizes).
    language: str | None = None
    n_sets: int | None = None
    n_states: int | None = None
    n_patterns: int | None = None
    pattern_length: int | None = None
    pattern_set_size: int | None = None
    corpus_size: int | None = None    # pretraining sequences per corpus
    corpus_length: int | None = None  # tokens per pretraining sequence
    hidden: int | None = None         # encoder width
    layers: int | None = None         # encoder layers
    heads: int | None = None          # attention heads
    max_len: int | None = None        # position embeddings: at least the sequence length plus one
    dropout: float | None = None
    steps: int | None = None          # MLM steps
    batch_size: int | None = None     # MLM batch
    lr: float | None = None           # MLM peak learning rate
    warmup_frac: float | None = None
    weight_decay: float | None = None
    beta2: float | None = None
    precision: str = "auto"       # "auto" (bf16 on a GPU that has it), "fp32" or "bf16"
    compile: bool = False         # torch.compile the MLM step (speed only: not in the cache key)
    # The MLM must end below this loss (nats) to count as converged. It judges the model rather
    # than making it: not part of the cache key.
    loss_threshold: float | None = None
    language_seed: int = field(default=0, init=False)  # the synthetic language: chains, patterns
    pretrain_seed: int = field(default=0, init=False)  # corpus draw, weight init, masking

    def __post_init__(self) -> None:
        from mlmlib.data import synthetic as syn

        fill_preset(self, SETUP_PRESETS)  # the preset's values where none is given
        syn.set_language(self)  # the language's sizes where none is given; validates them
        if self.corpus_length + 1 > self.max_len:
            raise ValueError(f"corpus_length + 1 ([CLS]) must be <= max_len ({self.max_len}), "
                             f"got {self.corpus_length}")
        if self.corpus_size < self.batch_size:
            raise ValueError(f"corpus_size ({self.corpus_size}) must be >= batch_size "
                             f"({self.batch_size})")
        if not self.loss_threshold > 0:
            raise ValueError(f"loss_threshold must be a loss above 0 nats, got "
                             f"{self.loss_threshold}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if not isinstance(self.compile, bool):
            raise ValueError(f"compile must be true or false, got {self.compile!r}")

    def with_pretrain_seed(self, seed: int) -> Setup:
        """A copy whose models are pretrained with `seed` (in the same language)."""
        return self.with_seeds(self.language_seed, seed)

    def with_seeds(self, language_seed: int, pretrain_seed: int) -> Setup:
        """A copy in language `language_seed` whose models are pretrained with `pretrain_seed`."""
        for name, seed in (("language_seed", language_seed), ("pretraining seed", pretrain_seed)):
            if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
                raise ValueError(f"{name} must be an int >= 0, got {seed!r}")
        copy = replace(self)
        copy.language_seed, copy.pretrain_seed = language_seed, pretrain_seed
        return copy

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The group's fields, the preset's values and its language's sizes in those left None
        (configs.resolve)."""
        from mlmlib.data import synthetic as syn

        return syn.preset_fields(resolve_preset(values, SETUP_PRESETS))

    def language_config(self):
        """The generator's config (mlmlib.data.synthetic.LanguageConfig)."""
        from mlmlib.data import synthetic as syn

        return syn.LanguageConfig(
            n_sets=self.n_sets, n_states=self.n_states, n_patterns=self.n_patterns,
            pattern_length=self.pattern_length, pattern_set_size=self.pattern_set_size,
            seed=self.language_seed,
        )

    def model_size(self):
        """The encoder's shape (ModelSize), with [PAD] as the padding id."""
        from mlmlib.models import ModelSize

        return ModelSize(vocab_size=vocab_size(self.n_sets), hidden=self.hidden, layers=self.layers,
                         heads=self.heads, max_len=self.max_len, dropout=self.dropout,
                         pad_id=special_ids(self.n_sets)["pad"])

    def pretrain_config(self):
        """The MLM training settings (PretrainConfig): 15% masking, 80/10/10, AdamW, linear
        decay."""
        from mlmlib.pretrain import PretrainConfig

        return PretrainConfig(steps=self.steps, batch_size=self.batch_size, lr=self.lr,
                              warmup_frac=self.warmup_frac, weight_decay=self.weight_decay,
                              betas=(0.9, self.beta2), eps=1e-6, seed=self.pretrain_seed,
                              log_every=max(1, self.steps // 40), precision=self.precision,
                              compile=self.compile)

    def corpus(self, kind: str, lang=None):
        """The pretraining corpus `mix` or `shift` (the same draw for the MLM and for CBOW)."""
        from mlmlib.data import synthetic as syn

        lang = lang or syn.make_language(self.language_config())
        return syn.pretraining_corpus(lang, kind, self.corpus_size, self.corpus_length,
                                      seed=self.pretrain_seed + 1)

    def identity(self) -> dict:
        """The fields that make a pretrained model: all but loss_threshold, which judges it,
        compile, which changes its speed only, and the names of the setup's and the language's
        presets (their values are here)."""
        return {k: v for k, v in asdict(self).items()
                if k not in ("loss_threshold", "compile", "language", "preset")}

    def key(self, corpus: str) -> dict:
        """The cache key of the model pretrained on `corpus`: the corpus and `identity`."""
        from mlmlib.data import synthetic as syn

        if corpus not in syn.CORPORA:
            raise ValueError(f"corpus must be one of {syn.CORPORA}, got {corpus!r}")
        return {"corpus": corpus, **self.identity()}


@dataclass
class CbowConfig:
    """word2vec CBOW settings (gensim) and the scale of the vectors in the embedding layer.

    The dimension is the encoder's width. The defaults are the authors' code: 5 epochs, then 10
    more (15), window 5, and the whole vector matrix rescaled to a standard deviation of 0.03.
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


def check_train_sizes(sizes, pool_size: int) -> None:
    """Fail before anything trains: training sizes must be ints >= 2, increasing, within the
    pool."""
    sizes = list(sizes) if isinstance(sizes, (list, tuple)) else sizes
    if not isinstance(sizes, list) or not sizes or any(
            isinstance(n, bool) or not isinstance(n, int) for n in sizes):
        raise ValueError(f"train_sizes must be a non-empty list of ints (training examples), "
                         f"got {sizes!r}")
    if sizes[0] < 2:
        raise ValueError(f"train_sizes must start at 2 examples or more, got {sizes!r}")
    if any(b <= a for a, b in pairwise(sizes)):
        raise ValueError(f"train_sizes must be strictly increasing (a learning curve), "
                         f"got {sizes!r}")
    if sizes[-1] > pool_size:
        raise ValueError(f"train_sizes must lie within pool_size ({pool_size}), the labelled "
                         f"examples drawn per seed; the largest is {sizes[-1]}: raise pool_size "
                         f"or lower train_sizes")


_SMOKE_SWEEP = {
    "train_sizes": (25, 100, 400, 1600), "pool_size": 1600, "valid_size": 300, "test_size": 800,
    "length": 32, "lr": 1e-3, "max_steps": 3000, "eval_every": 25, "patience": 6,
    "bd2_curves": False,
}
# The named sweeps (Sweep.preset); each gives every field that defaults to None in Sweep.
SWEEP_PRESETS: dict[str, dict] = {
    # the smoke and cpu profiles': a learning curve that starts where scratch has not learned the
    # task, runs that stop on patience, the mixtures at the largest size only (as learning curves
    # they would add 12 fine-tunings to each seed's 24)
    "smoke": _SMOKE_SWEEP,
    # the test suite's: two training sizes, a few steps
    "tiny": {**_SMOKE_SWEEP, "train_sizes": (8, 32), "pool_size": 32, "valid_size": 16,
             "test_size": 32, "length": 16, "max_steps": 4, "eval_every": 2, "patience": 1},
    # the authors' constants (their fine-tuning script, book/paper_a.md): ratios 0.1 ... 1.0 of
    # 100k examples of 100 tokens, test sets of 10k, up to 30k steps, the mixtures as learning
    # curves
    "paper": {"train_sizes": tuple(range(10000, 100001, 10000)), "pool_size": 100000,
              "valid_size": 10000, "test_size": 10000, "length": 100, "lr": 5e-5,
              "max_steps": 30000, "eval_every": 1000, "patience": 5, "bd2_curves": True},
}


@dataclass
class Sweep:
    """One fine-tuning seed's sweep: models x training-set sizes x B-D2 fractions, four test sets.

    `preset` names a set of sizes and settings (SWEEP_PRESETS); a field left None takes the
    preset's value, any other replaces it. Each run stops on validation patience; `max_steps` is
    a safety cap that a run should not reach (the rows say which did, `hit_cap`).
    """

    preset: str = "smoke"  # one of SWEEP_PRESETS: "smoke", "tiny" or "paper"
    models: tuple[str, ...] = MODELS
    # labelled training examples, increasing (the smoke preset's log-spaced)
    train_sizes: tuple[int, ...] | None = None
    bd2_fractions: tuple[float, ...] = (0.0, 0.1, 0.5)  # fractions of training replaced by B-D2
    # Models fine-tuned at the B-D2 fractions above 0; None: all `models`. The smoke sweep mixes
    # for scratch / WITH / WITHOUT and shuffled WITH, the baselines "pretraining helps" is judged
    # against there too (the paper: CBOW as well).
    bd2_models: tuple[str, ...] | None = ("scratch", "with", "without", "shuffled")
    # True: the mixtures are fine-tuned at every train ratio (the paper's learning curves);
    # False: at the largest only.
    bd2_curves: bool | None = None
    test_sets: tuple[str, ...] = TEST_SETS
    pool_size: int | None = None   # labelled A-D1 (and B-D2) examples drawn per seed
    valid_size: int | None = None  # validation examples (the training mixture), for early stopping
    test_size: int | None = None   # examples per test set
    length: int | None = None      # tokens per labelled sequence
    lr: float | None = None        # fine-tuning learning rate
    batch_size: int = 32
    max_steps: int | None = None   # safety cap per run; patience ends runs first
    # linear warm-up, then decay to max_steps (the paper: 10% of the run; every preset: 50 steps)
    warmup_steps: int = 50
    eval_every: int | None = None  # steps between validations
    patience: int | None = None    # validations without improvement before stopping
    # Every labelled set (training pool, validation, test) half of each class, drawn by rejection
    # from the same generator with the label function unchanged (the paper's sizes give about
    # 0.49 / 0.51 unbalanced; ours give 0.58). False: the generator's own class balance.
    balanced: bool = True
    scratch_init: str = "pretraining"  # SCRATCH_INITS

    def __post_init__(self) -> None:
        """The preset's values where none is given; fail before anything trains: unknown names,
        impossible sizes."""
        fill_preset(self, SWEEP_PRESETS)
        if not isinstance(self.balanced, bool):
            raise ValueError(  # noqa: TRY004
                f"balanced must be true (each class half of every labelled set) or false (the "
                f"generator's own balance), got {self.balanced!r}")
        if self.scratch_init not in SCRATCH_INITS:
            raise ValueError(f"scratch_init must be one of {SCRATCH_INITS}, "
                             f"got {self.scratch_init!r}")
        bad = [m for m in self.models if m not in MODELS]
        if bad or not self.models:
            raise ValueError(f"models must be a non-empty list from {MODELS}, got {self.models!r}")
        if self.bd2_models is not None and (not self.bd2_models
                                            or any(m not in self.models for m in self.bd2_models)):
            raise ValueError(f"bd2_models must be None or a non-empty list from models "
                             f"{self.models!r}, got {self.bd2_models!r}")
        if not isinstance(self.bd2_curves, bool):
            raise ValueError(  # noqa: TRY004
                f"bd2_curves must be true (mixtures at every train ratio) or false (at the "
                f"largest only), got {self.bd2_curves!r}")
        bad = [t for t in self.test_sets if t not in TEST_SETS]
        if bad or not self.test_sets:
            raise ValueError(f"test_sets must be a non-empty list from {TEST_SETS}, "
                             f"got {self.test_sets!r}")
        if not self.bd2_fractions or any(not 0 <= f < 1 for f in self.bd2_fractions):
            raise ValueError(f"bd2_fractions must be in [0, 1), got {self.bd2_fractions!r}")
        for name in ("pool_size", "valid_size", "test_size", "length", "batch_size", "max_steps",
                     "eval_every", "patience", "warmup_steps"):
            if isinstance(getattr(self, name), bool) or not isinstance(getattr(self, name), int) \
                    or getattr(self, name) < 1:
                raise ValueError(f"{name} must be an int >= 1, got {getattr(self, name)!r}")
        check_train_sizes(self.train_sizes, self.pool_size)

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The group's fields, the preset's values in those left None (configs.resolve)."""
        return resolve_preset(values, SWEEP_PRESETS)

    def check(self, setup: Setup) -> None:
        """Fail before anything trains: a labelled sequence longer than the encoder's positions."""
        if self.length + 1 > setup.max_len:
            raise ValueError(f"length + 1 ([CLS]) must be <= max_len ({setup.max_len}), "
                             f"got {self.length}")

    def plan_at(self, fraction: float) -> tuple[list[int], list[str]]:
        """The training sizes and the models fine-tuned at one B-D2 fraction."""
        if fraction == 0:
            return list(self.train_sizes), list(self.models)
        sizes = list(self.train_sizes) if self.bd2_curves else [max(self.train_sizes)]
        return sizes, list(self.models if self.bd2_models is None else self.bd2_models)

    def planned_runs(self) -> list[tuple[float, int, str]]:
        """Every (B-D2 fraction, training size, model) fine-tuned by one seed, in run order."""
        return [(fraction, ratio, model) for fraction in self.bd2_fractions
                for ratio in self.plan_at(fraction)[0] for model in self.plan_at(fraction)[1]]
