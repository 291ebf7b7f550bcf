"""Pretraining one arm: its model (fresh, or from a pretrained base), the shared warm start,
and the training run with its false-negative statistics."""

from __future__ import annotations

import contextlib
import dataclasses
import io
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from mlmlib.models import ModelSize, bert_mlm, electra, electra_from_bert
from mlmlib.papers.true_negatives.arm_config import ArmConfig
from mlmlib.papers.true_negatives.config import BASES, SCRATCH, Start
from mlmlib.papers.true_negatives.lookup_tables import Tables
from mlmlib.papers.true_negatives.monitor import Injection, NegativesMonitor
from mlmlib.pretrain import PretrainConfig, pretrain


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
