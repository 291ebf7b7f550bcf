"""Paper C's claims, from C2's record rows: paired differences, a claim table and a conclusion.

The paper's claim: every selective function beats random masking at the same rate. Each
(task, selective arm, word list, label regime) is one comparison with random masking, paired
by seed; its verdict is `verdicts.decide` on the interval of the paired difference with the
claim's three positive controls (`selective_controls`, intervals over seeds) and the compared arms
at their majority class (an arm that does not beat it says nothing about the masking: not
resolved). Each task is compared on its own metric (`claim_metric`: macro-F1 for the hate speech
task, whose majority class is about 93% of the tweets) and judged against its own majority class
on that metric (`task_priors`). `verdicts.combine` turns the comparisons into the paper's verdict.
A second table checks that pretraining helps at all: every pretrained arm against `scratch`.
`scorecard` gives the summary's short rows (SCORECARD_KEYS), worded the same in every profile.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from mlmlib import configs, stats, verdicts
from mlmlib.papers.selective_masking.config import ContinuedMLM, TaskText
from mlmlib.papers.selective_masking.experiment import SELECTIVE
from mlmlib.papers.selective_masking.metrics import (
    METRIC_NAMES,
    PRIOR_KEYS,
    check_metric,
    claim_metric,
)
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
# Positive controls (`selective_controls`): each threshold is a principle the pages state, none
# is read off a pilot. The selective arm's share of list words among masked tokens / random's:
LIST_SHARE_RATIO_MIN = 1.5
RATIO_PRINCIPLE = ("at a ratio r, a share (r - 1) / r of the list words the selective arm masks "
                   "are masked because of the selection; at 1.5 that is a third, below which the "
                   "two arms train on nearly the same masks")
DROP_PRINCIPLE = ("continued MLM that does not lower the masked-LM loss on held-out task text has "
                  "learned nothing of that text, so how it masked cannot matter")
MOVED_PRINCIPLE = ("continued MLM that does not move the score (random against none, either way) "
                   "leaves no way of masking in it anything to change")


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
                    "paired_mean": float(g.loc[seeds].mean()) if seeds else float("nan"),
                    "reference_paired_mean": float(ref.loc[[(task, regime, s) for s in seeds],
                                                           used].mean()) if seeds else float("nan"),
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


# ---------------------------------------------------------------- the claim's controls
# Paper C's claim declares three positive controls, the same set on every testbed (C2's real text,
# C4's synthetic languages); each is an interval over the claim's blocks (seeds, languages).


def toward_mean(diff: stats.Interval) -> stats.Interval:
    """A difference signed toward its mean (its mean >= 0), so that "clears zero in either
    direction" reads as its low end > 0."""
    if not diff.mean < 0:
        return diff
    return stats.Interval(-diff.mean, -diff.high, -diff.low, diff.n)


def by_seed(dosed: pd.DataFrame, task: str, word_list: str | None, arm: str, dose: int,
             column: str) -> pd.Series:
    """One arm's `column` per seed at `dose` in the dose rows (word_list None: any list)."""
    if dosed.empty or column not in dosed:
        return pd.Series(dtype=float)
    keep = (dosed["task"] == task) & (dosed["arm"] == arm) & (dosed["dose"] == dose)
    if word_list is not None:
        keep &= dosed["word_list"] == word_list
    return dosed[keep].groupby("seed")[column].mean().astype(float)


def paired(a: pd.Series, b: pd.Series) -> stats.Interval:
    """a - b over the blocks (seeds, languages) both have, with its 95% interval."""
    blocks = sorted(set(a.dropna().index) & set(b.dropna().index))
    return stats.paired_test(a.loc[blocks].to_numpy(), b.loc[blocks].to_numpy()).diff


def share_ratio(dosed: pd.DataFrame, task: str, word_list: str, arm: str, dose: int,
                reference: str = "random") -> stats.Interval:
    """Per block, `arm`'s share of list words among its masked tokens over `reference`'s (0 where
    the reference masks none: the task's text has no list word), from the dose rows; mean_ci."""
    a = by_seed(dosed, task, word_list, arm, dose, "list_share")
    b = by_seed(dosed, task, word_list, reference, dose, "list_share")
    blocks = sorted(set(a.dropna().index) & set(b.dropna().index))
    return stats.mean_ci([a[s] / b[s] if b[s] > 0 else 0.0 for s in blocks])


