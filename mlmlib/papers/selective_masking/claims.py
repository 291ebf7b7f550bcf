"""Paper C's claims, from C2's record rows: paired differences, a claim table and a conclusion.

The paper's claim: every selective function beats random masking at the same rate. Each
(task, selective arm, word list, label regime) is one comparison with random masking, paired
by seed; its verdict is `verdicts.verdict` on the interval of the paired difference, except where
no compared classifier beats its task's majority class (then the comparison says nothing about
the masking: not resolved). Each task is compared on its own metric (`claim_metric`: macro-F1
for the hate speech task, whose majority class is about 93% of the tweets) and judged against
its own majority class on that metric (`task_priors`). `verdicts.combine` turns the comparisons into the paper's verdict.
A second table checks that pretraining helps at all: every pretrained arm against `scratch`.
`scorecard` gives the summary's short rows (SCORECARD_KEYS), worded the same in every profile.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from mlmlib import configs, stats, verdicts
from mlmlib.papers.selective_masking.config import ContinuedMLM, TaskText
from mlmlib.papers.selective_masking.experiment import SELECTIVE
from mlmlib.papers.selective_masking.metrics import METRIC_NAMES, PRIOR_KEYS, check_metric, claim_metric
from mlmlib.verdicts import (  # noqa: F401 - shared by the three papers, used by the notebooks
    SCORECARD_COLUMNS,
    SCORECARD_KEYS,
    interval_text,
    scorecard_table,
)

# The rows every summary saves under "scorecard": the same keys for every paper.
# The paper's claim, as the scorecard words it when no comparison was made.
CLAIM = "Selective masking beats random masking"
TESTBED = "real text: MiniLM base"
# The margin against the nearest anchor that reports an effect (verdicts.delta_against_paper): paper C
# reports none we could read; Train No Evil's selective - random gains were 0.88, 1.13 and 1.12
# accuracy points (MR/Yelp, MR/Amazon, Restaurant/Yelp): delta is at most half the smallest.
PAPER_EFFECT = 0.0088
DELTA_SOURCE = "Train No Evil (Gu et al., 2020): selective - random, MR/Yelp, the smallest of its three gains"
# Positive controls (verdicts.control), thresholds stated on the summary page:
LIST_SHARE_RATIO_MIN = 1.5  # the selective arm's share of list words among masked tokens / random's


def _frame(rows: list[dict]) -> pd.DataFrame:
    """Record rows as a table; rows without a task (one task only) get task "-"."""
    frame = pd.DataFrame(rows)
    if not frame.empty and "task" not in frame:
        frame["task"] = "-"
    return frame


def task_priors(runs: pd.DataFrame, metric: str = "accuracy",
                task_metrics: dict[str, str] | None = None) -> dict[str, float]:
    """Per task, the majority-class test score C2 recorded on the metric that task's claims use.

    A task whose records lack that score (records older than macro-F1 priors) has no prior.
    """
    if runs.empty:
        return {}
    tasks = runs["task"] if "task" in runs else pd.Series("-", index=runs.index)
    out = {}
    for task, group in runs.groupby(tasks):
        key = PRIOR_KEYS[claim_metric(str(task), metric, task_metrics)]
        values = group[key].dropna() if key in group else pd.Series(dtype=float)
        if len(values):
            out[str(task)] = float(values.mean())
    return out


def paired_against(rows: list[dict], reference: str = "random", metric: str = "accuracy",
                   direction: str = "greater", delta: float | None = None,
                   task_metrics: dict[str, str] | None = None) -> list[dict]:
    """Each arm minus `reference` over the seeds both ran, per (task, word list, labels); stats rows.

    Each task is compared on `claim_metric(task, metric, task_metrics)`, named in the row's "metric".
    """
    check_metric(metric, task_metrics)
    frame = _frame(rows)
    if frame.empty:
        return []
    twice = frame[frame.duplicated(["task", "arm", "word_list", "labels", "seed"], keep=False)]
    if not twice.empty:
        first = twice.iloc[0]
        raise ValueError(f"rows: arm {first['arm']!r} ({first['word_list']}) ran more than once for "
                         f"seed {first['seed']} of task {first['task']!r}, {first['labels']} labels; "
                         "a plan entry that sweeps a setting must leave the shared arms to one entry")
    ref = frame[frame["arm"] == reference].set_index(["task", "labels", "seed"])
    out = []
    for (task, arm, word_list, regime), group in frame.groupby(["task", "arm", "word_list", "labels"],
                                                                sort=False):
        used = claim_metric(task, metric, task_metrics)
        ci = stats.mean_ci(group[used])
        row = {"task": task, "arm": arm, "word_list": word_list, "labels": regime, "metric": used,
               "seeds": ci.n, "mean": ci.mean, "ci_low": ci.low, "ci_high": ci.high}
        if arm != reference:
            g = group.set_index("seed")[used]
            seeds = [s for s in g.index if (task, regime, s) in ref.index]
            test = stats.paired_test(g.loc[seeds].to_numpy(),
                                     ref.loc[[(task, regime, s) for s in seeds], used].to_numpy())
            row |= {f"diff_vs_{reference}": test.diff.mean, "diff_low": test.diff.low,
                    "diff_high": test.diff.high, "paired_seeds": test.diff.n,
                    "t_pvalue": test.t_pvalue, "wilcoxon_pvalue": test.wilcoxon_pvalue,
                    "verdict": verdicts.verdict(test.diff, direction, delta)}
        out.append(row)
    return out


def learned_groups(rows: list[dict], priors: dict[str, float], arms: list[str],
                   margin: float = verdicts.LEARNED_MARGIN, metric: str = "accuracy",
                   task_metrics: dict[str, str] | None = None) -> dict[tuple[str, str], bool]:
    """Per (task, label regime): does any of `arms` (its mean over seeds) beat the task's majority class?

    Each task on the metric its claims use, against `priors[task]`, the majority-class score on
    that metric (`task_priors` with the same metric and task_metrics). A task without a recorded
    prior counts as not learned.
    """
    check_metric(metric, task_metrics)
    frame = _frame(rows)
    if frame.empty:
        return {}
    out = {}
    for (task, regime), group in frame.groupby(["task", "labels"], sort=False):
        compared = group[group["arm"].isin(list(arms))]
        means = compared.groupby(["arm", "word_list"])[claim_metric(task, metric, task_metrics)].mean()
        prior = priors.get(task, float("nan"))
        out[(task, regime)] = any(verdicts.learned(m, prior, margin) for m in means)
    return out


def masking_took(composition: pd.DataFrame | None, task: str, word_list: str, arm: str, claim: str,
                 reference: str = "random") -> dict:
    """Control (took): the selective arm masks list words at least LIST_SHARE_RATIO_MIN times as
    often as `reference`: the ratio of their list shares of masked tokens (C1's
    `masked_composition`, for the same task and word list)."""
    name = f"{arm} masks list words more often than {reference}: list share of masked tokens, ratio"
    shares = verdicts.record_value(composition, "list_share", claim, name)
    part = composition.assign(_share=shares)
    part = part[(part["task"] == task) & (part["word_list"] == word_list)].set_index("arm")["_share"]
    value = part[arm] / part[reference] if {arm, reference} <= set(part.index) else None
    if value is not None and not part[reference] > 0:  # no list word in the task's text to mask
        value, name = 0.0, name + ": no list word in the task's text"
    return verdicts.control(claim, name, verdicts.TOOK, value, LIST_SHARE_RATIO_MIN, bounds=(1, float("inf")),
                         field=f"C1 masked_composition ({task}, {word_list})")


def mlm_moves_score(rows: list[dict], task: str, labels: str, metric: str, claim: str,
                    task_metrics: dict[str, str] | None = None) -> dict:
    """Control (exists): continued MLM itself moves the score, so a way of masking in it has
    something to change: the 95% interval of random - none (paired over seeds) clears zero; the
    measured value is its end nearest zero, signed toward the mean."""
    name = "continued MLM moves the score: random - none, 95% interval's end nearest zero"
    paired = [r for r in paired_against(rows, "none", metric, task_metrics=task_metrics)
              if r["arm"] == "random" and r["task"] == task and r["labels"] == labels]
    value = None
    if paired and paired[0]["paired_seeds"] >= verdicts.MIN_SEEDS:
        r = paired[0]
        value = r["diff_low"] if r["diff_vs_none"] >= 0 else -r["diff_high"]
    return verdicts.control(claim, name, verdicts.EXISTS, value, 0.0, op=">",
                         field=f"C2 rows of arms 'random' and 'none' ({task}, {labels} labels)")


def _claim(row: dict, reference: str, text: str, delta: float | None) -> dict:
    """One claim-table row from a `paired_against` row."""
    return {"claim": text, "task": row["task"], "labels": row["labels"], "arm": row["arm"],
            "word_list": row["word_list"], "metric": row["metric"], "effect": row[f"diff_vs_{reference}"],
            "low": row["diff_low"], "high": row["diff_high"], "seeds": row["paired_seeds"],
            "delta": delta, "verdict": row["verdict"]}


def selective_claims(rows: list[dict], priors: dict[str, float], reference: str = "random",
                     metric: str = "accuracy", delta: float | None = None,
                     task_metrics: dict[str, str] | None = None,
                     composition: pd.DataFrame | None = None) -> list[dict]:
    """The claim table: every selective arm against `reference`, one row per (task, word list, labels).

    `priors`: per task, its majority-class score on the metric its claims use (`task_priors`).
    `composition`: C1's `masked_composition` rows (task, word_list, arm, list_share), for the
    controls (`masking_took`, `mlm_moves_score`); a verdict whose control failed is insensitive.
    """
    delta_source(delta)  # a margin wider than half the anchor's effect stops here, before any verdict
    learned = learned_groups(rows, priors, [reference, *SELECTIVE], metric=metric,
                             task_metrics=task_metrics)
    out = []
    for row in paired_against(rows, reference, metric, "greater", delta, task_metrics):
        if row["arm"] not in SELECTIVE:
            continue
        text = (f"{row['arm']} masking ({row['word_list']}) beats {reference} masking on "
                f"{METRIC_NAMES[row['metric']]}, {row['labels']} labels, {row['task']}")
        # too few paired seeds: not resolved for want of data, with no control to measure
        judged = row["paired_seeds"] >= verdicts.MIN_SEEDS
        controls = [masking_took(composition, row["task"], row["word_list"], row["arm"], text, reference),
                    mlm_moves_score(rows, row["task"], row["labels"], metric, text, task_metrics)] if judged else []
        claim = _claim(row, reference, text, delta) | {"learned": learned[(row["task"], row["labels"])],
                                                       "prior": priors.get(row["task"]), "controls": controls}
        if judged:
            claim["verdict"] = verdicts.apply_controls(claim["verdict"], controls, text)
        if not claim["learned"]:  # equal accuracies of untrained classifiers say nothing about masking
            claim["verdict"] = verdicts.NOT_RESOLVED
        out.append(claim)
    return out


def scratch_claims(rows: list[dict], metric: str = "accuracy", delta: float | None = None,
                   task_metrics: dict[str, str] | None = None) -> list[dict]:
    """Every pretrained arm against `scratch` (the encoder never pretrained); [] without a scratch arm."""
    if not any(r["arm"] == "scratch" for r in rows):
        return []
    return [_claim(row, "scratch", f"{row['arm']} ({row['word_list']}) beats scratch on "
                                   f"{METRIC_NAMES[row['metric']]}, {row['labels']} labels, {row['task']}",
                   delta)
            for row in paired_against(rows, "scratch", metric, "greater", delta, task_metrics)
            if row["arm"] != "scratch"]


def list_size_sweep(rows: list[dict], reference: str = "random", metric: str = "accuracy",
                    task_metrics: dict[str, str] | None = None) -> list[dict]:
    """Selective arms minus `reference` by word-list size, where a list ran at more than one size.

    Rows name their list as "vader" or "vader, 100 words" in `word_list`, and carry the lexicon
    and `list_size` (0: the whole list) beside it; rows without a `list_size` (older records) are
    left out.
    """
    sizes = {r["word_list"]: (r["lexicon"], r["list_size"]) for r in rows
             if pd.notna(r.get("list_size", float("nan")))}
    out = []
    for row in paired_against(rows, reference, metric, "greater", None, task_metrics):
        if row["arm"] in SELECTIVE and row["word_list"] in sizes:
            lexicon, size = sizes[row["word_list"]]
            out.append(row | {"lexicon": lexicon, "list_size": int(size)})
    counts = Counter((r["task"], r["arm"], r["lexicon"], r["labels"]) for r in out)
    return [r for r in out if counts[(r["task"], r["arm"], r["lexicon"], r["labels"])] > 1]


def conclusion(claims: list[dict], floor: list[dict] = ()) -> tuple[str, str]:
    """The paper's verdict over every comparison (verdicts.combine) and a sentence that says why."""
    found = [c["verdict"] for c in claims]
    overall = verdicts.combine(found)
    if not claims:
        return overall, f"{overall}: no selective arm was compared with random masking"
    counts = Counter(found)
    tally = ", ".join(f"{counts[v]} {v}" for v in verdicts.VERDICTS if counts[v])
    reasons = []
    unlearned = sum(not c["learned"] for c in claims)
    if unlearned:
        reasons.append(f"in {unlearned}, no compared classifier beats the majority class, so they say "
                       "nothing about the masking")
    few = sum(c["seeds"] < verdicts.MIN_SEEDS for c in claims)
    if few:
        reasons.append(f"{few} have fewer than {verdicts.MIN_SEEDS} paired seeds")
    if floor and not any(f["verdict"] == verdicts.REPRODUCED for f in floor):
        reasons.append("no pretrained arm is shown to beat scratch: the base may bring nothing here")
    why = "; ".join(reasons)
    text = f"{overall}: of {len(claims)} selective comparisons, {tally}"
    return overall, text + (f" ({why})" if why else "")



