"""Paper C's parameter groups: how the arms mask, the task text, continued MLM and fine-tuning.

C1, C2 and C4 take each group as one dict of overrides (`masking = {}`); the defaults are the
smoke profile's, and each field's comment gives the paper's value. `ContinuedMLM`, `FineTuning`
and C4's `SyntheticSelective` also have named presets (MLM_PRESETS, FINETUNING_PRESETS,
SYNTHETIC_PRESETS), chosen by the field `preset` as mlmlib.configs describes: a field left None
takes the preset's value, any other value replaces it. The word list (its name, sample size and
seed) is not a group: it names a run's results ("vader, 100 words"), so the notebooks keep
`word_list(s)` and `word_list_size` as their own parameters and pass a `WordList`. Standard
library only, so the plan loader can check a plan's groups without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlmlib.configs import fill_preset, resolve_preset

FUNCTIONS = ("step", "linear", "exponential")  # the selective masking functions
SCORE_METHODS = ("max", "topk-mean")  # how a word's similarities to the list become its score
TRUNCATIONS = ("head", "head+tail")
LABEL_REGIMES = ("few", "all")
POOLINGS = ("mean", "cls")  # as mlmlib.models.POOLINGS
BASE_ALPHABETS = ("mix", "A")  # C4: the alphabets the base's pretraining text uses
TASK_ALPHABETS = ("A", "B", "mix")  # C4: the task text's alphabet(s)
# C4's pilot languages (book/design_history.md, paper C): no recorded run may use one.
PILOT_LANGUAGES = tuple(range(100, 112))


def _positive(group: object, *names: str) -> None:
    for name in names:
        value = getattr(group, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")


def _not_negative(group: object, *names: str) -> None:
    for name in names:
        value = getattr(group, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an int >= 0, got {value!r}")


def _rate(group: object, *names: str) -> None:
    for name in names:
        value = getattr(group, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ValueError(f"{name} must be a number > 0, got {value!r}")


@dataclass(frozen=True)
class WordList:
    """The task word list a run scores against: a lexicon, or a seeded sample of it."""

    name: str = "vader"  # "vader", "bing", "afinn" (sentiment) or "profanity" (offensive words)
    size: int = 0        # 0: the whole list; N: a sample of N of its words (with a vector)
    seed: int = 0        # the seed that draws that sample (the notebooks pass theirs)

    def __post_init__(self) -> None:
        from mlmlib.data.wordlists import WORD_LISTS  # numpy at import: not at this module's

        if self.name not in WORD_LISTS:
            raise ValueError(f"word_list must be one of {WORD_LISTS}, got {self.name!r}")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 0:
            raise ValueError(f"word_list_size must be an int >= 0 (0: the whole list), got {self.size!r}")

    @property
    def label(self) -> str:
        """The word list as results name it: "vader", or "vader, 100 words" for a sample."""
        return self.name if not self.size else f"{self.name}, {self.size} words"


@dataclass(frozen=True)
class MaskingConfig:
    """How the arms score words and mask: the vectors, the functions' shapes and the rate."""

    vectors: str = "glove-6b-50d"   # paper: "glove-6b-300d" (gensim download)
    score_method: str = "max"       # or "topk-mean"
    target_rate: float = 0.2        # the random baseline's rate (the paper: 20%)
    tau: float = 0.9                # step: threshold on the task score (list words score 1)
    ratio: float = 4.0              # step: p_hi / p_lo
    p_min: float = 0.1              # linear: weight at the lowest score
    p_max: float = 1.0              # linear: weight at the highest score
    beta: float = 3.0               # exponential: weight exp(beta * normalised score)
    count_match: str = "exponential"  # random-count: the function whose per-sentence counts it copies
    count_copies: int = 4           # random-count: pre-drawn masked copies of the corpus

    def __post_init__(self) -> None:
        if self.score_method not in SCORE_METHODS:
            raise ValueError(f"score_method must be one of {SCORE_METHODS}, got {self.score_method!r}")
        if isinstance(self.target_rate, bool) or not isinstance(self.target_rate, (int, float)) \
                or not 0.0 < self.target_rate < 1.0:
            raise ValueError(f"target_rate must be in the open interval (0, 1), got {self.target_rate!r}")
        if self.count_match not in FUNCTIONS:
            raise ValueError(f"count_match must be one of {FUNCTIONS}, got {self.count_match!r}")
        _positive(self, "count_copies")

    def function_params(self) -> dict:
        """Keyword arguments of `selective.masking_weights`."""
        return {"tau": self.tau, "ratio": self.ratio, "p_min": self.p_min, "p_max": self.p_max,
                "beta": self.beta}


