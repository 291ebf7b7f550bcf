"""Paper B's parameter groups: the table, the correction, the start, the model, the pretraining,
B2's timing and the fine-tuning (the corpus's is `corpus_config`, the speed switches'
`mlmlib.speed`).

Each page takes a group as one dict of overrides (mlmlib.configs). The defaults are B1's smoke
run; `Model`, `Pretraining`, `Timing` and `Finetune` also have named presets (MODEL_PRESETS,
PRETRAINING_PRESETS, TIMING_PRESETS, FINETUNE_PRESETS: B2's, the test plan's and the paper
plan's among them), chosen by the field `preset` as mlmlib.configs describes. A field's
comment gives the paper's value where it differs, and "reconstructed" marks a setting the paper
body did not give. Standard library only, so the plan loader can check a plan's groups without
torch.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from mlmlib.base_config import BASE_PRESETS, MINILM, BaseModelConfig
from mlmlib.configs import fill_preset, resolve_preset
from mlmlib.objectives import ELECTRA_DISC_WEIGHT, ELECTRA_TEMPERATURE, MASK_RATE

# Where a correction acts: "auto" is the discriminator for ELECTRA, the MLM loss for MLM
# (negatives.APPLY_TO names the explicit targets; a test keeps the two lists together).
APPLY_TO = ("auto", "both", "disc", "mlm")
SCRATCH = "scratch"
BASES = (SCRATCH, MINILM)  # where the arms' encoder starts
GENERATORS = ("fresh", "base")  # ELECTRA's generator on a pretrained base (Start.generator)
# Reconstructed: which words the robustness test may swap (the paper does not say).
SUBSTITUTION_POS = ("unambiguous", "guessed")


@dataclass(frozen=True)
class Table:
    """Where the correction table comes from and how much of WordNet is kept for the test."""

    # GloVe's neighbours at smoke scale: WordNet's false negatives are ~1e-4 of the replaced
    # tokens of a generator this weak (paper: "wordnet"). Any of lookup_tables.SOURCES.
    source: str = "glove-6b-50d"
    heldout_fraction: float = 0.3  # share of WordNet pairs never used by HC (reconstructed)
    split_seed: int = 0
    top_k: int = 10  # word-vector neighbours per word (reconstructed)
    threshold: float = 0.7  # minimum cosine of a neighbour pair (reconstructed)

    def __post_init__(self) -> None:
        # imported here: the names come from the data package, which this module must not load
        from mlmlib.papers.true_negatives.sources import check_source

        check_source(self.source)
        if not 0.0 <= self.heldout_fraction < 1.0:
            raise ValueError(f"heldout_fraction must be in [0, 1), got {self.heldout_fraction!r}")
        if self.top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {self.top_k!r}")


@dataclass(frozen=True)
class Correction:
    """The settings every arm's correction shares (the arm names its method: `arms`)."""

    lam: float = 1.0  # SR weight (reconstructed)
    eps: float = 0.1  # sr-smooth target mass (reconstructed)
    tau: float = 0.1  # sr-smooth temperature (reconstructed)
    apply_to: str = "auto"  # HC target: auto is the discriminator (ELECTRA), the MLM loss (MLM)
    whole_words: bool = True  # only whole-word tokens can be false negatives

    def __post_init__(self) -> None:
        if isinstance(self.lam, bool) or not isinstance(self.lam, (int, float)) or self.lam < 0:
            raise ValueError(f"lam must be a number >= 0, got {self.lam!r}")
        if self.apply_to not in APPLY_TO:
            raise ValueError(f"apply_to must be one of {APPLY_TO}, got {self.apply_to!r}")