def mlm_tokens(params: dict) -> int:
    """Tokens the continued MLM reads per arm: steps x batch x length, of C2's `mlm` and `text`
    groups (a plan's overrides, resolved against the defaults); records made before the groups
    name them mlm_steps, mlm_batch_size and max_length."""
    if "mlm_steps" in params and not pd.isna(params["mlm_steps"]):
        return int(params["mlm_steps"]) * int(params["mlm_batch_size"]) * int(params["max_length"])

    def group(cls, key):
        return configs.resolve(cls, params.get(key) if isinstance(params.get(key), dict) else {})

    mlm, text = group(ContinuedMLM, "mlm"), group(TaskText, "text")
    return int(mlm["steps"]) * int(mlm["batch_size"]) * int(text["max_length"])


def dose_text(ours: list[dict], paper: list[dict]) -> str:
    """The continued MLM's dose, ours against the paper profile's: tokens per arm."""
    return verdicts.dose_text(mlm_tokens(ours[0]) if ours else None,
                              mlm_tokens(paper[0]) if paper else None,
                              "tokens of continued MLM per arm")


def delta_source(delta: float | None) -> str:
    """Where the margin comes from, checked against the anchor (at most half its effect)."""
    if delta is None:
        return "no margin given: no comparison can be called equivalent"
    return verdicts.delta_against_paper(delta, PAPER_EFFECT, DELTA_SOURCE)


