"""Dose-response of continued MLM: one chain per (arm, seed), read at nested doses.

Whether selective masking beats random masking is a question only at a dose where continued MLM
changes the model at all (a single short dose may not move MiniLM's accuracy: the design
history), so the dose is measured, not assumed. One chain per arm trains to the largest dose
and is read at every smaller one: its state at a dose is exactly that of a chain run to that
dose alone (the learning rate is constant after a fixed warmup, so no schedule depends on the
chain's length; a test checks it).

At every dose each arm is measured three ways:

* what it masks: the expected share of list words among its masked tokens (`composition`);
* the manipulation: the masked-LM loss on held-out task text, under one fixed masking shared by
  every arm and dose (continued MLM on the task's text should lower it);
* the downstream score: a cheap probe (frozen mean-pooled features, logistic regression from
  scikit-learn: what the encoder's states already separate) at every dose, and full fine-tuning
  at the doses asked for.

Why our own loop rather than `pretrain`: its schedule decays over the run's length, so a
checkpoint at step 30 of a 300-step run is not a 30-step run. The step itself is `pretrain`'s
(`Objective`, `_batch`, `BatchSampler`), so the masking and loss are the same code.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from mlmlib.papers.selective_masking.config import check_doses


def chain(base_model, data: dict, config, doses, on_dose: Callable[[int, object], dict | None], *,
          mask_id: int, num_special: int, warmup_steps: int = 0, replace_ids=None,
          progress: bool | None = False, checkpoint_dir: Path | None = None,
          identity: dict | None = None) -> list[dict]:
    """Continued MLM of a copy of `base_model` on `data` (with "mask_prob") to the last dose,
    calling `on_dose(dose, model)` (model in eval mode) at every dose, 0 included when listed.

    `config`: a `PretrainConfig` (mask split, batch size, lr, weight decay, grad clip, seed).
    `on_dose` may train other models: the random state the chain draws from is restored after
    it, so what it does never changes the chain. Returns a row per dose: the training loss and
    what `on_dose` returned (a dict of JSON-able measurements, or None).

    Resumable with `checkpoint_dir` and config.checkpoint_every > 0: a checkpoint every so many
    steps and after each dose (with the rows so far), and a chain started again on the same
    base, data, config and `identity` resumes from the newest one, to the same weights and rows
    (`mlmlib.checkpoint`; any other checkpoint is set aside).
    """
    from mlmlib import checkpoint as ckpt
    from mlmlib.pretrain import (
        RESUMABLE_FIELDS,
        BatchSampler,
        Objective,
        _batch,
        check_data,
        param_groups,
        use_bf16,
    )

    doses = check_doses(doses)
    config = replace(config, steps=doses[-1], whole_word="word_ids" in data)
    n, _ = check_data(data, config)
    model = copy.deepcopy(base_model)
    vocab_size = model.get_input_embeddings().weight.shape[0]
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    bf16 = use_bf16(config.precision, device.type)  # as `pretrain`: "auto" is bf16 on a GPU
    model.to(device)
    torch.manual_seed(config.seed)  # dropout draws from the global generator, as in `pretrain`
    sampler = BatchSampler(n, config.batch_size, config.seed)
    optimizer = torch.optim.AdamW(param_groups(model, config.weight_decay), lr=config.lr,
                                  betas=config.betas, eps=config.eps,
                                  fused=device.type in ("cpu", "cuda"))
    warm = max(0, int(warmup_steps))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warm) if warm else 1.0)
    objective = Objective(model, config)
    params = [p for g in optimizer.param_groups for p in g["params"]]
    # the training loss since the last dose, summed on the device: read once per dose
    step, out, window, t0 = 0, [], {"sum": 0.0, "steps": 0}, time.perf_counter()
    resumable = checkpoint_dir is not None and config.checkpoint_every > 0
    if resumable:
        fingerprint = ckpt.fingerprint(config, model, data, RESUMABLE_FIELDS,
                                       {"doses": list(doses), "warmup_steps": warm,
                                        "loss_window": "sum", **(identity or {})})
        state = ckpt.load_latest(checkpoint_dir, model, fingerprint)
        if state is not None:
            ckpt.restore_training_state(state, optimizer, scheduler, sampler)
            step, out, window = state["step"], state["rows"], state["window"]
            t0 -= state["chain_s"]
    loss_sum = torch.tensor(float(window["sum"]), device=device)
    first_bad = torch.full((), -1, device=device)  # the first step with a non-finite loss

    def save() -> None:
        ckpt.save(checkpoint_dir, step, model, ckpt.training_state(optimizer, scheduler, sampler),
                  {"step": step, "fingerprint": fingerprint, "rows": out,
                   "window": {"sum": float(loss_sum), "steps": window["steps"]},
                   "chain_s": time.perf_counter() - t0})

    def check_finite() -> None:
        if int(first_bad) >= 0:
            raise FloatingPointError(f"non-finite loss at step {int(first_bad)}")

    for dose in doses:
        if any(row["dose"] == dose for row in out):  # measured before the chain was resumed
            continue
        model.train()
        while step < dose:
            step += 1
            batch = _batch(data, sampler.next(), config, sampler, mask_id, vocab_size,
                           num_special, replace_ids)
            moved = {k: v.to(device) if isinstance(v, torch.Tensor) else v
                     for k, v in batch.items()}
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                loss, _ = objective(step, moved["input_ids"], moved["attention_mask"],
                                    moved["corrupted"], moved["masked"],
                                    positions=moved["positions"])  # no host sync (pretrain)
            # no host read per step: the first bad step is kept on the device, checked per dose
            bad = ~torch.isfinite(loss.detach())
            first_bad = torch.where((first_bad < 0) & bad, torch.full_like(first_bad, step),
                                    first_bad)
            loss.backward()
            if config.grad_clip:
                torch.nn.utils.clip_grad_norm_(params, config.grad_clip)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            loss_sum += loss.detach().float()
            window["steps"] += 1
            if progress is not None and step % max(1, doses[-1] // 8) == 0:
                print(f"step {step}/{doses[-1]} | loss {float(loss_sum) / window['steps']:.4f}"
                      f" | {time.perf_counter() - t0:.0f} s", flush=True)
            if resumable and step % config.checkpoint_every == 0:
                check_finite()
                save()
        check_finite()
        model.eval()
        state = torch.get_rng_state()
        measured = on_dose(dose, model) or {}
        torch.set_rng_state(state)
        steps_done = window["steps"]
        row = {"dose": dose, **measured,
               "train_loss": float(loss_sum) / steps_done if steps_done else float("nan"),
               "chain_s": time.perf_counter() - t0}
        # a resumed chain's rows come back from JSON: the first run's rows take the same trip
        out.append(json.loads(json.dumps(row, default=float)) if resumable else row)
        loss_sum.zero_()
        window = {"sum": 0.0, "steps": 0}
        if resumable:
            save()
    return out


# ---------------------------------------------------------------- the manipulation control


def heldout_batches(data: dict, rate: float, seed: int, *, mask_id: int, vocab_size: int,
                    num_special: int, replace_ids=None, batch_size: int = 64) -> list[dict]:
    """One fixed masking of held-out text (uniform whole words at `rate`, BERT's 80/10/10),
    drawn once with `seed`: every arm and dose is scored on the same corrupted positions."""
    from mlmlib.masking import mask_tokens

    gen = torch.Generator().manual_seed(seed)
    batches = []
    for start in range(0, data["input_ids"].shape[0], batch_size):
        sl = slice(start, start + batch_size)
        ids = data["input_ids"][sl].long()
        attention = data["attention_mask"][sl].bool()
        special = ~attention | data["special_tokens_mask"][sl].bool()
        corrupted, masked = mask_tokens(ids, rate, generator=gen, mask_id=mask_id,
                                        vocab_size=vocab_size, special_mask=special,
                                        word_ids=data["word_ids"][sl] if "word_ids" in data else None,
                                        num_special=num_special, replace_ids=replace_ids)
        batches.append({"input_ids": ids, "attention_mask": attention.long(),
                        "corrupted": corrupted, "masked": masked})
    if not sum(int(b["masked"].sum()) for b in batches):
        raise ValueError("held-out text: the fixed masking masked no token; give more text")
    return batches


@torch.no_grad()
def heldout_mlm_loss(model, batches: list[dict]) -> float:
    """Mean cross-entropy (nats) over the masked positions of `heldout_batches`."""
    from mlmlib.pretrain import masked_lm_logits

    device = next(model.parameters()).device
    was_training, total, count = model.training, torch.zeros((), device=device), 0
    model.eval()
    for b in batches:
        masked = b["masked"].to(device)
        logits = masked_lm_logits(model, b["corrupted"].to(device), b["attention_mask"].to(device),
                                  masked)
        targets = b["input_ids"].to(device)[masked]
        total += torch.nn.functional.cross_entropy(logits.float(), targets, reduction="sum")
        count += int(b["masked"].sum())  # host data: no device read
    model.train(was_training)
    return float(total) / count


# ---------------------------------------------------------------- the cheap downstream score


@torch.no_grad()
def pooled_features(model, data: dict, batch_size: int = 128) -> np.ndarray:
    """The encoder's last states, mean-pooled over each text's tokens: (N, hidden), frozen."""
    encoder = model.base_model
    device = next(model.parameters()).device
    out = []
    for start in range(0, data["input_ids"].shape[0], batch_size):
        ids = data["input_ids"][start:start + batch_size].to(device)
        attention = data["attention_mask"][start:start + batch_size].to(device)
        hidden = encoder(input_ids=ids, attention_mask=attention).last_hidden_state
        weights = attention.unsqueeze(-1).to(hidden.dtype)
        out.append(((hidden * weights).sum(1) / weights.sum(1).clamp_min(1.0)).float().cpu())
    return torch.cat(out).numpy()


def probe_scores(model, train: dict, test: dict, seed: int) -> dict:
    """Logistic regression on frozen mean-pooled features: test accuracy and macro-F1."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x_train, x_test = pooled_features(model, train), pooled_features(model, test)
    y_train, y_test = train["labels"].numpy(), test["labels"].numpy()
    probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, random_state=seed))
    predicted = probe.fit(x_train, y_train).predict(x_test)
    return {"probe_accuracy": float(accuracy_score(y_test, predicted)),
            "probe_f1": float(f1_score(y_test, predicted, average="macro", zero_division=0))}


