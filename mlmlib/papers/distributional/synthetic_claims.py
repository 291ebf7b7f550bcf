"""Paper A's synthetic claims as code: A3's rows in, a claim table and scorecard rows out.

Each summary saves a scorecard: short rows with SCORECARD_KEYS, worded the same in every profile
(`scorecard` here; the real-text claim's are in `real_text_claims`). Every verdict uses the one
vocabulary and rules of `mlmlib.verdicts`, over intervals of `mlmlib.stats`. The claims read the
rows of A3_synthetic_finetune, as the per-seed statistics and language-blocked intervals of
`synthetic_measures`, and, for the controls, the records of A2_synthetic_pretrain.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mlmlib import configs, stats, verdicts
from mlmlib.papers.distributional.config import TEST_SETS, Setup
from mlmlib.papers.distributional.synthetic_measures import (
    BLOCK,
    arm_ci,
    at_size,
    block_ci,
    examples_needed,
    learning_curve_area,
    needed_text,
    paired_diff,
    per_seed,
    small_sizes_accuracy,
    unit_of,
    with_language,
)
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
# Positive controls (verdicts.control), thresholds stated on the summary page with their source.
# A principle, not a pilot: a cosine gap of a tenth of the scale on which an unrelated pair sits at
# 0 and one token's own vector at 1 (paper A's notes give no number).
SYNONYMS_CLOSER_MIN = 0.1  # WITH's synonym-pair cosine minus WITHOUT's, A2's input embeddings
SYNONYMS_CLOSER_SOURCE = ("principle: a tenth of the cosine scale on which an unrelated pair sits "
                          "at 0 and a token's own vector at 1")
# A pretrained arm has learned its task when it beats its test set's majority class by the book's
# learned margin (verdicts.LEARNED_MARGIN), judged on the near end of the interval over blocks.
LEARNED_SOURCE = "principle: the book's learned margin over the majority class"


def ci_text(ci: stats.Interval, unit: str = "seed", explain: bool = True) -> str:
    """`interval_text` of an Interval."""
    return interval_text(ci.mean, ci.low, ci.high, ci.n, unit, explain)


def _arms_text(arms: dict[str, stats.Interval],
               majority: dict[str, tuple[float, float]] | None = None) -> str:
    """Several arms' means with their intervals, each beside its majority class where given:
    "WITH 0.85 [0.84, 0.86] (majority 0.58), WITHOUT ..."."""
    majority = majority or {}
    return ", ".join(f"{name} {ci_text(ci, explain=False)}"
                     + (f" (majority {majority[name][1]:.3f})" if name in majority else "")
                     for name, ci in arms.items())


def _card(claim: str, effect: str, intervals: dict[str, stats.Interval], delta: float | None,
          verdict: str, **fields) -> dict:
    """One scorecard row (verdicts.card); `seeds` is the fewest values behind any of its intervals.

    A verdict not given for want of blocks says so in its effect text.
    """
    seeds = min((ci.n for ci in intervals.values()), default=0)
    unit = fields.get("unit", "seeds")
    if any(ci.n == 1 for ci in intervals.values()):
        effect += "; one seed: no interval"
    elif any(ci.n > 1 and ci.low == ci.high for ci in intervals.values()):
        effect += "; an interval of zero width: its seeds gave equal values"
    if verdict in (verdicts.NOT_RESOLVED, verdicts.NOT_MEASURED) and 0 < seeds < verdicts.MIN_SEEDS:
        one = unit.removesuffix("s")
        effect += (f"; not judged: {seeds} {one if seeds == 1 else unit}, a verdict needs "
                   f"{verdicts.MIN_SEEDS}")
    return verdicts.card(claim, effect, seeds, delta, verdict, **fields)


def pretraining_tokens(params: dict) -> int:
    """Tokens one A2 pretraining would read at most: steps x batch x sequence length (a plan's
    upper bound: a sequence shorter than the length is padded, and padding is not read).

    params: an A2 run's parameters, with the `setup` group (overrides or resolved), or, in records
    without the group, its fields as flat parameters.
    """
    group = params.get("setup")
    values = configs.resolve(Setup, group) if isinstance(group, dict) else params
    return int(values["steps"]) * int(values["batch_size"]) * int(values["max_len"])


def tokens_seen(record: dict) -> tuple[int, bool]:
    """Tokens one A2 pretraining read: its record's `tokens_seen` (padding not counted), True; or,
    for a record without it (or a plan), `pretraining_tokens`' upper bound, False."""
    seen = record.get("tokens_seen")
    if seen is not None and np.isfinite(float(seen)):
        return int(seen), True
    return pretraining_tokens(record), False


