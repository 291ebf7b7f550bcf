"""Paper C's claims, from C2's record rows: paired differences, a claim table and a conclusion.

The paper's claim: every selective function beats random masking at the same rate. Each
(task, selective arm, word list, label regime) is one comparison with random masking, paired
by seed; its verdict is `stats.verdict` on the interval of the paired difference, except where
no compared classifier beats the majority class (then the comparison says nothing about the
masking: not resolved). `stats.combine` turns the comparisons into the paper's verdict.
A second table checks that pretraining helps at all: every pretrained arm against `scratch`.
`scorecard` gives the summary's short rows (SCORECARD_KEYS), worded the same in every profile.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from mlmlib import stats
from mlmlib.papers.selective_masking.experiment import SELECTIVE
from mlmlib.stats import (  # noqa: F401 - shared by the three papers, used by the notebooks
    SCORECARD_COLUMNS,
    SCORECARD_KEYS,
    interval_text,
    scorecard_table,
)

# The rows every summary saves under "scorecard": the same keys for every paper.
# The paper's claim, as the scorecard words it when no comparison was made.
CLAIM = "Selective masking beats random masking"


def _frame(rows: list[dict]) -> pd.DataFrame:
    """Record rows as a table; rows without a task (one task only) get task "-"."""
    frame = pd.DataFrame(rows)
    if not frame.empty and "task" not in frame:
        frame["task"] = "-"
    return frame


def task_priors(runs: pd.DataFrame) -> dict[str, float]:
    """The majority-class test accuracy C2 recorded (stats.class_prior), per task."""
    if runs.empty or "majority_accuracy" not in runs:
        return {}
    tasks = runs["task"] if "task" in runs else pd.Series("-", index=runs.index)
    return {str(t): float(v) for t, v in runs.groupby(tasks)["majority_accuracy"].mean().items()}


def paired_against(rows: list[dict], reference: str = "random", metric: str = "accuracy",
                   direction: str = "greater", delta: float | None = None) -> list[dict]:
    """Each arm minus `reference` over the seeds both ran, per (task, word list, labels); stats rows."""
    frame = _frame(rows)
    if frame.empty:
        return []
    ref = frame[frame["arm"] == reference].set_index(["task", "labels", "seed"])[metric]
    out = []
    for (task, arm, word_list, regime), group in frame.groupby(["task", "arm", "word_list", "labels"],
                                                                sort=False):
        ci = stats.mean_ci(group[metric])
        row = {"task": task, "arm": arm, "word_list": word_list, "labels": regime, "seeds": ci.n,
               "mean": ci.mean, "ci_low": ci.low, "ci_high": ci.high}
        if arm != reference:
            g = group.set_index("seed")[metric]
            seeds = [s for s in g.index if (task, regime, s) in ref.index]
            test = stats.paired_test(g.loc[seeds].to_numpy(),
                                     ref.loc[[(task, regime, s) for s in seeds]].to_numpy())
            row |= {f"diff_vs_{reference}": test.diff.mean, "diff_low": test.diff.low,
                    "diff_high": test.diff.high, "paired_seeds": test.diff.n,
                    "t_pvalue": test.t_pvalue, "wilcoxon_pvalue": test.wilcoxon_pvalue,
                    "verdict": stats.verdict(test.diff, direction, delta)}
        out.append(row)
    return out


def learned_groups(rows: list[dict], priors: dict[str, float], arms: list[str],
                   margin: float = stats.LEARNED_MARGIN) -> dict[tuple[str, str], bool]:
    """Per (task, label regime): does any of `arms` (mean accuracy over seeds) beat the majority class?

    Always on accuracy, whatever metric is compared: the prior is an accuracy. A task without
    a recorded prior counts as not learned.
    """
    frame = _frame(rows)
    if frame.empty:
        return {}
    out = {}
    for (task, regime), group in frame.groupby(["task", "labels"], sort=False):
        compared = group[group["arm"].isin(list(arms))]
        means = compared.groupby(["arm", "word_list"])["accuracy"].mean()
        prior = priors.get(task, float("nan"))
        out[(task, regime)] = any(stats.learned(m, prior, margin) for m in means)
    return out


def _claim(row: dict, reference: str, text: str, delta: float | None) -> dict:
    """One claim-table row from a `paired_against` row."""
    return {"claim": text, "task": row["task"], "labels": row["labels"], "arm": row["arm"],
            "word_list": row["word_list"], "effect": row[f"diff_vs_{reference}"],
            "low": row["diff_low"], "high": row["diff_high"], "seeds": row["paired_seeds"],
            "delta": delta, "verdict": row["verdict"]}


def selective_claims(rows: list[dict], priors: dict[str, float], reference: str = "random",
                     metric: str = "accuracy", delta: float | None = None) -> list[dict]:
    """The claim table: every selective arm against `reference`, one row per (task, word list, labels)."""
    learned = learned_groups(rows, priors, [reference, *SELECTIVE])
    out = []
    for row in paired_against(rows, reference, metric, "greater", delta):
        if row["arm"] not in SELECTIVE:
            continue
        text = (f"{row['arm']} masking ({row['word_list']}) beats {reference} masking on {metric}, "
                f"{row['labels']} labels, {row['task']}")
        claim = _claim(row, reference, text, delta) | {"learned": learned[(row["task"], row["labels"])]}
        if not claim["learned"]:  # equal accuracies of untrained classifiers say nothing about masking
            claim["verdict"] = stats.NOT_RESOLVED
        out.append(claim)
    return out


def scratch_claims(rows: list[dict], metric: str = "accuracy", delta: float | None = None) -> list[dict]:
    """Every pretrained arm against `scratch` (the encoder never pretrained); [] without a scratch arm."""
    if not any(r["arm"] == "scratch" for r in rows):
        return []
    return [_claim(row, "scratch", f"{row['arm']} ({row['word_list']}) beats scratch on {metric}, "
                                   f"{row['labels']} labels, {row['task']}", delta)
            for row in paired_against(rows, "scratch", metric, "greater", delta) if row["arm"] != "scratch"]


def conclusion(claims: list[dict], floor: list[dict] = ()) -> tuple[str, str]:
    """The paper's verdict over every comparison (stats.combine) and a sentence that says why."""
    verdicts = [c["verdict"] for c in claims]
    overall = stats.combine(verdicts)
    if not claims:
        return overall, f"{overall}: no selective arm was compared with random masking"
    counts = Counter(verdicts)
    tally = ", ".join(f"{counts[v]} {v}" for v in stats.VERDICTS if counts[v])
    reasons = []
    unlearned = sum(not c["learned"] for c in claims)
    if unlearned:
        reasons.append(f"in {unlearned}, no compared classifier beats the majority class, so they say "
                       "nothing about the masking")
    few = sum(c["seeds"] < stats.MIN_SEEDS for c in claims)
    if few:
        reasons.append(f"{few} have fewer than {stats.MIN_SEEDS} paired seeds")
    if floor and not any(f["verdict"] == stats.REPRODUCED for f in floor):
        reasons.append("no pretrained arm is shown to beat scratch: the base may bring nothing here")
    why = "; ".join(reasons)
    text = f"{overall}: of {len(claims)} selective comparisons, {tally}"
    return overall, text + (f" ({why})" if why else "")



