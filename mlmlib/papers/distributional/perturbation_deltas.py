"""Delta-pred vs Delta-distribution (paper A, real text): does the pretrained MLM's view explain fine-tuning?

For each perturbed test input (see mlmlib.papers.distributional.perturb):
* Delta-pred: how far the fine-tuned classifier's output distribution moves (L1 distance,
  in [0, 2]; total variation is half of it).
* Delta-distribution: how far apart the *pretrained* MLM puts the original unit and its
  replacement: the L1 distance between its distributions at the [MASK] of a template
  filled once with each. Templates are strings with `{x}` (the replaced word or phrase)
  and/or `{sentence}` (the whole perturbed text) slots, or `{premise}` and `{hypothesis}` (the
  first and second text of a pair input, MNLI's prompt "{premise} ? [MASK] , {hypothesis}"), and
  exactly one [MASK]; a template may be restricted to verbalizer words (the task prompt
  "{sentence} It was [MASK] ." over great/terrible, MNLI's over yes/maybe/no), then the
  distribution is the softmax over those words' logits only. The tag-matched template
  (TAG_MATCHED) fills, for each perturbation, the `{x}` template the paper's code picks by the
  replaced unit's tag.
The claim: Pearson r between the two is low, per template, across fine-tuning checkpoints
and training-data ratios; its verdict is computed in
`mlmlib.papers.distributional.real_text_claims`.
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
SLOTS = ("x", "sentence", "premise", "hypothesis")
PAIR_SLOTS = ("premise", "hypothesis")
DISTANCES = ("l1", "tv")
MNLI_TEMPLATE = "{premise} ? [MASK] , {hypothesis}"
MNLI_VERBALIZERS = ["yes", "maybe", "no"]
# The paper's code picks the phrase template by the replaced unit's tag (a verb phrase or verb,
# a noun phrase or noun, an adjective phrase or adjective); the word level's WordNet letters map
# to the same three.
TAG_MATCHED = "{x} template matched to the tag"
TAG_TEMPLATES = {"VP": "[MASK] {x}", "NP": "{x} [MASK]", "ADJP": "[MASK] is {x}"}
_WORDNET_TAGS = {"v": "VP", "n": "NP", "a": "ADJP"}


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
                    tokenizer=None, pairs: bool | None = None) -> None:
    """Fail early on a template without exactly one [MASK], without a slot or with an unknown one.

    pairs=False (a task of single texts) also rejects the {premise}/{hypothesis} slots.
    """
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
            raise ValueError(f"template {t!r} has unknown slot(s) {sorted(unknown)}; allowed: "
                             + ", ".join(f"{{{slot}}}" for slot in SLOTS))
        if pairs is False and slots & set(PAIR_SLOTS):
            raise ValueError(f"template {t!r} fills {{premise}}/{{hypothesis}}, but the task's inputs are "
                             "single texts, not pairs")
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


def fill(template: str, x: str, sentence: str, mask_token: str = MASK, pair: tuple | None = None) -> str:
    """A template with its slots filled (and [MASK] written as the tokenizer's mask token).

    pair: the (premise, hypothesis) input for the {premise}/{hypothesis} slots.
    """
    premise, hypothesis = pair if pair is not None else (None, None)
    if hypothesis is None and template_slots(template) & set(PAIR_SLOTS):
        raise ValueError(f"template {template!r} needs a pair input (premise, hypothesis), got {pair!r}")
    return (template.replace(MASK, "\x00").format(x=x, sentence=sentence, premise=premise, hypothesis=hypothesis)
            .replace("\x00", mask_token))


def tag_template(tag: str) -> str | None:
    """The `{x}` template the paper's code uses for a unit with this tag (phrase label, Penn tag or WordNet letter)."""
    tag = _WORDNET_TAGS.get(tag, tag)
    if tag == "ADJP" or tag.startswith("J"):
        return TAG_TEMPLATES["ADJP"]
    if tag.startswith(("V", "N")):
        return TAG_TEMPLATES[tag[0] + "P"]
    return None


def filled_templates(template: str, perturbations, mask_token: str = MASK) -> tuple[list[str], list[str]]:
    """Each perturbation's template filled with the original and with the perturbed unit, input and pair."""
    before = [fill(template, p.original, p.text, mask_token, p.original_input()) for p in perturbations]
    after = [fill(template, p.replacement, p.perturbed, mask_token, p.perturbed_input()) for p in perturbations]
    return before, after


def fitting_templates(perturbations, templates: list[str], tokenizer, *, max_length: int = 128,
                      tag_matched: bool = False) -> tuple[list, dict[str, int]]:
    """The perturbations whose every filled template, before and after, keeps its [MASK] within
    max_length; and per kind how many did not (counted, never silently measured on a cut input).

    A paraphrase or synonym longer than what it replaces can push the mask of a
    "{sentence} ... [MASK]" template past max_length even though the original input fits.
    """
    kept, dropped = [], {}
    for p in perturbations:
        chosen = list(templates) + ([t] if tag_matched and (t := tag_template(p.pos)) else [])
        texts = []
        for template in chosen:
            before, after = filled_templates(template, [p], tokenizer.mask_token)
            texts += before + after
        ids = encode(tokenizer, texts, max_length=max_length)["input_ids"]
        if bool((ids == tokenizer.mask_token_id).any(1).all()):
            kept.append(p)
        else:
            dropped[p.kind] = dropped.get(p.kind, 0) + 1
    return kept, dropped


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


def delta_distribution(mlm, tokenizer, before: list[str], after: list[str], *, words: list[str] | None = None,
                       max_length: int = 128, batch_size: int = 256, metric: str = "l1") -> np.ndarray:
    """Per example, the distance between the MLM's [MASK] distributions on two filled templates."""
    if len(before) != len(after):
        raise ValueError(f"delta_distribution: {len(before)} filled templates before, {len(after)} after")
    if not before:
        return np.zeros(0)
    unique = sorted(set(before) | set(after))  # the same word recurs: run each filled template once
    probs = mask_distributions(mlm, tokenizer, unique, words=words, max_length=max_length, batch_size=batch_size)
    row = {t: i for i, t in enumerate(unique)}
    return distance(probs[[row[t] for t in before]], probs[[row[t] for t in after]], metric)


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


def snapshot_steps(checkpoints: list[float], total: int) -> dict[int, float]:
    """The step at which each checkpoint fraction of a `total`-step run is saved: {step: fraction}."""
    steps = {max(1, round(frac * total)): frac for frac in checkpoints}
    if len(steps) < len(checkpoints):
        raise ValueError(f"checkpoints={checkpoints}: two of them fall on the same step of a {total}-step run; "
                         "use fewer checkpoints or more training steps")
    return steps


def finetune_family(build_model, train: dict, selection: dict, config, *, checkpoints: list[float],
                    ratios: list[float], folder: str | Path, seed: int = 0) -> list[dict]:
    """Fine-tune the models the analysis compares; returns rows {model, group, value, path, steps, lr, val_accuracy}.

    * checkpoints: one run on all the training data (one optimizer, one warm-up and linear decay),
      its weights saved as they are after each fraction of its steps; `lr` is the learning rate of
      the step before the snapshot, `val_accuracy` the snapshot's accuracy on the selection split.
    * ratios: a fresh model on a seeded random fraction of the training set, same epochs, its
      best weights on the selection split kept; ratio 1.0 is the full run's last checkpoint when
      that is at 1.0.
    """
    import dataclasses

    from mlmlib.finetune import evaluate, finetune
    from mlmlib.models import save_model

    checkpoints, ratios = check_fractions("checkpoints", checkpoints), check_fractions("ratios", ratios)
    folder = Path(folder)
    n = train["input_ids"].shape[0]
    total = config.max_steps or config.epochs * math.ceil(n / config.batch_size)
    at_step = snapshot_steps(checkpoints, total)
    rows = []

    def snapshot(step: int, model, lr: float) -> None:
        if step not in at_step:
            return
        frac = at_step[step]
        path = save_model(model, folder / f"checkpoint-{frac:g}")
        rows.append({"model": f"checkpoint {frac:g}", "group": "checkpoint", "value": frac, "path": str(path),
                     "steps": step, "lr": lr, "val_accuracy": evaluate(model, selection)["accuracy"]})

    # no early stopping and one validation at the end: the run goes through its whole schedule
    whole_run = dataclasses.replace(config, max_steps=total, eval_every=total, patience=None)
    finetune(build_model(), train, selection, whole_run, on_step=snapshot)
    full_run = rows[-1]
    rng = np.random.default_rng(seed)
    for ratio in ratios:
        if ratio == 1.0 and checkpoints[-1] == 1.0:
            rows.append({**full_run, "model": "ratio 1", "group": "ratio", "value": 1.0})
            continue
        idx = torch.as_tensor(np.sort(rng.permutation(n)[: max(1, round(ratio * n))]))
        subset = {k: v[idx] for k, v in train.items()}
        model = build_model()
        result = finetune(model, subset, selection, dataclasses.replace(config, max_steps=None))
        path = save_model(model, folder / f"ratio-{ratio:g}")
        rows.append({"model": f"ratio {ratio:g}", "group": "ratio", "value": ratio, "path": str(path),
                     "steps": result.steps, "lr": float("nan"),
                     "val_accuracy": result.validation.get("accuracy")})
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
    from mlmlib.papers.distributional.perturb import input_probs

    before = input_probs(model, tokenizer, [p.original_input() for p in perturbations], max_length)
    after = input_probs(model, tokenizer, [p.perturbed_input() for p in perturbations], max_length)
    return distance(before, after, metric)


def delta_by_tag(mlm, tokenizer, perturbations, *, max_length: int = 128, metric: str = "l1") -> np.ndarray:
    """Delta-distribution with each perturbation's tag-matched template; NaN where its tag has none."""
    out = np.full(len(perturbations), np.nan)
    templates = [tag_template(p.pos) for p in perturbations]
    for template in sorted({t for t in templates if t is not None}):
        idx = [i for i, t in enumerate(templates) if t == template]
        before, after = filled_templates(template, [perturbations[i] for i in idx], tokenizer.mask_token)
        out[idx] = delta_distribution(mlm, tokenizer, before, after, max_length=max_length, metric=metric)
    return out


def delta_distributions(mlm, tokenizer, perturbations, templates: list[str],
                        verbalizers: dict[str, list[str]] | None = None, *, tag_matched: bool = False,
                        max_length: int = 128, metric: str = "l1") -> dict[str, np.ndarray]:
    """Delta-distribution per template (validated before any inference), and by tag under TAG_MATCHED."""
    verbalizers = verbalizers or {}
    check_templates(templates, verbalizers, tokenizer)
    out = {}
    for t in templates:
        before, after = filled_templates(t, perturbations, tokenizer.mask_token)
        out[t] = delta_distribution(mlm, tokenizer, before, after, words=verbalizers.get(t),
                                    max_length=max_length, metric=metric)
    if tag_matched:
        out[TAG_MATCHED] = delta_by_tag(mlm, tokenizer, perturbations, max_length=max_length, metric=metric)
    return out
