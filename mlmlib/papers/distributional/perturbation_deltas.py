"""Delta-pred vs Delta-distribution (paper A, real text): does the pretrained MLM's view explain fine-tuning?

For each perturbed test input (see mlmlib.perturb):
* Delta-pred: how far the fine-tuned classifier's output distribution moves (L1 distance,
  in [0, 2]; total variation is half of it).
* Delta-distribution: how far apart the *pretrained* MLM puts the original unit and its
  replacement: the L1 distance between its distributions at the [MASK] of a template
  filled once with each. Templates are strings with `{x}` (the replaced word or phrase)
  and/or `{sentence}` (the whole input) slots and exactly one [MASK]; a template may be
  restricted to verbalizer words (the task prompt "{sentence} It was [MASK] ." over
  great/terrible), then the distribution is the softmax over those words' logits only.
The claim: Pearson r between the two is low, per template, across fine-tuning checkpoints
and training-data ratios; its verdict is computed in `mlmlib.papers.distributional.claims`.
"""

from __future__ import annotations

import math
import string
from pathlib import Path

import numpy as np
import torch

from mlmlib import stats
from mlmlib.tokenize import encode

MASK = "[MASK]"
SLOTS = ("x", "sentence")
DISTANCES = ("l1", "tv")


# ---------------------------------------------------------------- distances

def distance(p: np.ndarray, q: np.ndarray, metric: str = "l1") -> np.ndarray:
    """Row-wise distance between probability vectors: L1 (in [0, 2]) or total variation (L1 / 2)."""
    if metric not in DISTANCES:
        raise ValueError(f"metric={metric!r} is unknown; allowed: {', '.join(DISTANCES)}")
    p, q = np.atleast_2d(np.asarray(p, dtype=float)), np.atleast_2d(np.asarray(q, dtype=float))
    if p.shape != q.shape:
        raise ValueError(f"distance: shapes differ: {p.shape} vs {q.shape}")
    d = np.abs(p - q).sum(-1)
    return d / 2 if metric == "tv" else d


# ---------------------------------------------------------------- templates

