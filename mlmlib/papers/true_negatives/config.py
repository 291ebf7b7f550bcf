"""Paper B's parameter groups: the correction table, the correction's settings, the arms' start.

B1 and B2 take `table` and `correction`, B1 also `start`, each as one dict of overrides
(mlmlib.configs). The defaults are the smoke profile's; each field's comment gives the
paper's value where it differs, and "reconstructed" marks a setting the paper body did not
give. Standard library only, so the plan loader can check a plan's groups without torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlmlib.base_config import MINILM, BaseModelConfig

# Where a correction acts: "auto" is the discriminator for ELECTRA, the MLM loss for MLM
# (negatives.APPLY_TO names the explicit targets; a test keeps the two lists together).
APPLY_TO = ("auto", "both", "disc", "mlm")
SCRATCH = "scratch"
BASES = (SCRATCH, MINILM)  # where the arms' encoder starts
GENERATORS = ("fresh", "base")  # ELECTRA's generator on a pretrained base (Start.generator)


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
    defaults, so B1 and the base model page name the same head unless a plan says otherwise.
    """

    base: str = SCRATCH  # paper: "scratch"
    generator: str = "fresh"
    base_steps: int = BaseModelConfig.steps  # the head fit, as on the base model page: its steps,
    base_max_sentences: int = BaseModelConfig.max_sentences  # corpus sentences
    base_max_length: int = BaseModelConfig.max_length  # and tokens per sentence

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
