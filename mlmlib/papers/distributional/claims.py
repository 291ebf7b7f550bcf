"""Paper A's claims as code: records in, a claim table out (claim, measured, interval, seeds, verdict).

Each summary also saves a scorecard: short rows with SCORECARD_KEYS (`scorecard` for the synthetic
experiment, `correlation_scorecard` for real text), worded the same in every profile.

Every verdict uses the one vocabulary and rules of `mlmlib.stats`. The synthetic experiment's claims
read the rows of A3_synthetic_finetune (`claims`); the real-text claim reads the records of
A5_real_finetune_perturb (`correlation_cells`, `kind_verdicts`, `correlation_claims`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mlmlib import stats, verdicts
from mlmlib.papers.distributional.perturbation_deltas import correlation
from mlmlib.verdicts import (  # noqa: F401 - shared by the three papers, used by the notebooks
    SCORECARD_COLUMNS,
    SCORECARD_KEYS,
    interval_text,
    scorecard_table,
)

COLUMNS = ["claim", "measured", "interval", "seeds", "verdict"]
CELL_COLUMNS = ["task", "kind", "model", "template", "r", "r_low", "r_high", "n", "paper_r", "verdict", "learned",
                "too_few", "judged", "group", "value", "run", "seed"]
# Not verdicts: the cell of a model that has not learned its task, and a cell with too few
# perturbed inputs, are left out of the claim.
EXCLUDED = "excluded: model at chance"
TOO_SMALL = "excluded: too few perturbed inputs"
# Pearson r the paper reports, {(task, perturbation kind, template): r}, as our research note
# (papers/A-distributional-hypothesis.md) records them. The note has none (the paper body was not
# readable offline), so the A6 table's column stays blank until a value is added here with its note.
PAPER_R: dict[tuple[str, str, str], float] = {}
# The arms as the scorecard names them.
ARM_NAMES = {"with": "WITH", "without": "WITHOUT", "scratch": "scratch", "shuffled": "shuffled", "cbow": "CBOW",
             "cbow-frozen": "CBOW frozen"}
# The synthetic experiment's claims, as the scorecard words them (the same in every profile).
SYNTHETIC_CLAIMS = {
    "transfer": "Synonym transfer (B-D1): WITH above WITHOUT and scratch",
    "efficiency": "Sample efficiency (A-D1): WITH learns from fewer examples",
    "generalization": "D2 generalization not explained by the property: WITHOUT as good as WITH on A-D2 "
                      "and above scratch",
    "shuffled": "Control: shuffling WITH's weights removes its benefit",
    "cbow": "Control: CBOW embeddings give some B-D1 transfer (above scratch)",
}


def _row(claim: str, measured: str, intervals: dict[str, stats.Interval], verdict: str) -> dict:
    """One claim-table row; `seeds` is the fewest values behind any of its intervals."""
    return {"claim": claim, "measured": measured,
            "interval": "; ".join(f"{name}: {ci}" for name, ci in intervals.items()),
            "seeds": min((ci.n for ci in intervals.values()), default=0), "verdict": verdict}


# ---------------------------------------------------------------- scorecard
# The rows every summary saves under "scorecard": the same keys for every paper.
TESTBED = "synthetic languages"
REAL_TESTBED = "real text"
# Paper A's effect sizes are not in our notes (verdicts.delta_against_paper): the margin is ours.
PAPER_EFFECT = None
DELTA_SOURCE = ("paper A's effect sizes are not in our notes (its body was not readable offline); "
                "our CPU pilot's WITH - WITHOUT on B-D1 was about 0.3")
# Positive controls (verdicts.control), thresholds stated on the summary page.
SYNONYMS_CLOSER_MIN = 0.1  # WITH's synonym-pair cosine minus WITHOUT's, A2's embeddings


def ci_text(ci: stats.Interval, unit: str = "seed", explain: bool = True) -> str:
    """`interval_text` of an Interval."""
    return interval_text(ci.mean, ci.low, ci.high, ci.n, unit, explain)


def _arms_text(arms: dict[str, stats.Interval]) -> str:
    """Several arms' means with their intervals: "WITH 0.85 [0.84, 0.86], WITHOUT ..."."""
    return ", ".join(f"{name} {ci_text(ci, explain=False)}" for name, ci in arms.items())


