"""C3's panels, tables and sanity floors: what the summary page shows of C1's and C2's records.

The verdicts come from `claims`; these functions lay out the measurements beside them (one
panel per task and label regime, intervals as text, names a reader understands) and check the
floors below which a masking comparison says little, so the page stays short.
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from mlmlib import floors, plots, tables, verdicts
from mlmlib.papers.selective_masking import claims, metrics
from mlmlib.papers.selective_masking.figures import arm_label
from mlmlib.papers.selective_masking.masking_figures import gap_points

RESULT_INDEX = ["task", "arm", "word list", "labels"]


def measured_text(conclusion: str, delta: float | None) -> str:
    """The paper's verdict with its reason, wrapped for the page."""
    measured = f"Measured: {conclusion}" + (f" (delta = {delta})" if delta is not None else "")
    return textwrap.fill(measured, width=88)


def score_panels(rows: pd.DataFrame, priors: dict[str, float], metric: str,
                 task_metrics: dict[str, str]):
    """One panel per task and label regime: each arm's test score on the metric the task's claim
    uses, seeds as dots, against the task's majority class. The page shows the figure."""
    rows = rows.assign(**{"arm / list": arm_label(rows)})
    tasks, regimes = list(dict.fromkeys(rows["task"])), list(dict.fromkeys(rows["labels"]))
    fig, axes = plt.subplots(len(tasks), len(regimes), squeeze=False,
                             figsize=(5.5 * len(regimes), 3.8 * len(tasks)))
    for (task, regime), part in rows.groupby(["task", "labels"], sort=False):
        ax = axes[tasks.index(task)][regimes.index(regime)]
        used, prior = metrics.claim_metric(task, metric, task_metrics), priors.get(task)
        plots.bars(part, x="arm / list", y=used, hue=None, xlabel="arm",
                   ylabel=f"test {metrics.METRIC_NAMES[used]}", title=f"{task}, {regime} labels",
                   ax=ax, baseline=prior, baseline_label="majority class")
        plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
        if prior is not None:  # the arms differ by hundredths: start the axis below the majority
            ax.set_ylim(max(0.0, min(prior - 0.1, part[used].min() - 0.02)),
                        min(1.0, part[used].max() + 0.03))
    plt.tight_layout()
    return fig


def paired_table(rows: list[dict], reference: str, metric: str, delta: float | None,
                 task_metrics: dict[str, str]) -> pd.DataFrame:
    """Every arm's mean test score over seeds and its paired difference to `reference`
    (`claims.paired_against`); empty without rows."""
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(claims.paired_against(rows, reference, metric, delta=delta,
                                              task_metrics=task_metrics))


def paired_shown(paired: pd.DataFrame, reference: str) -> pd.DataFrame:
    """`claims.paired_against`'s rows with their intervals as text, one row per result (the
    means over paired seeds, which the claims set beside the majority class, left out)."""
    paired = paired.drop(columns=["paired_mean", "reference_paired_mean"], errors="ignore")
    shown = tables.with_interval(paired, "mean", "ci_low", "ci_high", "seeds",
                                 "test score [95% CI]")
    if f"diff_vs_{reference}" in shown:
        shown = tables.with_interval(shown, f"diff_vs_{reference}", "diff_low", "diff_high",
                                     "paired_seeds", f"minus {reference} [95% CI]")
    if "paired_seeds" in shown:
        shown["paired_seeds"] = shown["paired_seeds"].astype("Int64")
    shown = shown.rename(columns={"word_list": "word list", "paired_seeds": "paired seeds",
                                  "t_pvalue": "t-test p", "wilcoxon_pvalue": "Wilcoxon p"})
    return shown.set_index(RESULT_INDEX).round(4)


def classifiers_learned(rows: list[dict], priors: dict[str, float], reference: str, metric: str,
                        task_metrics: dict[str, str]) -> dict[tuple[str, str], bool]:
    """Per (task, label regime): does `reference` or a selective arm beat the majority class?"""
    return claims.learned_groups(rows, priors, [reference, *claims.SELECTIVE], metric=metric,
                                 task_metrics=task_metrics)


def learned_lines(learned: dict[tuple[str, str], bool], priors: dict[str, float], metric: str,
                  task_metrics: dict[str, str]) -> list[str]:
    """Per (task, label regime) of `claims.learned_groups`: did any compared arm beat its
    majority class? A classifier that did not says nothing about its encoder."""
    lines = []
    for (task, regime), ok in learned.items():
        used = metrics.METRIC_NAMES[metrics.claim_metric(task, metric, task_metrics)]
        prior = priors.get(task)
        shown = "not recorded" if prior is None else f"{prior:.3f}"
        against = f"its majority class ({shown} {used})"
        lines.append(f"{task}, {regime} labels: " + (
            f"some compared arm beats {against}" if ok else
            f"NO compared arm beats {against}: these classifiers did not learn the task, "
            "so their comparison carries no information about the masking"))
    return lines


def largest_rate_gap(rates: pd.DataFrame, target: float) -> float:
    """The largest gap of a realised rate (any arm, task, word list) to the target, in points."""
    return float(gap_points(rates["realised_rate"], target).abs().max())


def largest_overheads(scores_runs: pd.DataFrame) -> dict[str, float]:
    """Per C1 run's word list: its largest extra masking time, as a share of a random step."""
    return {wl: round(max(o["overhead"].values()), 4)
            for wl, o in zip(scores_runs["word_list"], scores_runs["overhead"])}


