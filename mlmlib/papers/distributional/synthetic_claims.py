"""Paper A's synthetic claims as code: A3's rows in, a claim table and scorecard rows out.

Each summary saves a scorecard: short rows with SCORECARD_KEYS, worded the same in every profile
(`scorecard` here; the real-text claim's are in `real_text_claims`). Every verdict uses the one
vocabulary and rules of `mlmlib.verdicts`, over intervals of `mlmlib.stats`. The claims read the
rows of A3_synthetic_finetune and, for the controls, the records of A2_synthetic_pretrain.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mlmlib import configs, stats, verdicts
from mlmlib.papers.distributional.config import TEST_SETS, Setup
from mlmlib.verdicts import (  # noqa: F401 - shared by the three papers, used by the notebooks
    SCORECARD_COLUMNS,
    SCORECARD_KEYS,
    interval_text,
    scorecard_table,
)

COLUMNS = ["claim", "measured", "interval", "seeds", "verdict"]
# The arms as the scorecard names them.
ARM_NAMES = {"with": "WITH", "without": "WITHOUT", "scratch": "scratch", "shuffled": "shuffled", "cbow": "CBOW",
             "cbow-frozen": "CBOW frozen"}
# The synthetic experiment's claims, as the scorecard words them (the same in every profile).
SYNTHETIC_CLAIMS = {
    "transfer": "Synonym transfer (B-D1): WITH above WITHOUT and scratch",
    "efficiency": "Sample efficiency (A-D1): WITH learns from fewer examples than WITHOUT",
    "generalization": "D2 generalization not fully explained by the property: WITHOUT above scratch on A-D2",
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
    """Tokens one A2 pretraining reads: steps x batch x sequence length.

    params: an A2 run's parameters, with the `setup` group (overrides or resolved), or, in records
    made before A2 took the group, its fields as flat parameters.
    """
    group = params.get("setup")
    values = configs.resolve(Setup, group) if isinstance(group, dict) else params
    return int(values["steps"]) * int(values["batch_size"]) * int(values["max_len"])


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


def small_sizes_accuracy(sizes, accuracies) -> float:
    """Mean accuracy at the smaller half of the training sizes (the middle one included): where
    pretraining's sample efficiency shows, before scratch catches up."""
    sizes, accs = np.asarray(sizes, float), np.asarray(accuracies, float)
    order = np.argsort(sizes)
    return float(accs[order][: (len(sizes) + 1) // 2].mean())


# The seeds of one comparison: a language and, within it, a pretraining (= fine-tuning) seed.
BLOCK = ["language_seed", "seed"]


def with_language(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows with a `language_seed` column (records made before it was a grid value: 0)."""
    frame = frame if isinstance(frame, pd.DataFrame) else pd.DataFrame(frame)
    if "language_seed" not in frame:
        frame = frame.assign(language_seed=0)
    return frame.assign(language_seed=frame.language_seed.fillna(0).astype(int))


def per_seed(rows, test_set: str, bd2_fraction: float, statistic, **kw) -> pd.DataFrame:
    """Apply statistic(sizes, accuracies, **kw) to each (model, language, seed) learning curve."""
    frame = with_language(rows)
    part = frame[(frame.test_set == test_set) & np.isclose(frame.bd2_fraction, bd2_fraction)]
    out = [{"model": model, "language_seed": lang, "seed": seed,
            "value": statistic(g.train_size.values, g.accuracy.values, **kw)}
           for (model, lang, seed), g in part.groupby(["model", *BLOCK])]
    return pd.DataFrame(out, columns=["model", *BLOCK, "value"])


def paired(frame, model_a: str, model_b: str, value: str = "value"):
    """Values of two models over the (language, seed) pairs both have, aligned: (a, b, languages)."""
    frame = with_language(frame)
    a = frame[frame.model == model_a].set_index(BLOCK)[value]
    b = frame[frame.model == model_b].set_index(BLOCK)[value]
    keys = sorted(set(a.index) & set(b.index))
    return (a.loc[keys].to_numpy(float), b.loc[keys].to_numpy(float),
            np.array([k[0] for k in keys], dtype=int))


def block_ci(values, languages) -> stats.Interval:
    """Mean and 95% interval with the language as the block: with several languages, the mean of
    each language's seeds, then a Student-t interval across languages (n counts languages); with
    one language, a t interval across its seeds (n counts seeds).

    Seeds of one language share its chains and label patterns, so they are not independent draws
    of what the claim is about; the per-language means are.
    """
    values, languages = np.asarray(values, float), np.asarray(languages)
    if len(set(languages.tolist())) < 2:
        return stats.mean_ci(values)
    means = [values[languages == lang].mean() for lang in sorted(set(languages.tolist()))]
    return stats.mean_ci(means)


def blocks_text(frame) -> str:
    """How the intervals treat languages and seeds, for the page."""
    frame = with_language(frame)
    per = frame.groupby("language_seed").seed.nunique()
    if len(per) < 2:
        return (f"one language (seed {int(per.index[0])}), {int(per.iloc[0])} seeds: Student-t "
                "intervals across seeds") if len(per) else "no runs"
    count = f"{int(per.min())}" if per.min() == per.max() else f"{int(per.min())}-{int(per.max())}"
    return (f"{len(per)} languages (seeds {[int(x) for x in per.index]}), {count} pretraining seeds each: "
            "each language's mean over its seeds, then a Student-t interval across languages (n counts "
            "languages)")


def _at(frame, test_set: str, bd2_fraction: float, size=None) -> pd.DataFrame:
    """Per-(model, language, seed) accuracy on one test set and fraction, at `size` (default: the largest)."""
    frame = with_language(frame)
    part = frame[(frame.test_set == test_set) & np.isclose(frame.bd2_fraction, bd2_fraction)]
    size = part.train_size.max() if size is None else size
    part = part[part.train_size == size]
    return part.rename(columns={"accuracy": "value"})[["model", *BLOCK, "value"]]


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
    """Mean difference model_a - model_b over the (language, seed) pairs both have, with its 95%
    interval, the language as the block (`block_ci`).

    A3's arms of one seed share everything a seed draws (the language, the fine-tuning seed, its
    sample, the pretraining seed of WITH and WITHOUT): pairing removes that shared noise.
    """
    a, b, languages = paired(table, model_a, model_b)
    return block_ci(a - b, languages)


def arm_ci(table, model: str) -> stats.Interval:
    """One arm's mean with its 95% interval, the language as the block (`block_ci`)."""
    table = with_language(table)
    part = table[table.model == model]
    return block_ci(part.value, part.language_seed)


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
        return arm_ci(table, model)

    def have(table, *models):
        return all((table.model == m).any() for m in models)

    def judged(key, claim, measured, intervals, verdict, effect, controls, headline, suffix="",
               directions=None, explains=False):
        # directions: {difference: what the claim needs of it, or None for one shown beside the
        # verdict (a control's, a share's)}; every other difference "greater".
        # explains: the claim is about how much of pretraining's benefit the property explains, so
        # without that benefit (a failed control) no interval can speak for or against it, not even
        # one clear of zero: insensitive.
        diffs = {name: (directions or {}).get(name, "greater") for name in intervals if " - " in name}
        diffs = {name: d for name, d in diffs.items() if d is not None}
        bound = "at_most" in diffs.values()
        if min(ci.n for ci in intervals.values()) >= verdicts.MIN_SEEDS:  # too few seeds: not resolved
            verdict = verdicts.apply_controls(verdict, controls, claim, bound=bound)
            if explains and verdicts.failed_controls(controls):
                verdict = verdicts.INSENSITIVE
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
    # 2. sample efficiency on A-D1, as the paper states it: WITH needs fewer examples than WITHOUT
    # for the same accuracy, i.e. its learning curve (accuracy against log size) lies higher: the
    # area under it (`learning_curve_area`), paired over seeds. The effect it explains must exist:
    # WITH above scratch at the small sizes (`small_sizes_accuracy`).
    area = per_seed(frame, "A-D1", 0.0, learning_curve_area)
    if have(area, "with", "without", "scratch"):
        diffs = {"WITH - WITHOUT": paired_diff(area, "with", "without")}
        small = paired_diff(per_seed(frame, "A-D1", 0.0, small_sizes_accuracy), "with", "scratch")
        need = per_seed(frame, "A-D1", 0.0, examples_needed, target=target)
        needed = "; ".join(f"{m}: {needed_text(need[need.model == m].value)}" for m in ("with", "without", "scratch"))
        claim = "Sample efficiency: WITH learns A-D1 from fewer examples than WITHOUT"
        controls = [took(claim), benefit_exists(small, "WITH - scratch, mean A-D1 accuracy at the smaller "
                                                       "half of the sizes", claim)]
        judged("efficiency", claim,
               "mean A-D1 accuracy over training sizes (area under the curve, log axis), paired over seeds. "
               f"Examples to reach {target:.2f}: {needed}",
               {**diffs, "WITH - scratch (small sizes)": small}, all_above_zero(diffs, margin),
               "mean A-D1 accuracy over training sizes: " + diffs_text(diffs)
               + f"; WITH - scratch at the small sizes = {ci_text(small, explain=False)}",
               controls, diffs["WITH - WITHOUT"],
               directions={"WITH - scratch (small sizes)": None}, explains=True)
    # 3. generalization to D2 "not fully explained" by the property. If the property explained all
    # of pretraining's A-D2 benefit, pretraining without it would leave none: WITHOUT would be no
    # better than scratch. So the claim is WITHOUT - scratch > 0 on A-D2; given a benefit
    # (WITH - scratch > 0, the effect-exists control) that is the same as the property's share
    # (WITH - WITHOUT) / (WITH - scratch) lying below one.
    for fraction in sorted(frame.bd2_fraction.unique()):
        a2 = _at(frame, "A-D2", fraction)
        if not have(a2, "with", "without", "scratch"):
            continue
        arms = {"WITHOUT - scratch": paired_diff(a2, "without", "scratch"),
                "WITH - scratch": paired_diff(a2, "with", "scratch"),
                "WITH - WITHOUT": paired_diff(a2, "with", "without"),
                "WITH": ci(a2, "with"), "WITHOUT": ci(a2, "without"), "scratch": ci(a2, "scratch")}
        benefit = arms["WITH - scratch"]
        share = (arms["WITH - WITHOUT"].mean / benefit.mean) if benefit.mean > 0 else math.nan
        claim = (f"D2 generalization not fully explained by the property (B-D2 fraction {fraction:g}): "
                 "WITHOUT above scratch on A-D2")
        controls = [took(claim), benefit_exists(benefit, "WITH - scratch on A-D2", claim)]
        judged(("generalization", fraction), claim,
               "A-D2 accuracy at the largest training set, differences paired over seeds",
               arms, verdicts.verdict(arms["WITHOUT - scratch"], "greater", margin),
               f"A-D2 accuracy: WITHOUT - scratch = {ci_text(arms['WITHOUT - scratch'], explain=False)}; "
               f"WITH - scratch = {ci_text(benefit, explain=False)}; "
               f"WITH - WITHOUT = {ci_text(arms['WITH - WITHOUT'], explain=False)}; the property's share "
               + (f"(WITH - WITHOUT) / (WITH - scratch) = {share:.2f}" if np.isfinite(share)
                  else "undefined: no benefit to share"),
               controls, arms["WITHOUT - scratch"], suffix=f" (B-D2 fraction {fraction:g})",
               directions={"WITH - scratch": None, "WITH - WITHOUT": None}, explains=True)
    # 4. controls
    if have(b, "with", "shuffled"):
        # A-D1 where WITH's benefit is (the small sizes), B-D1 at the largest training set
        a1 = per_seed(frame, "A-D1", 0.0, small_sizes_accuracy)
        arms = {"A-D1 WITH": ci(a1, "with"), "A-D1 shuffled": ci(a1, "shuffled"),
                "B-D1 WITH": ci(b, "with"), "B-D1 shuffled": ci(b, "shuffled")}
        diffs = {f"{t} WITH - shuffled": paired_diff(table, "with", "shuffled") for t, table in (("A-D1", a1),
                                                                                                ("B-D1", b))}
        claim = "Control: shuffling WITH's weights removes its benefit (WITH above shuffled)"
        gains = {t: paired_diff(table, "with", "scratch") for t, table in (("A-D1", a1), ("B-D1", b))}
        controls = [took(claim)] + [benefit_exists(g, f"WITH - scratch on {t}", claim) for t, g in gains.items()]
        judged("shuffled", claim,
               "A-D1 accuracy at the smaller half of the training sizes and B-D1 accuracy at the largest, "
               "differences paired over seeds",
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


# ---------------------------------------------------------------- the summary page's tables


def curve_fractions(frame: pd.DataFrame) -> list[float]:
    """The B-D2 fractions fine-tuned as learning curves (several training sizes), and 0 always."""
    sizes = frame.groupby("bd2_fraction").train_size.nunique()
    return [float(f) for f in sizes.index[(sizes > 1) | (sizes.index == 0.0)]]


def at_largest_size(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows at the largest training set of each B-D2 fraction (where the mixtures compare)."""
    return frame[frame.train_size == frame.groupby("bd2_fraction").train_size.transform("max")]


def test_sets_run(frame: pd.DataFrame) -> list[str]:
    """The test sets the rows hold, in the paper's order."""
    return [t for t in TEST_SETS if t in set(frame.test_set)]


def seeds_text(runs: pd.DataFrame) -> str:
    """What the fine-tuning seeds vary: the claims are about pretraining, so their intervals
    should span it (each seed fine-tuning the models of its own pretraining seed)."""
    pretrained_with = sorted({int(p) for p in runs.get("pretrain_seed", pd.Series([0] * len(runs)))})
    if len(pretrained_with) > 1 and (runs["pretrain_seed"] == runs["seed"]).all():
        return (f"each fine-tuning seed fine-tunes the models of its own pretraining seed "
                f"({len(pretrained_with)} pretraining seeds): the intervals cover pretraining "
                "and fine-tuning")
    return (f"pretraining seed(s) {pretrained_with} for every fine-tuning seed: the intervals "
            "measure fine-tuning noise only, not the pretraining the claim is about")


PRETRAINING_COLUMNS = {"corpus": "corpus", "seed": "seed", "final_loss": "final MLM loss",
                       "unigram_loss": "unigram loss", "loss_threshold": "loss threshold",
                       "final_acc": "final MLM accuracy", "pretrain_wall_s": "pretraining time (s)"}


def pretraining_table(pretraining: pd.DataFrame) -> pd.DataFrame:
    """A2's records, one row per pretrained model: its loss against the threshold, its time."""
    if pretraining.empty:
        return pd.DataFrame(columns=list(PRETRAINING_COLUMNS.values())[1:],
                            index=pd.Index([], name="corpus"))
    table = pretraining[[c for c in PRETRAINING_COLUMNS if c in pretraining]]
    table = table.dropna(axis=1, how="all")  # seed: only where it varies
    return table.rename(columns=PRETRAINING_COLUMNS).set_index("corpus").round(3)


def efficiency_table(frame: pd.DataFrame, target: float, labels: dict[str, str]) -> pd.DataFrame:
    """Per model: training examples to reach `target` A-D1 accuracy, and the mean A-D1 accuracy
    over the training sizes (log axis) with its 95% interval over seeds."""
    need = per_seed(frame, "A-D1", 0.0, examples_needed, target=target)
    area = per_seed(frame, "A-D1", 0.0, learning_curve_area)
    return pd.DataFrame({
        f"examples to reach {target:g}": need.groupby("model").value.apply(needed_text),
        "mean A-D1 accuracy over sizes [95% CI]":
            area.groupby("model").apply(lambda g: ci_text(block_ci(g.value, g.language_seed))),
    }).rename(index=labels).rename_axis("model")


def capped_runs(frame: pd.DataFrame) -> dict:
    """How many fine-tuning runs reached the step cap instead of stopping on validation patience.

    A run is one (language, seed, model, B-D2 fraction, size); records made before the rows had
    `hit_cap` count as not measured.
    """
    frame = with_language(frame)
    runs = frame.drop_duplicates([*BLOCK, "model", "bd2_fraction", "train_size"])
    if "hit_cap" not in runs or runs.hit_cap.isna().any():
        return {"runs": len(runs), "capped": None, "share": None}
    capped = int(runs.hit_cap.astype(bool).sum())
    return {"runs": len(runs), "capped": capped, "share": capped / len(runs) if len(runs) else None}


def capped_text(counts: dict) -> str:
    """`capped_runs` as a sentence."""
    if counts["capped"] is None:
        return f"{counts['runs']} fine-tuning runs; whether they reached the step cap was not recorded"
    others = "; every other run stopped on validation patience" if counts["capped"] < counts["runs"] else ""
    return (f"{counts['capped']} of {counts['runs']} fine-tuning runs ({counts['share']:.0%}) reached the "
            f"step cap{others}")


def design_table(frame, pretraining, margin: float, target: float) -> pd.DataFrame:
    """Every paired difference behind a verdict, with what the design can detect: the smallest
    true difference its seeds would call reproduced at 80% power, the seeds a ±margin interval
    needs, and the seeds at which the measured mean would resolve (`mlmlib.verdicts`)."""
    from mlmlib.tables import with_interval

    diffs = differences(frame, pretraining, margin=margin, target=target)
    design = [verdicts.design_from_interval(r.low, r.high, r.seeds, r.delta) for r in diffs.itertuples()]
    diffs["detectable (80% power)"] = [round(d["mde"], 4) for d in design]
    diffs[f"seeds for ±{margin:g}"] = [d["seeds_for_delta"] for d in design]
    diffs["seeds to resolve"] = [verdicts.seeds_to_resolve(r.mean, r.low, r.high, r.seeds, r.delta, r.direction)
                                 for r in diffs.itertuples()]
    shown = with_interval(diffs, "mean", "low", "high", "seeds", name="difference [95% CI]")
    columns = ["claim", "difference", "direction", "difference [95% CI]", "seeds", "detectable (80% power)",
               f"seeds for ±{margin:g}", "seeds to resolve"]
    return shown[columns]
