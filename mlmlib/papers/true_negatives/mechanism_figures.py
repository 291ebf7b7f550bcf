"""B3's figures and tables of paper B's mechanism on the synthetic testbed (synthetic_mechanism):
the loss share at false negatives and the flagging of true replacements over training per arm,
and a correction's benefit against the false-negative share that drives it."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from IPython.display import display

from mlmlib import plots, tables
from mlmlib.papers.true_negatives import claims
from mlmlib.papers.true_negatives import synthetic_mechanism as sm


def _over_training(curves: pd.DataFrame, column: str, what: str, title: str, ax=None):
    """`column` per logging window on `mix`, per arm: mean over languages with its 95% interval
    (a row per arm, step and language); a line saying so where there are no windows."""
    if not len(curves):
        print(f"no training windows with the {what}")
        return None
    ax = plots.curves(curves, x="step", y=column, hue="arm", xlabel="pretraining step",
                      ylabel=what, ax=ax, title=f"mix: {title} (95% CI over languages)")
    ax.legend(fontsize=7)
    return ax


def flagging_over_training(curves: pd.DataFrame, ax=None):
    """The discriminator's flagging of true replacements per logging window on `mix`, per arm."""
    return _over_training(curves, sm.TRAINING_FLAGGING, "true replacements flagged",
                          "the discriminator on true replacements", ax)


def loss_share_over_training(training: pd.DataFrame, ax=None):
    """The manipulation check over training: the share of the discriminator's training loss taken
    at false negatives per logging window on `mix`, per arm. A hard correction relabels or
    removes that loss."""
    return _over_training(sm.flagging_curves(training, claims.LOSS_SHARE), claims.LOSS_SHARE,
                          "loss share at false negatives", "what a correction acts on", ax)


def benefit_against_share(benefit: pd.DataFrame, ax=None):
    """Each run's benefit of a correction on the flagging of true replacements (arm minus
    electra/none) against the uncorrected generator's false-negative share, per corpus and arm."""
    if not len(benefit):
        print("no corrected arm beside electra/none: no benefit to plot")
        return None
    ax = ax or plt.subplots(figsize=(5.5, 3.8))[1]
    sns.scatterplot(benefit, x="fn_share", y="flagging", hue="arm", style="corpus", s=40, ax=ax)
    ax.axhline(0, color="grey", lw=0.8, ls="--")
    ax.set(xlabel="false negatives / replaced (electra/none, last windows)",
           ylabel="flagging benefit over electra/none", title="benefit against the false-negative share")
    ax.legend(fontsize=7)
    return ax


def mechanism_panels(summary) -> None:
    """B3: the three mechanism figures side by side (the loss share a correction acts on and the
    flagging of true replacements, over training; benefit against the false-negative share)."""
    _, axes = plt.subplots(1, 3, figsize=(16, 3.9))
    loss_share_over_training(summary.training, axes[0])
    flagging_over_training(summary.flagging, axes[1])
    benefit_against_share(summary.benefit, axes[2])
    plt.tight_layout()


def show_mechanism(summary) -> None:
    """B3: the mechanism rows and the benefit per corpus (intervals over languages)."""
    if len(summary.mechanism):
        shown = tables.with_interval(summary.mechanism, "difference", "ci_low", "ci_high", "languages",
                                     name="ci", unit="language")
        display(shown[["claim", "arm", "what", "ci", "languages", "verdict"]].rename(
            columns={"ci": "arm - uncorrected [95% CI]", "what": "measure"}).set_index(["claim", "arm"]))
    if len(summary.benefit):
        display(sm.benefit_by_corpus(summary.benefit).set_index(["corpus", "arm"]).rename(columns={
            "fn_share": "false-negative share", "flagging": "flagging benefit",
            "a_d1": "A-D1 benefit", "b_d1": "B-D1 benefit"}))


def show_curve(summary) -> None:
    """B3: where pretraining helps: electra/none and scratch by fine-tuning size and test set."""
    if not len(summary.curve):
        print("no fine-tuning curve recorded")
        return
    display(summary.curve.drop(columns="low").set_index(["train_size", "test set"]).round(3))


def show_testbed(summary) -> None:
    """B3: the false-negative share over training per corpus, the synthetic testbed's tables
    (figures.show_synthetic), then how many languages ran each arm, the fine-tuning curve and
    each run's majority classes."""
    from mlmlib.papers.true_negatives import figures

    figures.synthetic_fn_curves(summary.training)
    plt.show()
    figures.show_synthetic(summary)
    if len(summary.languages):
        display(summary.languages.set_index(["corpus", "arm"]))
    show_curve(summary)
    if len(summary.majority):
        display(summary.majority.set_index(["language_seed", "pretrain_seed"]).round(3))