def scorecard(claims: list[dict], reference: str = "random", dose: str = "") -> list[dict]:
    """Paper C's claim as scorecard rows (SCORECARD_KEYS): one per `selective_claims` comparison.

    `claim` names the arm, word list, label regime and task; `effect` the paired difference on
    the comparison's metric with its 95% interval. A comparison whose classifiers are all at the
    majority class, or with too few seeds, is not resolved and says why; no comparison at all
    gives one row, not measured.
    """
    rows = []
    for c in claims:
        seeds = int(c["seeds"])
        diff = interval_text(c["effect"], c["low"], c["high"], seeds)
        name = METRIC_NAMES[c["metric"]]
        effect = f"test {name}, {c['arm']} - {reference} = {diff}"
        reasons = []
        if not c["learned"]:
            prior = c.get("prior")
            reasons.append("no compared classifier beats the majority class"
                           + (f" ({prior:.3f} {name})" if prior is not None else "")
                           + f" by {verdicts.LEARNED_MARGIN:g}")
        if c["verdict"] == verdicts.NOT_RESOLVED and seeds < verdicts.MIN_SEEDS:
            reasons.append(f"{seeds} paired seed{'s' if seeds != 1 else ''}, a verdict needs {verdicts.MIN_SEEDS}")
        if reasons:
            effect += "; not judged: " + "; ".join(reasons)
        delta = c.get("delta")
        rows.append(verdicts.card(f"{c['arm']} masking ({c['word_list']}) beats {reference}: "
                               f"{c['labels']} labels, {c['task']}", effect, seeds, delta, c["verdict"],
                               diff=stats.Interval(c["effect"], c["low"], c["high"], seeds), direction="greater",
                               controls=c.get("controls", []), dose=dose, testbed=TESTBED,
                               delta_source=delta_source(delta)))
    if not rows:
        rows.append(verdicts.card(CLAIM, f"not measured: no selective arm was compared with {reference} masking",
                               0, None, verdicts.NOT_RESOLVED, dose=dose, testbed=TESTBED))
    return rows
