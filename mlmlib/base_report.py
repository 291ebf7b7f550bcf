"""What the base-model page reports: how pretraining went, how well the base fills masked pieces
of held-out text against the unigram baseline, and what it predicts for a few probe sentences.

A base no better than always predicting the commonest piece would make every later comparison
of "pretrained" against "scratch" meaningless; this is the check that it is better.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from mlmlib import plots, stats
from mlmlib.base_config import BaseModelConfig
from mlmlib.basemodel import masked_predictions, most_frequent_piece
from mlmlib.data import load_corpus

MEASURES = {"loss": "MLM loss", "acc": "masked-piece accuracy"}


def pretraining_curves(history: list[dict], name: str) -> pd.DataFrame | None:
    """One figure per measure of the logged pretraining; returns the last three log lines, or None
    (and says so) for a hub model, which was pretrained elsewhere and brings no curve."""
    curve = pd.DataFrame(history)
    if not len(curve):
        print(f"{name}: pretrained elsewhere, no curve")
        return None
    shown = curve.melt(id_vars="step", value_vars=["loss", "acc"], var_name="measure")
    shown["measure"] = shown["measure"].map(MEASURES)
    for measure, rows in shown.groupby("measure"):
        plots.curves(rows, x="step", y="value", hue="measure", xlabel="step", ylabel=measure,
                     title=f"Base pretraining: {measure}")
    return curve[["step", "loss", "acc", "tokens_per_s"]].tail(3).round(3).set_index("step")


@dataclass
class HeldOutCheck:
    """The base's and the unigram baseline's share of masked held-out pieces predicted exactly."""

    per_text: pd.DataFrame  # per held-out sentence: hits of the model, of the baseline, pieces
    masked_pieces: int
    unigram: int  # the one piece the baseline predicts
    accuracy: stats.Interval
    unigram_accuracy: stats.Interval
    gain: stats.Interval  # model minus baseline, as a share of the masked pieces
    seed: int

    @property
    def learned(self) -> bool:
        return self.gain.low > 0

    def summary(self) -> str:
        learned = "yes" if self.learned else "no, not above the unigram baseline"
        g = self.gain
        return (f"{self.masked_pieces} masked pieces in {len(self.per_text)} held-out sentences "
                f"(seed {self.seed}); base minus baseline {g.mean:+.3f} "
                f"[{g.low:+.3f}, {g.high:+.3f}]; learned beyond the unigram: {learned}")

    def table(self, name: str, unigram_piece: str) -> pd.DataFrame:
        """Both predictors' accuracy with its interval, one row each."""
        named = {f"base ({name})": self.accuracy,
                 f"unigram: always {unigram_piece!r}": self.unigram_accuracy}
        return pd.DataFrame([{"predictor": k, "accuracy": a.mean,
                              "95% interval": f"[{a.low:.3f}, {a.high:.3f}]"}
                             for k, a in named.items()]).set_index("predictor").round(3)


def _share(hit_counts, piece_counts):
    return hit_counts.sum() / piece_counts.sum()


def against_unigram(rows: torch.Tensor, targets: torch.Tensor, predictions: torch.Tensor,
                    unigram: int, seed: int = 0) -> HeldOutCheck:
    """Score masked-piece predictions (as `masked_predictions` returns them) against always
    predicting `unigram`. The intervals are a bootstrap over sentences: the pieces of one
    sentence are not independent."""
    hits = pd.DataFrame({"text": rows.numpy(), "model": (predictions == targets).numpy(),
                         "baseline": (targets == unigram).numpy()})
    per_text = hits.groupby("text").agg(model=("model", "sum"), baseline=("baseline", "sum"),
                                        pieces=("model", "size"))
    accuracy = {name: stats.bootstrap_ci(_share, per_text[name], per_text["pieces"], seed=seed)
                for name in ("model", "baseline")}
    gain = stats.bootstrap_ci(lambda m, b, n: (m.sum() - b.sum()) / n.sum(), per_text["model"],
                              per_text["baseline"], per_text["pieces"], seed=seed)
    return HeldOutCheck(per_text, len(targets), unigram, accuracy["model"],
                        accuracy["baseline"], gain, seed)


def heldout_check(model, tokenizer, config: BaseModelConfig, texts: int, mask_rate: float,
                  seed: int) -> HeldOutCheck:
    """Mask pieces of `texts` sentences of the corpus' validation split (never trained on) and
    score the base's predictions against the commonest piece of its pretraining text."""
    corpus = load_corpus(config.corpus)
    held_out = corpus["validation"].shuffle(seed=seed)
    held_out = held_out.select(range(min(texts, len(held_out))))["text"]
    rows, targets, predictions = masked_predictions(model, tokenizer, held_out,
                                                    max_length=config.max_length,
                                                    mask_rate=mask_rate, seed=seed)
    unigram = most_frequent_piece(tokenizer, corpus["train"]["text"][:config.max_sentences],
                                  max_length=config.max_length)
    return against_unigram(rows, targets, predictions, unigram, seed)


def top_predictions(model, tokenizer, probes: list[str], max_length: int,
                    top_k: int) -> list[dict]:
    """The base's `top_k` pieces (with their probability) at every [MASK] of each probe sentence."""
    with torch.no_grad():
        model.eval()
        encoded = tokenizer(probes, padding=True, truncation=True, max_length=max_length,
                            return_tensors="pt")
        logits = model(**{k: v.to(model.device) for k, v in encoded.items()
                          if k in ("input_ids", "attention_mask")}).logits.cpu()
    filled = []
    for i, probe in enumerate(probes):
        where = (encoded["input_ids"][i] == tokenizer.mask_token_id).nonzero()[:, 0]
        for position in where.tolist():
            probs = logits[i, position].softmax(-1)
            top = probs.topk(top_k)
            words = tokenizer.convert_ids_to_tokens(top.indices.tolist())
            ranked = enumerate(zip(words, top.values))
            filled.append({"sentence": probe,
                           **{f"top {k + 1}": f"{w} ({p:.2f})" for k, (w, p) in ranked}})
    return filled
