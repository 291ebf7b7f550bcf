"""C1's figures and the tables beside them: the task scores, the masking functions calibrated to
one rate, the rates their masks realise, what each arm masks and what masking costs per step.

The numbers come from the experiment; these functions only lay them out (column names a reader
understands, the reference lines), so the page stays short. No claims here: C1 is a measuring
page, rerun only when what it measures changes.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from mlmlib import plots
from mlmlib.papers.selective_masking.experiment import SELECTIVE
from mlmlib.papers.selective_masking.lexicons import TaskScores
from mlmlib.papers.selective_masking.scored_text import ScoredText

RATE_COLUMNS = {"expected_rate": "expected rate", "realised_rate": "realised rate",
                "realised_sd": "realised rate (sd over draws)", "tokens": "tokens per draw",
                "scale": "calibration constant c"}
OVERHEAD_COLUMNS = {"step_ms": "step ms (median)", "mask_ms": "masking ms (median)",
                    "step_ratio": "step time / random",
                    "overhead": "extra masking time / random step"}


def score_distributions(scored: ScoredText, label: str) -> None:
    """C1: the task scores of the corpus' list words against those of its other words (those
    with a vector: the others score 0 by construction)."""
    in_list = scored.in_list
    plots.distributions({"in the word list": scored.scores.scores[in_list],
                         "other words (with a vector)":
                             scored.scores.scores[~in_list & scored.has_vector]},
                        xlabel="task score", title=f"Task scores of the corpus' words ({label})")
    plt.show()


def masking_curve(scores: TaskScores, maskings: dict) -> pd.DataFrame:
    """Each selective arm's mean masking probability per task score (rounded to 0.01)."""
    curve = pd.DataFrame([{"task score": round(float(s), 2), "masking probability": float(p),
                           "arm": arm}
                          for arm in SELECTIVE
                          for s, p in zip(scores.scores, maskings[arm].word_probs)])
    return curve.groupby(["arm", "task score"], as_index=False)["masking probability"].mean()


def masking_curves(scores: TaskScores, maskings: dict, target_rate: float) -> None:
    """C1: masking probability per word against its score; random masking is the flat line."""
    ax = plots.curves(masking_curve(scores, maskings), x="task score", y="masking probability",
                      hue="arm", xlabel="task score", ylabel="masking probability",
                      title="Masking probability per word")
    ax.axhline(target_rate, ls="--", color="grey", label="random")
    ax.legend()
    plt.show()


def examples_shown(example_rows: list[dict]) -> pd.DataFrame:
    """C1: chosen words' corpus count, task score and masking probability per arm."""
    return pd.DataFrame(example_rows).set_index("word").rename(
        columns={"count": "tokens in the corpus", "score": "task score"}).round(3)


def gap_points(realised: pd.Series, target: float) -> pd.Series:
    """Realised masking rate minus the target, in percentage points."""
    return 100 * (realised - target)


def rate_table(rate_rows: list[dict], target_rate: float) -> pd.DataFrame:
    """C1's realised rates (`experiment.realised_rates`) with each arm's gap to the target."""
    rates = pd.DataFrame(rate_rows)
    rates["gap (points)"] = gap_points(rates["realised_rate"], target_rate)
    return rates


def rate_bars(rates: pd.DataFrame, target_rate: float) -> None:
    """C1: every arm's realised masking rate against the target."""
    plots.bars(rates, x="arm", y="realised_rate", hue=None, xlabel="arm",
               ylabel="share of tokens masked",
               title="Realised masking rate on the training corpus",
               baseline=target_rate, baseline_label=f"target {target_rate:.0%}")
    plt.show()


def rates_shown(rates: pd.DataFrame) -> pd.DataFrame:
    return rates.set_index("arm").rename(columns=RATE_COLUMNS).round(4)


def composition_shown(composition: list[dict]) -> pd.DataFrame:
    """C1: each arm's share of list words among the tokens it masks and, with a random arm, that
    share over random's (random masks list words at their share of the tokens)."""
    shares = pd.DataFrame(composition).set_index("arm")
    if "random" in shares.index:
        shares["times random"] = shares["list_share"] / shares.loc["random", "list_share"]
    return shares.rename(columns={"list_share": "list words among masked tokens"}).round(3)


def overhead_shown(bench: dict) -> pd.DataFrame:
    """C1: the timed training steps per arm (`experiment.masking_overhead`) as a table."""
    overhead = pd.DataFrame({name: bench[key] for key, name in OVERHEAD_COLUMNS.items()})
    return overhead.rename_axis("arm").round(3)
