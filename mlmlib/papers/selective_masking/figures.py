"""Paper C's figures and the tables beside them, drawn from what C1 and C2 measured."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from mlmlib import plots
from mlmlib.papers.selective_masking.metrics import (
    METRIC_NAMES,
    PRIOR_KEYS,
    TASK_METRICS,
    claim_metric,
)

ARM_COLUMNS = {"word_list": "word list", "train_examples": "training examples",
               "mlm_loss": "MLM loss", "accuracy": "test accuracy", "f1": "test macro-F1",
               "val_accuracy": "validation accuracy"}


def arm_label(frame: pd.DataFrame) -> pd.Series:
    """"arm / word list" ("random" for the arms that use no list)."""
    return frame["arm"] + frame["word_list"].map(lambda w: "" if w == "-" else f" / {w}")


def seed_scores(rows: list[dict], majority: dict[str, float], task: str, seed: int):
    """C2's figure: each arm's test score on the metric the task's claim uses, against the
    task's majority class on that metric; returns the table of every row's scores."""
    table = pd.DataFrame(rows)
    table["arm / list"] = arm_label(table)
    metric = claim_metric(task, "accuracy", TASK_METRICS)
    name = METRIC_NAMES[metric]
    ax = plots.bars(table, x="arm / list", y=metric, hue="labels", xlabel="arm",
                    ylabel=f"test {name}", title=f"Seed {seed}: {name} per arm",
                    baseline=majority[PRIOR_KEYS[metric]], baseline_label="majority class")
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    plt.show()
    shown = table[["arm", *ARM_COLUMNS, "labels"]].rename(columns=ARM_COLUMNS)
    return shown.set_index(["arm", "word list", "labels"])[
        [c for c in ARM_COLUMNS.values() if c != "word list"]].round(4)
