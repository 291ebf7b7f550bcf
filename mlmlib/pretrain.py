"""One pretraining loop for MLM and ELECTRA: masked-positions-only logits, a hook, resumable.

Why our own loop rather than transformers' Trainer: the MLM head projects only the masked
positions onto the vocabulary (the full projection dominates a small model's step), paper B
needs a per-step hook between the generator and the loss, and every run must resume
bit-identically from a checkpoint. Accelerate handles devices, mixed precision and DDP.

Weighted losses (hook weights) are normalised by the weights: for the MLM/generator
cross-entropy, sum_i w_i * ce_i / sum_i w_i over the masked positions; for the discriminator,
sum w * bce / sum w over the non-padding positions. A weight of 0 thus drops a position and the
loss stays the mean over the kept ones (all weights 1 gives the Hugging Face losses exactly).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from transformers import BertForMaskedLM, ElectraForMaskedLM, get_linear_schedule_with_warmup

from mlmlib import checkpoint as ckpt
from mlmlib.batches import BatchSampler, _batch, check_data
from mlmlib.masking import BERT_SPLIT, ELECTRA_SPLIT, at_masked, check_rate, check_split
from mlmlib.models import ElectraPair
from mlmlib.objectives import ELECTRA_DISC_WEIGHT, ELECTRA_TEMPERATURE, MASK_RATE
from mlmlib.speed import PRECISIONS, Speed

OBJECTIVES = ("mlm", "electra")


def compile_unavailable() -> str | None:
    """Why this torch build cannot `torch.compile` (no compiler stack, unsupported Python), or None."""
    try:
        if torch._dynamo.is_dynamo_supported():
            return None
        return f"torch {torch.__version__} does not support torch.compile on this Python/platform"
    except Exception as exc:  # noqa: BLE001 - no compiler stack at all: the same answer
        return f"torch {torch.__version__} has no working torch.compile ({type(exc).__name__}: {exc})"


@dataclass
class PretrainConfig:
    """Settings of one pretraining run (defaults: a few-second CPU smoke run)."""

    objective: str = "mlm"  # "mlm" | "electra"
    mask_rate: float = MASK_RATE
    split: tuple[float, float, float] | None = None  # None: BERT 80/10/10, ELECTRA 85/0/15
    whole_word: bool = False  # needs data["word_ids"]
    steps: int = 100
    batch_size: int = 32
    lr: float = 5e-4
    warmup_frac: float = 0.1
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-6
    grad_clip: float | None = 1.0  # None or 0: no clipping
    disc_weight: float = ELECTRA_DISC_WEIGHT  # ELECTRA's discriminator loss weight
    gen_weight: float = 1.0
    temperature: float = ELECTRA_TEMPERATURE  # ELECTRA generator sampling temperature
    log_every: int = 10
    checkpoint_every: int = 0  # 0: no checkpoints
    seed: int = 0
    compile: bool = Speed.compile  # torch.compile the step (pays off on GPU, long runs)
    precision: str = Speed.precision  # PRECISIONS: "auto" (bf16 on a GPU that has it), "fp32", "bf16"

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        check_rate(self.mask_rate, "mask_rate")
        if self.split is None:
            self.split = BERT_SPLIT if self.objective == "mlm" else ELECTRA_SPLIT
        self.split = check_split(self.split)
        self.betas = tuple(float(b) for b in self.betas)
        for name in ("steps", "batch_size", "log_every"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be an int >= 1, got {getattr(self, name)!r}")
        if not isinstance(self.checkpoint_every, int) or self.checkpoint_every < 0:
            raise ValueError(f"checkpoint_every must be an int >= 0, got {self.checkpoint_every!r}")
        if not 0 <= self.warmup_frac < 1:
            raise ValueError(f"warmup_frac must be in [0, 1), got {self.warmup_frac}")
        if self.lr <= 0 or self.temperature <= 0:
            raise ValueError("lr and temperature must be > 0")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if not isinstance(self.compile, bool):
            raise TypeError(f"compile must be true or false, got {self.compile!r}")
        if self.compile and (why := compile_unavailable()) is not None:
            raise ValueError(f"compile=True: {why}; set compile to false (it changes speed only)")


# Quiet mode (no bar) prints a progress line at least this often, besides the log steps.
PROGRESS_EVERY_S = 20.0
# Fields that do not change the numbers of a run: a checkpoint may be resumed across them.
RESUMABLE_FIELDS = ("log_every", "checkpoint_every", "compile")


@dataclass
class MaskedStep:
    """What a hook sees each step (N = number of masked positions in the batch)."""

    step: int  # 1-based number of the step being taken
    input_ids: torch.Tensor  # (B, L) original tokens
    attention_mask: torch.Tensor  # (B, L)
    masked: torch.Tensor  # (B, L) bool
    targets: torch.Tensor  # (N,) original ids at masked positions
    logits: torch.Tensor  # (N, V) MLM / generator logits at masked positions, with grad
    samples: torch.Tensor  # (N,) ELECTRA generator samples, or MLM argmax predictions
    embeddings: torch.Tensor  # (V, E) input token embedding matrix, with grad
    corrupted_ids: torch.Tensor  # (B, L) MLM input, or ELECTRA discriminator input
    positions: torch.Tensor | None = None  # (N,) flat indices of `masked` (masking.at_masked)


@dataclass
class HookOutput:
    """What a hook may change: loss weights, discriminator labels, an extra loss, logged stats."""

    mlm_weights: torch.Tensor | None = None  # (N,) weights of the MLM / generator cross-entropy
    disc_labels: torch.Tensor | None = None  # (B, L) 1 = replaced; overrides exact-match labels
    disc_weights: torch.Tensor | None = None  # (B, L) weights of the discriminator loss
    extra_loss: torch.Tensor | None = None  # scalar added to the total loss
    stats: dict[str, float] = field(default_factory=dict)  # averaged over the log window
    samples: torch.Tensor | None = None  # (N,) ELECTRA: what the discriminator sees at masked
    # positions instead of the generator's samples (the generator's own loss is unchanged)


Hook = Callable[[MaskedStep], "HookOutput | None"]


def masked_lm_logits(model: nn.Module, input_ids, attention_mask, masked, *,
                     encoder_grad: bool = True, positions=None) -> torch.Tensor:
    """MLM logits at masked positions only, (N, V): encoder, gather, then the LM head.

    `encoder_grad=False` runs the encoder without a graph (a frozen encoder under a trained
    head: no backward pass through its layers). `positions`: the masked positions' flat indices
    (masking.masked_positions), which gather them without a host sync."""
    if isinstance(model, BertForMaskedLM):
        with torch.set_grad_enabled(encoder_grad and torch.is_grad_enabled()):
            hidden = model.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return model.cls(at_masked(hidden, masked, positions))
    if isinstance(model, ElectraForMaskedLM):
        with torch.set_grad_enabled(encoder_grad and torch.is_grad_enabled()):
            hidden = model.electra(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        hidden = at_masked(hidden, masked, positions)
        return model.generator_lm_head(model.generator_predictions(hidden))
    # Any other masked LM: correct, but pays for the full-vocabulary projection.
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
    return at_masked(logits, masked, positions)


def _weighted_mean(loss: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    """sum(w * loss) / sum(w); the plain mean without weights; 0 when nothing is kept."""
    if weights is None:
        return loss.mean() if loss.numel() else loss.sum()
    weights = weights.to(loss.dtype)
    return (weights * loss).sum() / weights.sum().clamp_min(1e-12)


def _check_hook_output(out: HookOutput, n: int, shape, objective: str) -> None:
    """Fail early on hook outputs of the wrong shape or for the wrong objective."""
    if not isinstance(out, HookOutput):
        raise TypeError(f"hook must return a HookOutput or None, got {type(out).__name__}")
    if out.mlm_weights is not None and tuple(out.mlm_weights.shape) != (n,):
        raise ValueError(f"HookOutput.mlm_weights must have shape ({n},), got {tuple(out.mlm_weights.shape)}")
    for name in ("disc_labels", "disc_weights"):
        value = getattr(out, name)
        if value is None:
            continue
        if objective != "electra":
            raise ValueError(f"HookOutput.{name} only applies to objective='electra'")
        if tuple(value.shape) != tuple(shape):
            raise ValueError(f"HookOutput.{name} must have shape {tuple(shape)}, got {tuple(value.shape)}")
    if out.extra_loss is not None and out.extra_loss.numel() != 1:
        raise ValueError("HookOutput.extra_loss must be a scalar tensor")
    if out.samples is not None:
        if objective != "electra":
            raise ValueError("HookOutput.samples only applies to objective='electra'")
        if tuple(out.samples.shape) != (n,):
            raise ValueError(f"HookOutput.samples must have shape ({n},), got {tuple(out.samples.shape)}")


class Objective(nn.Module):
    """One training step's forward pass and loss; a module so DDP/Accelerate can wrap it."""

    def __init__(self, model: nn.Module, config: PretrainConfig, hook: Hook | None = None) -> None:
        super().__init__()
        self.model = model
        self.config = config
        self.hook = hook

    def forward(self, step, input_ids, attention_mask, corrupted, masked, sample_gen=None,
                positions=None):
        """Return (total loss, dict of detached scalar stats). `positions`: the masked positions'
        flat indices, taken with the mask (no host sync per step); None: gathered by the mask."""
        if self.config.objective == "mlm":
            return self._mlm(step, input_ids, attention_mask, corrupted, masked, positions)
        return self._electra(step, input_ids, attention_mask, corrupted, masked, sample_gen,
                             positions)

    def _call_hook(self, step, input_ids, attention_mask, masked, targets, logits, samples,
                   embeddings, corrupted, positions) -> HookOutput:
        if self.hook is None:
            return HookOutput()
        out = self.hook(MaskedStep(step, input_ids, attention_mask, masked, targets, logits,
                                   samples, embeddings, corrupted, positions))
        out = HookOutput() if out is None else out
        _check_hook_output(out, targets.numel(), input_ids.shape, self.config.objective)
        return out

    def _mlm(self, step, input_ids, attention_mask, corrupted, masked, positions):
        model = self.model
        targets = at_masked(input_ids, masked, positions)
        logits = masked_lm_logits(model, corrupted, attention_mask, masked, positions=positions)
        # argmax is slow on CPU; max(-1) is 4x faster and only needed when a hook looks
        predictions = logits.detach().max(-1).indices if self.hook is not None else None
        out = self._call_hook(step, input_ids, attention_mask, masked, targets, logits, predictions,
                              model.get_input_embeddings().weight, corrupted, positions)
        ce = F.cross_entropy(logits.float(), targets, reduction="none")
        loss = _weighted_mean(ce, out.mlm_weights)
        if out.extra_loss is not None:
            loss = loss + out.extra_loss.reshape(())
        if predictions is None or not targets.numel():
            acc = _accuracy(logits.detach(), targets)
        else:  # the hook's predictions are at hand: no second pass over the vocabulary
            acc = (predictions == targets).float().mean()
        stats = {"loss": loss.detach(), "acc": acc}
        return loss, stats | _stat_tensors(out.stats, loss)

    def _electra(self, step, input_ids, attention_mask, corrupted, masked, sample_gen, positions):
        pair: ElectraPair = self.model
        cfg = self.config
        targets = at_masked(input_ids, masked, positions)
        logits = masked_lm_logits(pair.generator, corrupted, attention_mask, masked,
                                  encoder_grad=not pair.generator_encoder_frozen,
                                  positions=positions)
        with torch.no_grad():  # sampling is not differentiated (ELECTRA's stop-gradient)
            samples = sample_logits(logits.detach(), cfg.temperature, sample_gen)
        disc_input = input_ids.masked_scatter(masked, samples)
        out = self._call_hook(step, input_ids, attention_mask, masked, targets, logits, samples,
                              pair.get_input_embeddings().weight, disc_input, positions)
        if out.samples is not None:  # the hook's replacements (e.g. injected synonyms)
            samples = out.samples.to(samples.dtype)
            disc_input = input_ids.masked_scatter(masked, samples)
        labels = out.disc_labels if out.disc_labels is not None else (disc_input != input_ids)
        labels = labels.float()
        gen_loss = _weighted_mean(F.cross_entropy(logits.float(), targets, reduction="none"),
                                  out.mlm_weights)
        disc_logits = pair.discriminator(input_ids=disc_input, attention_mask=attention_mask).logits
        bce = F.binary_cross_entropy_with_logits(disc_logits.float(), labels, reduction="none")
        active = attention_mask.float() if attention_mask is not None else torch.ones_like(bce)
        weights = active if out.disc_weights is None else active * out.disc_weights.float()
        disc_loss = (bce * weights).sum() / weights.sum().clamp_min(1e-12)
        loss = cfg.gen_weight * gen_loss + cfg.disc_weight * disc_loss
        if out.extra_loss is not None:
            loss = loss + out.extra_loss.reshape(())
        with torch.no_grad():
            disc_right = ((disc_logits > 0).float() == labels).float()
            n_active = active.sum().clamp_min(1)
            replaced = (samples != targets).float()
            stats = {
                "loss": loss.detach(),
                "gen_loss": gen_loss.detach(),
                "disc_loss": disc_loss.detach(),
                "gen_acc": _accuracy(logits.detach(), targets),
                "disc_acc": (disc_right * active).sum() / n_active,
                # replaced tokens among masked positions, and among all real tokens
                "replaced_frac": replaced.mean() if replaced.numel() else replaced.sum(),
                "replaced_of_tokens": replaced.sum() / n_active,
            }
        return loss, stats | _stat_tensors(out.stats, loss)


