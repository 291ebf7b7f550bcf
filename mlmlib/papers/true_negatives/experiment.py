"""Paper B experiment glue: false negatives in ELECTRA / MLM pretraining, end to end.

`mlmlib.negatives` holds the method (detection, hard correction, soft regularization); this
module runs the experiment around it:
- `build_tables`: the correction lookup table for a tokenizer (WordNet or word-vector
  neighbours) and the held-out WordNet pairs that only the robustness test may use.
- `NegativesMonitor`: the training-step hook of one arm. It restricts false negatives to
  whole-word tokens, hands `negatives.make_hook`'s output to the training loop, and logs the
  discriminator's accuracy on original / replaced / false-negative positions.
- `pretrain_arm`: pretrain one arm ("electra/shield", "mlm/none", ...) with those statistics.
- `synonym_test_set`, `prepare_task`, `finetune_and_test`: downstream accuracy and robustness
  to held-out synonym substitutions, for classification tasks and SQuAD (`QATaskData`).
- `measure_step_overhead`: the correction methods' step time against plain training, the arms
  taking turns step by step in one training loop (`RoundRobinTimer`).
- `check_parameters`, `run_arms`: B1's arm x task x fine-tuning loop for one pretraining seed.

Reconstructed choices (the paper body was not available) are parameters and marked as such.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mlmlib import qa
from mlmlib.data.content_words import POS_WORDS, content_words, fragment, synonym_replacement
from mlmlib.data.synonyms import SynonymTable, load_synonyms
from mlmlib.data.tasks import score_metric
from mlmlib.data.vectors import ALIASES, EMBEDDED_VECTORS, GENSIM_VECTORS
from mlmlib.finetune import FinetuneConfig, evaluate, finetune
from mlmlib.models import (
    POOLINGS,
    ElectraPair,
    ModelSize,
    bert_classifier,
    bert_mlm,
    electra,
    electra_classifier,
    electra_from_bert,
    question_answerer,
)
from mlmlib.papers.true_negatives import negatives as neg
from mlmlib.pretrain import HookOutput, MaskedStep, PretrainConfig, pretrain
from mlmlib.stats import class_prior

SYNONYM_SOURCES = ("wordnet", "nltk-wordnet")
VECTOR_SOURCES = (*EMBEDDED_VECTORS, *GENSIM_VECTORS, *ALIASES)
SOURCES = (*SYNONYM_SOURCES, *VECTOR_SOURCES)
OFFLINE_SOURCES = ("wordnet", *EMBEDDED_VECTORS)
OBJECTIVES = ("electra", "mlm")
APPLY_TO = ("auto", *neg.APPLY_TO)


# --------------------------------------------------------------------------- pretraining data


@dataclass
class CorpusConfig:
    """Which text and how it is cut into pretraining sequences."""

    tokenizer: str = "embedded-wordpiece-8k"
    corpus: str = "embedded-english"  # or a hub corpus: openwebtext, wikipedia (network)
    max_texts: int | None = 8000  # texts drawn (seeded shuffle); None: all
    max_length: int = 32
    pack: bool = False  # concatenate texts into full-length chunks (long documents, paper scale)
    seed: int = 0


def pretraining_data(config: CorpusConfig) -> tuple[dict, Any]:
    """(tensors for `pretrain`, tokenizer); the encoded corpus is cached under its config.

    Packed corpora are kept as one int32 file, memory-mapped: rows are read when a batch
    needs them, so a corpus larger than memory trains as well as a small one.
    """
    from mlmlib import cache
    from mlmlib.tokenize import load_tokenizer

    tokenizer = load_tokenizer(config.tokenizer)

    def build(folder):
        from mlmlib.basemodel import encode_corpus
        from mlmlib.data import load_corpus

        texts = load_corpus(config.corpus)["train"]
        order = np.random.default_rng(config.seed).permutation(len(texts))
        if config.max_texts is not None:
            order = order[: config.max_texts]
        texts = texts.select(np.sort(order).tolist())
        if config.pack:
            pack_texts(tokenizer, texts, config.max_length, folder / PACKED_FILE)
        else:
            torch.save(encode_corpus(tokenizer, texts["text"], config.max_length), folder / "data.pt")

    folder = cache.cached("true-negatives-corpus", dataclasses.asdict(config), build,
                          code_of=__name__, expect=(PACKED_FILE if config.pack else "data.pt",))
    if config.pack:
        return load_packed(folder / PACKED_FILE, tokenizer, config.max_length), tokenizer
    return torch.load(folder / "data.pt", weights_only=True), tokenizer


PACKED_FILE = "packed.int32"
PACK_BATCH = 1000  # texts tokenized at once while packing: memory is bounded by this, not the corpus


def pack_texts(tokenizer, texts, max_length: int, path: Path) -> int:
    """Concatenate the texts' tokens and write [CLS] chunk [SEP] rows of max_length to `path`.

    Streams: PACK_BATCH texts are tokenized at a time and their full rows appended to the file
    as int32, so packing billions of tokens (OpenWebText) needs the memory of one batch. The
    tail shorter than a row is dropped. `texts`: a list of strings or a Dataset with a "text"
    column. Returns the number of rows.
    """
    width = max_length - 2
    if width < 1:
        raise ValueError(f"max_length must be at least 3 to pack ([CLS] token [SEP]), got {max_length}")
    carry, rows = np.zeros(0, dtype=np.int32), 0
    with open(path, "wb") as out:
        for start in range(0, len(texts), PACK_BATCH):
            batch = texts[start:start + PACK_BATCH]
            batch = batch["text"] if isinstance(batch, dict) else list(batch)
            pieces = tokenizer(batch, add_special_tokens=False)["input_ids"]
            flat = np.concatenate([carry, *(np.asarray(p, dtype=np.int32) for p in pieces)])
            n = len(flat) // width
            block = np.empty((n, max_length), dtype=np.int32)
            block[:, 0], block[:, -1] = tokenizer.cls_token_id, tokenizer.sep_token_id
            block[:, 1:-1] = flat[: n * width].reshape(n, width)
            out.write(block.tobytes())
            carry, rows = flat[n * width:], rows + n
    if rows == 0:
        raise ValueError(f"the corpus has fewer than {width} tokens: not one row of max_length={max_length}")
    return rows


def load_packed(path: Path, tokenizer, max_length: int) -> dict:
    """The packed rows as `pretrain` data: memory-mapped int32 ids (copy-on-write, never
    written) and the special ids; no attention mask, since packed rows have no padding."""
    ids = np.memmap(path, dtype=np.int32, mode="c").reshape(-1, max_length)
    return {"input_ids": torch.from_numpy(ids),
            "special_ids": torch.tensor(sorted(tokenizer.all_special_ids))}


# --------------------------------------------------------------------------- lookup tables


@dataclass
class TableConfig:
    """Where the correction table comes from and how much of WordNet is kept for the test."""

    source: str = "wordnet"  # one of SOURCES; "glove-6b-50d": the word-vector neighbour table
    heldout_fraction: float = 0.3  # share of WordNet pairs never used by HC (reconstructed)
    split_seed: int = 0
    top_k: int = 10  # word-vector neighbours per word (reconstructed)
    threshold: float = 0.7  # minimum cosine of a neighbour pair (reconstructed)

    def __post_init__(self) -> None:
        check_source(self.source)
        if not 0.0 <= self.heldout_fraction < 1.0:
            raise ValueError(f"heldout_fraction must be in [0, 1), got {self.heldout_fraction!r}")


def check_source(source: str) -> None:
    """Fail early on an unknown table source (availability is checked when it is loaded)."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES} (offline: {OFFLINE_SOURCES}), got {source!r}")