TEXT_PRESETS = {
    "smoke": {"max_length": 40, "truncation": "head", "train_size": 0},
    "tiny": {"max_length": 32, "truncation": "head", "train_size": 300},  # the test plan's
    # the cpu plan's: a review's opening and its end, chosen in a pilot on validation reviews
    "cpu": {"max_length": 128, "truncation": "head+tail", "train_size": 0},
    "paper": {"max_length": 128, "truncation": "head", "train_size": 0},
    "paper-long": {"max_length": 256, "truncation": "head", "train_size": 0},  # IMDb's long reviews
}


@dataclass(frozen=True)
class TaskText:
    """Which training texts C1 scores and C2 trains on, and how they are cut: a preset of
    TEXT_PRESETS, its fields overridable one by one (None: the preset's)."""

    preset: str = "smoke"
    max_length: int | None = None   # tokens per text (paper: 128, IMDb 256: reconstructed)
    truncation: str | None = None   # what a longer text keeps: "head" or "head+tail" (its first
                                    # quarter and last three quarters of pieces; our reconstruction)
    train_size: int | None = None   # training texts scored, masked and fine-tuned on (0: all)

    def __post_init__(self) -> None:
        fill_preset(self, TEXT_PRESETS)
        if self.truncation not in TRUNCATIONS:
            raise ValueError(f"truncation must be one of {TRUNCATIONS}, got {self.truncation!r}")
        _positive(self, "max_length")
        _not_negative(self, "train_size")

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The preset's values for the fields left None (mlmlib.configs.resolve)."""
        return resolve_preset(values, TEXT_PRESETS)


MLM_PRESETS = {
    "smoke": {"steps": 60, "lr": 0.001, "doses": (), "checkpoint_every": 0},  # C2's smoke run
    # the cpu plan's dose-response on MiniLM: one chain per arm and seed read at 0, 10, 30 and 100
    # steps (100: what the time budget allows), sized in book/design_history.md, paper C
    "cpu": {"steps": 100, "lr": 5e-5, "doses": (0, 10, 30, 100), "checkpoint_every": 0},
    # the paper plan's, on bert-base: 10,000 steps read at log-spaced doses, resumable every 2,000
    "paper": {"steps": 10_000, "lr": 5e-5, "doses": (0, 1000, 3160, 10_000),
              "checkpoint_every": 2000},
}


@dataclass(frozen=True)
class ContinuedMLM:
    """C2's continued MLM of the base on the task's text (the rate is the masking's target_rate):
    a preset of MLM_PRESETS, its fields overridable one by one (None: the preset's)."""

    preset: str = "smoke"
    steps: int | None = None        # paper: thousands (the paper preset: 10,000)
    batch_size: int = 32            # paper: 32 or more
    lr: float | None = None         # paper: 5e-5 for bert-base
    # A dose-response: the step counts at which one chain per (arm, seed) is read (nested
    # checkpoints), increasing, the last equal to `steps`; 0 is the base itself. () : one dose,
    # `steps`, trained with a decaying schedule. A chain keeps its learning rate
    # constant after `warmup_steps`, so its state at a dose is that of a run to that dose.
    doses: tuple[int, ...] | None = None
    warmup_steps: int = 0
    # Steps between resumable checkpoints of each arm's continued MLM in the run's folder (0:
    # none): a run stopped by its machine (preempted, out of time) resumes from the last one.
    checkpoint_every: int | None = None

    def __post_init__(self) -> None:
        fill_preset(self, MLM_PRESETS)
        _positive(self, "steps", "batch_size")
        _not_negative(self, "warmup_steps", "checkpoint_every")
        _rate(self, "lr")
        if self.doses:
            check_doses(self.doses, self.steps)

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The preset's values for the fields left None (mlmlib.configs.resolve)."""
        return resolve_preset(values, MLM_PRESETS)