def sample_logits(logits: torch.Tensor, temperature: float, generator: torch.Generator) -> torch.Tensor:
    """One token per row from softmax(logits / temperature), by inverse-CDF sampling.

    Same distribution as torch.multinomial, about 10x faster on CPU for (N, 8000) rows
    (one uniform number per row and a binary search instead of multinomial's per-row setup).
    """
    if not logits.shape[0]:
        return torch.zeros(0, dtype=torch.long, device=logits.device)
    cdf = torch.softmax(logits.float() / temperature, dim=-1).cumsum_(-1)
    u = torch.rand(logits.shape[0], 1, generator=generator, device=logits.device) * cdf[:, -1:]
    # right=True: the first token whose cumulative mass exceeds u (skips zero-mass tokens)
    return torch.searchsorted(cdf, u, right=True).squeeze(1).clamp_(max=logits.shape[1] - 1)


def _accuracy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Share of positions whose target has the top logit (0 when there are none).

    Compares the target's logit with the row maximum: much faster than argmax on CPU
    (an exact tie with another token counts as right; with float logits that is negligible).
    """
    if not targets.numel():
        return torch.zeros((), device=targets.device)
    top = logits.amax(-1)
    return (logits.gather(1, targets[:, None]).squeeze(1) >= top).float().mean()


def _stat_tensors(stats: dict, like: torch.Tensor) -> dict:
    """Hook stats as detached float tensors (no device sync until logging)."""
    return {k: torch.as_tensor(v, dtype=torch.float32, device=like.device).detach()
            for k, v in stats.items()}


# ---------------------------------------------------------------- the loop


def use_bf16(precision: str, device_type: str) -> bool:
    """Whether a run of `precision` autocasts to bf16 here; refused on a GPU without bf16."""
    if precision == "auto":
        return device_type == "cuda" and torch.cuda.is_bf16_supported()
    if precision == "bf16" and device_type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ValueError(f"precision='bf16': {torch.cuda.get_device_name()} has no bf16; "
                         "use 'fp32' or 'auto'")
    return precision == "bf16"


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """AdamW groups: decay matrices and embeddings, not biases or LayerNorm weights."""
    params = {id(p): p for p in model.parameters() if p.requires_grad}.values()
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


def pretrain(
    model: nn.Module,
    data: dict,
    config: PretrainConfig,
    *,
    mask_id: int,
    num_special: int = 0,
    replace_ids: torch.Tensor | None = None,
    hook: Hook | None = None,
    checkpoint_dir: str | Path | None = None,
    identity: dict | None = None,
    progress: bool | None = None,
) -> list[dict]:
    """Pretrain `model` in place (MLM or ELECTRA); returns the logged history as a list of rows.

    model: a BertForMaskedLM / ElectraForMaskedLM (objective "mlm") or an ElectraPair ("electra").
    data: {"input_ids", optional "attention_mask", "special_tokens_mask", "word_ids",
      "mask_prob"} tensors (N, L); "mask_prob" replaces the uniform rate (selective masking).
      Without "attention_mask" no position is padding (packed rows; ids may then be int32).
    mask_id: the [MASK] id; random replacement tokens come from `replace_ids` or
      [num_special, vocab_size). Special positions: special_tokens_mask, else the ids in
      data["special_ids"] (1-D), else ids < num_special.
    hook: called every step with a MaskedStep; its HookOutput reweights/relabels the losses.
    checkpoint_dir: resume from the checkpoint there, write one every checkpoint_every steps.
    identity: what else decides the result (arm, data source...): a checkpoint written with
      another identity, config, starting weights or data is set aside, not resumed. The hook's
      own `identity()` (when it has one) is added, and its `state_dict()` (statistics it gathers)
      is saved in each checkpoint and restored with `load_state_dict()`.
    progress: a tqdm bar (True) or plain log lines (False); None: a bar only on a terminal.
    """
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    if not isinstance(config, PretrainConfig):
        raise TypeError("config must be a PretrainConfig")
    if config.objective == "electra" and not isinstance(model, ElectraPair):
        raise ValueError("objective='electra' needs an ElectraPair model (mlmlib.models.electra)")
    if config.objective == "mlm" and isinstance(model, ElectraPair):
        raise ValueError("objective='mlm' needs a masked LM, got an ElectraPair (use objective='electra')")
    n, _ = check_data(data, config)
    vocab_size = model.get_input_embeddings().weight.shape[0]
    if not 0 <= mask_id < vocab_size:
        raise ValueError(f"mask_id must be in [0, vocab_size={vocab_size}), got {mask_id}")
    if progress is None:
        progress = sys.stdout.isatty()

    cuda = torch.cuda.is_available()
    bf16 = use_bf16(config.precision, "cuda" if cuda else "cpu")
    # our autocast (below), not Accelerate's: it keeps one precision per process, refuses another
    if AcceleratorState._shared_state.get("_mixed_precision", "no") != "no":
        AcceleratorState._reset_state()  # left by another Accelerator (e.g. a bf16 Trainer)
    accelerator = Accelerator(cpu=not cuda, mixed_precision="no")
    device = accelerator.device
    torch.manual_seed(config.seed)  # dropout draws from the global generator
    sampler = BatchSampler(n, config.batch_size, config.seed)
    sample_gen = torch.Generator(device=device).manual_seed(config.seed + 1)

    model.to(device)
    model.train()
    fused = device.type in ("cpu", "cuda")  # one multi-tensor kernel instead of a loop
    optimizer = torch.optim.AdamW(param_groups(model, config.weight_decay), lr=config.lr,
                                  betas=config.betas, eps=config.eps, fused=fused)
    scheduler = get_linear_schedule_with_warmup(
        optimizer, int(config.warmup_frac * config.steps), config.steps)
    objective = Objective(model, config, hook)
    objective, optimizer = accelerator.prepare(objective, optimizer)
    step_fn = torch.compile(objective, dynamic=True) if config.compile else objective

    step, history, window, tokens_seen, wall = 0, [], {}, 0, 0.0
    fingerprint = None
    if checkpoint_dir is not None:  # hashing weights and data costs time: only when it is used
        hook_identity = hook.identity() if hasattr(hook, "identity") else None
        fingerprint = ckpt.fingerprint(config, model, data, RESUMABLE_FIELDS,
                                       {"hook": hook_identity, **(identity or {})})
        state = ckpt.load_latest(checkpoint_dir, model, fingerprint)
        if state is not None:
            ckpt.restore_training_state(state, optimizer, scheduler, sampler, sample_rng=sample_gen)
            step, history, window = state["step"], state["history"], state["window"]
            if state.get("hook_state") is not None and hasattr(hook, "load_state_dict"):
                hook.load_state_dict(state["hook_state"])
            tokens_seen, wall = state["tokens_seen"], state["wall_s"]

    bar = None
    if progress and accelerator.is_main_process:
        from tqdm.auto import tqdm
        bar = tqdm(total=config.steps, initial=step, desc=config.objective, dynamic_ncols=True)
    window_tokens = window.pop("_tokens", 0)
    window_steps = window.pop("_steps", 0)
    window_sums = {k: torch.tensor(v) for k, v in window.items()}
    first_bad = torch.full((), -1, device=device)
    t_window = last_print = time.perf_counter()
    params = [p for g in optimizer.param_groups for p in g["params"]]
    rank, world = accelerator.process_index, accelerator.num_processes

    while step < config.steps:
        step += 1
        idx = sampler.next()[rank::world]
        batch = _batch(data, idx, config, sampler, mask_id, vocab_size, num_special, replace_ids)
        moved = {k: (v.to(device, non_blocking=True) if isinstance(v, torch.Tensor) else v)
                 for k, v in batch.items()}
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss, stats = step_fn(step, moved["input_ids"], moved["attention_mask"],
                                  moved["corrupted"], moved["masked"], sample_gen,
                                  moved["positions"])
        if device.type == "cpu":  # free here: stop before a bad backward pass
            if not math.isfinite(loss.item()):
                raise FloatingPointError(f"non-finite loss ({loss.item()}) at step {step}")
        else:  # no device sync per step: remember the first bad step, check at log time
            first_bad = torch.where((first_bad < 0) & ~torch.isfinite(loss.detach()),
                                    torch.full_like(first_bad, step), first_bad)
        accelerator.backward(loss)
        if config.grad_clip:
            accelerator.clip_grad_norm_(params, config.grad_clip)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)

        tokens_seen += batch["tokens"] * world
        window_tokens += batch["tokens"] * world
        window_steps += 1
        for k, v in stats.items():  # stays on the device until the log step
            window_sums[k] = window_sums.get(k, 0.0) + v.float()
        if bar is not None:
            bar.update(1)

        log_now = step % config.log_every == 0 or step == config.steps
        if bar is None and not log_now and accelerator.is_main_process \
                and time.perf_counter() - last_print >= PROGRESS_EVERY_S:
            # between log steps of a long window: a short sign of life for batch logs
            rate = window_tokens / max(time.perf_counter() - t_window, 1e-9)
            print(f"step {step}/{config.steps} | loss {float(loss.detach()):.4f} | tok/s {rate:.0f}", flush=True)
            last_print = time.perf_counter()
        # with a checkpoint_dir the final state is always saved: a rerun returns at once
        ckpt_now = checkpoint_dir is not None and (
            step == config.steps or (config.checkpoint_every and step % config.checkpoint_every == 0))
        if log_now or ckpt_now:
            bad = int(first_bad)
            if bad >= 0:
                raise FloatingPointError(f"non-finite loss at step {bad}")
        if log_now:
            now = time.perf_counter()
            elapsed = now - t_window
            wall += elapsed
            row = {"step": step}
            row |= {k: float(v) / window_steps for k, v in window_sums.items()}
            row |= {"lr": scheduler.get_last_lr()[0], "tokens_seen": tokens_seen,
                    "tokens_per_s": window_tokens / elapsed if elapsed > 0 else float("nan"),
                    "wall_s": wall}
            history.append(row)
            if bar is not None:
                bar.set_postfix({k: round(row[k], 4) for k in ("loss", "acc", "gen_acc", "disc_acc")
                                 if k in row})
            elif accelerator.is_main_process:
                print(_log_line(row, config.steps), flush=True)
                last_print = time.perf_counter()
            window_sums, window_tokens, window_steps = {}, 0, 0
            t_window = time.perf_counter()
        if ckpt_now:
            accelerator.wait_for_everyone()
            if accelerator.is_main_process:
                window_state = {k: float(v) for k, v in window_sums.items()}
                window_state |= {"_tokens": window_tokens, "_steps": window_steps}
                ckpt.save(checkpoint_dir, step, accelerator.unwrap_model(objective).model,
                          ckpt.training_state(optimizer, scheduler, sampler, sample_rng=sample_gen),
                          {"step": step, "fingerprint": fingerprint, "history": history,
                           "hook_state": hook.state_dict() if hasattr(hook, "state_dict") else None,
                           "window": window_state, "tokens_seen": tokens_seen,
                           "wall_s": wall + time.perf_counter() - t_window})
    if bar is not None:
        bar.close()
    model.eval()
    return history


def _log_line(row: dict, steps: int) -> str:
    """One quiet log line (for papermill runs and other non-terminals)."""
    keys = ("loss", "acc", "gen_acc", "disc_acc", "replaced_frac")
    parts = [f"step {row['step']}/{steps}"]
    parts += [f"{k} {row[k]:.4f}" for k in keys if k in row]
    parts.append(f"tok/s {row['tokens_per_s']:.0f}")
    return " | ".join(parts)


def config_dict(config: PretrainConfig) -> dict:
    """A PretrainConfig as plain JSON-able values."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(config).items()}