def _card(claim: str, effect: str, intervals: dict[str, stats.Interval], delta: float | None,
          verdict: str, **fields) -> dict:
    """One scorecard row (verdicts.card); `seeds` is the fewest values behind any of its intervals.

    A verdict not resolved for want of seeds says so in its effect text.
    """
    seeds = min((ci.n for ci in intervals.values()), default=0)
    if any(ci.n == 1 for ci in intervals.values()):
        effect += "; one seed: no interval"
    elif any(ci.n > 1 and ci.low == ci.high for ci in intervals.values()):
        effect += "; an interval of zero width: its seeds gave equal values"
    if verdict == verdicts.NOT_RESOLVED and 0 < seeds < verdicts.MIN_SEEDS:
        effect += f"; not judged: {seeds} seed{'s' if seeds > 1 else ''}, a verdict needs {verdicts.MIN_SEEDS}"
    return verdicts.card(claim, effect, seeds, delta, verdict, **fields)


def pretraining_tokens(params: dict) -> int:
    """Tokens one A2 pretraining reads: steps x batch x sequence length."""
    return int(params["steps"]) * int(params["batch_size"]) * int(params["max_len"])


def dose_text(ours: list[dict], paper: list[dict]) -> str:
    """Pretraining tokens per model, ours against the paper profile's (the whole pretraining is the
    intervention whose benefits the claims explain)."""
    return verdicts.dose_text(pretraining_tokens(ours[0]) if ours else None,
                              pretraining_tokens(paper[0]) if paper else None,
                              "tokens of pretraining")


def synonyms_closer(pretraining: pd.DataFrame | None, claim: str) -> dict:
    """Control (took): pretraining on WITH puts synonyms closer than WITHOUT does: the mean
    synonym-pair embedding cosine of the mix models minus the shift models (A2's records)."""
    name = "the WITH corpus makes synonyms close: synonym-pair cosine, WITH - WITHOUT"
    field = "A2 embedding_similarity.synonyms"
    sims = verdicts.record_value(pretraining, "embedding_similarity", claim, name)
    synonyms = sims.map(lambda d: d.get("synonyms") if isinstance(d, dict) else None).astype(float)
    by_corpus = pretraining.assign(_synonyms=synonyms).groupby("corpus")["_synonyms"].mean()
    value = (by_corpus["mix"] - by_corpus["shift"]) if {"mix", "shift"} <= set(by_corpus.index) else None
    return verdicts.control(claim, name, verdicts.TOOK, value, SYNONYMS_CLOSER_MIN, bounds=(0, 2), field=field)


def benefit_exists(diff: stats.Interval, what: str, claim: str) -> dict:
    """Control (exists): pretraining's benefit that the claim explains is there: the lower end of
    the paired 95% interval of `what` lies above zero."""
    return verdicts.control(claim, f"pretraining helps: lower end of the 95% interval of {what}", verdicts.EXISTS,
                         diff.low if diff.n else None, 0.0, op=">", field=f"A3 rows.accuracy ({what})")


def examples_needed(sizes, accuracies, target: float) -> float:
    """Training examples needed to reach `target` accuracy: log-linear interpolation; inf if never."""
    sizes, accs = np.asarray(sizes, float), np.asarray(accuracies, float)
    order = np.argsort(sizes)
    sizes, accs = sizes[order], accs[order]
    if accs[0] >= target:
        return float(sizes[0])
    for i in range(1, len(sizes)):
        if accs[i] >= target:
            frac = (target - accs[i - 1]) / (accs[i] - accs[i - 1])
            return float(np.exp(np.log(sizes[i - 1]) + frac * (np.log(sizes[i]) - np.log(sizes[i - 1]))))
    return math.inf


def learning_curve_area(sizes, accuracies) -> float:
    """Mean accuracy over the training sizes, trapezoids on a log-size axis (sample efficiency)."""
    sizes, accs = np.asarray(sizes, float), np.asarray(accuracies, float)
    order = np.argsort(sizes)
    x, y = np.log(sizes[order]), accs[order]
    if len(x) == 1:
        return float(y[0])
    return float(np.trapezoid(y, x) / (x[-1] - x[0]))