def check_doses(doses, steps: int | None = None, parameter: str = "mlm.doses") -> tuple[int, ...]:
    """Doses of continued MLM in steps: ints >= 0, strictly increasing, one above 0, the last
    `steps` (when given); a ValueError naming `parameter` otherwise."""
    doses = tuple(doses) if isinstance(doses, (list, tuple)) else doses
    if not isinstance(doses, tuple) or not doses or any(
            isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in doses):
        raise ValueError(f"{parameter} must be a non-empty list of step counts (ints >= 0), "
                         f"got {doses!r}")
    if any(b <= a for a, b in zip(doses, doses[1:])):
        raise ValueError(f"{parameter} must be strictly increasing, got {list(doses)}")
    if doses[-1] < 1:
        raise ValueError(f"{parameter} needs a dose above 0 steps, got {list(doses)}")
    if steps is not None and doses[-1] != steps:
        raise ValueError(f"{parameter}: the last dose ({doses[-1]}) must equal mlm.steps ({steps}), "
                         "the length of the chain")
    return doses


_SMOKE_FINETUNING = {"label_regimes": ("few",), "few_labels": 400, "few_epochs": 5,
                     "all_epochs": 1, "all_max_steps": 65, "lr": 1e-3, "validation_size": 200,
                     "test_size": 500, "pooling": "mean", "selection_holdout": 1000}
FINETUNING_PRESETS = {
    "smoke": _SMOKE_FINETUNING,  # C2's smoke run: few labels only, where continued MLM matters
    # the test plan's plumbing runs: 16 labels, one epoch, small splits
    "tiny": {**_SMOKE_FINETUNING, "few_labels": 16, "few_epochs": 1, "validation_size": 40,
             "test_size": 40},
    # the paper plan's (the paper's recipe for bert-base, and our reconstruction of its few-label
    # regime): both regimes, whole splits. The splits are the task's: IMDb's labelled test split
    # as here; sst2 and the hate speech set name `test_split` and `selection_split` on top
    "paper": {"label_regimes": ("few", "all"), "few_labels": 500, "few_epochs": 10,
              "all_epochs": 3, "all_max_steps": 0, "lr": 2e-5, "validation_size": 0,
              "test_size": 0, "pooling": "cls", "selection_holdout": 2000},
}


@dataclass(frozen=True)
class FineTuning:
    """C2's classifiers: label regimes, their training, and the splits that pick and score them;
    a preset of FINETUNING_PRESETS, its fields overridable one by one (None: the preset's)."""

    preset: str = "smoke"
    # and "all" (the paper and test plans): few labels make MLM matter
    label_regimes: tuple[str, ...] | None = None
    few_labels: int | None = None   # labelled examples in the few-label regime (of 3,600)
    few_epochs: int | None = None
    all_epochs: int | None = None   # paper: 3
    all_max_steps: int | None = None  # cap on the all-labels steps (0: all_epochs full epochs)
    batch_size: int = 32            # paper: 32
    lr: float | None = None         # paper: 2e-5
    pooling: str | None = None      # classifier head: "mean" of the token states or "cls" (paper)
    validation_size: int | None = None  # validation examples for picking the best epoch (0: all)
    test_size: int | None = None    # test examples scored (0: all)
    test_split: str = "test"        # paper: "validation" for sst2 and the hate speech set,
                                    # whose test labels are hidden
    selection_split: str = "validation"  # picks the best epoch; paper: "train-holdout" there
    selection_holdout: int | None = None  # training texts set aside for "train-holdout"

    def __post_init__(self) -> None:
        fill_preset(self, FINETUNING_PRESETS)
        regimes = list(self.label_regimes)
        if not regimes or any(r not in LABEL_REGIMES for r in regimes) or len(set(regimes)) < len(regimes):
            raise ValueError(f"label_regimes must be a non-empty list from {LABEL_REGIMES}, "
                             f"got {regimes}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}")
        _positive(self, "few_labels", "few_epochs", "all_epochs", "batch_size", "selection_holdout")
        _not_negative(self, "all_max_steps", "validation_size", "test_size")
        _rate(self, "lr")

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The preset's values for the fields left None (mlmlib.configs.resolve)."""
        return resolve_preset(values, FINETUNING_PRESETS)