@dataclass(frozen=True)
class Start:
    """Where every arm's model starts: B1's `start` group.

    `base`: "scratch", or "minilm-l6", the shipped MiniLM encoder (a CPU-scale proxy; it needs
    its tokenizer, and its geometry replaces hidden/layers/heads). On a pretrained base,
    `generator="fresh"`: the heads and ELECTRA's narrower generator start fresh (seeded);
    `generator="base"`: the base's masked LM with the MLM head fitted on the base model page
    (`base_steps` steps, the same cached head A5 and C use) is ELECTRA's generator, as wide as
    the discriminator, its layers frozen and its head trained; the MLM arms continue the same
    masked LM. Why: a fresh generator samples almost no synonyms in the steps a CPU affords
    (paper_b.md), and a frozen encoder halves the generator's cost.

    Its own group, not the base-model group (mlmlib.base_config): B1's default is no base at
    all, MiniLM is the only base it can build ELECTRA pairs from, its tokenizer is the
    corpus's, and `generator` has no place there. The head-fit fields take that group's
    defaults (its smoke preset's steps), so B1 and the base model page name the same head unless
    a plan says otherwise.
    """

    base: str = SCRATCH  # paper: "scratch"
    generator: str = "fresh"
    # the head fit, as on the base model page: its steps, corpus sentences and tokens per sentence
    base_steps: int = BASE_PRESETS["smoke"]["steps"]
    base_max_sentences: int = BaseModelConfig.max_sentences
    base_max_length: int = BaseModelConfig.max_length

    def __post_init__(self) -> None:
        if self.base not in BASES:
            raise ValueError(f"base={self.base!r}: use one of {list(BASES)}")
        if self.generator not in GENERATORS:
            raise ValueError(f"generator={self.generator!r}: use one of {list(GENERATORS)}")
        if self.generator == "base" and self.base == SCRATCH:
            raise ValueError(f"generator='base' needs a pretrained base, one of {list(BASES[1:])}; "
                             f"base={self.base!r} has no masked LM to sample from")
        for name in ("base_steps", "base_max_sentences", "base_max_length"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be an int >= 1, got {getattr(self, name)!r}")

    def key(self) -> dict:
        """What a cached warm start depends on (empty from scratch: those keys stay as they were)."""
        if self.base == SCRATCH:
            return {}
        if self.generator == "fresh":
            return {"base": self.base}
        return {"base": self.base, "generator": "base", "base_steps": self.base_steps,
                "base_max_sentences": self.base_max_sentences, "base_max_length": self.base_max_length}


def _is_int(value, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_list(name: str, values) -> None:
    """A list (`name`, as the page calls it) must be non-empty and repeat no value."""
    if isinstance(values, (str, int)) or not len(values):
        raise ValueError(f"{name} must be a non-empty list, got {values!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"{name} lists a value twice: {list(values)!r}")


MODEL_PRESETS = {
    # B1's smoke encoder: a step in milliseconds on a CPU
    "smoke": {"hidden": 64, "layers": 2, "heads": 2, "embedding_size": 0, "generator_fraction": 0.5},
    # ELECTRA-small (Clark et al. 2020): factorised embeddings, a generator a quarter as wide
    "electra-small": {"hidden": 256, "layers": 12, "heads": 4, "embedding_size": 128,
                      "generator_fraction": 0.25},
}


@dataclass(frozen=True)
class Model:
    """The arms' encoder from scratch: a preset of MODEL_PRESETS, its sizes overridable one by
    one (None: the preset's). On a pretrained base (`Start.base`) the base's geometry replaces
    hidden, layers, heads and embedding_size; generator_fraction still sizes a fresh generator."""

    preset: str = "smoke"  # paper: "electra-small"
    hidden: int | None = None  # discriminator width
    layers: int | None = None
    heads: int | None = None
    embedding_size: int | None = None  # factorised embeddings; 0: the hidden width
    generator_fraction: float | None = None  # generator width / discriminator width

    def __post_init__(self) -> None:
        fill_preset(self, MODEL_PRESETS)
        for name in ("hidden", "layers", "heads"):
            if not _is_int(getattr(self, name), 1):
                raise ValueError(f"{name} must be an int >= 1, got {getattr(self, name)!r}")
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if not _is_int(self.embedding_size, 0):
            raise ValueError(f"embedding_size must be an int >= 1, or 0 (the hidden width), got "
                             f"{self.embedding_size!r}")
        if not _is_number(self.generator_fraction) or not 0 < self.generator_fraction <= 1:
            raise ValueError(f"generator_fraction must be in (0, 1], got {self.generator_fraction!r}")

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The preset's values for the fields left None (mlmlib.configs.resolve)."""
        return resolve_preset(values, MODEL_PRESETS)

    def geometry(self) -> dict:
        """The encoder's sizes as mlmlib.models.ModelSize takes them (without vocabulary and length)."""
        return {"hidden": self.hidden, "layers": self.layers, "heads": self.heads,
                "embedding_size": self.embedding_size or None}


def check_checkpoints(checkpoints: Sequence[int], steps: int, log_every: int) -> list[int]:
    """The steps at which a chain is fine-tuned: `checkpoints` and `steps` itself, increasing.

    Each must be an int in [1, steps] and a multiple of log_every (a logging window ends
    there, so the statistics of the record's checkpoint row are the model's own).
    """
    if isinstance(checkpoints, (str, int)) or not all(
            isinstance(c, int) and not isinstance(c, bool) for c in checkpoints):
        raise ValueError(f"checkpoints must be a list of ints, got {checkpoints!r}")
    if any(b <= a for a, b in itertools.pairwise(checkpoints)):
        raise ValueError(f"checkpoints must be increasing, got {list(checkpoints)!r}")
    bad = [c for c in checkpoints if not 1 <= c <= steps or (c % log_every and c != steps)]
    if bad:
        raise ValueError(f"checkpoints: {bad} not allowed; each must be a step in "
                         f"[1, steps={steps}] and a multiple of log_every={log_every}")
    return [*checkpoints, steps] if not checkpoints or checkpoints[-1] != steps else list(checkpoints)


# B1's smoke chain, after a shared warm start: seconds per arm on a CPU
_SMOKE_PRETRAINING = {"steps": 100, "batch_size": 32, "lr": 0.002, "warmup_frac": 0.1,
                      "temperature": 3.0, "log_every": 50, "checkpoints": (),
                      "checkpoint_every": 0, "warm_start_steps": 500}
# B2's timed steps: per arm and repetition, a few steps of a small batch (no warm start)
_TIMING = {**_SMOKE_PRETRAINING, "steps": 5, "batch_size": 4, "lr": 3e-3,
           "temperature": ELECTRA_TEMPERATURE, "warm_start_steps": 0}
PRETRAINING_PRESETS = {
    # B1's chains
    "smoke": _SMOKE_PRETRAINING,
    # the test plan's: a 6-step chain from scratch, fine-tuned at step 3 too
    "tiny": {**_SMOKE_PRETRAINING, "steps": 6, "batch_size": 16, "lr": 0.003,
             "temperature": ELECTRA_TEMPERATURE, "log_every": 3, "checkpoints": (3,),
             "warm_start_steps": 0},
    # the paper plan's: ELECTRA-small's recipe (Clark et al. 2020), 1M steps of batch 128 at
    # temperature 1, resumable every 10,000 steps
    "paper": {"steps": 1_000_000, "batch_size": 128, "lr": 5e-4, "warmup_frac": 0.01,
              "temperature": ELECTRA_TEMPERATURE, "log_every": 1000, "checkpoints": (),
              "checkpoint_every": 10_000, "warm_start_steps": 0},
    # B2's timed steps
    "timing": _TIMING,
    "timing-tiny": {**_TIMING, "steps": 4, "batch_size": 16},  # the test plan's
    # the paper plan's: 10 timed steps of ELECTRA-small's batch and learning rate
    "timing-paper": {**_TIMING, "steps": 10, "batch_size": 128, "lr": 5e-4},
}
# What only a chain (B1) uses: B2 times steps of one training loop (`check_timing`).
CHAIN_FIELDS = ("log_every", "checkpoints", "checkpoint_every", "warm_start_steps",
                "warm_start_seed")


@dataclass(frozen=True)
class Pretraining:
    """Each arm's pretraining: a preset of PRETRAINING_PRESETS (None: the preset's), ELECTRA's
    published loss settings, and the chain's logging, checkpoints and shared warm start."""

    preset: str = "smoke"
    steps: int | None = None  # each arm's chain (B2: timed steps per arm) (ELECTRA-small: 1M)
    batch_size: int | None = None  # (ELECTRA-small: 128)
    lr: float | None = None  # (ELECTRA-small: 5e-4)
    warmup_frac: float | None = None  # (ELECTRA: 10k of 1M steps)
    mask_rate: float = MASK_RATE
    disc_weight: float = ELECTRA_DISC_WEIGHT
    # generator sampling temperature (paper: 1; at 1 a smoke-size generator samples words a
    # 2-layer discriminator never flags, hence the smoke preset's 3)
    temperature: float | None = None
    log_every: int | None = None
    # steps at which the chain is also fine-tuned: increasing, multiples of log_every, at most
    # steps (empty: steps only; steps always is)
    checkpoints: tuple[int, ...] | None = None
    # steps between resumable checkpoints in the run folder, 0: none (paper: 10000)
    checkpoint_every: int | None = None
    # shared uncorrected ELECTRA/MLM pretraining before the arms (paper: 0)
    warm_start_steps: int | None = None
    # None: each pretraining seed its own warm start; an int: one warm start (per objective)
    # shared by every seed
    warm_start_seed: int | None = None

    def __post_init__(self) -> None:
        fill_preset(self, PRETRAINING_PRESETS)
        for name, least in (("steps", 1), ("batch_size", 1), ("log_every", 1),
                            ("checkpoint_every", 0), ("warm_start_steps", 0)):
            if not _is_int(getattr(self, name), least):
                raise ValueError(f"{name} must be an int >= {least}, got {getattr(self, name)!r}")
        for name in ("lr", "temperature"):
            if not _is_number(getattr(self, name)) or not getattr(self, name) > 0:
                raise ValueError(f"{name} must be a number > 0, got {getattr(self, name)!r}")
        if not _is_number(self.warmup_frac) or not 0 <= self.warmup_frac < 1:
            raise ValueError(f"warmup_frac must be in [0, 1), got {self.warmup_frac!r}")
        if not _is_number(self.mask_rate) or not 0 < self.mask_rate < 1:
            raise ValueError(f"mask_rate must be in (0, 1), got {self.mask_rate!r}")
        if not _is_number(self.disc_weight) or self.disc_weight < 0:
            raise ValueError(f"disc_weight must be a number >= 0, got {self.disc_weight!r}")
        if self.warm_start_seed is not None and not _is_int(self.warm_start_seed, 0):
            raise ValueError(f"warm_start_seed must be an int >= 0 or None (each seed its own), "
                             f"got {self.warm_start_seed!r}")
        check_checkpoints(self.checkpoints, self.steps, self.log_every)

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The preset's values for the fields left None (mlmlib.configs.resolve)."""
        return resolve_preset(values, PRETRAINING_PRESETS)

    def pretrain_config(self, seed: int, speed):
        """The training loop's mlmlib.pretrain.PretrainConfig for pretraining seed `seed`, with
        the `speed` group's precision and compile (its objective is set per arm)."""
        from mlmlib.pretrain import PretrainConfig

        return PretrainConfig(steps=self.steps, batch_size=self.batch_size, lr=self.lr,
                              warmup_frac=self.warmup_frac, mask_rate=self.mask_rate,
                              disc_weight=self.disc_weight, temperature=self.temperature,
                              log_every=self.log_every, checkpoint_every=self.checkpoint_every,
                              seed=seed, precision=speed.precision, compile=speed.compile)


def check_timing(pretraining: Pretraining) -> None:
    """B2 times steps of one training loop: a chain's fields (CHAIN_FIELDS) have no effect there,
    so a value other than its preset's is refused, naming the field."""
    plain = Pretraining(preset=pretraining.preset)
    for name in CHAIN_FIELDS:
        if getattr(pretraining, name) != getattr(plain, name):
            raise ValueError(f"pretraining.{name} = {getattr(pretraining, name)!r}: B2 times the "
                             f"steps of one training loop, where {', '.join(CHAIN_FIELDS)} have "
                             f"no effect; leave it at its preset's {getattr(plain, name)!r}")


TIMING_PRESETS = {
    "smoke": {"reps": 2, "warmup_steps": 2},  # a quick look beside another run
    "tiny": {"reps": 2, "warmup_steps": 1},  # the test plan's
    "cpu": {"reps": 87, "warmup_steps": 5},  # the cpu plan's: sized in book/design_history.md
    "paper": {"reps": 20, "warmup_steps": 20},  # the paper plan's, on a GPU
}


@dataclass(frozen=True)
class Timing:
    """How B2 repeats its timed steps: a preset of TIMING_PRESETS (None: the preset's)."""

    preset: str = "smoke"
    reps: int | None = None  # repetitions (each: every arm in a shuffled order)
    warmup_steps: int | None = None  # untimed steps before the first repetition

    def __post_init__(self) -> None:
        fill_preset(self, TIMING_PRESETS)
        for name, least in (("reps", 1), ("warmup_steps", 0)):
            if not _is_int(getattr(self, name), least):
                raise ValueError(f"{name} must be an int >= {least}, got {getattr(self, name)!r}")

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The preset's values for the fields left None (mlmlib.configs.resolve)."""
        return resolve_preset(values, TIMING_PRESETS)


FINETUNE_PRESETS = {
    # B1's smoke fine-tuning: two offline tasks
    "smoke": {"tasks": ("amazon-food", "wordnet-lexname"), "seeds": (0,), "epochs": 2,
              "lr": 0.003, "pooling": "mean", "max_length": 48, "max_train": 1000,
              "max_eval": 500},
    # the test plan's: one task, one epoch, a few dozen examples
    "tiny": {"tasks": ("amazon-food",), "seeds": (0,), "epochs": 1, "lr": 0.001,
             "pooling": "mean", "max_length": 24, "max_train": 64, "max_eval": 48},
    # the paper plan's: GLUE dev but STS-B (regression) and SQuAD v1.1 dev (network), three
    # seeds, ELECTRA's [CLS] head; a million examples is every example of each split
    "paper": {"tasks": ("sst2", "cola", "mrpc", "qnli", "rte", "mnli", "qqp", "squad"),
              "seeds": (0, 1, 2), "epochs": 3, "lr": 3e-4, "pooling": "cls", "max_length": 128,
              "max_train": 1_000_000, "max_eval": 1_000_000},
}


@dataclass(frozen=True)
class Finetune:
    """B1's fine-tuning of each checkpoint, and its robustness test: the same test examples with
    held-out WordNet synonyms swapped in (`substitution`). A preset of FINETUNE_PRESETS, its
    fields overridable one by one (None: the preset's)."""

    preset: str = "smoke"
    # paper: GLUE tasks, e.g. "sst2", "cola", and "squad" (SQuAD v1.1) (network)
    tasks: tuple[str, ...] | None = None
    seeds: tuple[int, ...] | None = None  # fine-tuning seeds, each added to the pretraining seed
    epochs: int | None = None
    batch_size: int = 32
    lr: float | None = None
    pooling: str | None = None  # classifier head: mean of the token states, or "cls" (paper: cls)
    max_length: int | None = None  # tokens per example (a QA task: per question + context window)
    # training and test examples at most (more than a split holds: all of it)
    max_train: int | None = None
    max_eval: int | None = None
    max_validation: int | None = None  # examples that pick the best epoch (None: max_eval)
    substitution_rate: float = 0.5  # chance to swap each content word that has a held-out synonym
    # words it may swap: "unambiguous" (one part of speech in WordNet) or "guessed" (also by
    # context cues) (reconstructed)
    substitution_pos: str = "unambiguous"

    def __post_init__(self) -> None:
        fill_preset(self, FINETUNE_PRESETS)
        check_list("tasks", self.tasks)
        check_list("seeds", self.seeds)
        if not all(_is_int(s, 0) for s in self.seeds):
            raise ValueError(f"seeds must be ints >= 0, got {list(self.seeds)!r}")
        for name in ("epochs", "batch_size", "max_length"):
            if not _is_int(getattr(self, name), 1):
                raise ValueError(f"{name} must be an int >= 1, got {getattr(self, name)!r}")
        for name in ("max_train", "max_eval"):
            if not _is_int(getattr(self, name), 1):
                raise ValueError(f"{name} must be an int >= 1, got {getattr(self, name)!r}")
        if self.max_validation is not None and not _is_int(self.max_validation, 1):
            raise ValueError(f"max_validation must be an int >= 1 or None (max_eval), "
                             f"got {self.max_validation!r}")
        if not _is_number(self.lr) or not self.lr > 0:
            raise ValueError(f"lr must be a number > 0, got {self.lr!r}")
        if not _is_number(self.substitution_rate) or not 0 < self.substitution_rate <= 1:
            raise ValueError(f"substitution_rate must be in (0, 1], got {self.substitution_rate!r}")
        if self.substitution_pos not in SUBSTITUTION_POS:
            raise ValueError(f"substitution_pos must be one of {SUBSTITUTION_POS}, "
                             f"got {self.substitution_pos!r}")

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The preset's values for the fields left None (mlmlib.configs.resolve)."""
        return resolve_preset(values, FINETUNE_PRESETS)
