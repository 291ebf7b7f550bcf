"""A5's `setup` group: the fine-tuning, the perturbations and the probe of paper A on real text.

One source of A5's settings and defaults (mlmlib.configs): the page takes the group as a dict of
overrides (`setup = {}`), the plans name a preset (REAL_TEXT_PRESETS: `smoke`, the default;
`tiny`, the test suite's; `cpu`, the MiniLM base's; `paper` and `paper-mnli`, the authors' SST-2
and MNLI settings), single fields still overridable. The values are checked by the page before
anything is loaded (`real_text.check_settings`); standard library only, so the plan loader reads
the group without torch.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from mlmlib.configs import fill_preset, resolve_preset

# The templates whose [MASK] distribution is compared ({x}: the replaced unit, {sentence}: the
# whole input); the last is the task prompt its verbalizers read.
TEMPLATES = ["[MASK] {x}", "{x} [MASK]", "[MASK] is {x} .",
             "This sentence : \"{sentence}\" means [MASK] .", "{sentence} with [MASK] .",
             "{sentence} It was [MASK] ."]
_PROMPT = "{sentence} It was [MASK] ."

_SMOKE = {
    "max_length": 64, "max_text_tokens": 48, "train_size": 0, "epochs": 2, "lr": 1e-3,
    "checkpoints": [0.25, 0.5, 1.0], "train_ratios": [0.1, 0.3, 1.0], "test_split": "test",
    "selection_split": "validation", "selection_holdout": 1000, "test_size": 150,
    "perturbations": ["word"], "templates": TEMPLATES,
    # "terrible" is not one token of the embedded vocabulary
    "verbalizers": {_PROMPT: ["great", "bad"]},
}
_PAPER = {
    "max_length": 128, "max_text_tokens": 100, "train_size": 0, "epochs": 3, "lr": 5e-5,
    "checkpoints": [0.2, 0.4, 0.6, 0.8, 1.0], "train_ratios": [0.1, 0.2, 0.3, 0.4, 0.5, 1.0],
    # GLUE hides its test labels: the validation split is the test, training examples held out
    # of training pick the models
    "test_split": "validation", "selection_split": "train-holdout", "selection_holdout": 2000,
    "test_size": 5000, "perturbations": ["word", "long-phrase", "short-phrase"],
    "templates": TEMPLATES, "verbalizers": {_PROMPT: ["great", "terrible"]},
}
# The named settings (RealTextSetup.preset); each gives every field that defaults to None.
REAL_TEXT_PRESETS: dict[str, dict] = {
    # the smoke profile's, the page's default: the word level only
    "smoke": _SMOKE,
    # the test suite's: 200 training texts, one epoch, 20 perturbed test inputs
    "tiny": {**_SMOKE, "train_size": 200, "epochs": 1, "checkpoints": [0.5, 1.0],
             "train_ratios": [0.5, 1.0], "test_size": 20},
    # the cpu profile's: the smoke settings at MiniLM's learning rate, with the paper's
    # verbalizers (MiniLM's vocabulary has "terrible")
    "cpu": {**_SMOKE, "lr": 5e-5, "verbalizers": {_PROMPT: ["great", "terrible"]}},
    # the paper profile's on SST-2 (book/paper_a.md)
    "paper": _PAPER,
    # and on MNLI: a larger held-out selection set and the pair task's prompt over yes/maybe/no
    "paper-mnli": {**_PAPER, "selection_holdout": 5000,
                   "templates": [*TEMPLATES[:-1], "{premise} ? [MASK] , {hypothesis}"],
                   "verbalizers": {"{premise} ? [MASK] , {hypothesis}": ["yes", "maybe", "no"]}},
}
_POSITIVE = ("max_length", "max_text_tokens", "epochs", "batch_size", "selection_holdout",
             "test_size", "n_replace", "max_phrase_words")


@dataclass(frozen=True)
class RealTextSetup:
    """A5's fine-tuning (one run saved at checkpoints, runs on fractions of the training data),
    its perturbations of the test inputs and the templates that probe the base: a preset of
    REAL_TEXT_PRESETS (None: the preset's)."""

    preset: str = "smoke"  # one of REAL_TEXT_PRESETS
    max_length: int | None = None  # input length of classifier and MLM (paper: 128)
    max_text_tokens: int | None = None  # test inputs cut to this many tokens: every template fits
    train_size: int | None = None  # training examples used (0: all)
    epochs: int | None = None  # (paper: 3)
    batch_size: int = 32
    lr: float | None = None  # (paper: 5e-5 for bert-base)
    checkpoints: list[float] | None = None  # fractions of the full run's steps at which it is saved
    train_ratios: list[float] | None = None  # fractions of the training data (paper: 0.1 ... 1)
    test_split: str | None = None  # (paper: "validation": GLUE hides its test labels)
    # picks the models; "train-holdout": `selection_holdout` training examples held out
    selection_split: str | None = None
    selection_holdout: int | None = None
    test_size: int | None = None  # test examples to perturb
    # word level offline; "long-phrase" and "short-phrase" need the network
    perturbations: list[str] | None = None
    n_replace: int = 4  # important words replaced per example, one at a time
    max_phrase_words: int = 4  # short phrase: at most this many words
    templates: list[str] | None = None
    verbalizers: dict[str, list[str]] | None = None  # a template's words for its [MASK]
    tag_template: bool = True  # also the {x} template matched to each unit's tag (paper's code)
    delta_metric: str = "l1"  # or "tv": total variation, half the L1 distance
    min_examples: int = 300  # fewer valid perturbed examples than this is reported as too few

    def __post_init__(self) -> None:
        fill_preset(self, REAL_TEXT_PRESETS)
        for name in ("checkpoints", "train_ratios", "perturbations", "templates", "verbalizers"):
            object.__setattr__(self, name, copy.deepcopy(getattr(self, name)))  # not the preset's
        for name in _POSITIVE:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        for name in ("train_size", "min_examples"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        if isinstance(self.lr, bool) or not isinstance(self.lr, int | float) or not self.lr > 0:
            raise ValueError(f"lr must be a number > 0, got {self.lr!r}")

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The preset's values for the fields left None (mlmlib.configs.resolve)."""
        return resolve_preset(values, REAL_TEXT_PRESETS)
