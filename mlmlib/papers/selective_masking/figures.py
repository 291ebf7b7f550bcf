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


DOSE_NAMES = {"list_share": "list share of masked tokens", "heldout_loss": "held-out masked-LM loss",
              "accuracy": "test accuracy (fine-tuned)", "probe_accuracy": "test accuracy (probe)"}


def dose_panels(rows: pd.DataFrame, columns: list[str], baseline: dict[str, float] | None = None):
    """One panel per measure against the dose of continued MLM, a line per arm (one seed)."""
    rows = rows.assign(**{"arm / list": arm_label(rows)})
    fig, axes = plt.subplots(1, len(columns), figsize=(4.6 * len(columns), 3.6), squeeze=False)
    for ax, column in zip(axes[0], columns):
        for label, part in rows.dropna(subset=[column]).groupby("arm / list", sort=False):
            ax.plot(part["dose"], part[column], marker="o", label=label)
        if baseline and column in baseline:
            ax.axhline(baseline[column], color="grey", ls="--", label="majority class")
        ax.set_xscale("symlog", linthresh=max(1, int(rows["dose"][rows["dose"] > 0].min())))
        ax.set(xlabel="continued-MLM steps (dose)", ylabel=DOSE_NAMES.get(column, column))
    axes[0][0].legend(fontsize=8)
    plt.tight_layout()
    plt.show()


def dose_differences(claimed: list[dict], testbeds: dict[str, dict]):
    """C3's figure: selective - random against the dose, a 95% interval per dose, one panel per
    testbed (and task), each point coloured by its verdict."""
    frame = pd.DataFrame(claimed)
    groups = list(frame.groupby(["testbed", "task", "word_list"], sort=False))
    fig, axes = plt.subplots(1, len(groups), figsize=(5.2 * len(groups), 3.8), squeeze=False)
    for ax, ((testbed, task, word_list), part) in zip(axes[0], groups):
        for verdict, points in part.groupby("verdict"):
            ax.errorbar(points["dose"], points["effect"],
                        yerr=[points["effect"] - points["low"], points["high"] - points["effect"]],
                        fmt="o", capsize=4, label=verdict)
        ax.axhline(0, color="grey", lw=1)
        if (part["dose"] > 0).any():  # a log axis needs a positive dose (dose 0 alone: linear)
            ax.set_xscale("symlog", linthresh=max(1, int(part["dose"][part["dose"] > 0].min())))
        ax.set(xlabel="continued-MLM steps (dose)",
               ylabel=f"exponential - random, {testbeds[testbed]['score_name']}",
               title=f"{testbeds[testbed]['testbed']}\n{task} ({word_list})")
        ax.legend(fontsize=8)
    plt.tight_layout()
    return fig
