"""The base-model parameter group: which pretrained BERT papers A (real text), B and C start from.

A notebook takes it as `base = {}` (overrides of these fields; `{}`: the smoke base). The
defaults are the smoke profile's: a small BERT pretrained here on the embedded English corpus.
`minilm-l6` is the shipped all-MiniLM-L6-v2 encoder, whose MLM head is fitted with the training
fields below (mlmlib.minilm); any other name is a hub model (network). Which base a profile
starts from is a named preset (BASE_PRESETS, as mlmlib.configs describes): `base: {preset: cpu}`.
Standard library only, so the plan loader can check a plan's `base:` block without importing
torch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from mlmlib.configs import fill_preset, resolve_preset
from mlmlib.objectives import MASK_RATE

EMBEDDED = "embedded"
MINILM = "minilm-l6"

_POSITIVE = ("max_sentences", "max_length", "hidden", "layers", "heads", "steps", "batch_size")

# The named bases (BaseModelConfig.preset); each gives every field that defaults to None.
BASE_PRESETS: dict[str, dict] = {
    # the smoke profile's: a small BERT pretrained here, 600 steps
    "smoke": {"name": EMBEDDED, "tokenizer": "embedded-wordpiece-8k", "steps": 600},
    # the cpu profile's: the shipped all-MiniLM-L6-v2, its MLM head fitted for 300 steps
    "cpu": {"name": MINILM, "tokenizer": MINILM, "steps": 300},
    # the paper profile's: the hub's bert-base-uncased as it is (no steps: it brings its head;
    # the field keeps the smoke value)
    "paper": {"name": "bert-base-uncased", "tokenizer": "bert-base-uncased", "steps": 600},
}


@dataclass(frozen=True)
class BaseModelConfig:
    """Which base model: 'embedded' (pretrained here, sizes below), 'minilm-l6' or a hub name.

    A preset of BASE_PRESETS names the model, its tokenizer and its steps (None: the preset's).
    Every field but the preset's name is part of the cache key of the built base (`key`,
    mlmlib.basemodel.pretrained_base), so a field added here rebuilds every cached base.
    """

    preset: str = "smoke"           # one of BASE_PRESETS: "smoke", "cpu" or "paper"
    name: str | None = None         # paper: "bert-base-uncased" (hub); cpu: "minilm-l6" (shipped)
    tokenizer: str | None = None    # "minilm-l6" or the hub name, as `name`
    corpus: str = "embedded-english"
    max_sentences: int = 40000      # corpus sentences used for pretraining (or the head fit)
    max_length: int = 64
    hidden: int = 128               # sizes of the embedded base only (a hub model brings its own)
    layers: int = 2
    heads: int = 2
    steps: int | None = None        # pretraining steps (minilm-l6: of its head fit)
    batch_size: int = 64
    lr: float = 1e-3
    mask_rate: float = MASK_RATE
    seed: int = 0

    def __post_init__(self) -> None:
        fill_preset(self, BASE_PRESETS)
        for field in ("name", "tokenizer", "corpus"):
            if not isinstance(getattr(self, field), str) or not getattr(self, field):
                raise ValueError(f"{field} must name a {field.replace('name', 'base model')}, "
                                 f"got {getattr(self, field)!r}")
        for field in _POSITIVE:
            if not isinstance(getattr(self, field), int) or getattr(self, field) < 1:
                raise ValueError(f"{field} must be a positive integer, got {getattr(self, field)}")
        if self.hidden % self.heads:
            raise ValueError(f"hidden={self.hidden} must be a multiple of heads={self.heads}")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr}")
        if not 0 < self.mask_rate < 1:
            raise ValueError(f"mask_rate must be in (0, 1), got {self.mask_rate}")
        if self.seed < 0:
            raise ValueError(f"seed must be non-negative, got {self.seed}")
        # MiniLM was trained with bert-base-uncased's vocabulary; another tokenizer's ids would
        # index the wrong embeddings without any error
        if self.name == MINILM and self.tokenizer != MINILM:
            raise ValueError(f"base model {MINILM!r} needs tokenizer={MINILM!r} "
                             f"(bert-base-uncased's vocabulary), got {self.tokenizer!r}")

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The preset's values for the fields left None (mlmlib.configs.resolve)."""
        return resolve_preset(values, BASE_PRESETS)

    def key(self) -> dict:
        """What identifies the built base (its cache key): every field but the preset's name,
        whose values are here."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "preset"}
