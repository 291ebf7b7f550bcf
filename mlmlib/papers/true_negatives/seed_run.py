"""B1's loop for one pretraining seed: every arm pretrained as one chain, fine-tuned at each of its
checkpoints on every task and fine-tuning seed, then the same encoder from scratch (once per task
and fine-tuning seed, cached); and the checks that fail before any of it runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlmlib.finetune import FinetuneConfig
from mlmlib.models import POOLINGS, ModelSize
from mlmlib.papers.true_negatives import qa
from mlmlib.papers.true_negatives.arm_config import ArmConfig
from mlmlib.papers.true_negatives.arm_pretraining import history_rows, pretrain_arm, warm_start
from mlmlib.papers.true_negatives.config import (
    SCRATCH,
    Finetune,
    Start,
    Table,
    check_checkpoints,
    check_list,
)
from mlmlib.papers.true_negatives.downstream import (
    TaskData,
    finetune_and_test,
    prepare_task,
    scratch_result,
)
from mlmlib.papers.true_negatives.lookup_tables import Tables, build_tables
from mlmlib.papers.true_negatives.monitor import Injection
from mlmlib.pretrain import PretrainConfig


@dataclass
class ArmRuns:
    """What B1 records of one pretraining seed: training log, downstream rows, one row per arm."""

    training: list[dict]
    downstream: list[dict]
    arms: list[dict]
    checkpoints: list[dict] = dataclasses.field(default_factory=list)  # arm x checkpoint


def check_pooling(pooling: str) -> None:
    """The classifier head must be one mlmlib.models builds."""
    if pooling not in POOLINGS:
        raise ValueError(f"finetune.pooling must be one of {POOLINGS}, got {pooling!r}")


def check_parameters(arms: Sequence[str], finetune: Finetune) -> None:
    """Fail at once, naming B1's parameter, on what the groups cannot check without loading the
    task and model code: the arms' list, the tasks' names and the classifier head."""
    from mlmlib.data.tasks import EMBEDDED_TASKS, HUB_TASKS

    check_list("parameter arms", arms)
    known = (*EMBEDDED_TASKS, *HUB_TASKS, *qa.QA_TASKS)
    unknown = [t for t in finetune.tasks if t not in known]
    if unknown:
        raise ValueError(f"finetune.tasks: unknown {unknown}; known tasks: {', '.join(known)}")
    check_pooling(finetune.pooling)


def finetune_configs(finetune: Finetune, seed: int) -> list[FinetuneConfig]:
    """One FinetuneConfig per fine-tuning seed, each offset by the pretraining seed `seed`: the
    pretraining seed varies the fine-tuning too, and the arms of one seed share its draws."""
    return [FinetuneConfig(seed=seed + s, epochs=finetune.epochs, batch_size=finetune.batch_size,
                           lr=finetune.lr) for s in finetune.seeds]


def prepare_tasks(finetune: Finetune, tokenizer, heldout) -> list[TaskData]:
    """Every task of `finetune`, loaded, subsampled, encoded and with its held-out-synonym test
    set (`downstream.prepare_task`; the same draws for every pretraining seed)."""
    return [prepare_task(task, tokenizer, heldout, max_length=finetune.max_length,
                         max_train=finetune.max_train, max_eval=finetune.max_eval,
                         max_validation=finetune.max_validation,
                         substitution_rate=finetune.substitution_rate,
                         substitution_pos=finetune.substitution_pos, seed=0)
            for task in finetune.tasks]


def tables_for_arms(vocab: Sequence[str], special_tokens: Sequence[str], table: Table,
                    arms: Sequence[ArmConfig], synonym_rate: float = 0.0,
                    ) -> tuple[dict[str, Tables], Injection | None]:
    """The lookup tables of the run's source and of every arm's own ('@source'), built once each,
    and the synonym injection (None at rate 0): true synonyms are WordNet's pairs that the
    correction may use, never the held-out ones."""
    tables = {s: build_tables(vocab, special_tokens, dataclasses.replace(table, source=s))
              for s in dict.fromkeys(a.source or table.source for a in arms)}
    if not synonym_rate:
        return tables, None
    wordnet = tables.get("wordnet") or build_tables(
        vocab, special_tokens, dataclasses.replace(table, source="wordnet"))
    return tables, Injection(wordnet.correction, synonym_rate)


def setup_text(start: Start, injection: Injection | None, size: ModelSize, data: dict,
               vocab_size: int, arms: Sequence[ArmConfig]) -> str:
    """What B1 is about to train, in words: the start, the injection, the data and the arms."""
    lines = []
    if start.base != SCRATCH:
        lines.append(
            f"every arm's encoder starts from {start.base} (hidden {size.hidden}, {size.layers} "
            "layers): a scaled-down proxy. It shows the corrections during continued pretraining "
            "of a real encoder, not during pretraining from scratch as in the paper; "
            + ("the heads and ELECTRA's generator start fresh" if start.generator == "fresh" else
               f"ELECTRA's generator is {start.base} with its fitted MLM head (layers frozen), "
               "the MLM arms continue it")
            + ", and scratch is the same encoder randomly initialised.")
    if injection is not None:
        lines.append(
            f"synonym injection (a stand-in, not the paper's method): {injection.rate:.0%} of the "
            "masked whole words that have a WordNet synonym get one as their generator sample, so "
            "the discriminator sees true synonyms labelled 'replaced' at a known rate.")
    lines.append(f"{data['input_ids'].shape[0]} sequences of {data['input_ids'].shape[1]} tokens; "
                 f"vocabulary {vocab_size}; arms: {', '.join(a.name for a in arms)}")
    return "\n".join(lines)


def run_arms(
    arms: Sequence[ArmConfig], tables: dict[str, Tables], vocab: Sequence[str],
    tasks: Sequence[TaskData], data: dict, size: ModelSize, config: PretrainConfig,
    finetune_configs: Sequence[FinetuneConfig], *,
    source: str, mask_id: int, num_special: int, generator_fraction: float, data_key: dict,
    warm_start_steps: int = 0, warm_start_seed: int | None = None, pooling: str = "mean",
    checkpoint_dir: Path | None = None, log: Callable[[str], Any] | None = print,
    start: Start = Start(), injection: Injection | None = None, checkpoints: Sequence[int] = (),
) -> ArmRuns:
    """Pretrain every arm with seed config.seed as one chain, fine-tune it at each checkpoint on
    every task and seed, then `scratch` (cached: once per task and fine-tuning settings).

    `checkpoints`: the steps at which the chain is fine-tuned besides config.steps
    (`check_checkpoints`); `warm_start_seed` None: the warm start is the pretraining seed's own.

    `tables`: source -> Tables, for `source` (the run's) and every arm's own; `data_key`
    identifies `data` in the warm start's cache key. With config.checkpoint_every, each arm
    checkpoints in a subfolder of `checkpoint_dir`. Every arm starts from `start` (see `Start`);
    `scratch` is always the same encoder randomly initialised. `injection`: synonyms put into
    the ELECTRA arms' generator samples (the same draws in every arm of the seed until their
    samples differ). Everything is checked before training.
    """
    check_list("parameter arms", [a.name for a in arms])
    check_list("finetune.tasks", [t.name for t in tasks])
    check_list("finetune.seeds", [ft.seed for ft in finetune_configs])
    check_pooling(pooling)
    missing = sorted({a.source or source for a in arms} - set(tables))
    if missing:
        raise ValueError(f"tables has no entry for source(s) {missing}; build_tables for each arm's source")
    steps = check_checkpoints(list(checkpoints), config.steps, config.log_every)
    seed = config.seed
    training, downstream, arm_rows, checkpoint_rows = [], [], [], []
    for arm in arms:
        warm = None
        if warm_start_steps:
            warm = warm_start(arm.objective, size, generator_fraction, data, config,
                              steps=warm_start_steps,
                              seed=seed if warm_start_seed is None else warm_start_seed, mask_id=mask_id,
                              num_special=num_special, data_key=data_key, start=start)
        folder = None
        if checkpoint_dir is not None and config.checkpoint_every:
            folder = Path(checkpoint_dir) / arm.name.replace("/", "_")
        result = pretrain_arm(arm, tables[arm.source or source], vocab, data, size, config,
                              mask_id=mask_id, num_special=num_special,
                              generator_fraction=generator_fraction, model=warm, checkpoint_dir=folder,
                              start=start, injection=injection, checkpoints=steps)
        rows = history_rows(result, seed)
        training += rows
        arm_rows.append({"arm": arm.name, "objective": arm.objective, "method": arm.method,
                         "pretrain_seed": seed, "step_ms": result.step_ms,
                         "top_false_negatives": result.top_false_negatives[:10]})
        for step in result.checkpoints:
            checkpoint_rows.append(checkpoint_row(rows, step))
            model = result.at(step)
            for task in tasks:
                for ft in finetune_configs:
                    row = finetune_and_test(model, size, task, ft, pooling=pooling)
                    downstream.append({"arm": arm.name, "objective": arm.objective,
                                       "method": arm.method, "pretrain_seed": seed,
                                       "checkpoint": step, "test_n": task.info.get("test"), **row})
        if log:
            last = result.history[-1]
            injected = (f", {last['injected_frac']:.3f} of masked tokens injected synonyms"
                        if last.get("injected_frac") is not None else "")
            log(f"{arm.name}: {result.step_ms:.0f} ms/step, false negatives "
                f"{last.get('fn_rate_replaced', 0):.4f} of replaced tokens at the end{injected}")
    # the no-pretraining baseline: the same encoder, randomly initialised, fine-tuned alike;
    # one row per task and fine-tuning seed, which every arm and checkpoint is compared with
    for task in tasks:
        for ft in finetune_configs:
            row = scratch_result(size, task, ft, pooling=pooling)
            downstream.append({"arm": "scratch", "objective": "scratch", "method": "none",
                               "pretrain_seed": seed, "checkpoint": None,
                               "test_n": task.info.get("test"), **row})
    return ArmRuns(training, downstream, arm_rows, checkpoint_rows)


CHECKPOINT_FIELDS = ("tokens_seen", "generator_acc", "disc_acc_original", "disc_acc_replaced",
                     "disc_acc_false_negative", "disc_loss_share_false_negative", "fn_rate_replaced",
                     "fn_rate_masked", "n_fn", "injected_frac")


def checkpoint_row(rows: Sequence[dict], step: int) -> dict:
    """One arm's state at a checkpoint: the logging window that ends there (its statistics)."""
    row = next(r for r in rows if r["step"] == step)
    return {k: row[k] for k in ("arm", "objective", "method", "pretrain_seed")} | {
        "checkpoint": step, **{k: row.get(k) for k in CHECKPOINT_FIELDS}}


def b1_metrics(runs: ArmRuns, tables: dict[str, Tables], tasks: Sequence[TaskData],
               steps: int) -> dict:
    """What B1 records: the seed's rows, the tables and tasks it used, the substitution's sample
    swaps, and the tokens each arm read in its own `steps` (the summary's dose)."""
    return {
        "training": runs.training,
        "downstream": runs.downstream,
        "arms": runs.arms,
        "checkpoints": runs.checkpoints,
        "tables": [t.info for t in tables.values()],
        "tasks": [t.info for t in tasks],
        "substitution_samples": [row for t in tasks for row in t.samples],
        "tokens_seen": int(sum(r["tokens_seen"] for r in runs.training if r["step"] == steps)),
    }