def scorecard(claims: list[dict], reference: str = "random", metric: str = "accuracy",
              priors: dict[str, float] | None = None) -> list[dict]:
    """Paper C's claim as scorecard rows (SCORECARD_KEYS): one per `selective_claims` comparison.

    `claim` names the arm, word list, label regime and task; `effect` the paired difference with
    its 95% interval. A comparison whose classifiers are all at chance, or with too few seeds, is
    not resolved and says why; no comparison at all gives one row, not measured.
    """
    rows = []
    for c in claims:
        if c["verdict"] not in stats.VERDICTS:
            raise ValueError(f"unknown verdict {c['verdict']!r}; verdicts: {stats.VERDICTS}")
        seeds = int(c["seeds"])
        diff = interval_text(c["effect"], c["low"], c["high"], seeds)
        effect = f"test {metric}, {c['arm']} - {reference} = {diff}"
        reasons = []
        if not c["learned"]:
            prior = (priors or {}).get(c["task"])
            reasons.append("no compared classifier beats the majority class"
                           + (f" ({prior:.3f})" if prior is not None else "") + f" by {stats.LEARNED_MARGIN:g}")
        if c["verdict"] == stats.NOT_RESOLVED and seeds < stats.MIN_SEEDS:
            reasons.append(f"{seeds} paired seed{'s' if seeds != 1 else ''}, a verdict needs {stats.MIN_SEEDS}")
        if reasons:
            effect += "; not judged: " + "; ".join(reasons)
        delta = c.get("delta")
        rows.append({"claim": f"{c['arm']} masking ({c['word_list']}) beats {reference}: "
                              f"{c['labels']} labels, {c['task']}",
                     "effect": effect, "seeds": seeds, "delta": None if delta is None else float(delta),
                     "verdict": c["verdict"]})
    if not rows:
        rows.append({"claim": CLAIM, "effect": "not measured: no selective arm was compared with "
                                               f"{reference} masking", "seeds": 0, "delta": None,
                     "verdict": stats.NOT_RESOLVED})
    return rows
