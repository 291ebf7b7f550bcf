"""Fine-tuning and evaluation of sequence classifiers (and regressors: num_labels == 1).

A short loop of our own (not transformers' Trainer) so the best-on-validation weights come back
in memory with the per-example probabilities that the analyses need, and so one seeded
generator decides the batch order. Metrics come from scikit-learn and scipy.
"""

from __future__ import annotations

import copy
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from scipy import stats as sstats
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef
from torch import nn
from transformers import get_linear_schedule_with_warmup

from mlmlib.pretrain import PROGRESS_EVERY_S, param_groups

METRICS = ("accuracy", "f1", "matthews", "pearson", "spearman")
# Evaluation examples per batch, per training example of a batch (book/compute.md): the training
# batch is the recipe's (a hyperparameter); evaluation keeps no gradients and its results do not
# depend on its batch, so it takes a batch several times larger (256 at the usual 32)
EVAL_BATCH_FACTOR = 8


@dataclass
class FinetuneConfig:
    """Settings of one fine-tuning run; `max_steps` (if set) overrides `epochs`."""

    epochs: int = 3
    max_steps: int | None = None
    batch_size: int = 32
    lr: float = 1e-4
    weight_decay: float = 0.01
    warmup_frac: float = 0.1
    # Steps of linear warm-up; None: warmup_frac of the run. A run that stops on patience long
    # before its step cap needs a count: a fraction of the cap would keep it in warm-up to the end.
    warmup_steps: int | None = None
    grad_clip: float | None = 1.0
    patience: int | None = None  # evaluations without improvement before stopping; None: never
    eval_every: int | None = None  # steps between validations; None: once per epoch
    eval_batch_size: int | None = None  # None: EVAL_BATCH_FACTOR x batch_size
    seed: int = 0
    metric: str = "accuracy"  # validation metric that picks the best weights
    bf16: bool | str = "auto"

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {self.metric!r}")
        if self.eval_batch_size is None and isinstance(self.batch_size, int):
            self.eval_batch_size = EVAL_BATCH_FACTOR * self.batch_size
        for name in ("epochs", "batch_size", "eval_batch_size"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be an int >= 1, got {getattr(self, name)!r}")
        for name in ("max_steps", "patience", "eval_every", "warmup_steps"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be None or an int >= 1, got {value!r}")
        if not 0 <= self.warmup_frac < 1:
            raise ValueError(f"warmup_frac must be in [0, 1), got {self.warmup_frac}")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")


@dataclass
class FinetuneResult:
    """Best-on-validation outcome: the model passed in holds the best weights afterwards."""

    best_metric: float
    best_step: int
    steps: int  # steps actually taken (early stopping may end a run sooner)
    validation: dict  # all metrics of the restored best model on the validation set
    validation_probs: np.ndarray  # (N, C) per-example probabilities of the best model
    history: list[dict] = field(default_factory=list)  # one row per validation
    wall_s: float = 0.0


def check_task_data(data: dict, name: str = "data", labels: bool = True) -> int:
    """Validate a {input_ids, attention_mask, labels} dict of tensors; returns N."""
    keys = ("input_ids", "attention_mask") + (("labels",) if labels else ())
    if not isinstance(data, dict) or any(k not in data for k in keys):
        raise ValueError(f"{name} must be a dict with tensors {keys}")
    n = data["input_ids"].shape[0]
    if data["input_ids"].dim() != 2 or data["attention_mask"].shape != data["input_ids"].shape:
        raise ValueError(f"{name}['input_ids'] and ['attention_mask'] must both be (N, L)")
    if labels and data["labels"].shape[0] != n:
        raise ValueError(f"{name}['labels'] has {data['labels'].shape[0]} rows, input_ids {n}")
    return n


def _device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def _slice(data: dict, idx, device) -> dict:
    """A batch on `device`, its all-padding tail columns dropped (right padding)."""
    mask = data["attention_mask"][idx]
    width = int(mask.any(0).nonzero().max()) + 1 if mask.any() else 1
    out = {"input_ids": data["input_ids"][idx, :width].to(device),
           "attention_mask": mask[:, :width].to(device)}
    if "token_type_ids" in data:
        out["token_type_ids"] = data["token_type_ids"][idx, :width].to(device)
    return out


def _autocast(device: torch.device, setting):
    use = (device.type == "cuda" and torch.cuda.is_bf16_supported()) if setting == "auto" else setting
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=bool(use))


@torch.no_grad()
def predict(model: nn.Module, data: dict, batch_size: int = 256, bf16="auto") -> np.ndarray:
    """Class probabilities (N, C) for a classifier; raw predictions (N, 1) for a regressor.

    Examples go through in batches of similar length (sorted by length, stable), so a batch
    pads to its own longest example rather than the split's: on short texts (WordNet glosses,
    median 13 of 48 tokens) that is several times less work. The rows come back in input order.
    """
    check_task_data(data, labels=False)
    was_training = model.training
    model.eval()
    device = _device(model)
    order = torch.argsort(data["attention_mask"].sum(1), stable=True)
    out = []
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        with _autocast(device, bf16):
            logits = model(**_slice(data, idx, device)).logits.float()
        out.append(logits if logits.shape[-1] == 1 else torch.softmax(logits, -1))
    model.train(was_training)
    probs = torch.cat(out).cpu() if out else torch.zeros(0, 0)
    result = torch.empty_like(probs)
    result[order] = probs
    return result.numpy()


def metrics_from_probs(probs: np.ndarray, labels) -> dict:
    """Metrics from stored predictions: accuracy/F1/Matthews, or Pearson/Spearman/MSE."""
    labels = np.asarray(labels.cpu() if isinstance(labels, torch.Tensor) else labels)
    if probs.shape[1] == 1:  # regression
        pred = probs[:, 0]
        return {
            "pearson": float(sstats.pearsonr(pred, labels)[0]) if np.std(pred) > 0 else 0.0,
            "spearman": float(sstats.spearmanr(pred, labels)[0]) if np.std(pred) > 0 else 0.0,
            "mse": float(np.mean((pred - labels) ** 2)),
        }
    pred = probs.argmax(1)
    metrics = {
        "accuracy": float(accuracy_score(labels, pred)),
        "f1": float(f1_score(labels, pred, average="macro", zero_division=0)),
        "matthews": _matthews(labels, pred),
    }
    if probs.shape[1] == 2:  # GLUE's F1 for MRPC and QQP: of the positive class
        metrics["f1_positive"] = float(f1_score(labels, pred, pos_label=1, zero_division=0))
    return metrics


def _matthews(labels: np.ndarray, pred: np.ndarray) -> float:
    """Matthews correlation; 0 where labels and predictions hold one class only (what sklearn
    returns there too, after a warning that would print on every tiny evaluation)."""
    if len(np.union1d(labels, pred)) < 2:
        return 0.0
    return float(matthews_corrcoef(labels, pred))


def evaluate(model: nn.Module, data: dict, batch_size: int = 256) -> dict:
    """Accuracy, macro F1, Matthews and (two classes) the positive class's F1 of a classifier,
    or Pearson, Spearman, MSE of a regressor."""
    check_task_data(data)
    return metrics_from_probs(predict(model, data, batch_size), data["labels"])


def _loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    if logits.shape[-1] == 1:
        return F.mse_loss(logits.squeeze(-1).float(), labels.float())
    return F.cross_entropy(logits.float(), labels.long())


@dataclass
class LoopResult:
    """What `train_loop` did: the model passed in holds the best weights afterwards."""

    best: float
    best_step: int
    steps: int
    history: list[dict]  # one row per validation: step, epoch, train_loss, val_<score>, wall_s
    wall_s: float


def train_loop(model: nn.Module, n: int, config: FinetuneConfig,
               step_loss: Callable[[torch.Tensor, torch.device], torch.Tensor],
               validate: Callable[[], dict], metric: str, *, progress: bool | None = None,
               on_step: Callable[[int, nn.Module, float], None] | None = None) -> LoopResult:
    """The loop every fine-tuning head shares: seeded batch order, AdamW with linear warm-up and
    decay, a validation every `eval_every` steps (else once per epoch), early stopping on
    `metric` (a key of validate()'s scores, higher is better; patience counts only validations
    after warm-up), the best weights restored.

    step_loss(idx, device) gives the loss of the training rows idx (a classifier's cross-entropy,
    a span reader's start/end loss); on_step(step, model, lr), if given, is called after each
    optimizer step with the learning rate that step used.
    """
    if progress is None:
        progress = sys.stdout.isatty()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device).train()
    torch.manual_seed(config.seed)  # dropout
    gen = torch.Generator().manual_seed(config.seed)
    per_epoch = math.ceil(n / config.batch_size)
    total = config.max_steps or config.epochs * per_epoch
    eval_every = config.eval_every or per_epoch
    optimizer = torch.optim.AdamW(param_groups(model, config.weight_decay), lr=config.lr,
                                  fused=device.type in ("cpu", "cuda"))
    warmup = min(total, config.warmup_steps if config.warmup_steps is not None
                 else int(config.warmup_frac * total))
    scheduler = get_linear_schedule_with_warmup(optimizer, warmup, total)

    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=total, desc="finetune", dynamic_ncols=True)
    history, best, best_step, best_state, bad_evals = [], -math.inf, 0, None, 0
    # the loss stays on the device between validations: no host sync per step
    t0, step, running = time.perf_counter(), 0, torch.zeros((), dtype=torch.float64, device=device)
    first_bad = torch.full((), -1, device=device)  # the first step with a non-finite loss
    last_print = t0
    order = torch.randperm(n, generator=gen)
    pos = 0
    while step < total:
        if pos >= n:
            order, pos = torch.randperm(n, generator=gen), 0
        idx = order[pos:pos + config.batch_size]
        pos += config.batch_size
        with _autocast(device, config.bf16):
            loss = step_loss(idx, device).float()
        first_bad = torch.where((first_bad < 0) & ~torch.isfinite(loss.detach()),
                                torch.full_like(first_bad, step + 1), first_bad)
        loss.backward()
        if config.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        lr = optimizer.param_groups[0]["lr"]
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        if on_step is not None:
            on_step(step, model, lr)
        running += loss.detach()
        if bar is not None:
            bar.update(1)
        elif not progress and time.perf_counter() - last_print >= PROGRESS_EVERY_S:
            print(f"step {step}/{total} | loss {float(loss.detach()):.4f}", flush=True)  # batch heartbeat
            last_print = time.perf_counter()
        if step % eval_every == 0 or step == total:
            bad, loss_sum = torch.stack([first_bad.double(), running]).tolist()  # one read
            if bad >= 0:
                raise FloatingPointError(f"non-finite fine-tuning loss at step {int(bad)}")
            scores = validate()
            model.train()
            row = {"step": step, "epoch": step / per_epoch, "train_loss": loss_sum / eval_every,
                   **{f"val_{k}": v for k, v in scores.items()},
                   "wall_s": time.perf_counter() - t0}
            history.append(row)
            running = torch.zeros_like(running)
            if bar is not None:
                bar.set_postfix({metric: round(scores[metric], 4)})
            elif not progress:
                print(f"step {step}/{total} | loss {row['train_loss']:.4f} | "
                      f"val {metric} {scores[metric]:.4f}", flush=True)
                last_print = time.perf_counter()
            if scores[metric] > best:
                best, best_step, bad_evals = scores[metric], step, 0
                best_state = copy.deepcopy({k: v.detach().cpu() for k, v in model.state_dict().items()})
            elif step > warmup:  # patience counts from the peak learning rate on
                bad_evals += 1
                if config.patience is not None and bad_evals >= config.patience:
                    break
    if bar is not None:
        bar.close()
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return LoopResult(best, best_step, step, history, time.perf_counter() - t0)


