"""B4's parameter groups: paper B's controlled analogue on paper A's synthetic languages.

`SyntheticSetup` is the language, its corpora, the ELECTRA / BERT encoders pretrained from
scratch and the two lookup tables; `SyntheticFinetune` the fine-tuning on A-D1. The defaults
are the smoke profile's; a field's comment gives the paper profile's value where it differs.
Standard library only, so the plan loader can check a plan's groups without torch.
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class SyntheticSetup:
    """The language, the pretraining corpora, the encoders pretrained from scratch, the tables."""

    # The synthetic language: a preset of mlmlib.data.synthetic.LANGUAGES (paper A: "paper").
    # A size given below replaces the preset's; None keeps it (built, the group holds the sizes).
    language: str = "small"
    n_sets: int | None = None
    n_states: int | None = None
    n_patterns: int | None = None
    pattern_length: int | None = None
    pattern_set_size: int | None = None
    corpus_size: int = 3000       # pretraining sequences per corpus (paper A: 200k)
    corpus_length: int = 32       # tokens per sequence, before [CLS] (paper A: 256; ELECTRA: 128)
    probe_size: int = 300         # held-out sequences the discriminator probe masks and scores
    hidden: int = 64              # discriminator / MLM width (ELECTRA-small: 256)
    layers: int = 2               # (ELECTRA-small: 12)
    heads: int = 2                # (ELECTRA-small: 4)
    embedding_size: int | None = None  # factorised embeddings, None: hidden (ELECTRA-small: 128)
    # the generator's width over the discriminator's (ELECTRA, and the cpu plan: 0.25). Half as
    # wide learns the language sooner, so the smoke run's generator makes false negatives
    generator_fraction: float = 0.5
    dropout: float = 0.0          # (ELECTRA: 0.1)
    # pretraining steps per arm (ELECTRA-small: 1M). At 1,500 a half-width generator samples the
    # original's synonym for about a fifth of its replacements on `mix`; the discriminator starts
    # to flag replacements only after several thousand (cpu plan: 6,000)
    steps: int = 1500
    batch_size: int = 64          # (ELECTRA-small: 128)
    lr: float = 2e-3              # (ELECTRA-small: 5e-4)
    warmup_frac: float = 0.05     # (ELECTRA-small: 10k of 1M steps)
    # generator sampling temperature (ELECTRA, and every plan: 1). At 1 about half of the cpu
    # size's replacements on `mix` are false negatives; a higher temperature lowers that share
    # (1.5: about 0.4), which makes the temperature a dose of it (design history, paper B)
    temperature: float = ELECTRA_TEMPERATURE
    disc_weight: float = ELECTRA_DISC_WEIGHT  # discriminator loss weight, ELECTRA's
    log_every: int = 100          # steps per logging window of the false-negative rates
    missing_share: float = 0.5    # share of the exact pairs the imperfect table lacks (seeded)

    def __post_init__(self) -> None:
        from mlmlib.data import synthetic as syn

        syn.set_language(self)  # the preset's sizes where none is given; validates them
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
        """The group's fields, the preset's sizes in those left None (configs.resolve)."""
        from mlmlib.data import synthetic as syn

        return syn.preset_fields(values)

    @property
    def vocab_size(self) -> int:
        """[PAD], [CLS], [MASK], then alphabet A and alphabet B."""
        return len(SPECIALS) + 2 * self.n_sets


@dataclass(frozen=True)
class SyntheticFinetune:
    """Fine-tuning on A-D1 (as paper A's sweep at its largest training set), scored on SCORED_SETS."""

    train_size: int = 1000        # labelled A-D1 examples (paper A: 100k)
    valid_size: int = 300         # A-D1 examples that pick the best step
    test_size: int = 500          # examples per scored test set (paper A: 10k)
    length: int = 32              # tokens per labelled sequence (paper A: 100)
    lr: float = 1e-3              # (paper A: 5e-5)
    batch_size: int = 32
    max_steps: int = 200          # (paper A: 30k)
    eval_every: int = 50          # (paper A: 1000)
    patience: int = 3             # (paper A: 5)
    # each labelled set half of each class, drawn by rejection from the same generator (ours:
    # at these sizes the label patterns make 82-91% of A-D1 one class; paper A's are about even)
    balanced: bool = True
    # more training sizes, each fine-tuned and scored the same way (the `curve` rows): where
    # pretraining helps, against scratch; () fine-tunes at train_size alone
    curve_sizes: tuple[int, ...] = ()

    def __post_init__(self) -> None:
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
