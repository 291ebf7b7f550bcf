"""B4's parameter groups: paper B's controlled analogue on paper A's synthetic languages.

`SyntheticSetup` is the language, its corpora, the ELECTRA / BERT encoders pretrained from
scratch and the two lookup tables; `SyntheticFinetune` the fine-tuning on A-D1. Each has named
presets (`SETUP_PRESETS`, `FINETUNE_PRESETS`: smoke, tiny, cpu, paper), chosen by its field
`preset` as mlmlib.configs describes (a field left None takes the preset's value, any other
value replaces it); the default is the smoke profile's. Standard library only, so the plan
loader can check a plan's groups without torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlmlib.configs import fill_preset, resolve_preset
from mlmlib.objectives import ELECTRA_DISC_WEIGHT, ELECTRA_TEMPERATURE

# The language's labelled test sets (mlmlib.data.synthetic.TEST_SETS) that B4 scores: the task
# is learned on A-D1; B-D1 is A-D1 with every token swapped for its synonym (robustness);
# A-D2 is another chain in the same alphabet.
SCORED_SETS = ("A-D1", "B-D1", "A-D2")
# The two tables: every synonym pair (a, a + n_sets), and the same with a share of pairs missing.
TABLES = ("exact", "imperfect")
# Special ids first, so the masking's random tokens ([num_special, vocab)) are the alphabets.
SPECIALS = ("[PAD]", "[CLS]", "[MASK]")
# A `language_seed` of -1 draws the language from the page's own `seed`: one plan entry then
# gives every pretraining seed its own language.
OWN_SEED = -1
# Languages the temperature-1 pilot drew (scripts/pilot_b4_languages.py): no recorded run may
# use them, so that no setting of the records is chosen on the data it is judged on.
PILOT_LANGUAGES = (200, 201, 202, 203)
# The scorecard's column for this testbed (mlmlib.runs.scorecard reads the rows' `testbed`).
TESTBED = "synthetic: ELECTRA from scratch (controlled analogue)"


# Each preset sets the same fields (a group's other fields keep their class defaults).
_SMOKE_SETUP = {
    "language": "small", "corpus_size": 3000, "corpus_length": 32, "probe_size": 300,
    "hidden": 64, "layers": 2, "heads": 2, "embedding_size": None, "generator_fraction": 0.5,
    "dropout": 0.0, "steps": 1500, "batch_size": 64, "lr": 2e-3, "warmup_frac": 0.05,
    "log_every": 100}
SETUP_PRESETS = {
    # B4's smoke run, small enough for a laptop but long enough for the mechanism: at 1,500
    # steps a half-width generator samples the original's synonym for about a fifth of its
    # replacements on `mix`; the discriminator starts to flag replacements only after several
    # thousand (the cpu preset's 8,000)
    "smoke": _SMOKE_SETUP,
    # the test plan's plumbing run: seconds on a CPU
    "tiny": {**_SMOKE_SETUP, "language": "tiny", "corpus_size": 48, "corpus_length": 12,
             "probe_size": 24, "hidden": 16, "layers": 1, "steps": 4, "batch_size": 8,
             "log_every": 2},
    # the cpu plan's: ELECTRA's quarter-width generator, 8,000 steps, the dose the pilot on
    # languages 200-203 ran (every `relabel` discriminator flagging from step 3,000-5,000 on) and
    # found pretraining's benefit on B-D1 at (book/design_history.md, paper B)
    "cpu": {**_SMOKE_SETUP, "generator_fraction": 0.25, "steps": 8000, "log_every": 200},
    # the paper plan's: paper A's language and corpus sizes (sequences of ELECTRA's 128 tokens),
    # ELECTRA-small's geometry and recipe (Clark et al. 2020) for 50k steps
    "paper": {"language": "paper", "corpus_size": 200_000, "corpus_length": 128,
              "probe_size": 2000, "hidden": 256, "layers": 12, "heads": 4, "embedding_size": 128,
              "generator_fraction": 0.25, "dropout": 0.1, "steps": 50_000, "batch_size": 128,
              "lr": 5e-4, "warmup_frac": 0.01, "log_every": 1000},
}


@dataclass(frozen=True)
class SyntheticSetup:
    """The language, the pretraining corpora, the encoders pretrained from scratch, the tables:
    a preset of SETUP_PRESETS, its fields overridable one by one (None: the preset's)."""

    preset: str = "smoke"
    # The synthetic language: a preset of mlmlib.data.synthetic.LANGUAGES (paper A: "paper").
    # A size given below replaces the language's; None keeps it (built, the group holds the sizes).
    language: str | None = None
    n_sets: int | None = None
    n_states: int | None = None
    n_patterns: int | None = None
    pattern_length: int | None = None
    pattern_set_size: int | None = None
    corpus_size: int | None = None    # pretraining sequences per corpus (paper A: 200k)
    # tokens per sequence, before [CLS] (paper A: 256; ELECTRA: 128)
    corpus_length: int | None = None
    probe_size: int | None = None     # held-out sequences the discriminator probe masks and scores
    hidden: int | None = None         # discriminator / MLM width (ELECTRA-small: 256)
    layers: int | None = None         # (ELECTRA-small: 12)
    heads: int | None = None          # (ELECTRA-small: 4)
    # factorised embeddings (ELECTRA-small: 128); the smoke preset's None, or the hidden width
    # itself: none
    embedding_size: int | None = None
    # the generator's width over the discriminator's (ELECTRA: 0.25). Half as wide (smoke) learns
    # the language sooner, so the smoke run's generator makes false negatives
    generator_fraction: float | None = None
    dropout: float | None = None      # (ELECTRA: 0.1)
    steps: int | None = None          # pretraining steps per arm (ELECTRA-small: 1M)
    batch_size: int | None = None     # (ELECTRA-small: 128)
    lr: float | None = None           # (ELECTRA-small: 5e-4)
    warmup_frac: float | None = None  # (ELECTRA-small: 10k of 1M steps)
    # generator sampling temperature (ELECTRA, and every plan: 1). At 1 about half of the cpu
    # size's replacements on `mix` are false negatives; a higher temperature lowers that share
    # (1.5: about 0.4), which makes the temperature a dose of it (design history, paper B)
    temperature: float = ELECTRA_TEMPERATURE
    disc_weight: float = ELECTRA_DISC_WEIGHT  # discriminator loss weight, ELECTRA's
    log_every: int | None = None      # steps per logging window of the false-negative rates
    missing_share: float = 0.5    # share of the exact pairs the imperfect table lacks (seeded)

    def __post_init__(self) -> None:
        from mlmlib.data import synthetic as syn

        fill_preset(self, SETUP_PRESETS)
        syn.set_language(self)  # the language's sizes where none is given; validates them
        for name in ("corpus_size", "corpus_length", "probe_size", "hidden", "layers", "heads",
                     "steps", "batch_size", "log_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be divisible by heads ({self.heads})")
        if self.corpus_size < self.batch_size:
            raise ValueError(f"corpus_size ({self.corpus_size}) must be >= batch_size ({self.batch_size})")
        if not 0 < self.generator_fraction <= 1:
            raise ValueError(f"generator_fraction must be in (0, 1], got {self.generator_fraction!r}")
        if not 0 <= self.missing_share < 1:
            raise ValueError(f"missing_share must be in [0, 1): the share of the exact table's pairs "
                             f"the imperfect table lacks, got {self.missing_share!r}")
        if not 0 <= self.dropout < 1 or not 0 <= self.warmup_frac < 1:
            raise ValueError("dropout and warmup_frac must be in [0, 1)")
        for name in ("lr", "temperature", "disc_weight"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a number > 0, got {value!r}")

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The group's fields: the preset's values, then the language's sizes, in those left None
        (configs.resolve)."""
        from mlmlib.data import synthetic as syn

        return syn.preset_fields(resolve_preset(values, SETUP_PRESETS))

    @property
    def vocab_size(self) -> int:
        """[PAD], [CLS], [MASK], then alphabet A and alphabet B."""
        return len(SPECIALS) + 2 * self.n_sets


_SMOKE_FINETUNE = {"train_size": 1000, "valid_size": 300, "test_size": 500, "length": 32,
                   "lr": 1e-3, "max_steps": 200, "eval_every": 50, "patience": 3,
                   "curve_sizes": ()}
FINETUNE_PRESETS = {
    "smoke": _SMOKE_FINETUNE,  # B4's smoke run
    # the test plan's plumbing run, with a two-size curve
    "tiny": {**_SMOKE_FINETUNE, "train_size": 32, "valid_size": 16, "test_size": 24,
             "length": 12, "max_steps": 3, "eval_every": 2, "curve_sizes": (8, 16)},
    # the cpu plan's: 2,000 balanced A-D1 examples, where the pilot on languages 200-203 found
    # pretraining's benefit on B-D1, and the curve below it (book/design_history.md, paper B)
    "cpu": {**_SMOKE_FINETUNE, "train_size": 2000, "test_size": 1000, "max_steps": 300,
            "curve_sizes": (50, 100, 300, 1000)},
    # the paper plan's: paper A's fine-tuning at its largest training set (book/paper_a.md)
    "paper": {"train_size": 100_000, "valid_size": 10_000, "test_size": 10_000, "length": 100,
              "lr": 5e-5, "max_steps": 30_000, "eval_every": 1000, "patience": 5,
              "curve_sizes": ()},
}


@dataclass(frozen=True)
class SyntheticFinetune:
    """Fine-tuning on A-D1 (as paper A's sweep at its largest training set), scored on
    SCORED_SETS: a preset of FINETUNE_PRESETS, its fields overridable (None: the preset's)."""

    preset: str = "smoke"
    train_size: int | None = None   # labelled A-D1 examples (paper A: 100k)
    valid_size: int | None = None   # A-D1 examples that pick the best step
    test_size: int | None = None    # examples per scored test set (paper A: 10k)
    length: int | None = None       # tokens per labelled sequence (paper A: 100)
    lr: float | None = None         # (paper A: 5e-5)
    batch_size: int = 32
    max_steps: int | None = None    # (paper A: 30k)
    eval_every: int | None = None   # (paper A: 1000)
    patience: int | None = None     # (paper A: 5)
    # each labelled set half of each class, drawn by rejection from the same generator (ours:
    # at these sizes the label patterns make 82-91% of A-D1 one class; paper A's are about even)
    balanced: bool = True
    # more training sizes, each fine-tuned and scored the same way (the `curve` rows): where
    # pretraining helps, against scratch; () fine-tunes at train_size alone
    curve_sizes: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        fill_preset(self, FINETUNE_PRESETS)
        for name in ("train_size", "valid_size", "test_size", "length", "batch_size", "max_steps",
                     "eval_every", "patience"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        sizes = self.curve_sizes
        if (not isinstance(sizes, tuple) or len(set(sizes)) != len(sizes)
                or any(isinstance(n, bool) or not isinstance(n, int) or n < 2 for n in sizes)):
            raise ValueError(f"curve_sizes must be distinct ints >= 2, got {sizes!r}")
        if not isinstance(self.balanced, bool):
            raise ValueError(f"balanced must be true or false, got {self.balanced!r}")

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The preset's values for the fields left None (configs.resolve)."""
        return resolve_preset(values, FINETUNE_PRESETS)