def per_seed(rows, test_set: str, bd2_fraction: float, statistic, **kw) -> pd.DataFrame:
    """Apply statistic(sizes, accuracies, **kw) to each (model, seed) learning curve: a table."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    part = frame[(frame.test_set == test_set) & np.isclose(frame.bd2_fraction, bd2_fraction)]
    out = [{"model": model, "seed": seed, "value": statistic(g.train_size.values, g.accuracy.values, **kw)}
           for (model, seed), g in part.groupby(["model", "seed"])]
    return pd.DataFrame(out, columns=["model", "seed", "value"])


def paired(frame, model_a: str, model_b: str, value: str = "value"):
    """Values of two models over the seeds both have, aligned: (a, b)."""
    a = frame[frame.model == model_a].set_index("seed")[value]
    b = frame[frame.model == model_b].set_index("seed")[value]
    seeds = sorted(set(a.index) & set(b.index))
    return a.loc[seeds].to_numpy(float), b.loc[seeds].to_numpy(float)


def _at(frame, test_set: str, bd2_fraction: float, size=None) -> pd.DataFrame:
    """Per-(model, seed) accuracy on one test set and fraction, at `size` (default: the largest)."""
    part = frame[(frame.test_set == test_set) & np.isclose(frame.bd2_fraction, bd2_fraction)]
    size = part.train_size.max() if size is None else size
    part = part[part.train_size == size]
    return part.rename(columns={"accuracy": "value"})[["model", "seed", "value"]]


def needed_text(values) -> str:
    """Examples needed over seeds: mean and interval when every seed got there, else how many did."""
    values = np.asarray(values, float)
    reached = np.isfinite(values)
    if reached.all():
        ci = stats.mean_ci(values)
        why = ", one seed: no interval" if ci.n == 1 else ", all equal: zero width" if ci.low == ci.high else ""
        return str(ci).replace(" (n=", " examples (n=")[:-1] + why + ")"
    return f"{reached.sum()}/{len(values)} seeds reached it"


def paired_diff(table, model_a: str, model_b: str) -> stats.Interval:
    """Mean difference model_a - model_b over the seeds both have, with its paired 95% interval.

    A3's arms of one seed share everything a seed draws (the fine-tuning seed, its sample, the
    pretraining seed of WITH and WITHOUT): pairing removes that shared noise from the comparison.
    """
    return stats.paired_test(*paired(table, model_a, model_b)).diff


def all_above_zero(diffs: dict[str, stats.Interval], margin: float) -> str:
    """Verdict on a claim that needs every difference above zero together ("WITH above WITHOUT
    and scratch"): `verdicts.verdict` of its weakest difference, the interval [smallest low,
    smallest high] over seeds, n the fewest seeds.

    Reproduced when every interval clears zero; contradicted when one lies below zero; equivalent
    within +-margin when one lies inside +-margin and none reaches below -margin: the claim's
    advantage (the smaller of its differences, whichever it is) is then within +-margin of zero.
    Each side of a 95% interval errs at most 2.5% of the time; a statement about one difference
    picked from k adds up to k of them (5% for the two of these claims). `verdicts.combine`, which
    reads verdicts without their intervals, would call one part equivalent and one not resolved
    "not resolved", although the claim's advantage is already shown to be within the margin.
    """
    values = list(diffs.values())
    if not values:
        return verdicts.NOT_RESOLVED
    weakest = stats.Interval(mean=float(np.min([d.mean for d in values])),
                             low=float(np.min([d.low for d in values])),
                             high=float(np.min([d.high for d in values])),
                             n=min(d.n for d in values))
    return verdicts.verdict(weakest, "greater", margin)


def _judged(frame, pretraining, margin: float, target: float) -> list[dict]:
    """Each synthetic claim judged: its texts, intervals, effect text, margin, controls and verdict.

    Every comparison is a difference paired over seeds, judged with the one margin `margin`: an
    interval inside +-margin is "equivalent" only when the claim's positive controls passed
    (`synonyms_closer`: WITH's pretraining made synonyms close; `benefit_exists`: the benefit the
    claim explains is there), else "insensitive" (verdicts.apply_controls).
    """
    out = []

    def ci(table, model):
        return stats.mean_ci(table[table.model == model].value)

    def have(table, *models):
        return all((table.model == m).any() for m in models)

    def judged(key, claim, measured, intervals, verdict, effect, controls, headline, suffix="",
               directions=None):
        # directions: {difference: what the claim needs of it}; every other difference "greater"
        diffs = {name: (directions or {}).get(name, "greater") for name in intervals if " - " in name}
        bound = "at_most" in diffs.values()
        if min(ci.n for ci in intervals.values()) >= verdicts.MIN_SEEDS:  # too few seeds: not resolved
            verdict = verdicts.apply_controls(verdict, controls, claim, bound=bound)
        out.append({"key": key, "claim": claim, "measured": measured, "intervals": intervals,
                    "verdict": verdict, "effect": effect, "delta": margin, "suffix": suffix,
                    "directions": diffs, "controls": controls, "headline": headline})

    def weakest(diffs):  # the interval all_above_zero judges: the forest plot's point
        return stats.Interval(min(d.mean for d in diffs.values()), min(d.low for d in diffs.values()),
                              min(d.high for d in diffs.values()), min(d.n for d in diffs.values()))

    def took(claim):
        return synonyms_closer(pretraining, claim)

    def diffs_text(diffs):
        return "; ".join(f"{name} = {ci_text(d, explain=False)}" for name, d in diffs.items())

    # 1. synonym transfer on B-D1
    b = _at(frame, "B-D1", 0.0)
    if have(b, "with", "without", "scratch"):
        arms = {"WITH": ci(b, "with"), "WITHOUT": ci(b, "without"), "scratch": ci(b, "scratch")}
        diffs = {f"WITH - {ARM_NAMES[o]}": paired_diff(b, "with", o) for o in ("without", "scratch")}
        claim = "B-D1 synonym transfer: WITH above WITHOUT and scratch"
        controls = [took(claim), benefit_exists(diffs["WITH - scratch"], "WITH - scratch on B-D1", claim)]
        judged("transfer", claim, "B-D1 accuracy at the largest training set, differences paired over seeds",
               {**arms, **diffs}, all_above_zero(diffs, margin), "B-D1 accuracy: " + _arms_text(arms) + "; "
               + diffs_text(diffs), controls, weakest(diffs))
    # 2. sample efficiency on A-D1: area under the learning curve (log size), paired over seeds
    area = per_seed(frame, "A-D1", 0.0, learning_curve_area)
    if have(area, "with", "without", "scratch"):
        diffs = {f"WITH - {ARM_NAMES[o]}": paired_diff(area, "with", o) for o in ("without", "scratch")}
        need = per_seed(frame, "A-D1", 0.0, examples_needed, target=target)
        needed = "; ".join(f"{m}: {needed_text(need[need.model == m].value)}" for m in ("with", "without", "scratch"))
        claim = "Sample efficiency: WITH learns A-D1 from fewer examples"
        controls = [took(claim), benefit_exists(diffs["WITH - scratch"],
                                                "WITH - scratch, mean A-D1 accuracy over sizes", claim)]
        judged("efficiency", claim,
               "mean A-D1 accuracy over training sizes (log axis), differences paired over seeds. "
               f"Examples to reach {target:.2f}: {needed}",
               diffs, all_above_zero(diffs, margin), "mean A-D1 accuracy over training sizes: " + diffs_text(diffs),
               controls, weakest(diffs))
    # 3. generalization to D2 is not explained by the property
    for fraction in sorted(frame.bd2_fraction.unique()):
        a2 = _at(frame, "A-D2", fraction)
        if not have(a2, "with", "without", "scratch"):
            continue
        arms = {"WITH - WITHOUT": paired_diff(a2, "with", "without"),
                "WITHOUT - scratch": paired_diff(a2, "without", "scratch"),
                "WITHOUT": ci(a2, "without"), "scratch": ci(a2, "scratch")}
        verdict = verdicts.combine([verdicts.verdict(arms["WITH - WITHOUT"], "at_most", margin),
                                 verdicts.verdict(arms["WITHOUT - scratch"], "greater", margin)])
        claim = (f"D2 generalization not explained by the property (B-D2 fraction {fraction:g}): "
                 f"WITHOUT about as good as WITH on A-D2 (within {margin:g}) and above scratch")
        controls = [took(claim), benefit_exists(paired_diff(a2, "with", "scratch"), "WITH - scratch on A-D2", claim)]
        judged(("generalization", fraction), claim,
               "A-D2 accuracy at the largest training set, differences paired over seeds",
               arms, verdict,
               f"A-D2 accuracy: WITH - WITHOUT (at most {margin:g}) = "
               f"{ci_text(arms['WITH - WITHOUT'], explain=False)}; "
               f"WITHOUT - scratch = {ci_text(arms['WITHOUT - scratch'], explain=False)}; "
               + _arms_text({k: arms[k] for k in ("WITHOUT", "scratch")}),
               controls, arms["WITH - WITHOUT"], suffix=f" (B-D2 fraction {fraction:g})",
               directions={"WITH - WITHOUT": "at_most"})
    # 4. controls
    if have(b, "with", "shuffled"):
        a1 = _at(frame, "A-D1", 0.0)
        arms = {"A-D1 WITH": ci(a1, "with"), "A-D1 shuffled": ci(a1, "shuffled"),
                "B-D1 WITH": ci(b, "with"), "B-D1 shuffled": ci(b, "shuffled")}
        diffs = {f"{t} WITH - shuffled": paired_diff(table, "with", "shuffled") for t, table in (("A-D1", a1),
                                                                                                ("B-D1", b))}
        claim = "Control: shuffling WITH's weights removes its benefit (WITH above shuffled)"
        gains = {t: paired_diff(table, "with", "scratch") for t, table in (("A-D1", a1), ("B-D1", b))}
        controls = [took(claim)] + [benefit_exists(g, f"WITH - scratch on {t}", claim) for t, g in gains.items()]
        judged("shuffled", claim,
               "A-D1 and B-D1 accuracy at the largest training set, differences paired over seeds",
               {**arms, **diffs}, all_above_zero(diffs, margin),
               "; ".join(f"{t} accuracy: " + _arms_text({"WITH": arms[f"{t} WITH"],
                                                          "shuffled": arms[f"{t} shuffled"]})
                         for t in ("A-D1", "B-D1")) + "; " + diffs_text(diffs), controls, weakest(diffs))
    # one row per CBOW variant run: fine-tuned embeddings, and frozen ones (they keep synonyms close)
    for model, what, suffix in (("cbow", "CBOW embeddings", ""),
                                ("cbow-frozen", "frozen CBOW embeddings", " (frozen embeddings)")):
        if not have(b, model, "scratch"):
            continue
        name = ARM_NAMES[model]
        arms = {name: ci(b, model), "scratch": ci(b, "scratch")}
        if have(b, "with"):
            arms["WITH"] = ci(b, "with")  # for reference: how much of WITH's transfer CBOW gets
        diffs = {f"{name} - scratch": paired_diff(b, model, "scratch")}
        claim = f"Control: {what} (synonyms close) give some B-D1 transfer (above scratch)"
        # CBOW is trained on the WITH corpus: its synonyms are close where WITH's are
        controls = [took(claim)]
        if have(b, "with"):
            controls.append(benefit_exists(paired_diff(b, "with", "scratch"), "WITH - scratch on B-D1", claim))
        judged(("cbow", model), claim, "B-D1 accuracy at the largest training set, differences paired over seeds",
               {**arms, **diffs}, all_above_zero(diffs, margin), "B-D1 accuracy: " + _arms_text(arms) + "; "
               + diffs_text(diffs), controls, weakest(diffs), suffix=suffix)
    return out


DIFFERENCE_COLUMNS = ["claim", "difference", "direction", "mean", "low", "high", "seeds", "delta"]


def differences(frame, pretraining=None, margin: float = 0.02, target: float = 0.8) -> pd.DataFrame:
    """Every paired difference behind a synthetic verdict, one row each: the scorecard's claim,
    the difference, what the claim needs of it (`verdicts.verdict`'s direction), its interval,
    seeds and margin. What the design table of the summary page reads."""
    judged = _judged(frame, pretraining, margin, target) if frame is not None and len(frame) else []
    rows = [{"claim": SYNTHETIC_CLAIMS[j["key"] if isinstance(j["key"], str) else j["key"][0]] + j["suffix"],
             "difference": name, "direction": direction, "mean": j["intervals"][name].mean,
             "low": j["intervals"][name].low, "high": j["intervals"][name].high,
             "seeds": j["intervals"][name].n, "delta": j["delta"]}
            for j in judged for name, direction in j["directions"].items()]
    return pd.DataFrame(rows, columns=DIFFERENCE_COLUMNS)


def claims(frame, pretraining=None, margin: float = 0.02, target: float = 0.8) -> pd.DataFrame:
    """Each claim of the synthetic experiment next to what was measured, with a verdict from intervals.

    frame: one row per (seed, model, bd2_fraction, train_size, test_set) with an `accuracy`.
    margin: each claim's delta: how much better WITH may be than WITHOUT on A-D2 and still count as
    "about as good", and the half-width inside which any other paired difference is "equivalent".
    target: the A-D1 accuracy for the examples-needed comparison (reported, not the verdict).
    pretraining: A2's records (their `embedding_similarity`), for the controls.
    A claim whose models were not all run is left out; no rows at all when nothing was measured.
    """
    if frame is None or len(frame) == 0:
        return pd.DataFrame(columns=COLUMNS)
    out = [_row(j["claim"], j["measured"], j["intervals"], j["verdict"])
           for j in _judged(frame, pretraining, margin, target)]
    return pd.DataFrame(out, columns=COLUMNS)


def scorecard(frame, pretraining=None, margin: float = 0.02, target: float = 0.8,
              dose: str = "") -> list[dict]:
    """The synthetic experiment's claims as scorecard rows (SCORECARD_KEYS), one per claim judged.

    Same verdicts as `claims`; `claim` is a short text that does not depend on the profile's
    parameters (only on the B-D2 fraction a D2 row is about), `effect` the measured intervals.
    Every claim of the paper has a row: one whose models were not run says so, not resolved.
    """
    judged = _judged(frame, pretraining, margin, target) if frame is not None and len(frame) else []
    common = {"dose": dose, "testbed": TESTBED,
              "delta_source": verdicts.delta_against_paper(margin, PAPER_EFFECT, DELTA_SOURCE, "margin")}
    rows = []
    for key, claim in SYNTHETIC_CLAIMS.items():
        found = [j for j in judged if j["key"] == key or (isinstance(j["key"], tuple) and j["key"][0] == key)]
        for j in found:
            direction = "at_most" if "at_most" in j["directions"].values() else "greater"
            rows.append(_card(claim + j["suffix"], j["effect"], j["intervals"], j["delta"], j["verdict"],
                              diff=j["headline"], direction=direction, controls=j["controls"], **common))
        if not found:
            rows.append(_card(claim, "not measured: the models this claim compares were not all run", {},
                              margin, verdicts.NOT_RESOLVED, **common))
    return rows


# ---------------------------------------------------------------- real text: Delta-pred vs Delta-distribution


def low_correlation_verdict(r: stats.Interval, r_low: float = 0.3, ci_max: float = 0.5, min_n: int = 30) -> str:
    """Verdict on "r is low": reproduced if |r| < r_low with its interval inside (-ci_max, ci_max),
    contradicted if the interval lies wholly beyond +-r_low, else (or under min_n pairs) not resolved."""
    if r.n < min_n or not np.isfinite([r.mean, r.low, r.high]).all():
        return verdicts.NOT_RESOLVED
    if abs(r.mean) < r_low and -ci_max < r.low and r.high < ci_max:
        return verdicts.REPRODUCED
    if r.low > r_low or r.high < -r_low:
        return verdicts.CONTRADICTED
    return verdicts.NOT_RESOLVED


def correlation_table(delta_pred: dict[str, np.ndarray], delta_dist: dict[str, np.ndarray], *,
                      n_boot: int = 1000, seed: int = 0, r_low: float = 0.3, ci_max: float = 0.5,
                      min_n: int = 30) -> pd.DataFrame:
    """One row per (fine-tuned model, template): Pearson r, its bootstrap interval, n and the verdict."""
    if not delta_pred:
        raise ValueError("delta_pred must hold at least one fine-tuned model")
    if not delta_dist:
        raise ValueError("delta_dist must hold at least one template")
    rows = []
    for model, dp in delta_pred.items():
        for template, dd in delta_dist.items():
            dp_, dd_ = np.asarray(dp, dtype=float), np.asarray(dd, dtype=float)
            ok = np.isfinite(dp_) & np.isfinite(dd_)
            r = correlation(dp_[ok], dd_[ok], n_boot=n_boot, seed=seed)
            rows.append({"model": model, "template": template, "r": r.mean, "r_low": r.low, "r_high": r.high,
                         "n": r.n, "verdict": low_correlation_verdict(r, r_low, ci_max, min_n)})
    return pd.DataFrame(rows)


def validation_prior(task: str) -> float:
    """Majority-class accuracy of a task's validation split (what a model that learned nothing gets)."""
    from mlmlib.data import load_task

    return stats.class_prior(load_task(task)["validation"]["label"])


REAL_CLAIM = "Delta-pred and Delta-distribution correlate weakly (every template, checkpoint and data ratio)"


def _claim_text(task: str, kind: str) -> str:
    return f"{REAL_CLAIM}: {task}, {kind} perturbations"


def paper_r(task: str, kind: str, template: str) -> float:
    """The r the paper reports for a cell (PAPER_R), NaN where our note has none."""
    return PAPER_R.get((task, kind, template), float("nan"))


def correlation_cells(records: pd.DataFrame, *, r_low: float = 0.3, ci_max: float = 0.5, min_n: int = 30,
                      n_boot: int = 1000, seed: int = 0, margin: float = verdicts.LEARNED_MARGIN,
                      priors: dict[str, float] | None = None) -> pd.DataFrame:
    """One row per (run, perturbation kind, fine-tuned model, template): r, its interval, n and the verdict.

    records: A5_real_finetune_perturb's records. A cell is judged (`judged`) unless its model has
    not learned its task (validation accuracy not above the majority class by `margin`,
    verdicts.learned; verdict EXCLUDED) or it is too small (`too_few`: fewer than min_n pairs, or its
    kind has fewer perturbed inputs than the run's min_examples; verdict TOO_SMALL).
    priors: {task: majority-class accuracy}; a task not in it is loaded. paper_r: PAPER_R's value.
    """
    priors = dict(priors or {})
    tables = []
    for rec in records.itertuples():
        if rec.task not in priors:
            priors[rec.task] = validation_prior(rec.task)
        learned = {m["model"]: verdicts.learned(m["val_accuracy"], priors[rec.task], margin) for m in rec.models}
        group = {m["model"]: m["group"] for m in rec.models}
        value = {m["model"]: m["value"] for m in rec.models}
        kinds = np.array([p["kind"] for p in rec.perturbations])
        for kind in sorted(set(kinds)):
            keep = kinds == kind
            dp = {m: np.asarray(v)[keep] for m, v in rec.delta_pred.items()}
            dd = {t: np.asarray(v)[keep] for t, v in rec.delta_distribution.items()}
            table = correlation_table(dp, dd, n_boot=n_boot, seed=seed, r_low=r_low, ci_max=ci_max, min_n=min_n)
            table["learned"] = table["model"].map(learned).eq(True)
            table["too_few"] = (table["n"] < min_n) | (int(keep.sum()) < rec.min_examples)
            table["judged"] = table["learned"] & ~table["too_few"]
            table["verdict"] = table["verdict"].where(~table["too_few"], TOO_SMALL).where(table["learned"], EXCLUDED)
            table["group"] = table["model"].map(group)
            table["value"] = table["model"].map(value)
            table["paper_r"] = [paper_r(rec.task, kind, t) for t in table["template"]]
            tables.append(table.assign(task=rec.task, kind=kind, run=rec.run_id, seed=rec.seed))
    if not tables:
        return pd.DataFrame(columns=CELL_COLUMNS)
    return pd.concat(tables, ignore_index=True)[CELL_COLUMNS]


def kind_verdicts(cells: pd.DataFrame) -> pd.DataFrame:
    """One verdict per task and perturbation kind: verdicts.combine over its judged cells, with what was left out."""
    columns = ["task", "kind", "verdict", "judged", "low", "too_small", "at_chance", "seeds"]
    rows = []
    for (task, kind), part in cells.groupby(["task", "kind"], sort=True):
        judged = part[part["judged"].eq(True)]
        rows.append({"task": task, "kind": kind, "verdict": verdicts.combine(judged["verdict"]),
                     "judged": len(judged), "low": int((judged["verdict"] == verdicts.REPRODUCED).sum()),
                     "too_small": int((part["learned"].eq(True) & part["too_few"].eq(True)).sum()),
                     "at_chance": int((~part["learned"].eq(True)).sum()), "seeds": int(judged["seed"].nunique())})
    return pd.DataFrame(rows, columns=columns)


def _threshold_text(r_low: float, ci_max: float) -> str:
    return (f"|r| < {r_low:g}, 95% bootstrap interval inside ±{ci_max:g}: our thresholds (parameters; the "
            "paper states none)")


def _left_out_text(part: pd.DataFrame, min_n: int) -> str:
    """What a task x kind leaves out of its verdict, and why ("" when nothing)."""
    out = []
    small = int((part["learned"].eq(True) & part["too_few"].eq(True)).sum())
    if small:
        out.append(f"{small} cell{'s' if small > 1 else ''} with too few perturbed inputs (fewer than {min_n} "
                   "pairs, or fewer inputs than the run's min_examples)")
    chance = sorted(set(part.loc[~part["learned"].eq(True), "model"]))
    if chance:
        out.append(f"the cells of models not above the majority class on validation: {', '.join(chance)}")
    return "left out: " + "; ".join(out) if out else ""


def correlation_claims(cells: pd.DataFrame, r_low: float = 0.3, ci_max: float = 0.5,
                       min_n: int = 30) -> pd.DataFrame:
    """The real-text claim next to what was measured, one row per task and perturbation kind."""
    if not len(cells):
        row = {"claim": REAL_CLAIM, "measured": "no A5 perturbation records", "interval": "no judged cell",
               "seeds": 0, "verdict": verdicts.NOT_RESOLVED}
        return pd.DataFrame([row], columns=COLUMNS)
    rows = []
    for v in kind_verdicts(cells).itertuples():
        part = cells[(cells["task"] == v.task) & (cells["kind"] == v.kind)]
        judged = part[part["judged"].eq(True)]
        measured = (f"Pearson r of Delta-pred and Delta-distribution per fine-tuned model x template: "
                    f"{v.judged} judged cells, {v.low} low ({_threshold_text(r_low, ci_max)})")
        left_out = _left_out_text(part, min_n)
        interval = (f"r from {judged['r'].min():.2f} to {judged['r'].max():.2f}; intervals within "
                    f"[{judged['r_low'].min():.2f}, {judged['r_high'].max():.2f}]" if len(judged) else "no judged cell")
        rows.append({"claim": _claim_text(v.task, v.kind),
                     "measured": measured + (f"; {left_out}" if left_out else ""), "interval": interval,
                     "seeds": v.seeds, "verdict": v.verdict})
    return pd.DataFrame(rows, columns=COLUMNS)


# Controls of the real-text claim: a low r means something only if the perturbations move the
# fine-tuned models and Delta-pred is a reproducible quantity (it agrees between fine-tuned models).
MOVES_MIN = 0.02        # mean Delta-pred (L1 distance of output distributions, 0 to 2)
RELIABLE_MIN = 0.3      # median Pearson r of Delta-pred between two fine-tuned models


def correlation_controls(records: pd.DataFrame, task: str, kind: str, claim: str) -> list[dict]:
    """The real-text claim's positive controls for one task and perturbation kind, from A5's
    records: the perturbations move the fine-tuned models (took), and Delta-pred is reproducible
    across fine-tuned models, so that it could correlate with something (exists)."""
    moves, reliable = [], []
    part = records[records["task"] == task] if "task" in records else records
    for rec in part.itertuples():
        kinds = np.array([p["kind"] for p in rec.perturbations])
        preds = [np.asarray(v, dtype=float)[kinds == kind] for v in rec.delta_pred.values()]
        moves += [float(np.nanmean(v)) for v in preds if len(v)]
        reliable += [float(pd.Series(a).corr(pd.Series(b))) for i, a in enumerate(preds) for b in preds[i + 1:]
                     if len(a) > 2]
    field = "A5 delta_pred"
    return [verdicts.control(claim, "the perturbations move the fine-tuned models: mean Delta-pred", verdicts.TOOK,
                          float(np.mean(moves)) if moves else None, MOVES_MIN, bounds=(0, 2), field=field),
            verdicts.control(claim, "Delta-pred is reproducible: median r between fine-tuned models", verdicts.EXISTS,
                          float(np.nanmedian(reliable)) if reliable else None, RELIABLE_MIN, bounds=(-1, 1),
                          field=field)]


def correlation_scorecard(cells: pd.DataFrame, records: pd.DataFrame | None = None, r_low: float = 0.3,
                          ci_max: float = 0.5, min_n: int = 30, dose: str = "") -> list[dict]:
    """The real-text claim as scorecard rows (SCORECARD_KEYS), one per task and perturbation kind.

    effect: the judged cell with the largest |r|, its 95% bootstrap interval and where it is, how
    many judged cells are low, and how many cells were left out and why; `delta` is r_low, our
    "low" margin around 0. With no cell at all, one row, not resolved, says so.
    """
    common = {"dose": dose, "testbed": REAL_TESTBED,
              "delta_source": f"|r| < {r_low:g} is ours: paper A states no threshold for a low r"}
    if not len(cells):
        return [verdicts.card(REAL_CLAIM, "not measured: no A5 perturbation records", 0, r_low, verdicts.NOT_RESOLVED,
                           **common)]
    rows = []
    for v in kind_verdicts(cells).itertuples():
        part = cells[(cells["task"] == v.task) & (cells["kind"] == v.kind)]
        judged = part[part["judged"].eq(True)]
        diff = None
        if len(judged):
            top = judged.loc[judged["r"].abs().fillna(-1).idxmax()]
            diff = stats.Interval(float(top["r"]), float(top["r_low"]), float(top["r_high"]), int(top["n"]))
            effect = (f"largest |r|: r = {top['r']:.3f} [{top['r_low']:.3f}, {top['r_high']:.3f}] "
                      f"({top['model']}, template {top['template']}, {int(top['n'])} pairs); "
                      f"{v.low} of {v.judged} judged cells low ({_threshold_text(r_low, ci_max)})")
        else:
            effect = "not judged: no cell of a model that learned the task has enough perturbed inputs"
        left_out = _left_out_text(part, min_n)
        claim = _claim_text(v.task, v.kind)
        controls = correlation_controls(records, v.task, v.kind, claim) if records is not None else []
        # no judged cell: not resolved for want of data, whatever the controls say
        verdict = verdicts.apply_controls(v.verdict, controls, claim, bound=True) if len(judged) else v.verdict
        rows.append(verdicts.card(claim, effect + (f"; {left_out}" if left_out else ""), v.seeds, r_low, verdict,
                               diff=diff, direction="equivalent", controls=controls, **common))
    return rows


def final_checkpoint_points(records: pd.DataFrame) -> pd.DataFrame:
    """Delta-pred of each run's fully trained model (last checkpoint) against every template's Delta-distribution."""
    points = []
    for rec in records.itertuples():
        kinds = np.array([p["kind"] for p in rec.perturbations])
        final = [m["model"] for m in rec.models if m["group"] == "checkpoint"][-1]
        for kind in sorted(set(kinds)):
            keep = kinds == kind
            for t, v in rec.delta_distribution.items():
                points.append(pd.DataFrame({"Delta-pred": np.asarray(rec.delta_pred[final])[keep],
                                            "Delta-distribution": np.asarray(v)[keep], "template": t,
                                            "kind": kind, "run": rec.run_id}))
    columns = ["Delta-pred", "Delta-distribution", "template", "kind", "run"]
    if not points:
        return pd.DataFrame(columns=columns)
    # a unit whose tag has no tag-matched template has no Delta-distribution there: no point
    return pd.concat(points, ignore_index=True).dropna(subset=["Delta-distribution"]).reset_index(drop=True)
