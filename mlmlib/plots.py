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