def loss_drop(dosed: pd.DataFrame, task: str, word_list: str, dose: int,
              reference: str = "random") -> stats.Interval:
    """loss(dose 0) - loss(`reference` at `dose`) on held-out task text, paired by block."""
    return paired(by_seed(dosed, task, word_list, reference, 0, "heldout_loss"),
                  by_seed(dosed, task, word_list, reference, dose, "heldout_loss"))


def composition_ratio(composition: pd.DataFrame, task: str, word_list: str, arm: str, claim: str,
                      reference: str = "random") -> float | None:
    """C1's ratio of list shares (`masked_composition`) for the task and word list: a property of
    the probabilities each arm trains with, the same for every seed; None where C1 has no row."""
    shares = verdicts.record_value(composition, "list_share", claim, RATIO_NAME)
    part = composition.assign(_share=shares)
    part = part[(part["task"] == task) & (part["word_list"] == word_list)].set_index("arm")["_share"]
    if not {arm, reference} <= set(part.index):
        return None
    return float(part[arm] / part[reference]) if part[reference] > 0 else 0.0


RATIO_NAME = "the selective arm masks list words more often: list share of masked tokens, ratio"


def selective_controls(claim: str, ratio: stats.Interval, drop: stats.Interval,
                       moved: stats.Interval, unit: str, where: str, dose: str = "") -> list[dict]:
    """The claim's three positive controls (verdicts.control), each on its interval over `unit`:

    * took: the selective arm masks list words at least LIST_SHARE_RATIO_MIN times as often as
      random (`ratio`, per block);
    * took: continued MLM lowers the masked-LM loss on held-out task text (`drop`: loss(0) -
      loss(random), above zero);
    * exists: continued MLM moves the score (`moved`: random - none, clearing zero in either
      direction; judged on `toward_mean`).

    Every threshold is a principle the page states (RATIO_PRINCIPLE, DROP_PRINCIPLE,
    MOVED_PRINCIPLE). `where` names the records, `dose` the steps the claim is read at.
    """
    at = f" at {dose}" if dose else ""
    none_listed = ratio.n and ratio.high == 0
    return [
        verdicts.control(claim, RATIO_NAME + (": no list word in the task's text" if none_listed
                                              else ""),
                         verdicts.TOOK, ratio, LIST_SHARE_RATIO_MIN, bounds=(1, float("inf")),
                         field=f"list_share ({where})", unit=unit, source="principle"),
        verdicts.control(claim, f"continued MLM lowers the held-out masked-LM loss{at}: "
                         "loss(0) - loss(random)", verdicts.TOOK, drop, 0.0, op=">",
                         field=f"heldout_loss ({where})", unit=unit, source="principle"),
        verdicts.control(claim, f"continued MLM moves the score{at}: random - none, signed "
                         "toward its mean", verdicts.EXISTS, toward_mean(moved), 0.0, op=">",
                         field=f"the score of arms 'random' and 'none' ({where})", unit=unit,
                         source="principle"),
    ]


def arms_text(majority: dict[str, tuple[float, float]]) -> str:
    """Each compared arm's mean score beside its majority class: 'exponential 0.801, random
    0.799 (majority 0.658)', one majority when the arms share it."""
    if not majority:
        return "no arm measured"
    shared = len({round(m, 6) for _, m in majority.values()}) == 1
    arms = ", ".join(f"{arm} {a:.3f}" + ("" if shared else f" (majority {m:.3f})")
                     for arm, (a, m) in majority.items())
    return arms + (f" (majority {next(iter(majority.values()))[1]:.3f})" if shared else "")


def _majority(row: dict, reference: str, prior: float | None) -> dict[str, tuple[float, float]]:
    """The compared arms' means over their paired seeds, each with the task's majority class."""
    means = {row["arm"]: row["paired_mean"], reference: row["reference_paired_mean"]}
    return {arm: (float(m), prior) for arm, m in means.items() if pd.notna(m)}


def _claim(row: dict, reference: str, text: str, delta: float | None) -> dict:
    """One claim-table row from a `paired_against` row."""
    return {"claim": text, "task": row["task"], "labels": row["labels"], "arm": row["arm"],
            "word_list": row["word_list"], "metric": row["metric"], "effect": row[f"diff_vs_{reference}"],
            "low": row["diff_low"], "high": row["diff_high"], "seeds": row["paired_seeds"],
            "delta": delta, "verdict": row["verdict"]}