def template_slots(template: str) -> set[str]:
    """The named slots of a template string."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def check_templates(templates: list[str], verbalizers: dict[str, list[str]] | None = None,
                    tokenizer=None) -> None:
    """Fail early on a template without exactly one [MASK], without a slot or with an unknown one."""
    if not isinstance(templates, (list, tuple)) or not templates:
        raise ValueError("templates must be a non-empty list of strings such as '{x} [MASK]'")
    for t in templates:
        if not isinstance(t, str):
            raise ValueError(f"template {t!r} must be a string")  # noqa: TRY004 - bad input is a ValueError here
        if t.count(MASK) != 1:
            raise ValueError(f"template {t!r} must hold exactly one {MASK} (it holds {t.count(MASK)})")
        try:
            slots = template_slots(t)
        except ValueError as err:
            raise ValueError(f"template {t!r} is not a valid format string: {err}") from err
        if not slots:
            raise ValueError(f"template {t!r} has no slot; use {{x}} (the replaced unit) and/or {{sentence}}")
        unknown = slots - set(SLOTS)
        if unknown:
            raise ValueError(f"template {t!r} has unknown slot(s) {sorted(unknown)}; allowed: {{x}}, {{sentence}}")
    for t, words in (verbalizers or {}).items():
        if t not in templates:
            raise ValueError(f"verbalizers: template {t!r} is not in templates {list(templates)}")
        if not isinstance(words, (list, tuple)) or len(words) < 2:
            raise ValueError(f"verbalizers[{t!r}] must list at least two words, got {words!r}")
        if tokenizer is not None:
            vocab = tokenizer.get_vocab()
            missing = [w for w in words if w not in vocab]
            if missing:
                raise ValueError(f"verbalizers[{t!r}]: {missing} are not single tokens of the MLM's vocabulary")


def fill(template: str, x: str, sentence: str, mask_token: str = MASK) -> str:
    """A template with its slots filled (and [MASK] written as the tokenizer's mask token)."""
    return template.replace(MASK, "\x00").format(x=x, sentence=sentence).replace("\x00", mask_token)


@torch.no_grad()
def mask_distributions(mlm, tokenizer, texts: list[str], *, words: list[str] | None = None,
                       max_length: int = 128, batch_size: int = 256) -> np.ndarray:
    """The MLM's distribution at the (first) mask token of each text: full vocabulary, or over `words`."""
    mlm.eval()
    device = next(mlm.parameters()).device
    ids = None if words is None else torch.tensor(tokenizer.convert_tokens_to_ids(list(words)), device=device)
    out = []
    for s in range(0, len(texts), batch_size):
        enc = encode(tokenizer, texts[s:s + batch_size], max_length=max_length)
        at_mask = enc["input_ids"] == tokenizer.mask_token_id
        if not at_mask.any(1).all():
            bad = texts[s + int((~at_mask.any(1)).nonzero()[0])]
            raise ValueError(f"the mask token fell outside max_length={max_length} in {bad[:80]!r}...; "
                             "shorten the inputs (fit_text) or raise max_length")
        first = at_mask.float().argmax(1)
        feed = {k: enc[k].to(device) for k in ("input_ids", "attention_mask")}
        hidden = mlm.bert(**feed).last_hidden_state[torch.arange(len(first)), first.to(device)]
        logits = mlm.cls(hidden[:, None])[:, 0].float()  # the MLM head at the mask positions only
        if ids is not None:
            logits = logits[:, ids]
        out.append(torch.softmax(logits, -1).cpu().numpy())
    return np.concatenate(out)


def delta_distribution(mlm, tokenizer, originals: list[str], replacements: list[str], sentences: list[str],
                       perturbed: list[str], template: str, *, words: list[str] | None = None,
                       max_length: int = 128, batch_size: int = 256, metric: str = "l1") -> np.ndarray:
    """Per example, the distance between the MLM's [MASK] distributions for original and replacement."""
    check_templates([template], {template: words} if words else None, tokenizer)
    a = [fill(template, x, s, tokenizer.mask_token) for x, s in zip(originals, sentences)]
    b = [fill(template, x, s, tokenizer.mask_token) for x, s in zip(replacements, perturbed)]
    unique = sorted(set(a) | set(b))  # the same word recurs: run each filled template once
    probs = mask_distributions(mlm, tokenizer, unique, words=words, max_length=max_length, batch_size=batch_size)
    row = {t: i for i, t in enumerate(unique)}
    return distance(probs[[row[t] for t in a]], probs[[row[t] for t in b]], metric)


# ---------------------------------------------------------------- fine-tuned models

def check_fractions(name: str, values: list[float]) -> list[float]:
    """A non-empty list of increasing fractions in (0, 1]."""
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError(f"{name} must be a non-empty list of fractions in (0, 1], e.g. [0.5, 1.0]")
    if any(not isinstance(v, (int, float)) or not 0 < v <= 1 for v in values):
        raise ValueError(f"{name} must hold fractions in (0, 1], got {values!r}")
    if list(values) != sorted(set(values)):
        raise ValueError(f"{name} must be strictly increasing, got {values!r}")
    return [float(v) for v in values]


def finetune_family(build_model, train: dict, validation: dict, config, *, checkpoints: list[float],
                    ratios: list[float], folder: str | Path, seed: int = 0) -> list[dict]:
    """Fine-tune the models the analysis compares; returns rows {model, group, value, path, steps, val}.

    * checkpoints: the full-data run saved after each fraction of its steps. It is trained in
      segments (one `finetune` call per segment, continuing from the previous weights, the
      linear schedule restarted, warm-up in the first only), since `finetune` keeps no
      intermediate weights.
    * ratios: a fresh model on a seeded random fraction of the training set, same epochs;
      ratio 1.0 is the full run's last checkpoint when that is at 1.0.
    """
    import dataclasses

    from mlmlib.finetune import finetune
    from mlmlib.models import save_model

    checkpoints, ratios = check_fractions("checkpoints", checkpoints), check_fractions("ratios", ratios)
    folder = Path(folder)
    n = train["input_ids"].shape[0]
    total = config.max_steps or config.epochs * math.ceil(n / config.batch_size)
    rows = []
    model, done = build_model(), 0
    for i, frac in enumerate(checkpoints):
        steps = max(1, round(frac * total) - done)
        seg = dataclasses.replace(config, max_steps=steps, eval_every=steps, patience=None,
                                  warmup_frac=config.warmup_frac if i == 0 else 0.0, seed=config.seed + i)
        result = finetune(model, train, validation, seg)
        done += steps
        path = save_model(model, folder / f"checkpoint-{frac:g}")
        rows.append({"model": f"checkpoint {frac:g}", "group": "checkpoint", "value": frac, "path": str(path),
                     "steps": done, "val_accuracy": result.validation.get("accuracy")})
    full_run = rows[-1]
    rng = np.random.default_rng(seed)
    for ratio in ratios:
        if ratio == 1.0 and checkpoints[-1] == 1.0:
            rows.append({**full_run, "model": "ratio 1", "group": "ratio", "value": 1.0})
            continue
        idx = torch.as_tensor(np.sort(rng.permutation(n)[: max(1, round(ratio * n))]))
        subset = {k: v[idx] for k, v in train.items()}
        model = build_model()
        result = finetune(model, subset, validation, dataclasses.replace(config, max_steps=None))
        path = save_model(model, folder / f"ratio-{ratio:g}")
        rows.append({"model": f"ratio {ratio:g}", "group": "ratio", "value": ratio, "path": str(path),
                     "steps": result.steps, "val_accuracy": result.validation.get("accuracy")})
    return rows


# ---------------------------------------------------------------- correlations

def pearson(x, y) -> float:
    """Pearson r; NaN when either side is constant."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3 or x.std() == 0 or y.std() == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def correlation(x, y, n_boot: int = 1000, seed: int = 0) -> stats.Interval:
    """Pearson r with a percentile bootstrap interval (rows resampled jointly)."""
    if len(x) < 3:
        return stats.Interval(float("nan"), float("nan"), float("nan"), len(x))
    return stats.bootstrap_ci(pearson, x, y, n_boot=n_boot, seed=seed)


# ---------------------------------------------------------------- both deltas for a set of perturbations

def delta_pred(model, tokenizer, perturbations, *, max_length: int = 128, metric: str = "l1") -> np.ndarray:
    """Per perturbation, the distance between the classifier's outputs on the original and perturbed input."""
    from mlmlib.papers.distributional.perturb import class_probs

    pairs = [p.text_pair for p in perturbations]
    pairs = None if all(x is None for x in pairs) else pairs
    before = class_probs(model, tokenizer, [p.text for p in perturbations], max_length, text_pairs=pairs)
    after = class_probs(model, tokenizer, [p.perturbed for p in perturbations], max_length, text_pairs=pairs)
    return distance(before, after, metric)


def delta_distributions(mlm, tokenizer, perturbations, templates: list[str],
                        verbalizers: dict[str, list[str]] | None = None, *, max_length: int = 128,
                        metric: str = "l1") -> dict[str, np.ndarray]:
    """Delta-distribution per template (validated before any inference)."""
    verbalizers = verbalizers or {}
    check_templates(templates, verbalizers, tokenizer)
    cols = {k: [getattr(p, k) for p in perturbations] for k in ("original", "replacement", "text", "perturbed")}
    return {t: delta_distribution(mlm, tokenizer, cols["original"], cols["replacement"], cols["text"],
                                  cols["perturbed"], t, words=verbalizers.get(t), max_length=max_length,
                                  metric=metric)
            for t in templates}