def finetune(
    model: nn.Module,
    train: dict,
    validation: dict,
    config: FinetuneConfig,
    *,
    progress: bool | None = None,
    on_step: Callable[[int, nn.Module, float], None] | None = None,
) -> FinetuneResult:
    """Fine-tune a classifier in place; the best-on-validation weights are restored at the end.

    on_step(step, model, lr), if given, is called after each optimizer step with the learning rate
    that step used: a hook to take snapshots along the one schedule of the run.
    """
    if not isinstance(config, FinetuneConfig):
        raise TypeError("config must be a FinetuneConfig")
    n = check_task_data(train, "train")
    check_task_data(validation, "validation")
    regression = model.config.num_labels == 1
    if regression != (config.metric in ("pearson", "spearman")):
        raise ValueError(
            f"metric {config.metric!r} does not fit a model with num_labels={model.config.num_labels}"
        )

    def step_loss(idx: torch.Tensor, device: torch.device) -> torch.Tensor:
        logits = model(**_slice(train, idx, device)).logits
        return _loss(logits, train["labels"][idx].to(device))

    loop = train_loop(model, n, config, step_loss, lambda: evaluate(model, validation, config.eval_batch_size),
                      config.metric, progress=progress, on_step=on_step)
    probs = predict(model, validation, config.eval_batch_size, config.bf16)
    return FinetuneResult(
        best_metric=loop.best, best_step=loop.best_step, steps=loop.steps,
        validation=metrics_from_probs(probs, validation["labels"]), validation_probs=probs,
        history=loop.history, wall_s=loop.wall_s,
    )