def selective_claims(rows: list[dict], priors: dict[str, float], reference: str = "random",
                     metric: str = "accuracy", delta: float | None = None,
                     task_metrics: dict[str, str] | None = None,
                     composition: pd.DataFrame | None = None,
                     dose_rows: list[dict] | None = None) -> list[dict]:
    """The claim table: every selective arm against `reference`, one row per (task, word list, labels).

    `priors`: per task, its majority-class score on the metric its claims use (`task_priors`); a
    task without one stops with a ControlError naming the claim. `dose_rows`: C2's per (arm, word
    list, seed, dose) rows, for the controls (`selective_controls`, over seeds, at the top dose,
    where C2 fine-tunes); `composition`: C1's `masked_composition` rows, the list-share ratio
    where the dose rows have none (a property of the design every seed shares). The verdict is
    `verdicts.decide`: a failed control gives insensitive, a control without an interval not
    measured, an arm at its majority class not resolved.
    """
    delta_source(delta)  # a margin wider than half the anchor's effect stops here, before any verdict
    dosed = _frame(dose_rows or [])
    moves = {(r["task"], r["labels"]): r for r in paired_against(rows, "none", metric,
                                                                  task_metrics=task_metrics)
             if r["arm"] == reference}
    out = []
    for row in paired_against(rows, reference, metric, "greater", delta, task_metrics):
        if row["arm"] not in SELECTIVE:
            continue
        task, word_list = row["task"], row["word_list"]
        text = (f"{row['arm']} masking ({word_list}) beats {reference} masking on "
                f"{METRIC_NAMES[row['metric']]}, {row['labels']} labels, {task}")
        seeds = int(row["paired_seeds"])
        doses = dosed[dosed["task"] == task]["dose"] if not dosed.empty else pd.Series(dtype=int)
        top = int(doses.max()) if len(doses) else 0
        ratio = share_ratio(dosed, task, word_list, row["arm"], top, reference)
        if not ratio.n and composition is not None:
            value = composition_ratio(composition, task, word_list, row["arm"], text, reference)
            ratio = verdicts.exact(value, seeds if value is not None else 0)
        moved = moves.get((task, row["labels"]))
        moved = (stats.Interval(moved["diff_vs_none"], moved["diff_low"], moved["diff_high"],
                                moved["paired_seeds"]) if moved else stats.mean_ci([]))
        controls = selective_controls(text, ratio, loss_drop(dosed, task, word_list, top, reference),
                                      moved, "seeds", f"C2, {task}, {word_list}",
                                      f"{top} steps" if top else "")
        prior = priors.get(task)
        majority = _majority(row, reference, prior)
        below = verdicts.at_majority(majority, text)
        claim = _claim(row, reference, text, delta) | {
            "learned": not below, "prior": prior, "controls": controls,
            "majority": majority, "at_majority": below, "unit": "seeds",
            "verdict": verdicts.decide(row["verdict"], controls, text, below)}
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
        reasons.append(f"in {unlearned}, a compared arm does not beat its majority class by "
                       f"{verdicts.LEARNED_MARGIN:g}, so they say nothing about the masking")
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
    groups (a plan's overrides, resolved against the defaults); records without the groups
    name them mlm_steps, mlm_batch_size and max_length."""
    if "mlm_steps" in params and not pd.isna(params["mlm_steps"]):
        return int(params["mlm_steps"]) * int(params["mlm_batch_size"]) * int(params["max_length"])

    def group(cls, key):
        return configs.resolve(cls, params.get(key) if isinstance(params.get(key), dict) else {})

    mlm, text = group(ContinuedMLM, "mlm"), group(TaskText, "text")
    return int(mlm["steps"]) * int(mlm["batch_size"]) * int(text["max_length"])


# Why a C2 setting departs from the paper's recipe (the paper profile's plan holds the recipe).
DEPARTURE_REASONS = {
    ("", "task"): "review text shipped with the package (the default runs offline)",
    ("base", "name"): "a base that trains and fine-tunes on 2 CPU cores",
    ("masking", "vectors"): "the GloVe vectors shipped with the package",
    ("text", "truncation"): "a review's opening and its end (after Sun et al., 2019), chosen in a "
                            "pilot on validation reviews",
    ("finetune", "label_regimes"): "few labels only, for the 2-core time budget",
    ("finetune", "few_labels"): "ours, for the 2-core time budget",
    ("finetune", "few_epochs"): "ours, for the 2-core time budget",
    ("finetune", "lr"): "ours, for MiniLM (the paper's rate is bert-base-uncased's)",
    ("finetune", "pooling"): "with a [CLS] head, MiniLM's few-label fine-tuning stayed at the "
                             "majority class (design history)",
}


def departures(ours: list[dict], paper: list[dict]) -> dict[str, str]:
    """The C2 settings of `ours` (records or plans) that differ from the paper profile's, each with
    its reason (DEPARTURE_REASONS): '{setting} {ours} (paper: {theirs})'."""
    if not ours or not paper:
        return {}

    def value(params, group, name):
        holder = params if not group else params.get(group) or {}
        return holder.get(name) if isinstance(holder, dict) else None

    out = {}
    for (group, name), why in DEPARTURE_REASONS.items():
        mine, theirs = value(ours[0], group, name), value(paper[0], group, name)
        if mine is not None and theirs is not None and mine != theirs:
            setting = f"{group}.{name}" if group else name
            out[f"{setting} {mine} (paper: {theirs})"] = why
    return out


def dose_text(ours: list[dict], paper: list[dict]) -> str:
    """The continued MLM's dose, ours against the paper profile's (tokens per arm), with the
    settings that depart from the paper's recipe (`departures`)."""
    dose = verdicts.dose_text(mlm_tokens(ours[0]) if ours else None,
                              mlm_tokens(paper[0]) if paper else None,
                              "tokens of continued MLM per arm")
    return verdicts.with_departures(dose, departures(ours, paper))


def delta_source(delta: float | None) -> str:
    """Where the margin comes from, checked against the anchor (at most half its effect)."""
    if delta is None:
        return "no margin given: no comparison can be called equivalent"
    return verdicts.delta_against_paper(delta, PAPER_EFFECT, DELTA_SOURCE)


def scorecard(claims: list[dict], reference: str = "random", dose: str = "") -> list[dict]:
    """Paper C's claim as scorecard rows (SCORECARD_KEYS): one per `selective_claims` comparison.

    `claim` names the arm, word list, label regime and task; `effect` the paired difference on
    the comparison's metric with its 95% interval, and each compared arm's mean beside its
    majority class; a comparison with an arm at its majority class, or with too few seeds, says
    why it is not judged. No comparison at all gives one row, not measured.
    """
    rows = []
    for c in claims:
        seeds = int(c["seeds"])
        diff = interval_text(c["effect"], c["low"], c["high"], seeds)
        name = METRIC_NAMES[c["metric"]]
        majority = c.get("majority", {})
        effect = f"test {name}, {c['arm']} - {reference} = {diff}; {arms_text(majority)}"
        reasons = []
        if c.get("at_majority"):
            reasons.append(f"at the majority class ({name}, within {verdicts.LEARNED_MARGIN:g}): "
                           + ", ".join(c["at_majority"]))
        if seeds < verdicts.MIN_SEEDS:
            reasons.append(f"{seeds} paired seed{'s' if seeds != 1 else ''}, a verdict needs "
                           f"{verdicts.MIN_SEEDS}")
        if reasons:
            effect += "; not judged: " + "; ".join(reasons)
        delta = c.get("delta")
        rows.append(verdicts.card(
            f"{c['arm']} masking ({c['word_list']}) beats {reference}: {c['labels']} labels, "
            f"{c['task']}", effect, seeds, delta, c["verdict"],
            diff=stats.Interval(c["effect"], c["low"], c["high"], seeds), direction="greater",
            controls=c.get("controls", []), dose=dose, testbed=TESTBED,
            delta_source=delta_source(delta), unit="seeds", majority=majority))
    if not rows:
        rows.append(verdicts.card(CLAIM, f"not measured: no selective arm was compared with "
                                  f"{reference} masking", 0, None, verdicts.NOT_MEASURED,
                                  dose=dose, testbed=TESTBED))
    return rows
