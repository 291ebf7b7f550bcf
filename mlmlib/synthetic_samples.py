"""A1's `samples` group: how much text the page draws from a synthetic language.

The language itself (its sets, states and patterns) is a preset of `mlmlib.data.synthetic`'s
LANGUAGES; this group is the amount drawn from it: the pretraining corpora and the labelled
test sets. Its sizes are named presets (SAMPLE_PRESETS), chosen by the field `preset` as
mlmlib.configs describes (`samples: {preset: paper}`), single fields still overridable.
Standard library only at import, so the plan loader can check a plan's `samples:` block without
numpy; the methods that draw import the generator when called.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlmlib.configs import fill_preset, resolve_preset

# The named amounts (Samples.preset); each gives every field that defaults to None in Samples.
SAMPLE_PRESETS: dict[str, dict] = {
    # the smoke profile's, the page's default
    "smoke": {"corpus_size": 2000, "corpus_length": 64, "test_size": 2000, "test_length": 64},
    # the test suite's: seconds
    "tiny": {"corpus_size": 200, "corpus_length": 32, "test_size": 200, "test_length": 32},
    # the paper profile's: the paper's sequence lengths (256 pretraining, 100 labelled) and its
    # test sets of 10k; 20k pretraining sequences per corpus (the paper pretrains on 200k)
    "paper": {"corpus_size": 20000, "corpus_length": 256, "test_size": 10000, "test_length": 100},
}


@dataclass(frozen=True)
class Samples:
    """A1's corpora and labelled sets: a preset of SAMPLE_PRESETS (None: the preset's)."""

    preset: str = "smoke"  # one of SAMPLE_PRESETS: "smoke", "tiny" or "paper"
    corpus_size: int | None = None    # pretraining sequences per corpus (the paper: 200k)
    corpus_length: int | None = None  # tokens per pretraining sequence (the paper: 256)
    test_size: int | None = None      # sequences per labelled test set (the paper: 10k)
    test_length: int | None = None    # tokens per labelled sequence (the paper: 100)

    def __post_init__(self) -> None:
        fill_preset(self, SAMPLE_PRESETS)
        for name in ("corpus_size", "corpus_length", "test_size", "test_length"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The preset's values for the fields left None (mlmlib.configs.resolve)."""
        return resolve_preset(values, SAMPLE_PRESETS)

    def corpora(self, lang, seed: int) -> dict:
        """{`mix` or `shift`: its pretraining corpus} drawn from the language `lang`."""
        from mlmlib.data import synthetic as syn

        return {kind: syn.pretraining_corpus(lang, kind, self.corpus_size, self.corpus_length,
                                             seed=seed) for kind in syn.CORPORA}

    def test_set(self, lang, name: str, seed: int):
        """(tokens, labels) of the labelled test set `name` (`A-D1` ...) of `lang`."""
        from mlmlib.data import synthetic as syn

        return syn.labelled_set(lang, name, self.test_size, self.test_length, seed=seed)