def dose_text(ours: list[dict], paper: list[dict]) -> str:
    """Pretraining tokens per model, ours (tokens seen, from A2's records) against the paper
    profile's (a plan: steps x batch x max length), with the settings that depart from the paper's
    recipe (`departures`, through `verdicts.with_departures`). The whole pretraining is the
    intervention whose benefits the claims explain."""
    if not ours:
        return verdicts.dose_text(None, None, "")
    seen = [tokens_seen(r) for r in ours]
    counted = all(ok for _, ok in seen)
    value = round(np.mean([n for n, _ in seen]))
    what = ("tokens of pretraining per model (ours: tokens seen, A2's tokens_seen"
            if counted else "tokens of pretraining per model (ours: steps x batch x max length, "
            "an upper bound: a record lacks tokens_seen")
    what += "; the paper profile's: steps x batch x max length)" if paper else ")"
    dose = verdicts.dose_text(value, tokens_seen(paper[0])[0] if paper else None, what)
    return verdicts.with_departures(dose, departures(ours, paper))


# Why a pretraining setting departs from the paper's recipe (the chapter's table gives the values).
DEPARTURE_REASONS = {
    "lr": "the tiny encoder converges in minutes on a CPU only at a far higher rate (A2 checks it converged)",
    "warmup_frac": "chosen with that learning rate for the tiny encoder",
    "weight_decay": "chosen with that learning rate for the tiny encoder",
    "beta2": "chosen with that learning rate for the tiny encoder",
}


def departures(ours: list[dict], paper: list[dict]) -> dict[str, str]:
    """The pretraining settings of `ours` (A2 records or plans) that differ from the paper
    profile's, each with its reason (DEPARTURE_REASONS): '{setting} {ours} (paper: {theirs})'."""
    if not ours or not paper:
        return {}

    def setup(params):
        group = params.get("setup")
        return configs.resolve(Setup, group) if isinstance(group, dict) else params

    mine, theirs = setup(ours[0]), setup(paper[0])
    return {f"MLM {key} {mine[key]:g} (paper: {theirs[key]:g})": why
            for key, why in DEPARTURE_REASONS.items()
            if key in mine and key in theirs and mine[key] != theirs[key]}


def synonyms_closer(pretraining: pd.DataFrame | None, claim: str) -> dict:
    """Control (took): pretraining on WITH puts synonyms closer than WITHOUT does: the synonym-pair
    embedding cosine of the mix models minus the shift models (A2's records), paired by language
    and pretraining seed, each language's mean over its seeds, then an interval over languages (over
    seeds with one language: `block_ci`)."""
    name = "the WITH corpus makes synonyms close: synonym-pair cosine, WITH - WITHOUT"
    field = "A2 embedding_similarity.synonyms"
    sims = verdicts.record_value(pretraining, "embedding_similarity", claim, name)
    synonyms = sims.map(lambda d: d.get("synonyms") if isinstance(d, dict) else None).astype(float)
    frame = with_language(pretraining.assign(_synonyms=synonyms))
    if "seed" not in frame:
        frame = frame.assign(seed=0)
    by = frame.groupby(["corpus", *BLOCK])["_synonyms"].mean()
    pairs = (sorted(set(by["mix"].index) & set(by["shift"].index))
             if {"mix", "shift"} <= set(by.index.get_level_values(0)) else [])
    diffs = np.array([by["mix"][k] - by["shift"][k] for k in pairs], dtype=float)
    languages = np.array([k[0] for k in pairs], dtype=int)
    measured = block_ci(diffs, languages)
    unit = "languages" if len(set(languages.tolist())) > 1 else "seeds"
    return verdicts.control(claim, name, verdicts.TOOK, measured, SYNONYMS_CLOSER_MIN, bounds=(0, 2),
                            field=field, unit=unit, source="principle")