@dataclass
class Tables:
    """The correction table (token-id pairs) and the held-out WordNet pairs (words)."""

    correction: neg.PairLookup
    heldout: SynonymTable
    source: str
    info: dict = field(default_factory=dict)


def load_source(source: str):
    """Load a synonym table or word vectors; a source that needs the network names the offline one."""
    check_source(source)
    try:
        if source in SYNONYM_SOURCES:
            return load_synonyms(source)
        from mlmlib.data import load_vectors

        return load_vectors(source)
    except (ImportError, RuntimeError, OSError) as err:  # HubUnavailableError is a RuntimeError/OSError
        alternative = "wordnet" if source in SYNONYM_SOURCES else EMBEDDED_VECTORS[0]
        raise ValueError(f"source={source!r} is not available here ({err}); the embedded "
                         f"alternative is source={alternative!r}") from err


def vocab_tokens(tokenizer) -> list[str]:
    """The tokenizer's tokens by id."""
    return tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))


def build_tables(vocab: Sequence[str], special_tokens: Sequence[str], config: TableConfig) -> Tables:
    """The correction table for a vocabulary and the held-out WordNet part, disjoint from it.

    WordNet's pairs are split once (`heldout_fraction` held out). With a word-vector source the
    neighbour table has the held-out WordNet pairs removed too, so the robustness test never
    uses a pair the correction saw.
    """
    wordnet = load_source("wordnet" if config.source not in SYNONYM_SOURCES else config.source)
    used, heldout = wordnet.split(1.0 - config.heldout_fraction, seed=config.split_seed)
    if config.source in SYNONYM_SOURCES:
        table = neg.synonym_lookup(used, vocab, special_tokens=special_tokens)
    else:
        # Reconstructed: only alphabetic tokens, or punctuation and digits become "synonyms"
        # (GloVe puts ',' next to 'one'); an empty entry is skipped by the lookup builders.
        words = [t if t.isalpha() else "" for t in vocab]
        table = neg.neighbour_lookup(load_source(config.source), words, top_k=config.top_k,
                                     threshold=config.threshold, special_tokens=special_tokens)
    held = neg.synonym_lookup(heldout, vocab, special_tokens=special_tokens)
    keys = table.keys[~torch.isin(table.keys, held.keys)]
    correction = neg.PairLookup(keys, table.vocab_size, table.source)
    info = {"source": config.source, "correction_pairs": len(correction),
            "heldout_pairs_in_vocab": len(held), "heldout_pairs": len(heldout),
            "removed_heldout_overlap": len(table) - len(correction)}
    return Tables(correction, heldout, config.source, info)


# --------------------------------------------------------------------------- arms


@dataclass
class ArmConfig:
    """One pretraining arm: objective, correction method and its settings."""

    objective: str = "electra"
    method: str = "none"  # negatives.METHODS or a '+' combination
    lam: float = 1.0  # SR weight (reconstructed)
    eps: float = 0.1  # sr-smooth mass (reconstructed)
    tau: float = 0.1  # sr-smooth temperature (reconstructed)
    apply_to: str = "auto"  # auto: the discriminator for ELECTRA, the MLM loss for MLM
    whole_words: bool = True  # only whole-word tokens can be false negatives
    source: str | None = None  # None: the run's table source

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        neg.parse_method(self.method)  # names the allowed methods
        if not isinstance(self.lam, (int, float)) or self.lam < 0:
            raise ValueError(f"lam must be a number >= 0, got {self.lam!r}")
        if self.apply_to not in APPLY_TO:
            raise ValueError(f"apply_to must be one of {APPLY_TO}, got {self.apply_to!r}")
        if self.objective == "mlm" and self.apply_to in ("disc", "both"):
            raise ValueError("apply_to must be 'auto' or 'mlm' for objective 'mlm' (no discriminator)")
        if self.source is not None:
            check_source(self.source)

    @property
    def target(self) -> str:
        """Where HC acts: the hook's apply_to."""
        if self.apply_to != "auto":
            return self.apply_to
        # Reconstructed: in ELECTRA the false negative is a discriminator label; the generator's
        # CE is on the original token, not on its own sample.
        return "disc" if self.objective == "electra" else "mlm"

    @property
    def name(self) -> str:
        """'objective/method[@source]', as in the notebooks' `arms` parameter."""
        return f"{self.objective}/{self.method}" + (f"@{self.source}" if self.source else "")


def parse_arm(spec: str, **settings) -> ArmConfig:
    """Parse 'electra/shield', 'mlm/none' or 'electra/shield@glove-6b-50d' into an ArmConfig."""
    if not isinstance(spec, str) or "/" not in spec:
        raise ValueError(f"arm must look like 'objective/method[@source]' with objective in "
                         f"{OBJECTIVES}, got {spec!r}")
    objective, rest = spec.split("/", 1)
    method, _, source = rest.partition("@")
    return ArmConfig(objective=objective, method=method, source=source or None, **settings)


# --------------------------------------------------------------------------- the hook


@dataclass
class Injection:
    """Synonyms put into ELECTRA's generator samples: a CPU-scale stand-in, not the paper's method.

    At a masked whole word whose original has a partner in `table`, the generator's sample is
    replaced, with probability `rate`, by one of those partners drawn uniformly. Why: no
    generator that runs here samples synonyms often enough for the corrections to act (a fresh
    one 0.15% of replaced tokens, MiniLM's fitted head none from WordNet's table; paper_b.md),
    so the stand-in makes the paper's premise, generator samples that include true synonyms,
    hold at a known rate. `table`: WordNet's pairs that the correction may use, never the
    held-out ones that the robustness test swaps in.
    """

    table: neg.PairLookup
    rate: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"synonym_rate must be in [0, 1], got {self.rate!r}")


