"""Pretraining one arm: its model (fresh, or from a pretrained base), the shared warm start,
and the training run with its false-negative statistics and its checkpoints along the way."""

from __future__ import annotations

import contextlib
import dataclasses
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from mlmlib.models import ModelSize, bert_mlm, electra, electra_from_bert
from mlmlib.papers.true_negatives.arm_config import ArmConfig
from mlmlib.papers.true_negatives.config import BASES, SCRATCH, Start, check_checkpoints
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
    snapshots: Snapshots | None = field(default=None, repr=False)

    @property
    def checkpoints(self) -> list[int]:
        """The steps whose model can be had (`at`), increasing; the last step only without any."""
        return self.snapshots.steps if self.snapshots else [self.history[-1]["step"]]

    def at(self, step: int) -> torch.nn.Module:
        """The model as it was after `step` steps (loaded into `model`, in place)."""
        if self.snapshots is not None:
            self.snapshots.load(self.model, step)
        elif step != self.checkpoints[-1]:
            raise ValueError(f"no checkpoint at step {step}; checkpoints: {self.checkpoints}")
        return self.model


class Snapshots:
    """The model's weights after each of `steps` steps of one training run.

    The step hook takes the copy at the start of step s + 1, before that step changes a weight,
    so the copy is the model after s steps of the one run, on its one learning-rate schedule
    (warm-up, then linear decay to the last step): what the run would have given had it
    stopped at s. The last step's copy is taken after the run. With a `folder` (a resumable
    run) each copy is written there atomically, so a run resumed past a step still has it.
    """

    FILE = "chain-{:08d}.safetensors"

    def __init__(self, steps: Sequence[int], folder: Path | None = None) -> None:
        self.steps = list(steps)
        self.folder = None if folder is None else Path(folder)
        self.states: dict[int, dict] = {}

    def path(self, step: int) -> Path | None:
        """Where the copy of `step` is written (None: kept in memory)."""
        return None if self.folder is None else self.folder / self.FILE.format(step)

    def take(self, model: torch.nn.Module, done: int) -> None:
        """Copy the weights if `done` steps is one of `steps` (once per step)."""
        if done not in self.steps or done in self.states:
            return
        path = self.path(done)
        if path is None:
            self.states[done] = {k: v.detach().to("cpu", copy=True)
                                 for k, v in model.state_dict().items()}
            return
        from safetensors.torch import save_model

        from mlmlib.atomic import atomic_path

        if not path.exists():
            with atomic_path(path) as tmp:
                save_model(model, str(tmp))
        self.states[done] = {}  # on disk

    def load(self, model: torch.nn.Module, step: int) -> None:
        """Put the weights of `step` into `model`."""
        if step not in self.steps:
            raise ValueError(f"no checkpoint at step {step}; checkpoints: {self.steps}")
        path = self.path(step)
        if path is None:
            if step not in self.states:
                raise RuntimeError(f"the run never reached step {step}")
            model.load_state_dict(self.states[step])
            return
        from safetensors.torch import load_model

        if not path.exists():
            raise RuntimeError(f"{path} is missing: the run was resumed past step {step} without "
                               "its copy (delete the run's checkpoints to train it again)")
        load_model(model, str(path))


class SnapshotHook:
    """The arm's step hook (`NegativesMonitor`) that also copies the model at `snapshots` steps;
    the monitor's identity and statistics pass through: a run with snapshots resumes from the
    same checkpoints as one without."""

    def __init__(self, monitor: NegativesMonitor, snapshots: Snapshots, model: torch.nn.Module) -> None:
        self.monitor, self.snapshots, self.model = monitor, snapshots, model

    def __call__(self, step):
        """Copy the model as it is after step.step - 1 steps, then run the monitor."""
        self.snapshots.take(self.model, step.step - 1)
        return self.monitor(step)

    def identity(self) -> dict:
        """The monitor's: checkpoints do not change what training does."""
        return self.monitor.identity()

    def state_dict(self) -> dict:
        """The monitor's statistics."""
        return self.monitor.state_dict()

    def load_state_dict(self, state: dict) -> None:
        """Restore the monitor's statistics."""
        self.monitor.load_state_dict(state)


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
    start: Start = Start(), injection: Injection | None = None, checkpoints: Sequence[int] = (),
) -> ArmResult:
    """Pretrain one arm (from `model`, else a new one from `start` seeded by config.seed), logging
    its false negatives; `injection` puts synonyms into an ELECTRA generator's samples.

    `checkpoints`: steps at which the model is copied on the way (`ArmResult.at`); one run,
    one schedule, whatever the checkpoints (see `Snapshots`)."""
    config = for_objective(config, arm.objective)
    if model is None:
        model = build_model(arm.objective, size, generator_fraction, config.seed, start)
    if arm.objective != "electra":
        injection = None  # an MLM's false negatives are its own predictions
    monitor = NegativesMonitor(arm, tables.correction, vocab, log_every=config.log_every,
                               injection=injection, seed=config.seed).attach(model)
    snapshots, hook = None, monitor
    if checkpoints:
        steps = check_checkpoints(list(checkpoints), config.steps, config.log_every)
        snapshots = Snapshots(steps, checkpoint_dir)
        hook = SnapshotHook(monitor, snapshots, model)
    try:
        history = pretrain(model, data, config, mask_id=mask_id, num_special=num_special,
                           hook=hook, progress=progress, checkpoint_dir=checkpoint_dir)
    finally:
        monitor.detach()
    if snapshots is not None:
        snapshots.take(model, config.steps)
    history = monitor.merge(history)
    step_ms = 1000.0 * history[-1]["wall_s"] / history[-1]["step"] if history else float("nan")
    return ArmResult(arm, model, history, monitor.top_false_negatives(vocab), step_ms, snapshots)


def history_rows(result: ArmResult, seed: int) -> list[dict]:
    """The arm's training log as row dicts (JSON-able) for the run record."""
    keep = ("step", "gen_acc", "acc", "disc_acc", "fn_rate_replaced", "fn_rate_masked", "n_fn",
            "replaced_frac", "injected_frac", "disc_acc_original", "disc_acc_replaced", "disc_acc_false_negative",
            "disc_loss_share_false_negative", "loss", "wall_s", "tokens_seen")
    rows = []
    for r in result.history:
        row = {"arm": result.arm.name, "objective": result.arm.objective,
               "method": result.arm.method, "pretrain_seed": seed}
        row |= {k: r[k] for k in keep if k in r}
        # one name for the generator's (ELECTRA) or the MLM's accuracy
        row["generator_acc"] = r.get("gen_acc", r.get("acc"))
        rows.append(row)
    return rows