# ---------------------------------------------------------------- every arm of one seed


def run_doses(base_model, arms: dict, doses, pretrain_config, *, heldout: list[dict], few: dict,
              validation: dict, test: dict, finetune: dict, finetune_doses, seed: int,
              mask_id: int, num_special: int, warmup_steps: int = 0, replace_ids=None,
              pooling: str = "mean", progress: bool | None = False,
              checkpoint_dir: Path | None = None) -> list[dict]:
    """One chain per continued arm; a row per (arm, word list, dose) with what it masks
    (`list_share`), the held-out masked-LM loss, the probe (trained on `few`) and, at
    `finetune_doses`, the fine-tuned classifiers: `finetuned`, label regime -> scores.

    `finetune`: label regime -> (training examples, `FinetuneConfig`).

    `arms`: (arm, word list) -> (mask data or None for the base, list share of masked tokens).
    The base (dose 0) is measured once and shared by every arm's chain. With `checkpoint_dir`
    and pretrain_config.checkpoint_every > 0 each chain is resumable, in a folder of its own
    there (`chain`).
    """
    from mlmlib.papers.selective_masking.experiment import arm_folder, finetune_arm

    doses = check_doses(doses)
    finetune_doses = set(finetune_doses)

    def measure(model, dose: int) -> dict:
        row = {"heldout_loss": heldout_mlm_loss(model, heldout),
               **probe_scores(model, few, test, seed)}
        if dose in finetune_doses:
            row["finetuned"] = {regime: finetune_arm(model, train, validation, test, config, seed,
                                                     progress=progress, pooling=pooling)
                                | {"train_examples": int(train["labels"].shape[0])}
                                for regime, (train, config) in finetune.items()}
        return row

    t0 = time.perf_counter()
    base_row = measure(base_model, 0) | {"chain_s": time.perf_counter() - t0, "train_loss": float("nan")}
    rows = []
    for (arm, word_list), (data, share) in arms.items():
        named = {"arm": arm, "word_list": word_list, "seed": seed, "list_share": share}
        if data is None:  # the base itself: dose 0 only
            rows.append(named | {"dose": 0} | base_row)
            continue
        trained = chain(base_model, data, replace(pretrain_config, seed=seed), doses,
                        lambda dose, model: measure(model, dose) if dose else None,
                        mask_id=mask_id, num_special=num_special, warmup_steps=warmup_steps,
                        replace_ids=replace_ids, progress=progress,
                        checkpoint_dir=arm_folder(checkpoint_dir, "chain", arm, word_list),
                        identity={"arm": arm, "word_list": word_list,
                                  "finetune_doses": sorted(finetune_doses)})
        for row in trained:
            rows.append(named | row if row["dose"] else named | {"dose": 0} | base_row)
    return rows