class NegativesMonitor:
    """Training-step hook of one arm: whole-word false negatives, HC/SR, and accuracy by kind.

    The discriminator is watched with a forward hook: the step hook runs before the
    discriminator, so its accuracy on original / replaced / false-negative positions is taken
    from the discriminator's output of the same step and summed per log window. With an
    `injection`, synonyms replace some generator samples first (seeded by `seed`); the
    discriminator, the detection and the statistics then see the injected samples.
    """

    def __init__(self, arm: ArmConfig, table: neg.PairLookup, vocab: Sequence[str], *,
                 log_every: int = 10, top_pairs: int = 20, injection: Injection | None = None,
                 seed: int = 0) -> None:
        self.arm = arm
        self.table = table
        self.injection = injection
        self.seed = seed
        self._inject_rng: torch.Generator | None = None
        self._inject_state: torch.Tensor | None = None  # restored state, applied at first use
        self.inner = neg.make_hook(arm.method, table, lam=arm.lam, eps=arm.eps, tau=arm.tau,
                                   apply_to=arm.target)
        # Vectorised whole-word test: one bool per vocabulary entry.
        self.continuation = torch.tensor([t.startswith("##") for t in vocab], dtype=torch.bool)
        self.log_every = log_every
        self.top_pairs = top_pairs
        self.windows: dict[int, np.ndarray] = {}  # window end step -> [correct, n] x 3 kinds
        self.pairs: Counter = Counter()  # (original id, sample id) of false negatives, on log steps
        self._pending: tuple | None = None
        self._handle = None

    def whole_word_positions(self, step: MaskedStep) -> torch.Tensor:
        """(B, L) bool: the token is a whole word (not '##', not followed by a '##' piece)."""
        cont = self.continuation.to(step.input_ids.device)
        here = cont[step.input_ids]
        after = torch.zeros_like(here)
        after[:, :-1] = cont[step.input_ids[:, 1:]] | cont[step.corrupted_ids[:, 1:]]
        return ~here & ~after

    def inject(self, step: MaskedStep) -> tuple[MaskedStep, torch.Tensor]:
        """The step with synonyms injected into its samples, and where they were put, (N,)."""
        if self._inject_rng is None or self._inject_rng.device != step.targets.device:
            self._inject_rng = torch.Generator(device=step.targets.device).manual_seed(self.seed + 7)
            if self._inject_state is not None:
                self._inject_rng.set_state(self._inject_state)
        whole = self.whole_word_positions(step)[step.masked]
        partner = self.injection.table.sample_partners(step.targets, self._inject_rng)
        draw = torch.rand(step.targets.shape, generator=self._inject_rng, device=step.targets.device)
        put = whole & (partner >= 0) & (draw < self.injection.rate)
        samples = torch.where(put, partner, step.samples)
        corrupted = step.input_ids.masked_scatter(step.masked, samples.to(step.input_ids.dtype))
        return dataclasses.replace(step, samples=samples, corrupted_ids=corrupted), put

    def __call__(self, step: MaskedStep) -> HookOutput:
        """Inject synonyms (if set), detect whole-word false negatives, apply the arm's method,
        log its statistics."""
        injected = None
        if self.injection is not None:
            step, put = self.inject(step)
            injected = step.samples
        samples = step.samples
        if self.arm.whole_words:
            ok = self.whole_word_positions(step)[step.masked]
            # -1 is never a pair in a PairLookup and still counts as "replaced" where the sample
            # differs from the original, so the rates keep their denominators
            samples = torch.where(ok | (samples == step.targets), samples, torch.full_like(samples, -1))
            step = dataclasses.replace(step, samples=samples)
        out = self.inner(step)
        fn = self.inner.last_fn  # the inner hook's detection, on the same table and samples
        if step.step % self.log_every == 0 and self.top_pairs:
            self.pairs.update(zip(step.targets[fn].tolist(), samples[fn].tolist()))
        if self._handle is not None:  # only a discriminator reads these
            self._pending = (step.step, step.corrupted_ids != step.input_ids,
                             neg.to_positions(fn, step.masked, False), step.attention_mask)
        # The training loop accepts only its own HookOutput class: same fields, copied over.
        fields = {f.name: getattr(out, f.name, None) for f in dataclasses.fields(HookOutput)}
        if injected is not None:
            fields["samples"] = injected
            fields["stats"] = {**fields["stats"], "injected_frac": float(put.float().mean()) if put.numel() else 0.0}
        return HookOutput(**fields)

    def _on_discriminator(self, module, args, output) -> None:
        if self._pending is None or not module.training:
            return
        step, labels, fn_pos, attention = self._pending
        self._pending = None
        acc = neg.disc_accuracy_by_kind(output.logits, labels.float(), fn_pos, attention_mask=attention)
        counts = []
        for kind in ("original", "replaced", "false_negative"):
            n = acc[f"n_{kind}"]
            counts += [acc[f"acc_{kind}"] * n if n else 0.0, n]
        end = -(-step // self.log_every) * self.log_every
        self.windows[end] = self.windows.get(end, 0.0) + np.asarray(counts)

    def attach(self, model: torch.nn.Module) -> NegativesMonitor:
        """Watch the discriminator of an ElectraPair (MLM models have none)."""
        if isinstance(model, ElectraPair):
            self._handle = model.discriminator.register_forward_hook(self._on_discriminator)
        return self

    def detach(self) -> None:
        """Stop watching the discriminator."""
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def merge(self, history: list[dict]) -> list[dict]:
        """Add disc_acc_{original,replaced,false_negative} (None where a kind had no position)."""
        for row in history:
            # the loop logs at multiples of log_every and at the last step (a partial window)
            sums = self.windows.get(-(-row["step"] // self.log_every) * self.log_every)
            if sums is None:
                continue
            for i, kind in enumerate(("original", "replaced", "false_negative")):
                correct, n = sums[2 * i], sums[2 * i + 1]
                row[f"disc_acc_{kind}"] = float(correct / n) if n else None
                row[f"disc_n_{kind}"] = float(n)
        return history

    def identity(self) -> dict:
        """Everything that decides what this hook does: a checkpoint of another arm is not resumed."""
        from mlmlib.checkpoint import tensors_digest

        identity = {"arm": dataclasses.asdict(self.arm), "log_every": self.log_every,
                    "top_pairs": self.top_pairs,
                    "table": f"{self.table.source}:{self.table.vocab_size}:{tensors_digest([self.table.keys])}",
                    "vocab": tensors_digest([self.continuation])}
        if self.injection is not None:  # the key of a run without injection stays as it was
            identity["injection"] = {"rate": self.injection.rate, "seed": self.seed,
                                     "table": tensors_digest([self.injection.table.keys])}
        return identity

    def state_dict(self) -> dict:
        """The statistics gathered so far (JSON-able): saved in each training checkpoint, so a
        resumed or already finished run records the same statistics as an uninterrupted one."""
        state = {"windows": [[end, sums.tolist()] for end, sums in sorted(self.windows.items())],
                 "pairs": [[a, b, c] for (a, b), c in self.pairs.items()]}
        if self._inject_rng is not None:  # the injection's draws go on where they stopped
            state["inject_rng"] = self._inject_rng.get_state().tolist()
        return state

    def load_state_dict(self, state: dict) -> None:
        """Restore the statistics of state_dict()."""
        self.windows = {int(end): np.asarray(sums, dtype=np.float64) for end, sums in state["windows"]}
        self.pairs = Counter({(int(a), int(b)): int(c) for a, b, c in state["pairs"]})
        if state.get("inject_rng") is not None:
            self._inject_state = torch.tensor(state["inject_rng"], dtype=torch.uint8)
            self._inject_rng = None

    def top_false_negatives(self, vocab: Sequence[str]) -> list[dict]:
        """The most frequent (original, sample) false-negative pairs seen on log steps."""
        return [{"original": vocab[a], "sample": vocab[b], "count": c}
                for (a, b), c in self.pairs.most_common(self.top_pairs)]


# --------------------------------------------------------------------------- pretraining


@dataclass
class ArmResult:
    """A pretrained arm: its model and what was logged."""

    arm: ArmConfig
    model: torch.nn.Module
    history: list[dict]
    top_false_negatives: list[dict]
    step_ms: float  # mean wall time of a training step (logging windows, no setup)


def for_objective(config: PretrainConfig, objective: str, **changes) -> PretrainConfig:
    """A copy of `config` for `objective`; the masking split follows the objective if it changes.

    `dataclasses.replace` alone would keep the split resolved for the old objective (BERT's
    80/10/10 for 'mlm') when switching to 'electra' (85/0/15).
    """
    if objective != config.objective:
        changes["split"] = None
    return dataclasses.replace(config, objective=objective, **changes)


SCRATCH = "scratch"
BASES = (SCRATCH, "minilm-l6")  # where the arms' encoder starts
GENERATORS = ("fresh", "base")  # ELECTRA's generator on a pretrained base (Start.generator)


@dataclass(frozen=True)
class Start:
    """Where every arm's model starts: B1's `base`, `generator` and `base_steps`.

    `generator="fresh"`: the heads and ELECTRA's narrower generator start fresh (seeded).
    `generator="base"` (a pretrained base only): the base's masked LM with the MLM head fitted on
    the base model page (`base_steps` steps, the same cached head A5 and C use) is ELECTRA's
    generator, as wide as the discriminator, its layers frozen and its head trained; the MLM
    arms continue the same masked LM. Why: a fresh generator samples almost no synonyms in the
    steps a CPU affords (paper_b.md), and a frozen encoder halves the generator's cost.
    """

    base: str = SCRATCH
    generator: str = "fresh"
    base_steps: int = 300
    base_max_sentences: int = 40000  # the head fit's corpus sentences and length, as on the base
    base_max_length: int = 64  # model page (its base_max_sentences, base_max_length)

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


def check_base(base: str, tokenizer: str) -> None:
    """A known base, and the tokenizer whose vocabulary its embeddings were trained with."""
    from mlmlib import minilm

    if base not in BASES:
        raise ValueError(f"base={base!r}: use one of {list(BASES)}")
    if base == minilm.NAME and tokenizer != minilm.NAME:
        raise ValueError(f"base={base!r} needs tokenizer={minilm.NAME!r} (its embeddings' vocabulary), "
                         f"got tokenizer={tokenizer!r}")


def encoder_size(base: str, **size) -> ModelSize:
    """The arms' geometry: ModelSize(**size) from scratch, the pretrained encoder's own otherwise."""
    if base == SCRATCH:
        return ModelSize(**size)
    from mlmlib import minilm

    return minilm.minilm_size()


def base_mlm(start: Start):
    """The base's masked LM with its fitted head, built once by the base model page and cached."""
    from mlmlib.basemodel import BaseModelConfig, pretrained_base

    config = BaseModelConfig(name=start.base, tokenizer=start.base, steps=start.base_steps,
                             max_sentences=start.base_max_sentences, max_length=start.base_max_length)
    model, _, _ = pretrained_base(config, progress=False)
    return model


def build_model(objective: str, size: ModelSize, generator_fraction: float, seed: int,
                start: Start = Start()):
    """A fresh ELECTRA pair or BERT masked LM of `size`, or one that starts from `start.base`.

    BERT has no factorised embeddings: the MLM arms of a size with a narrower `embedding_size`
    (ELECTRA-small: 128 against hidden 256) get embeddings as wide as their layers.
    From MiniLM (a CPU-scale proxy): the discriminator (ELECTRA) or BERT (MLM) starts from its
    encoder; the rest follows `start.generator` (see `Start`).
    """
    if start.base != SCRATCH:
        from mlmlib import minilm

        if start.generator == "fresh":
            encoder = minilm.untrained_mlm(seed=seed)
            return electra_from_bert(encoder, generator_fraction, seed=seed) if objective == "electra" else encoder
        mlm = base_mlm(start)
        if objective == "mlm":
            return mlm
        pair = electra_from_bert(mlm, seed=seed, generator="copy")
        pair.freeze_generator_encoder()
        return pair
    if objective == "electra":
        return electra(size, generator_fraction, seed=seed)
    return bert_mlm(dataclasses.replace(size, embedding_size=None), seed=seed)


def warm_start(objective: str, size: ModelSize, generator_fraction: float, data: dict,
               config: PretrainConfig, *, steps: int, seed: int, mask_id: int, num_special: int,
               data_key: dict, start: Start = Start()) -> torch.nn.Module:
    """A model pretrained without correction for `steps` steps, cached: the arms continue from it.

    Why: at smoke scale a generator trained from scratch for a few hundred steps samples
    almost only frequent tokens, so false negatives hardly occur. A shared warm start lets
    every arm start from a generator that already samples plausible words (a deviation from
    the paper's from-scratch runs; `steps=0` turns it off).
    """
    from mlmlib import cache
    from mlmlib.models import load_model, save_model, saved_files
    from mlmlib.pretrain import config_dict

    warm = for_objective(config, objective, steps=steps, seed=seed)
    key = {"objective": objective, "size": dataclasses.asdict(size), "seed": seed,
           "generator_fraction": generator_fraction, "config": config_dict(warm), "data": data_key,
           **start.key()}

    def build(folder):
        model = build_model(objective, size, generator_fraction, seed, start)
        with contextlib.redirect_stdout(io.StringIO()):
            pretrain(model, data, warm, mask_id=mask_id, num_special=num_special, progress=False)
        save_model(model, folder / "model")

    folder = cache.cached("true-negatives-warm-start", key, build, code_of=__name__,
                          expect=saved_files())
    model = load_model(folder / "model")
    if start.generator == "base" and objective == "electra":  # frozen is not saved with the weights
        model.freeze_generator_encoder()
    return model


def pretrain_arm(
    arm: ArmConfig, tables: Tables, vocab: Sequence[str], data: dict, size: ModelSize,
    config: PretrainConfig, *, mask_id: int, num_special: int, generator_fraction: float = 0.25,
    model: torch.nn.Module | None = None, progress: bool | None = False, checkpoint_dir=None,
    start: Start = Start(), injection: Injection | None = None,
) -> ArmResult:
    """Pretrain one arm (from `model`, else a new one from `start` seeded by config.seed), logging
    its false negatives; `injection` puts synonyms into an ELECTRA generator's samples."""
    config = for_objective(config, arm.objective)
    if model is None:
        model = build_model(arm.objective, size, generator_fraction, config.seed, start)
    if arm.objective != "electra":
        injection = None  # an MLM's false negatives are its own predictions
    monitor = NegativesMonitor(arm, tables.correction, vocab, log_every=config.log_every,
                               injection=injection, seed=config.seed).attach(model)
    try:
        history = pretrain(model, data, config, mask_id=mask_id, num_special=num_special,
                           hook=monitor, progress=progress, checkpoint_dir=checkpoint_dir)
    finally:
        monitor.detach()
    history = monitor.merge(history)
    step_ms = 1000.0 * history[-1]["wall_s"] / history[-1]["step"] if history else float("nan")
    return ArmResult(arm, model, history, monitor.top_false_negatives(vocab), step_ms)


def history_rows(result: ArmResult, seed: int) -> list[dict]:
    """The arm's training log as row dicts (JSON-able) for the run record."""
    keep = ("step", "gen_acc", "acc", "disc_acc", "fn_rate_replaced", "fn_rate_masked", "n_fn",
            "replaced_frac", "injected_frac", "disc_acc_original", "disc_acc_replaced", "disc_acc_false_negative",
            "loss", "wall_s", "tokens_seen")
    rows = []
    for r in result.history:
        row = {"arm": result.arm.name, "objective": result.arm.objective,
               "method": result.arm.method, "pretrain_seed": seed}
        row |= {k: r[k] for k in keep if k in r}
        # one name for the generator's (ELECTRA) or the MLM's accuracy
        row["generator_acc"] = r.get("gen_acc", r.get("acc"))
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- robustness


# Reconstructed: which words the robustness test may swap (the paper does not say).
SUBSTITUTION_POS = ("unambiguous", "guessed")
SAMPLES_PER_TASK = 10


@dataclass
class Substitution:
    """A test set with held-out synonyms substituted: texts, unchanged labels, what changed."""

    text: list[str]
    label: list[int]
    n_substituted: list[int]
    samples: list[dict]  # the first swap of each changed text: fragment, word, substitute, pos


def check_substitution_pos(pos_rule: str) -> None:
    """The word-choice rule of the robustness test must be one of SUBSTITUTION_POS."""
    if pos_rule not in SUBSTITUTION_POS:
        raise ValueError(f"parameter substitution_pos must be one of {SUBSTITUTION_POS}, got {pos_rule!r}")


def swap_word(text: str, start: int, end: int, new: str) -> str:
    """Text with characters [start, end) replaced; an "a"/"an" just before follows the new word."""
    article = "an" if new[:1].lower() in "aeiou" else "a"  # by the letter: "a hour" stays wrong
    before = re.sub(r"\b([Aa])n?(\s+)$", lambda m: m[1] + article[1:] + m[2], text[:start])
    return before + new + text[end:]


def synonym_test_set(texts: Sequence[str], labels: Sequence[int], table: SynonymTable, *,
                     rate: float = 0.5, seed: int = 0, pos_rule: str = "unambiguous") -> Substitution:
    """Swap each content word for a held-out synonym of its part of speech, with probability `rate`.

    Content words are nouns, verbs and adjectives, never stop words (`content_words`). The
    synonym shares a synset of `table` (the held-out WordNet part) with the word's lemma under
    the word's part of speech and takes the word's inflection. pos_rule "unambiguous" swaps
    only words that WordNet lists under one part of speech; "guessed" also words whose part of
    speech context cues guess (paper A's rule). Labels are kept; same seed, same test set.
    """
    if not 0.0 < rate <= 1.0:
        raise ValueError(f"rate must be in (0, 1], got {rate!r}")
    if len(texts) != len(labels):
        raise ValueError(f"texts and labels differ in length: {len(texts)} vs {len(labels)}")
    check_substitution_pos(pos_rule)
    rng = np.random.default_rng(seed)
    out, counts, samples = [], [], []
    for text in texts:
        swaps = []
        for word in content_words(text, table, unambiguous=pos_rule == "unambiguous"):
            if rng.random() >= rate:
                continue
            new = synonym_replacement(word, table, rng)
            if new is not None:
                swaps.append((word, new))
        changed = text
        for word, new in reversed(swaps):  # from the end: earlier spans keep their offsets
            changed = swap_word(changed, word.start, word.end, new)
        if swaps:
            word, new = swaps[0]
            samples.append({"fragment": fragment(text, word.start, word.end), "word": word.text,
                            "substitute": new, "pos": POS_WORDS[word.pos]})
        out.append(changed)
        counts.append(len(swaps))
    return Substitution(out, [int(v) for v in labels], counts, samples)


# --------------------------------------------------------------------------- downstream


@dataclass
class TaskData:
    """A task encoded for fine-tuning, with its synonym-substituted test set."""

    name: str
    num_labels: int
    train: dict
    validation: dict
    test: dict
    test_synonyms: dict
    info: dict
    samples: list[dict] = field(default_factory=list)  # sample swaps of the synonym test set


def _subset(split, n: int | None, rng: np.random.Generator):
    """At most n rows of a datasets split, chosen with the run's generator."""
    if n is None or n >= len(split):
        return split
    return split.select(np.sort(rng.choice(len(split), size=n, replace=False)).tolist())


def prepare_task(name: str, tokenizer, heldout: SynonymTable, *, max_length: int = 64,
                 max_train: int | None = None, max_eval: int | None = None,
                 max_validation: int | None = None, substitution_rate: float = 0.5,
                 substitution_pos: str = "unambiguous", seed: int = 0,
                 **load_kwargs) -> TaskData | QATaskData:
    """Load a task, subsample it (seeded), encode it and build its held-out-synonym test set.

    Tasks without test labels (GLUE) are tested on their validation split, and 10% of their
    training split (seeded) picks the best fine-tuning step instead. `max_eval` limits the test
    split and, unless `max_validation` is given, the split that picks the step. "squad" is
    prepared by `prepare_qa_task` (the same splits and limits).
    """
    if name in qa.QA_TASKS:
        return prepare_qa_task(name, tokenizer, heldout, max_length=max_length, max_train=max_train,
                               max_eval=max_eval, max_validation=max_validation,
                               substitution_rate=substitution_rate,
                               substitution_pos=substitution_pos, seed=seed, **load_kwargs)
    from mlmlib.data import load_task
    from mlmlib.tokenize import encode_split

    data = load_task(name, **load_kwargs)
    if "test" not in data:
        parts = data["train"].train_test_split(test_size=0.1, seed=seed)
        data = {"train": parts["train"], "validation": parts["test"], "test": data["validation"]}
    rng = np.random.default_rng(seed)
    train = _subset(data["train"], max_train, rng)
    validation = _subset(data["validation"], max_eval if max_validation is None else max_validation, rng)
    test = _subset(data["test"], max_eval, rng)
    test = {k: list(test[k]) for k in ("text", "text_pair", "label") if k in test.column_names}
    sub = synonym_test_set(test["text"], test["label"], heldout, rate=substitution_rate, seed=seed,
                           pos_rule=substitution_pos)
    substituted = {"text": sub.text, "label": sub.label}
    n_sub = np.asarray(sub.n_substituted)
    if "text_pair" in test:  # both texts of a pair get substitutions
        other = synonym_test_set(test["text_pair"], test["label"], heldout, rate=substitution_rate,
                                 seed=seed + 1, pos_rule=substitution_pos)
        substituted["text_pair"] = other.text
        n_sub = n_sub + np.asarray(other.n_substituted)
    info = {"task": name, "train": len(train), "validation": len(validation), "test": len(test["label"]),
            "majority_accuracy": class_prior(test["label"]),
            "substituted_per_example": float(n_sub.mean()),
            "examples_changed": float((n_sub > 0).mean())}
    samples = [{"task": name, **row} for row in sub.samples[:SAMPLES_PER_TASK]]
    return TaskData(
        name, data["train"].features["label"].num_classes,
        encode_split(tokenizer, train, max_length), encode_split(tokenizer, validation, max_length),
        encode_split(tokenizer, test, max_length), encode_split(tokenizer, substituted, max_length), info,
        samples)


def finetune_and_test(model: torch.nn.Module | None, size: ModelSize, task: TaskData | QATaskData,
                      config: FinetuneConfig, pooling: str = "mean") -> dict:
    """Fine-tune a classifier on the pretrained encoder; clean and synonym-substituted test accuracy.

    `model=None` fine-tunes a randomly initialised encoder of `size` (ELECTRA's architecture:
    BERT's with factorised embeddings): the no-pretraining baseline. A QATaskData (SQuAD) is
    handed to `finetune_and_test_qa` (no pooling there: the span head reads every token).
    """
    if isinstance(task, QATaskData):
        return finetune_and_test_qa(model, size, task, config)
    if model is None or isinstance(model, ElectraPair):  # ELECTRA fine-tunes the discriminator
        clf = electra_classifier(size, task.num_labels, from_encoder=model, seed=config.seed,
                                 pooling=pooling)
    else:  # the MLM arms: BERT, with embeddings as wide as its layers, as `build_model` built it
        clf = bert_classifier(bert_size(size), task.num_labels, from_encoder=model, seed=config.seed,
                              pooling=pooling)
    with contextlib.redirect_stdout(io.StringIO()):  # quiet: one line per validation otherwise
        result = finetune(clf, task.train, task.validation, config, progress=False)
    clean = evaluate(clf, task.test)
    synonyms = evaluate(clf, task.test_synonyms)["accuracy"]
    metric = score_metric(task.name)  # the task's own score as the paper reports it (GLUE's)
    return {"task": task.name, "finetune_seed": config.seed, "val_accuracy": result.best_metric,
            "test_accuracy": clean["accuracy"], "synonym_accuracy": synonyms,
            "robustness_drop": clean["accuracy"] - synonyms, "test_score": clean[metric],
            "score_metric": metric, "finetune_s": result.wall_s}


def bert_size(size: ModelSize) -> ModelSize:
    """`size` as BERT builds it: no factorised embeddings (see `build_model`)."""
    return dataclasses.replace(size, embedding_size=None)


# --------------------------------------------------------------------------- SQuAD


# Reconstructed: a reader that ignores its input answers with a fixed span, which is almost never
# a question's answer: its exact match is taken as 0, the floor B1 and B3 hold SQuAD's EM against
# (the classification tasks' floor is their majority class).
QA_FLOOR = 0.0


@dataclass
class QATaskData:
    """SQuAD encoded as windows (`mlmlib.qa.Windows`), with its synonym-substituted test set:
    held-out synonyms are swapped in the questions only, so every gold answer stays a span of
    its unchanged context."""

    name: str
    train: qa.Windows
    validation: qa.Windows
    test: qa.Windows
    test_synonyms: qa.Windows
    info: dict
    samples: list[dict] = field(default_factory=list)


def prepare_qa_task(name: str, tokenizer, heldout: SynonymTable, *, max_length: int = 128,
                    max_train: int | None = None, max_eval: int | None = None,
                    max_validation: int | None = None, substitution_rate: float = 0.5,
                    substitution_pos: str = "unambiguous", seed: int = 0,
                    **load_kwargs) -> QATaskData:
    """SQuAD v1.1 as `prepare_task` prepares a GLUE task: the dev set is the test set, 10% of the
    training questions (seeded) pick the best fine-tuning step, max_train / max_eval
    (max_validation) questions at most, windows of max_length tokens."""
    if name not in qa.QA_TASKS:
        raise ValueError(f"prepare_qa_task: name={name!r} is not a question-answering task; known: {qa.QA_TASKS}")
    data = qa.load_squad(**load_kwargs)
    parts = data["train"].train_test_split(test_size=0.1, seed=seed)
    rng = np.random.default_rng(seed)
    train = _subset(parts["train"], max_train, rng)
    validation = _subset(parts["test"], max_eval if max_validation is None else max_validation, rng)
    test = _subset(data["validation"], max_eval, rng).to_dict()
    sub = synonym_test_set(test["question"], [0] * len(test["question"]), heldout, rate=substitution_rate,
                           seed=seed, pos_rule=substitution_pos)
    windows = {key: qa.encode_split(tokenizer, split, max_length)
               for key, split in (("train", train), ("validation", validation), ("test", test),
                                  ("test_synonyms", {**test, "question": sub.text}))}
    n_sub = np.asarray(sub.n_substituted)
    info = {"task": name, "train": len(train), "validation": len(validation), "test": len(test["question"]),
            "majority_accuracy": QA_FLOOR, "substituted_per_example": float(n_sub.mean()),
            "examples_changed": float((n_sub > 0).mean()),
            "train_windows": len(windows["train"]), "test_windows": len(windows["test"]),
            "test_answer_in_window": windows["test"].info["answer_in_window"]}
    samples = [{"task": name, **row} for row in sub.samples[:SAMPLES_PER_TASK]]
    return QATaskData(name, windows["train"], windows["validation"], windows["test"],
                      windows["test_synonyms"], info, samples)


def finetune_and_test_qa(model: torch.nn.Module | None, size: ModelSize, task: QATaskData,
                         config: FinetuneConfig) -> dict:
    """Fine-tune a span reader on the pretrained encoder (the discriminator for ELECTRA, `None`:
    from scratch); a row like `finetune_and_test`'s, with SQuAD's scores.

    The accuracies are exact matches (a question answered exactly is a correct one), the drop
    is clean minus question-substituted exact match, and `test_score` is F1 (SQuAD's headline
    score, `score_metric` "squad_f1"); `exact_match` repeats the clean exact match under its own name.
    """
    if model is None or isinstance(model, ElectraPair):
        reader = question_answerer(size, from_encoder=model, kind="electra", seed=config.seed)
    else:
        reader = question_answerer(bert_size(size), from_encoder=model, kind="bert", seed=config.seed)
    with contextlib.redirect_stdout(io.StringIO()):
        result = qa.finetune_qa(reader, task.train, task.validation, config, progress=False)
    clean = qa.evaluate_qa(reader, task.test, config.eval_batch_size, config.bf16)
    synonyms = qa.evaluate_qa(reader, task.test_synonyms, config.eval_batch_size, config.bf16)
    return {"task": task.name, "finetune_seed": config.seed, "val_accuracy": result.validation["exact_match"],
            "test_accuracy": clean["exact_match"], "synonym_accuracy": synonyms["exact_match"],
            "robustness_drop": clean["exact_match"] - synonyms["exact_match"], "test_score": clean["f1"],
            "score_metric": qa.SCORE_METRIC, "exact_match": clean["exact_match"],
            "synonym_f1": synonyms["f1"], "finetune_s": result.wall_s}


# --------------------------------------------------------------------------- one seed, every arm


@dataclass
class ArmRuns:
    """What B1 records of one pretraining seed: training log, downstream rows, one row per arm."""

    training: list[dict]
    downstream: list[dict]
    arms: list[dict]


def check_lists(**lists: Sequence) -> None:
    """Each named list (a notebook parameter) must be non-empty and repeat no value."""
    for name, values in lists.items():
        if isinstance(values, (str, int)) or not len(values):
            raise ValueError(f"parameter {name} must be a non-empty list, got {values!r}")
        if len(set(values)) != len(values):
            raise ValueError(f"parameter {name} lists a value twice: {list(values)!r}")



def check_pooling(pooling: str) -> None:
    """The classifier head must be one mlmlib.models builds."""
    if pooling not in POOLINGS:
        raise ValueError(f"parameter pooling must be one of {POOLINGS}, got {pooling!r}")


def check_parameters(arms: Sequence[str], tasks: Sequence[str], finetune_seeds: Sequence[int], *,
                     pooling: str = "mean", substitution_pos: str = "unambiguous") -> None:
    """Fail at once, naming B1's parameter, on lists and choices that B1 cannot run."""
    from mlmlib.data.tasks import EMBEDDED_TASKS, HUB_TASKS

    check_lists(arms=arms, tasks=tasks, finetune_seeds=finetune_seeds)
    known = (*EMBEDDED_TASKS, *HUB_TASKS, *qa.QA_TASKS)
    unknown = [t for t in tasks if t not in known]
    if unknown:
        raise ValueError(f"parameter tasks: unknown {unknown}; known tasks: {', '.join(known)}")
    check_pooling(pooling)
    check_substitution_pos(substitution_pos)


def run_arms(
    arms: Sequence[ArmConfig], tables: dict[str, Tables], vocab: Sequence[str],
    tasks: Sequence[TaskData], data: dict, size: ModelSize, config: PretrainConfig,
    finetune_configs: Sequence[FinetuneConfig], *,
    source: str, mask_id: int, num_special: int, generator_fraction: float, data_key: dict,
    warm_start_steps: int = 0, warm_start_seed: int = 0, pooling: str = "mean",
    checkpoint_dir: Path | None = None, log: Callable[[str], Any] | None = print,
    start: Start = Start(), injection: Injection | None = None,
) -> ArmRuns:
    """Pretrain every arm with seed config.seed, fine-tune it on every task and seed, then `scratch`.

    `tables`: source -> Tables, for `source` (the run's) and every arm's own; `data_key`
    identifies `data` in the warm start's cache key. With config.checkpoint_every, each arm
    checkpoints in a subfolder of `checkpoint_dir`. Every arm starts from `start` (see `Start`);
    `scratch` is always the same encoder randomly initialised. `injection`: synonyms put into
    the ELECTRA arms' generator samples (the same draws in every arm of the seed until their
    samples differ). Everything is checked before training.
    """
    check_lists(arms=[a.name for a in arms], tasks=[t.name for t in tasks],
                finetune_seeds=[ft.seed for ft in finetune_configs])
    check_pooling(pooling)
    missing = sorted({a.source or source for a in arms} - set(tables))
    if missing:
        raise ValueError(f"tables has no entry for source(s) {missing}; build_tables for each arm's source")
    seed = config.seed
    training, downstream, arm_rows = [], [], []
    for arm in arms:
        warm = None
        if warm_start_steps:
            warm = warm_start(arm.objective, size, generator_fraction, data, config,
                              steps=warm_start_steps, seed=warm_start_seed, mask_id=mask_id,
                              num_special=num_special, data_key=data_key, start=start)
        folder = None
        if checkpoint_dir is not None and config.checkpoint_every:
            folder = Path(checkpoint_dir) / arm.name.replace("/", "_")
        result = pretrain_arm(arm, tables[arm.source or source], vocab, data, size, config,
                              mask_id=mask_id, num_special=num_special,
                              generator_fraction=generator_fraction, model=warm, checkpoint_dir=folder,
                              start=start, injection=injection)
        training += history_rows(result, seed)
        arm_rows.append({"arm": arm.name, "objective": arm.objective, "method": arm.method,
                         "pretrain_seed": seed, "step_ms": result.step_ms,
                         "top_false_negatives": result.top_false_negatives[:10]})
        for task in tasks:
            for ft in finetune_configs:
                row = finetune_and_test(result.model, size, task, ft, pooling=pooling)
                downstream.append({"arm": arm.name, "objective": arm.objective, "method": arm.method,
                                   "pretrain_seed": seed, **row})
        if log:
            last = result.history[-1]
            injected = (f", {last['injected_frac']:.3f} of masked tokens injected synonyms"
                        if last.get("injected_frac") is not None else "")
            log(f"{arm.name}: {result.step_ms:.0f} ms/step, false negatives "
                f"{last.get('fn_rate_replaced', 0):.4f} of replaced tokens at the end{injected}")
    # the no-pretraining baseline: the same encoder, randomly initialised, fine-tuned alike
    for task in tasks:
        for ft in finetune_configs:
            row = finetune_and_test(None, size, task, ft, pooling=pooling)
            downstream.append({"arm": "scratch", "objective": "scratch", "method": "none",
                               "pretrain_seed": seed, **row})
    return ArmRuns(training, downstream, arm_rows)


# --------------------------------------------------------------------------- cost


class RoundRobinTimer:
    """Step hook for timing: hands each training step to one arm's hook and times the step.

    The schedule lists one arm name per step. A step's time runs from this hook's call in that
    step to its call in the next one: the rest of the step (losses, backward pass, optimizer)
    and the next batch with its generator forward pass, which every arm pays alike. None in
    `hooks` is a step whose hook does nothing (the training loop then runs as without a hook;
    for MLM it still takes the argmax over the vocabulary at masked positions, a hook's input).
    """

    def __init__(self, hooks: dict[str, Callable[[Any], Any] | None], schedule: Sequence[str]) -> None:
        unknown = sorted(set(schedule) - set(hooks))
        if unknown:
            raise ValueError(f"schedule names arms without a hook entry: {unknown}; arms: {list(hooks)}")
        self.hooks = hooks
        self.schedule = list(schedule)
        self.times: list[tuple[int, str, float]] = []  # (step, arm, seconds), in step order
        self._last: tuple[int, str, float] | None = None

    def __call__(self, step: MaskedStep):
        """Close the previous step's time, then run this step's arm."""
        if step.step > len(self.schedule):
            raise ValueError(f"step {step.step} is past the schedule's {len(self.schedule)} steps")
        if step.input_ids.is_cuda:  # the loop does not wait for the GPU: the clock must
            torch.cuda.synchronize(step.input_ids.device)
        now = time.perf_counter()
        if self._last is not None:
            last_step, name, start = self._last
            self.times.append((last_step, name, now - start))
        name = self.schedule[step.step - 1]
        self._last = (step.step, name, now)
        hook = self.hooks[name]
        return None if hook is None else hook(step)


def timing_schedule(arms: Sequence[str], reps: int, steps: int, warmup: int, seed: int) -> list[tuple[int, str]]:
    """(repetition, arm) per training step: `warmup` untimed steps (repetition -1, the first arm),
    then per repetition every arm for `steps` consecutive steps, in an order shuffled per
    repetition (seeded), and one closing step (repetition -1) that ends the last timed step."""
    if reps < 1 or steps < 1 or warmup < 0:
        raise ValueError(f"reps and steps must be >= 1 and warmup >= 0, got {reps}, {steps}, {warmup}")
    rng = np.random.default_rng(seed)
    plan = [(-1, arms[0])] * warmup
    for rep in range(reps):
        plan += [(rep, arms[i]) for i in rng.permutation(len(arms)) for _ in range(steps)]
    return plan + [(-1, arms[0])]


def measure_step_overhead(
    arms: dict[str, ArmConfig | None], tables: Tables, vocab: Sequence[str], data: dict,
    size: ModelSize, config: PretrainConfig, *, mask_id: int, num_special: int,
    generator_fraction: float = 0.25, reps: int = 3, warmup: int = 2,
) -> list[dict]:
    """Median step time of each arm (None: a step without correction), per repetition.

    The arms share one model and one training loop, and take turns step by step: each
    repetition runs every arm for `config.steps` consecutive steps, in a shuffled order, so
    the slow drifts of a shared machine (measured: 10-20% between runs a minute apart) hit
    every arm of a repetition alike, and the paired overhead per repetition cancels them.
    Why not one run per arm: that paired runs seconds apart, and their medians moved by more
    than the 5% the cost claim is about. The shared weights see every arm's corrections;
    a step's cost does not depend on them.
    """
    if reps < 1 or config.steps < 1 or warmup < 0:
        raise ValueError(f"reps and config.steps must be >= 1 and warmup >= 0, got {reps}, "
                         f"{config.steps}, {warmup}")
    objectives = {arm.objective for arm in arms.values() if arm is not None}
    if len(objectives) > 1:
        raise ValueError(f"arms of one objective are timed together, got {sorted(objectives)}")
    objective = objectives.pop() if objectives else config.objective
    names = list(arms)
    plan = timing_schedule(names, reps, config.steps, warmup, config.seed)
    model = build_model(objective, size, generator_fraction, config.seed)
    monitors = {name: NegativesMonitor(arm, tables.correction, vocab, top_pairs=0).attach(model)
                for name, arm in arms.items() if arm is not None}
    timer = RoundRobinTimer({name: monitors.get(name) for name in names}, [name for _, name in plan])
    cfg = for_objective(config, objective, steps=len(plan), log_every=len(plan))
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            pretrain(model, data, cfg, mask_id=mask_id, num_special=num_special, hook=timer,
                     progress=False)
    finally:
        for monitor in monitors.values():
            monitor.detach()
    per_rep: dict[tuple[int, str], list[float]] = {}
    for step, name, seconds in timer.times:
        rep = plan[step - 1][0]
        if rep >= 0:
            per_rep.setdefault((rep, name), []).append(seconds)
    return [{"arm": name, "rep": rep, "step_ms": 1000.0 * float(np.median(walls))}
            for (rep, name), walls in sorted(per_rep.items())]


def overhead_table(rows: list[dict], reference: str) -> list[dict]:
    """Per arm: median step time and the overhead ratio vs `reference`, paired by repetition."""
    import pandas as pd

    from mlmlib.stats import mean_ci

    frame = pd.DataFrame(rows).pivot(index="rep", columns="arm", values="step_ms")
    if reference not in frame:
        raise ValueError(f"reference arm {reference!r} was not measured; arms: {list(frame)}")
    out = []
    for arm in frame:
        ratio = frame[arm] / frame[reference] - 1.0
        ci = mean_ci(ratio.to_numpy())
        out.append({"arm": arm, "step_ms": float(frame[arm].median()),
                    "overhead": float(frame[arm].median() / frame[reference].median() - 1.0),
                    "overhead_mean": ci.mean, "overhead_low": ci.low, "overhead_high": ci.high,
                    "reps": ci.n})
    return out