_SMOKE_SYNTHETIC = {
    "language": "smoke", "n_sets": None, "n_states": None, "corpus_size": 4000, "length": 32,
    "hidden": 64, "layers": 2, "heads": 2, "base_steps": 1000, "loss_threshold": 2.5,
    "task_size": 2000, "doses": (0, 10, 30, 100), "few_labels": 100, "epochs": 10,
    "validation_size": 200, "test_size": 1000, "heldout_size": 500, "second_beta": None}
SYNTHETIC_PRESETS = {
    "smoke": _SMOKE_SYNTHETIC,  # C4's smoke run: about 4 min a seed on a shared core
    # the test plan's plumbing run: the smoke language cut to 20 sets, a base that need not
    # converge, seconds a seed
    "tiny": {**_SMOKE_SYNTHETIC, "n_sets": 20, "n_states": 100, "corpus_size": 200,
             "length": 16, "hidden": 16, "layers": 1, "heads": 1, "base_steps": 20,
             "loss_threshold": 10.0, "task_size": 200, "doses": (0, 2, 5), "few_labels": 40,
             "epochs": 1, "validation_size": 40, "test_size": 60, "heldout_size": 40,
             "second_beta": 1.0},  # and selectivity as a dose, as the cpu plan runs it
    # the paper plan's: paper A's language (the paper's), a longer base and the same ten-fold
    # dose range
    "paper": {**_SMOKE_SYNTHETIC, "language": "paper", "corpus_size": 20_000, "length": 64,
              "hidden": 128, "layers": 4, "heads": 4, "base_steps": 10_000,
              "loss_threshold": 2.0, "task_size": 10_000, "doses": (0, 100, 316, 1000),
              "few_labels": 500},
}