def benefit_exists(diff: stats.Interval, what: str, claim: str, unit: str = "seeds") -> dict:
    """Control (exists): pretraining's benefit that the claim explains is there: the paired 95%
    interval of `what` (its blocks in `unit`) lies above zero, judged on its low end."""
    return verdicts.control(claim, f"pretraining helps: {what} above 0", verdicts.EXISTS, diff, 0.0, op=">",
                            field=f"A3 rows.accuracy ({what})", unit=unit, source="principle")


def _priors(table: pd.DataFrame, claim: str, arm: str) -> pd.Series:
    """The rows' majority-class accuracies, or a ControlError naming the claim, the arm and the field."""
    if "prior" not in table or table.prior.isna().any():
        raise verdicts.ControlError(f"claim {claim!r}: arm {arm!r} has no majority-class baseline "
                                    "(A3 record field 'rows.prior')")
    return table.prior


def above_majority(table: pd.DataFrame, model: str, claim: str) -> stats.Interval:
    """`model`'s accuracy minus its test set's majority-class accuracy (A3's `prior`), over the
    blocks of `block_ci`; rows without `prior` stop with an error naming the claim."""
    part = with_language(table[table.model == model])
    prior = _priors(part, claim, ARM_NAMES.get(model, model))
    return block_ci(part.value - prior, part.language_seed)


# The baselines "pretraining helps" is judged against: scratch (the pretrained arms' own init,
# or a fresh one: Sweep.scratch_init) and shuffled WITH (the pretrained weight scale, no structure).
BASELINES = ("scratch", "shuffled")


def stronger_baseline(table: pd.DataFrame, baselines=BASELINES) -> tuple[str, stats.Interval]:
    """The baseline of `baselines` in `table` that WITH beats by the least (the smaller mean paired
    difference), with that difference: the one "pretraining helps" is judged against."""
    diffs = {b: paired_diff(table, "with", b) for b in baselines if (table.model == b).any()}
    if not diffs:
        raise verdicts.ControlError(f"no baseline among {baselines} to judge 'pretraining helps' by")
    return min(diffs.items(), key=lambda item: item[1].mean)


def pretraining_helps(table: pd.DataFrame, where: str, claim: str, unit: str,
                      baselines=BASELINES) -> list[dict]:
    """Controls (exists): pretraining helps on `where`, as two intervals over `unit`: WITH minus the
    stronger of `baselines` (`stronger_baseline`) above zero (`benefit_exists`), and WITH above its
    majority class by the learned margin (WITH accuracy - majority, judged on the low end)."""
    baseline, diff = stronger_baseline(table, baselines)
    return [benefit_exists(diff, f"WITH - {ARM_NAMES[baseline]} (the stronger baseline) on {where}",
                           claim, unit),
            verdicts.control(claim, f"pretraining helps: WITH - its majority class on {where} above "
                             f"{verdicts.LEARNED_MARGIN:g}", verdicts.EXISTS,
                             above_majority(table, "with", claim), verdicts.LEARNED_MARGIN, op=">",
                             bounds=(0, 1), field=f"A3 rows.accuracy - rows.prior ({where})", unit=unit,
                             source="principle")]


