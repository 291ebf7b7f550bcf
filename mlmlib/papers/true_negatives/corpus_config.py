"""B0's, B1's and B2's `corpus` group: which text, and how it is cut into pretraining rows.

Its own module: the packed corpus is cached under the code that packs it (mlmlib.papers.
true_negatives.corpus, narrowly), so an edit of paper B's other groups never packs it again.
Standard library only, so the plan loader can check a plan's `corpus:` block without torch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from mlmlib.configs import fill_preset, resolve_preset

_EMBEDDED = {"tokenizer": "embedded-wordpiece-8k", "corpus": "embedded-english"}
# The named corpora (Corpus.preset); each gives every field that defaults to None in Corpus.
CORPUS_PRESETS = {
    # B1's smoke corpus: one padded row of 32 tokens per text
    "smoke": {**_EMBEDDED, "max_texts": 8000, "max_length": 32, "pack": False},
    # ELECTRA's rows of 128 tokens, texts concatenated (B0 packs it, B2 times on it)
    "packed": {**_EMBEDDED, "max_texts": 2000, "max_length": 128, "pack": True},
    # the test plan's: the smoke corpus (B1) and the packed one (B0, B2), 400 texts of 24 tokens
    "tiny": {**_EMBEDDED, "max_texts": 400, "max_length": 24, "pack": False},
    "tiny-packed": {**_EMBEDDED, "max_texts": 400, "max_length": 24, "pack": True},
    # the cpu plan's B1 (the MiniLM stand-in): the smoke texts in MiniLM's vocabulary, 48 tokens
    "cpu": {"tokenizer": "minilm-l6", "corpus": "embedded-english", "max_texts": 8000,
            "max_length": 48, "pack": False},
    # the paper's: all of OpenWebText (8,013,769 texts) packed in rows of 128 tokens of
    # bert-base-uncased's vocabulary, ELECTRA's (it decides which tokens can be false negatives)
    "paper": {"tokenizer": "bert-base-uncased", "corpus": "openwebtext", "max_texts": 8013769,
              "max_length": 128, "pack": True},
}


@dataclass(frozen=True)
class Corpus:
    """Which text and how it is cut into pretraining rows: a preset of CORPUS_PRESETS, its sizes
    overridable one by one (None: the preset's)."""

    preset: str = "smoke"  # one of CORPUS_PRESETS (paper: "paper")
    tokenizer: str | None = None  # paper: "bert-base-uncased" (ELECTRA's vocabulary)
    # paper: "openwebtext" (network; parquet files, no loading script) or "wikipedia"
    corpus: str | None = None
    max_texts: int | None = None  # texts drawn (seeded shuffle); 0: all (OpenWebText: 8,013,769)
    max_length: int | None = None  # tokens per row (ELECTRA: 128)
    pack: bool | None = None  # concatenate texts into full rows (False: one padded row per text)
    seed: int = 0  # the draw of the texts: the same corpus for every pretraining seed

    def __post_init__(self) -> None:
        from mlmlib.data.corpora import check_corpus

        fill_preset(self, CORPUS_PRESETS)
        check_corpus(self.corpus)
        if not isinstance(self.tokenizer, str) or not self.tokenizer:
            raise ValueError(f"tokenizer must name a tokenizer, got {self.tokenizer!r}")
        if isinstance(self.max_texts, bool) or not isinstance(self.max_texts, int) or self.max_texts < 0:
            raise ValueError(f"max_texts must be an int >= 1, or 0 (all), got {self.max_texts!r}")
        if not isinstance(self.pack, bool):
            raise ValueError(f"pack must be true or false, got {self.pack!r}")
        least = 3 if self.pack else 1  # a packed row is [CLS] tokens [SEP]
        if isinstance(self.max_length, bool) or not isinstance(self.max_length, int) or (
                self.max_length < least):
            raise ValueError(f"max_length must be an int >= {least}"
                             f"{' (packed: [CLS] token [SEP])' if self.pack else ''}, "
                             f"got {self.max_length!r}")

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The preset's values for the fields left None (mlmlib.configs.resolve)."""
        return resolve_preset(values, CORPUS_PRESETS)

    def key(self) -> dict:
        """What identifies the encoded corpus (its cache key, its packed file's recipe): every
        field but the preset's name, whose values are here."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "preset"}