@dataclass(frozen=True)
class SyntheticSelective:
    """C4's controlled analogue: a synthetic language, an encoder pretrained to convergence on one
    of its domains (a Markov chain), then continued MLM on the task's sequences, drawn from the
    other domain, and few-label fine-tuning at every dose.

    Paper C adapts a general-domain base to a task's domain, so its continued MLM works because
    the task text differs from what the base saw: `base_domain` and `task_set` build that shift.
    A preset of SYNTHETIC_PRESETS names the sizes; each field is overridable (None: the preset's).
    """

    preset: str = "smoke"
    # The synthetic language: a preset of mlmlib.data.synthetic.LANGUAGES (the paper preset:
    # "paper"); its label patterns' synonym sets are the task word list. A size given below
    # replaces the language's; None keeps it (built, the group holds the sizes).
    language: str | None = None
    n_sets: int | None = None
    n_states: int | None = None
    n_patterns: int | None = None
    pattern_length: int | None = None
    pattern_set_size: int | None = None
    base_domain: str = "D1"         # the chain the base pretrains on
    base_alphabet: str = "A"        # the base's tokens: "A" (alphabet A only: the task's B
                                    # tokens are words it never read) or "mix" (both alphabets,
                                    # each token its B synonym with p 0.5)
    task_set: str = "mix-D2"        # the task's sequences: '<A, B or mix>-<the other chain>'
    balanced: bool = True           # every labelled set half of each class (rejection draw from
                                    # the same generator; False: the generator's own mix)
    corpus_size: int | None = None  # the base's pretraining sequences
    length: int | None = None       # tokens per sequence
    hidden: int | None = None
    layers: int | None = None
    heads: int | None = None
    base_steps: int | None = None   # general MLM steps from scratch (uniform 15%)
    base_batch_size: int = 64
    base_lr: float = 0.002
    loss_threshold: float | None = None  # the base must end below this MLM loss (converged)
    task_size: int | None = None    # the task's training sequences (continued MLM reads them)
    doses: tuple[int, ...] | None = None  # continued-MLM steps, nested in one chain
    batch_size: int = 32
    lr: float = 0.001
    target_rate: float = 0.2        # every arm's expected masking rate
    beta: float = 3.0               # exponential: weight exp(beta * score)
    # selectivity as a dose: a second exponential arm at this strength (None: none), calibrated
    # to the same rate. At rate 0.2 with list tokens about 15% of the text, beta 3 already masks
    # nearly every list token (a list share near its ceiling of list tokens / rate), so the
    # measurable second strength is a weaker one (design history, paper C). The tiny preset sets
    # one, so the test plan runs that path
    second_beta: float | None = None
    few_labels: int | None = None   # fine-tuning labels (class-stratified, seeded)
    epochs: int | None = None
    finetune_lr: float = 0.001
    validation_size: int | None = None
    test_size: int | None = None
    heldout_size: int | None = None  # held-out task sequences for the masked-LM loss

    def __post_init__(self) -> None:
        from mlmlib.data import synthetic as syn

        fill_preset(self, SYNTHETIC_PRESETS)
        syn.set_language(self)  # the language's sizes where none is given; validates them
        _positive(self, "corpus_size", "length", "hidden", "layers", "heads", "base_steps",
                  "base_batch_size", "task_size", "batch_size", "few_labels", "epochs",
                  "validation_size", "test_size", "heldout_size")
        _rate(self, "base_lr", "lr", "finetune_lr", "loss_threshold")
        check_doses(self.doses, parameter="synthetic.doses")
        if not 0.0 < self.target_rate < 1.0:
            raise ValueError(f"target_rate must be in (0, 1), got {self.target_rate!r}")
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be divisible by heads ({self.heads})")
        if self.second_beta is not None and (
                isinstance(self.second_beta, bool) or not isinstance(self.second_beta, (int, float))
                or not 0 < self.second_beta != self.beta):
            raise ValueError(f"synthetic.second_beta must be a number > 0 other than beta "
                             f"({self.beta}), or None, got {self.second_beta!r}")
        if self.few_labels > self.task_size:
            raise ValueError(f"few_labels ({self.few_labels}) must be <= task_size ({self.task_size})")
        domains = ("D1", "D2")
        if self.base_domain not in domains:
            raise ValueError(f"synthetic.base_domain must be one of {domains}, got {self.base_domain!r}")
        if self.base_alphabet not in BASE_ALPHABETS:
            raise ValueError(f"synthetic.base_alphabet must be one of {BASE_ALPHABETS}, "
                             f"got {self.base_alphabet!r}")
        alphabet, _, chain = str(self.task_set).partition("-")
        if alphabet not in TASK_ALPHABETS or chain not in domains:
            raise ValueError("synthetic.task_set must be '<A, B or mix>-<D1 or D2>', "
                             f"got {self.task_set!r}")
        if chain == self.base_domain:
            raise ValueError(f"synthetic.task_set {self.task_set!r} lies inside the base's pretraining "
                             f"domain (base_domain {self.base_domain!r}): the continued MLM would show "
                             "the base nothing new; take the task from the other chain")

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The group's fields: the preset's values, then the language's sizes, in those left None
        (configs.resolve)."""
        from mlmlib.data import synthetic as syn

        return syn.preset_fields(resolve_preset(values, SYNTHETIC_PRESETS))
