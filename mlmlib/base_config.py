"""The base-model parameter group: which pretrained BERT papers A (real text), B and C start from.

A notebook takes it as `base = {}` (overrides of these fields; `{}`: the smoke base). The
defaults are the smoke profile's: a small BERT pretrained here on the embedded English corpus.
`minilm-l6` is the shipped all-MiniLM-L6-v2 encoder, whose MLM head is fitted with the training
fields below (mlmlib.minilm); any other name is a hub model (network). Standard library only,
so the plan loader can check a plan's `base:` block without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlmlib.objectives import MASK_RATE

EMBEDDED = "embedded"
MINILM = "minilm-l6"

_POSITIVE = ("max_sentences", "max_length", "hidden", "layers", "heads", "steps", "batch_size")


@dataclass(frozen=True)
class BaseModelConfig:
    """Which base model: 'embedded' (pretrained here, sizes below), 'minilm-l6' or a hub name.

    Every field is part of the cache key of the built base (mlmlib.basemodel.pretrained_base),
    so a field added here rebuilds every cached base.
    """

    name: str = EMBEDDED            # paper: "bert-base-uncased" (hub); cpu: "minilm-l6" (shipped)
    tokenizer: str = "embedded-wordpiece-8k"  # "minilm-l6" or the hub name, as `name`
    corpus: str = "embedded-english"
    max_sentences: int = 40000      # corpus sentences used for pretraining (or the head fit)
    max_length: int = 64
    hidden: int = 128               # sizes of the embedded base only (a hub model brings its own)
    layers: int = 2
    heads: int = 2
    steps: int = 600                # pretraining steps (minilm-l6: of its head fit)
    batch_size: int = 64
    lr: float = 1e-3
    mask_rate: float = MASK_RATE
    seed: int = 0

    def __post_init__(self) -> None:
        for field in ("name", "tokenizer", "corpus"):
            if not getattr(self, field):
                raise ValueError(f"{field} must name a {field.replace('name', 'base model')}, "
                                 f"got {getattr(self, field)!r}")
        for field in _POSITIVE:
            if getattr(self, field) < 1:
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
