"""Seaborn figure helpers shared by the notebooks: one helper per kind of figure."""

from __future__ import annotations

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

sns.set_theme(context="notebook", style="whitegrid")


def distributions(data: dict[str, np.ndarray], xlabel: str, title: str = "", ax=None):
    """Several named samples side by side (box plus every value as a dot), one row per sample."""
    frame = pd.DataFrame([(k, float(v)) for k, vs in data.items() for v in np.asarray(vs)],
                         columns=["group", xlabel])
    ax = ax or plt.subplots(figsize=(7, 0.6 * len(data) + 1.2))[1]
    sns.boxplot(frame, x=xlabel, y="group", hue="group", legend=False, showfliers=False,
                fill=False, ax=ax)
    sns.stripplot(frame, x=xlabel, y="group", color="black", size=2, alpha=0.4, ax=ax)
    ax.set(ylabel="", title=title)
    return ax


def curves(frame: pd.DataFrame, x: str, y: str, hue: str, xlabel: str, ylabel: str,
           title: str = "", ax=None, logx: bool = False):
    """Lines of y against x per hue, with the mean and its 95% interval over seeds."""
    ax = ax or plt.subplots(figsize=(6, 3.5))[1]
    sns.lineplot(frame, x=x, y=y, hue=hue, marker="o", errorbar=("ci", 95), ax=ax)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    if logx:
        ax.set_xscale("log")
    return ax


def bars(frame: pd.DataFrame, x: str, y: str, hue: str | None, xlabel: str, ylabel: str,
         title: str = "", ax=None, baseline: float | None = None, baseline_label: str = "baseline"):
    """Bars of the mean with 95% intervals over seeds, seeds as dots, optional baseline line."""
    ax = ax or plt.subplots(figsize=(6, 3.5))[1]
    sns.barplot(frame, x=x, y=y, hue=hue, errorbar=("ci", 95), alpha=0.7, ax=ax)
    with warnings.catch_warnings():  # seaborn warns about a black palette for hue; it is meant
        warnings.simplefilter("ignore", FutureWarning)
        sns.stripplot(frame, x=x, y=y, hue=hue, dodge=hue is not None, color="black", size=3,
                      legend=False, ax=ax)
    if baseline is not None:
        ax.axhline(baseline, ls="--", color="grey", label=baseline_label)
        ax.legend()
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    return ax


def scatter_with_fit(frame: pd.DataFrame, x: str, y: str, xlabel: str, ylabel: str,
                     title: str = "", hue: str | None = None, ax=None):
    """Scatter of two measures with a least-squares line (for correlation figures)."""
    ax = ax or plt.subplots(figsize=(5, 4))[1]
    sns.scatterplot(frame, x=x, y=y, hue=hue, s=12, alpha=0.6, ax=ax)
    sns.regplot(frame, x=x, y=y, scatter=False, color="black", ax=ax)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    return ax


# One colour per verdict (mlmlib.stats' vocabulary), the same on every page and in the scorecard.
VERDICT_COLOURS = {"reproduced": "#1b7837", "contradicted": "#b2182b", "equivalent within ±delta": "#2166ac",
                   "insensitive": "#e08214", "not resolved": "#777777"}


def forest(rows: list[dict], title: str = "", ax=None):
    """Every claim's effect with its 95% interval (scorecard rows), zero and each row's ±delta band
    drawn, coloured by verdict; a row with no single difference (estimate None) is left out."""
    shown = [r for r in rows if r.get("estimate") is not None and r.get("low") is not None]
    ax = ax or plt.subplots(figsize=(8, 0.32 * max(len(shown), 1) + 1.4))[1]
    for i, r in enumerate(shown):
        colour = VERDICT_COLOURS.get(r["verdict"], "black")
        if r.get("delta"):
            centre = r["delta"] if r.get("direction") == "at_most" else 0.0
            half = r["delta"] if r.get("direction") != "at_most" else 0.0
            ax.fill_betweenx([i - 0.4, i + 0.4], centre - half, centre + half, color="#dddddd", lw=0)
            if r.get("direction") == "at_most":
                ax.plot([centre, centre], [i - 0.45, i + 0.45], color="#444444", ls="--", lw=1.5)
        ax.plot([r["low"], r["high"]], [i, i], color=colour, lw=2)
        ax.plot(r["estimate"], i, "o", color=colour, ms=5)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(range(len(shown)), [_short_label(r["claim"]) for r in shown], fontsize=8)
    ax.invert_yaxis()
    handles = [plt.Line2D([], [], color=c, marker="o", lw=2, label=v) for v, c in VERDICT_COLOURS.items()
               if any(r["verdict"] == v for r in shown)]
    handles.append(plt.Rectangle((0, 0), 1, 1, color="#dddddd", label="±delta"))
    if any(r.get("direction") == "at_most" for r in shown):
        handles.append(plt.Line2D([], [], color="#444444", ls="--", label="the bound (at most)"))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set(xlabel="effect (difference the claim is about) with its 95% interval", title=title)
    return ax


def _short_label(text: str, width: int = 70) -> str:
    """A claim shortened to one line of a figure's axis."""
    return text if len(text) <= width else text[: width - 1] + "…"