def majority_of(table: pd.DataFrame, models, claim: str, prefix: str = ""
                ) -> dict[str, tuple[float, float]]:
    """{arm: (its mean accuracy, its test sets' mean majority-class accuracy)} over the blocks of
    `block_ci`, like with like; rows without `prior` stop with an error naming the claim."""
    out = {}
    for model in models:
        part = with_language(table[table.model == model])
        name = prefix + ARM_NAMES.get(model, model)
        prior = _priors(part, claim, name)
        out[name] = (block_ci(part.value, part.language_seed).mean,
                     block_ci(prior, part.language_seed).mean)
    return out


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
    """Each synthetic claim judged: its texts, intervals, effect text, margin, controls, arms with
    their majority class, and verdict.

    Every comparison is a difference paired over seeds (blocked by language, `block_ci`), judged
    with the one margin `margin`, then `verdicts.decide` with the claim's positive controls
    (`synonyms_closer`: WITH's pretraining made synonyms close; `pretraining_helps`: the benefit the
    claim explains is there and WITH beats its majority class) and its arms at their majority class
    (`verdicts.at_majority`): a failed control gives "insensitive", a control without an interval
    "not measured", an arm that has not learned "not resolved".
    """
    out = []
    unit = unit_of(frame)

    def ci(table, model):
        return arm_ci(table, model)

    def have(table, *models):
        return all((table.model == m).any() for m in models)

    def judged(key, claim, measured, intervals, verdict, effect, controls, headline, majority,
               suffix="", directions=None):
        # directions: {difference: what the claim needs of it, or None for one shown beside the
        # verdict (a control's, a share's)}; every other difference "greater".
        diffs = {name: (directions or {}).get(name, "greater") for name in intervals if " - " in name}
        diffs = {name: d for name, d in diffs.items() if d is not None}
        below = verdicts.at_majority(majority, claim)
        out.append({"key": key, "claim": claim, "measured": measured, "intervals": intervals,
                    "verdict": verdicts.decide(verdict, controls, claim, below), "effect": effect,
                    "delta": margin, "suffix": suffix, "directions": diffs, "controls": controls,
                    "headline": headline, "majority": majority, "at_majority": below})

    def weakest(diffs):  # the interval all_above_zero judges: the forest plot's point
        return stats.Interval(min(d.mean for d in diffs.values()), min(d.low for d in diffs.values()),
                              min(d.high for d in diffs.values()), min(d.n for d in diffs.values()))

    def took(claim):
        return synonyms_closer(pretraining, claim)

    def diffs_text(diffs):
        return "; ".join(f"{name} = {ci_text(d, explain=False)}" for name, d in diffs.items())

    # 1. synonym transfer on B-D1
    b = at_size(frame, "B-D1", 0.0)
    if have(b, "with", "without", "scratch"):
        arms = {"WITH": ci(b, "with"), "WITHOUT": ci(b, "without"), "scratch": ci(b, "scratch")}
        diffs = {f"WITH - {ARM_NAMES[o]}": paired_diff(b, "with", o) for o in ("without", "scratch")}
        claim = "B-D1 synonym transfer: WITH above WITHOUT and scratch"
        majority = majority_of(b, ("with", "without", "scratch"), claim)
        controls = [took(claim), *pretraining_helps(b, "B-D1", claim, unit)]
        judged("transfer", claim, "B-D1 accuracy at the largest training set, differences paired over seeds",
               {**arms, **diffs}, all_above_zero(diffs, margin), "B-D1 accuracy: " + _arms_text(arms, majority)
               + "; " + diffs_text(diffs), controls, weakest(diffs), majority)
    # 2. sample efficiency on A-D1, as the paper states it: WITH needs fewer examples than WITHOUT
    # for the same accuracy, i.e. its learning curve (accuracy against log size) lies higher: the
    # area under it (`learning_curve_area`), paired over seeds. The effect it explains must exist:
    # WITH above scratch, and above its majority class, at the small sizes (`small_sizes_accuracy`).
    area = per_seed(frame, "A-D1", 0.0, learning_curve_area)
    if have(area, "with", "without", "scratch"):
        diffs = {"WITH - WITHOUT": paired_diff(area, "with", "without")}
        small_sizes = per_seed(frame, "A-D1", 0.0, small_sizes_accuracy)
        small = paired_diff(small_sizes, "with", "scratch")
        need = per_seed(frame, "A-D1", 0.0, examples_needed, target=target)
        needed = "; ".join(f"{m}: {needed_text(need[need.model == m].value)}" for m in ("with", "without", "scratch"))
        claim = "Sample efficiency: WITH learns A-D1 from fewer examples than WITHOUT"
        majority = majority_of(area, ("with", "without"), claim)
        controls = [took(claim), *pretraining_helps(small_sizes, "A-D1 at the smaller half of the sizes",
                                                    claim, unit)]
        arms = {"WITH": ci(area, "with"), "WITHOUT": ci(area, "without")}
        judged("efficiency", claim,
               "mean A-D1 accuracy over training sizes (area under the curve, log axis), paired over seeds. "
               f"Examples to reach {target:.2f}: {needed}",
               {**diffs, "WITH - scratch (small sizes)": small}, all_above_zero(diffs, margin),
               "mean A-D1 accuracy over training sizes: " + _arms_text(arms, majority) + "; "
               + diffs_text(diffs) + f"; WITH - scratch at the small sizes = {ci_text(small, explain=False)}",
               controls, diffs["WITH - WITHOUT"], majority,
               directions={"WITH - scratch (small sizes)": None})
    # 3. generalization to D2 "not fully explained" by the property. If the property explained all
    # of pretraining's A-D2 benefit, pretraining without it would leave none: WITHOUT would be no
    # better than scratch. So the claim is WITHOUT - scratch > 0 on A-D2; given a benefit
    # (WITH - scratch > 0, the effect-exists control) that is the same as the property's share
    # (WITH - WITHOUT) / (WITH - scratch) lying below one.
    for fraction in sorted(frame.bd2_fraction.unique()):
        a2 = at_size(frame, "A-D2", fraction)
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
        majority = majority_of(a2, ("without", "scratch"), claim)
        shown = {**majority_of(a2, ("with",), claim), **majority}
        controls = [took(claim), *pretraining_helps(a2, "A-D2", claim, unit)]
        judged(("generalization", fraction), claim,
               "A-D2 accuracy at the largest training set, differences paired over seeds",
               arms, verdicts.verdict(arms["WITHOUT - scratch"], "greater", margin),
               f"A-D2 accuracy: WITHOUT - scratch = {ci_text(arms['WITHOUT - scratch'], explain=False)}; "
               f"WITH - scratch = {ci_text(benefit, explain=False)}; "
               f"WITH - WITHOUT = {ci_text(arms['WITH - WITHOUT'], explain=False)}; "
               + _arms_text({k: arms[k] for k in ("WITH", "WITHOUT", "scratch")}, shown)
               + "; the property's share "
               + (f"(WITH - WITHOUT) / (WITH - scratch) = {share:.2f}" if np.isfinite(share)
                  else "undefined: no benefit to share"),
               controls, arms["WITHOUT - scratch"], majority, suffix=f" (B-D2 fraction {fraction:g})",
               directions={"WITH - scratch": None, "WITH - WITHOUT": None})
    # 4. controls
    if have(b, "with", "shuffled"):
        # A-D1 where WITH's benefit is (the small sizes), B-D1 at the largest training set
        a1 = per_seed(frame, "A-D1", 0.0, small_sizes_accuracy)
        arms = {"A-D1 WITH": ci(a1, "with"), "A-D1 shuffled": ci(a1, "shuffled"),
                "B-D1 WITH": ci(b, "with"), "B-D1 shuffled": ci(b, "shuffled")}
        diffs = {f"{t} WITH - shuffled": paired_diff(table, "with", "shuffled") for t, table in (("A-D1", a1),
                                                                                                ("B-D1", b))}
        claim = "Control: shuffling WITH's weights removes its benefit (WITH above shuffled)"
        majority = {**majority_of(a1, ("with", "shuffled"), claim, "A-D1 "),
                    **majority_of(b, ("with", "shuffled"), claim, "B-D1 ")}
        controls = [took(claim)]
        for t, table in (("A-D1 at the smaller half of the sizes", a1), ("B-D1", b)):
            if have(table, "scratch"):  # not against shuffled: that is this row's own claim
                controls += pretraining_helps(table, t, claim, unit, baselines=("scratch",))
        judged("shuffled", claim,
               "A-D1 accuracy at the smaller half of the training sizes and B-D1 accuracy at the largest, "
               "differences paired over seeds",
               {**arms, **diffs}, all_above_zero(diffs, margin),
               "; ".join(f"{t} accuracy: " + _arms_text({"WITH": arms[f"{t} WITH"],
                                                          "shuffled": arms[f"{t} shuffled"]},
                                                         {"WITH": majority[f"{t} WITH"],
                                                          "shuffled": majority[f"{t} shuffled"]})
                         for t in ("A-D1", "B-D1")) + "; " + diffs_text(diffs), controls, weakest(diffs),
               majority)
    # one row per CBOW variant run: fine-tuned embeddings, and frozen ones (they keep synonyms close)
    for model, what, suffix in (("cbow", "CBOW embeddings", ""),
                                ("cbow-frozen", "frozen CBOW embeddings", " (frozen embeddings)")):
        if not have(b, model, "scratch"):
            continue
        name = ARM_NAMES[model]
        arms = {name: ci(b, model), "scratch": ci(b, "scratch")}
        compared = (model, "scratch")
        if have(b, "with"):
            arms["WITH"] = ci(b, "with")  # for reference: how much of WITH's transfer CBOW gets
        diffs = {f"{name} - scratch": paired_diff(b, model, "scratch")}
        claim = f"Control: {what} (synonyms close) give some B-D1 transfer (above scratch)"
        majority = majority_of(b, compared, claim)
        shown = {**majority, **(majority_of(b, ("with",), claim) if have(b, "with") else {})}
        # CBOW is trained on the WITH corpus: its synonyms are close where WITH's are
        controls = [took(claim)]
        if have(b, "with"):
            controls += pretraining_helps(b, "B-D1", claim, unit)
        judged(("cbow", model), claim, "B-D1 accuracy at the largest training set, differences paired over seeds",
               {**arms, **diffs}, all_above_zero(diffs, margin), "B-D1 accuracy: " + _arms_text(arms, shown)
               + "; " + diffs_text(diffs), controls, weakest(diffs), majority, suffix=suffix)
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
    parameters (only on the B-D2 fraction a D2 row is about), `effect` the measured intervals,
    each arm beside its majority class. Every claim of the paper has a row: one whose models were
    not run says so, not measured.
    """
    measured = frame is not None and len(frame)
    judged = _judged(frame, pretraining, margin, target) if measured else []
    common = {"dose": dose, "testbed": TESTBED, "unit": unit_of(frame) if measured else "seeds",
              "delta_source": verdicts.delta_against_paper(margin, PAPER_EFFECT, DELTA_SOURCE, "margin")}
    rows = []
    for key, claim in SYNTHETIC_CLAIMS.items():
        found = [j for j in judged if j["key"] == key or (isinstance(j["key"], tuple) and j["key"][0] == key)]
        for j in found:
            direction = "at_most" if "at_most" in j["directions"].values() else "greater"
            rows.append(_card(claim + j["suffix"], j["effect"], j["intervals"], j["delta"], j["verdict"],
                              diff=j["headline"], direction=direction, controls=j["controls"],
                              majority=j["majority"], **common))
        if not found:
            rows.append(_card(claim, "not measured: the models this claim compares were not all run", {},
                              margin, verdicts.NOT_MEASURED, **common))
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
