"""Paper A's multi-panel figures: one panel per test set (synthetic) or per template (real text).

The pages call these and show the figure; the single-axis helpers they build on are
`mlmlib.plots`'s, shared by the three papers.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from mlmlib import plots


def _prior_line(ax, part: pd.DataFrame, label: str | None = None) -> None:
    """The class prior of a test set (majority-class accuracy) as a dashed line."""
    ax.axhline(part.prior.iloc[0], ls="--", color="grey", label=label)


def _legend_on_last(axes, fontsize: float | None = None) -> None:
    """One legend, on the last panel: the panels share their hues."""
    for ax in axes[:-1]:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    if fontsize:
        axes[-1].legend(fontsize=fontsize)


def learning_curves(rows: pd.DataFrame, test_sets: list[str], hue: str = "model",
                    title: str = "{test_set}", prior_label: str | None = None,
                    legend_size: float | None = None):
    """Accuracy against training examples (log axis), one panel per test set, with its class prior.

    rows: A3's rows of one B-D2 fraction (model or label, train_size, test_set, accuracy, prior);
    title: a format string of `test_set`. Over several seeds, each line is the mean with its 95%
    interval.
    """
    fig, axes = _panels(len(test_sets))
    for ax, name in zip(axes, test_sets):
        part = rows[rows.test_set == name]
        plots.curves(part, x="train_size", y="accuracy", hue=hue, xlabel="training examples",
                     ylabel="test accuracy", title=title.format(test_set=name), ax=ax, logx=True)
        _prior_line(ax, part, prior_label)
    _legend_on_last(axes, legend_size)
    fig.tight_layout()
    return fig


def _panels(n: int):
    """A figure of `n` panels side by side sharing the accuracy axis, and the list of its axes."""
    fig, axes = plt.subplots(1, n, figsize=(4 * n, 3.8), sharey=True, squeeze=False)
    return fig, list(axes[0])


def mixture_bars(largest: pd.DataFrame, test_sets: list[str], hue: str = "label"):
    """Accuracy against the B-D2 fraction at the largest training set, one panel per test set."""
    fig, axes = _panels(len(test_sets))
    for ax, name in zip(axes, test_sets):
        part = largest[largest.test_set == name]
        plots.bars(part, x="bd2_fraction", y="accuracy", hue=hue, xlabel="B-D2 fraction",
                   ylabel="test accuracy", title=name, ax=ax)
        _prior_line(ax, part)
    _legend_on_last(axes, 7)
    fig.tight_layout()
    return fig


def delta_scatters(points: pd.DataFrame, cells: pd.DataFrame, columns: int = 3):
    """Delta-pred against Delta-distribution of the fully trained model, one panel per template,
    titled with the r of the template's final-checkpoint cell (the largest fraction)."""
    templates = list(dict.fromkeys(points["template"]))
    rows = -(-len(templates) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5 * columns, 4 * rows), squeeze=False)
    for ax, template in zip(axes.flat, templates):
        final = cells[(cells["template"] == template) & (cells["group"] == "checkpoint")]
        r = final.sort_values("value").iloc[-1]
        plots.scatter_with_fit(points[points["template"] == template], x="Delta-distribution",
                               y="Delta-pred", hue="kind",
                               xlabel="Delta-distribution (L1, pretrained MLM)",
                               ylabel="Delta-pred (L1, fine-tuned)", ax=ax,
                               title=f"{template}\nr = {r.r:.2f} [{r.r_low:.2f}, {r.r_high:.2f}]")
    for ax in list(axes.flat)[len(templates):]:
        ax.axis("off")
    fig.tight_layout()
    return fig


def correlation_trends(cells: pd.DataFrame, r_low: float):
    """Pearson r with its 95% interval against the checkpoint and the data ratio, one line per
    task, kind and template; the grey band is the "low" region |r| < r_low."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
    for ax, group, xlabel in zip(axes, ["checkpoint", "ratio"],
                                 ["fraction of the full run's steps", "fraction of the training data"]):
        sub = cells[cells["group"] == group]
        for (task, template, kind), part in sub.groupby(["task", "template", "kind"], sort=False):
            part = part.sort_values("value")
            yerr = [part["r"] - part["r_low"], part["r_high"] - part["r"]]
            ax.errorbar(part["value"], part["r"], yerr=yerr, marker="o", capsize=3,
                        label=f"{task}, {kind}: {template}")
        ax.axhspan(-r_low, r_low, color="grey", alpha=0.15)
        ax.set(xlabel=xlabel, ylabel="Pearson r (Delta-pred, Delta-distribution)",
               title=f"r across {group}s")
    axes[1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def dose_curves(table: pd.DataFrame):
    """WITH minus each baseline against the pretraining dose (log axis), one panel per measure,
    each point the mean over the pilot languages with its 95% interval; zero dashed.

    table: `dose_pilot.by_dose` (dose, measure, baseline, mean, low, high)."""
    measures = list(dict.fromkeys(table.measure))
    fig, axes = _panels(len(measures))
    for ax, measure in zip(axes, measures):
        for i, (baseline, part) in enumerate(table[table.measure == measure].groupby("baseline")):
            part = part.sort_values("dose")
            ax.errorbar(part.dose * (0.95 + 0.1 * i), part["mean"],  # dodged: the intervals overlap yerr=[part["mean"] - part.low, part.high - part["mean"]],
                        marker="o", capsize=3, label=f"WITH - {baseline}")
        ax.axhline(0, ls="--", color="grey")
        ax.set_xscale("log")
        ax.set_xticks(sorted(table.dose.unique()), [f"{d:g}x" for d in sorted(table.dose.unique())])
        ax.set(xlabel="MLM dose (x steps and corpus)", title=measure)
    axes[0].set_ylabel("accuracy difference")
    axes[-1].legend(fontsize=8)
    fig.tight_layout()
    return fig