def show_rates(rates: pd.DataFrame, scores_runs: pd.DataFrame) -> float:
    """C1's realised rates per arm, task and word list, and its masking overheads; returns the
    largest gap to the target rate in percentage points (NaN without C1 records)."""
    if rates.empty:
        print("no records of C1_task_scores for this profile")
        max_gap = float("nan")
    else:
        rates = rates.assign(task=rates["run_id"].map(dict(zip(scores_runs["run_id"],
                                                               scores_runs["task"]))))
        target = float(scores_runs["target_rate"].iloc[0])
        max_gap = largest_rate_gap(rates, target)
        print(f"target {target:.0%}; largest gap over arms and word lists: "
              f"{max_gap:.3f} percentage points")
        table = rates.pivot_table(index="arm", columns=["task", "word_list"],
                                  values="realised_rate")
        display(table.rename_axis(columns=["task", "word list"]).round(4))
    if not scores_runs.empty:
        print("masking overhead per step (extra masking time / random step):",
              largest_overheads(scores_runs))
    return max_gap


def list_size_sweep(rows: list[dict], reference: str, metric: str,
                    task_metrics: dict[str, str]) -> pd.DataFrame:
    """`claims.list_size_sweep` as a table, each size also as the page names it ("words")."""
    sweep = pd.DataFrame(claims.list_size_sweep(rows, reference, metric, task_metrics))
    if not sweep.empty:
        sweep["words"] = sweep["list_size"].map(lambda n: "whole list" if n == 0 else n)
    return sweep


def show_sweep(sweep: pd.DataFrame, reference: str) -> None:
    """The sweep over the word-list size, smallest sample first and the whole list last."""
    if sweep.empty:
        print("these runs use one word-list size per list: the sweep over word_list_size is a "
              "paper-profile run")
        return
    shown = tables.with_interval(
        sweep.sort_values("list_size", key=lambda n: n.replace(0, 10**9)),
        f"diff_vs_{reference}", "diff_low", "diff_high", "paired_seeds",
        f"minus {reference} [95% CI]")
    display(shown.set_index(["task", "arm", "lexicon", "labels", "words"])[
        ["metric", f"minus {reference} [95% CI]", "verdict"]])


def show_against_scratch(floor: list[dict]) -> None:
    """`claims.scratch_claims`: every pretrained arm minus scratch, paired by seed."""
    if not floor:
        print("no scratch arm in these runs")
        return
    shown = tables.with_interval(pd.DataFrame(floor), "effect", "low", "high", "seeds",
                                 "minus scratch [95% CI]")
    shown = shown.drop(columns=["claim", "delta"]).rename(columns={"word_list": "word list"})
    display(shown.set_index(RESULT_INDEX))


def floor_checks(rows: list[dict], metric: str, task_metrics: dict[str, str],
                 accuracy_floors: dict[str, float], floor_labels: str,
                 scratch_margin: float) -> list[dict]:
    """The sanity floors on the arms' means over seeds: every pretrained arm reaches its task's
    accuracy floor in the `floor_labels` regime, and beats scratch by `scratch_margin` on the
    task's claim metric (`floors.at_least`, `floors.above_scratch`)."""
    frame = pd.DataFrame(rows)
    checks = []
    if frame.empty:
        return checks
    frame["score"] = [r[metrics.claim_metric(r["task"], metric, task_metrics)] for r in rows]
    frame["arm"] = arm_label(frame)
    means = frame.groupby(["task", "labels", "arm"], as_index=False, sort=False)[
        ["accuracy", "score"]].mean()
    pretrained = means[means["arm"] != "scratch"]
    for task, floor in accuracy_floors.items():
        part = pretrained[(pretrained["task"] == task) & (pretrained["labels"] == floor_labels)]
        checks += floors.at_least(part, "accuracy", floor, ["task", "labels", "arm"],
                                  "test accuracy")
    checks += floors.above_scratch(means, "score", scratch_margin, ["task", "labels"])
    return checks


def show_floors(checks: list[dict]) -> None:
    """The floors' one-line verdict, red when one was missed, then every check."""
    display(floors.banner(checks))
    if checks:
        display(floors.styled(checks))


def claims_detail(claimed: list[dict], reference: str, delta: float | None) -> pd.DataFrame | None:
    """Every comparison with its interval, verdict and what the design could detect: read from
    each interval (its sd and seeds); with a margin, the seeds that would make the interval's
    half-width at most delta. None without a comparison."""
    if not claimed:
        return None
    detail = pd.DataFrame(claimed)
    design = [verdicts.design_from_interval(r.low, r.high, r.seeds, delta)
              for r in detail.itertuples()]
    detail["detectable (80% power)"] = [round(d["mde"], 4) for d in design]
    if delta is not None:
        detail[f"seeds for ±{delta:g}"] = [d["seeds_for_delta"] for d in design]
    shown = tables.with_interval(detail, "effect", "low", "high", "seeds",
                                 f"minus {reference} [95% CI]")
    shown = shown.drop(columns=["claim", "delta", "controls", "majority", "unit"],
                       errors="ignore").rename(columns={"word_list": "word list",
                                                        "learned": "classifiers learned",
                                                        "at_majority": "at majority class"})
    return shown.set_index(RESULT_INDEX)


def majority_rows(priors: dict[str, float], metric: str,
                  task_metrics: dict[str, str]) -> list[dict]:
    """Each task's majority class on the metric its claims use, as the record keeps it."""
    return [{"task": t, "metric": metrics.claim_metric(t, metric, task_metrics), "prior": p}
            for t, p in priors.items()]


def learned_rows(learned: dict[tuple[str, str], bool]) -> list[dict]:
    """`claims.learned_groups` as the record keeps it."""
    return [{"task": t, "labels": r, "learned": ok} for (t, r), ok in learned.items()]
