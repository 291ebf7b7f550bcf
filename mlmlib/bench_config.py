"""The compute benchmark's shapes (`mlmlib.bench`): a named preset of sizes, as the other pages'
groups are (mlmlib.configs: a field left None takes the preset's value). Standard library only,
so the plan loader reads it without torch. `paper` is ELECTRA-small's shape, the model paper B's
paper plan trains, and what `scripts/gpu_check.py` times on a GPU."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from mlmlib.configs import fill_preset, resolve_preset

_SMOKE = {"vocab": 8000, "hidden": 128, "embedding_size": 0, "layers": 2, "heads": 2, "seq": 64,
          "batch_size": 32, "measure": 4, "repeats": 2}
BENCH_PRESETS = {
    "smoke": _SMOKE,  # seconds a step on one CPU thread
    "tiny": {**_SMOKE, "vocab": 200, "hidden": 32, "layers": 1, "seq": 16, "batch_size": 8,
             "measure": 2, "repeats": 1},  # plumbing: the test plan, gpu_check on a CPU
    # ELECTRA-small (Clark et al., 2020): bert-base-uncased's 30,522 pieces in 128-wide factorised
    # embeddings, 12 layers of 256 with 4 heads, sequences of 128, batches of 128
    "paper": {"vocab": 30522, "hidden": 256, "embedding_size": 128, "layers": 12, "heads": 4,
              "seq": 128, "batch_size": 128, "measure": 20, "repeats": 5},
}


@dataclass(frozen=True)
class BenchShape:
    """The benchmark's model, data and timing sizes: a preset of BENCH_PRESETS, each field
    overridable (None: the preset's)."""

    preset: str = "smoke"
    vocab: int | None = None           # vocabulary size
    hidden: int | None = None          # discriminator / BERT width
    embedding_size: int | None = None  # ELECTRA's factorised embedding width (0: the hidden
                                       # width); BERT has none
    layers: int | None = None
    heads: int | None = None
    seq: int | None = None             # tokens per sequence
    batch_size: int | None = None
    measure: int | None = None         # timed steps per measurement (after as many warm-up)
    repeats: int | None = None         # interleaved repetitions per method

    def __post_init__(self) -> None:
        fill_preset(self, BENCH_PRESETS)
        for name, value in asdict(self).items():
            if name == "preset":
                continue
            low = 0 if name == "embedding_size" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be divisible by heads ({self.heads})")

    def sizes(self) -> dict[str, int]:
        """The keyword arguments of `mlmlib.bench.run` this shape sets."""
        return {k: v for k, v in asdict(self).items() if k != "preset"}

    @staticmethod
    def resolve_fields(values: dict) -> dict:
        """The preset's values for the fields left None (mlmlib.configs.resolve)."""
        return resolve_preset(values, BENCH_PRESETS)
