"""Paper B's claims on the synthetic testbed (B4): records -> paired differences -> verdicts.

The testbed pretrains ELECTRA and MLM from scratch on paper A's languages (a controlled
analogue). The claims are judged on the `mix` corpus, where synonyms share contexts and the
generator itself makes false negatives; `shift` (synonyms never share contexts) is the control
corpus, shown beside them and never judged.

Seeds and blocks: a B4 run is one language and one pretraining seed; every arm of a run is
pretrained on that language with that seed, so a difference arm minus baseline is paired within
the run. The interval is over languages: the paired differences are averaged within each
language (its block), then a Student-t interval is taken over the language means (n = the
number of languages). With one pretraining seed per language (the plans' design: the language
seed is the run's seed) this is the t interval over runs, and it covers the spread of both
the language and the pretraining. Torch-free: only summaries import it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mlmlib import stats, verdicts
from mlmlib.papers.true_negatives import claims
from mlmlib.papers.true_negatives.synthetic_config import TESTBED

CORPUS, CONTROL_CORPUS = "mix", "shift"
# The claims on this testbed: the measure compared (method minus baseline, or for the source claim
# the exact table minus the imperfect one) and the paper's direction.
SCORE, ROBUST = claims.DOWNSTREAM_CLAIMS  # the paper's two downstream claims, worded as for B1
SOURCE = "the exact table beats an imperfect one"
MEASURES = {SCORE: ("a_d1", "greater"), ROBUST: ("robustness_drop", "less"), SOURCE: ("b_d1", "greater")}
MEASURE_NAMES = {"a_d1": "A-D1 accuracy", "b_d1": "B-D1 accuracy (synonyms substituted)",
                 "robustness_drop": "drop A-D1 -> B-D1", "a_d2": "A-D2 accuracy"}
# Positive controls (the targets), thresholds stated on the summary page:
FN_RATE_MIN = 0.2         # false negatives among the uncorrected generator's replacements (mix)
DISC_TRUE_MIN = 0.5       # uncorrected discriminator's accuracy on replacements that are not FNs
SCRATCH_B_D1_MIN = 0.05   # the uncorrected arm beats scratch on B-D1 by this much
TABLES_DIFFER_MIN = claims.TABLES_DIFFER_MIN
LAST_WINDOWS = claims.LAST_WINDOWS
DELTA = 0.02  # the downstream margin on this testbed (ours: see DELTA_SOURCE)
DELTA_SOURCE = ("ours: paper B's effect sizes are not in our notes; two accuracy points on the "
                "synthetic test sets (about the standard error of one 1,000-example test set)")
COST = {claims.HC_CLAIM: 0.05, claims.SR_CLAIM: 0.15}
BLOCK = "language"


# ---------------------------------------------------------------- intervals over languages


def blocked_interval(diffs: pd.DataFrame, column: str = "difference") -> stats.Interval:
    """Mean and 95% interval of `column` with the language as the block: averaged within each
    language_seed, then a Student-t interval over the language means (n = languages)."""
    if not len(diffs):
        return stats.Interval(float("nan"), float("nan"), float("nan"), 0)
    return stats.mean_ci(diffs.groupby("language_seed")[column].mean())


def paired(downstream: pd.DataFrame, arm: str, baseline: str, corpus: str, column: str) -> pd.DataFrame:
    """arm minus baseline on `column`, per run (language, pretraining seed) both ran, on `corpus`."""
    part = downstream[downstream["corpus"] == corpus] if len(downstream) else downstream
    runs = ["language_seed", "pretrain_seed"]
    if not len(part):
        return pd.DataFrame(columns=[*runs, "difference"])
    a = part[part["arm"] == arm].groupby(runs)[column].mean()
    b = part[part["arm"] == baseline].groupby(runs)[column].mean()
    both = a.index.intersection(b.index)
    return pd.DataFrame({"difference": a[both] - b[both]}).reset_index()


def scratch_gain(downstream: pd.DataFrame, arm: str, corpus: str, column: str = "b_d1") -> float | None:
    """Mean of `arm` minus scratch on `column` over the runs both ran (None without either)."""
    if not len(downstream):
        return None
    runs = ["language_seed", "pretrain_seed"]
    mine = downstream[(downstream["arm"] == arm) & (downstream["corpus"] == corpus)].groupby(runs)[column].mean()
    scratch = downstream[downstream["arm"] == "scratch"].groupby(runs)[column].mean()
    both = mine.index.intersection(scratch.index)
    return float((mine[both] - scratch[both]).mean()) if len(both) else None


# ---------------------------------------------------------------- positive controls


def last_windows(training: pd.DataFrame, arm: str, corpus: str, column: str, claim: str, name: str) -> float:
    """`column` of `arm` on `corpus` over its last LAST_WINDOWS logging windows, mean over runs."""
    values = verdicts.record_value(training, column, claim, name)
    part = training.assign(_value=values)
    part = part[(part["arm"] == arm) & (part["corpus"] == corpus)]
    if not len(part):
        raise verdicts.ControlError(f"claim {claim!r}, control {name!r}: no training windows of arm "
                                    f"{arm!r} on {corpus!r}")
    last = part.sort_values("step").groupby(["language_seed", "pretrain_seed"]).tail(LAST_WINDOWS)
    return float(last["_value"].mean())


def probe_mean(intrinsic: pd.DataFrame, arm: str, corpus: str, column: str, claim: str, name: str) -> float:
    """The discriminator probe's `column` for `arm` on `corpus`, mean over runs."""
    values = verdicts.record_value(intrinsic, column, claim, name)
    part = intrinsic.assign(_value=values)
    part = part[(part["arm"] == arm) & (part["corpus"] == corpus)]
    return float(part["_value"].mean()) if len(part) else float("nan")


def fn_rate_control(training: pd.DataFrame, objective: str, claim: str, corpus: str = CORPUS) -> dict:
    """Took: the uncorrected generator (or MLM) makes false negatives, FN_RATE_MIN of its replacements."""
    name = f"false negatives among {objective}/none's replacements on {corpus} (last windows)"
    value = last_windows(training, f"{objective}/none", corpus, "fn_rate_replaced", claim, name)
    return verdicts.control(claim, name, verdicts.TOOK, value, FN_RATE_MIN, bounds=(0, 1),
                            field="training.fn_rate_replaced")


def discriminates_control(intrinsic: pd.DataFrame, claim: str, corpus: str = CORPUS) -> dict:
    """Took: the uncorrected discriminator flags replacements that are not false negatives."""
    name = f"electra/none's discriminator flags true replacements on {corpus} (held-out probe)"
    value = probe_mean(intrinsic, "electra/none", corpus, "acc_true_replaced", claim, name)
    return verdicts.control(claim, name, verdicts.TOOK, value, DISC_TRUE_MIN, bounds=(0, 1),
                            field="intrinsic.acc_true_replaced")


def pretraining_helps_control(downstream: pd.DataFrame, objective: str, claim: str,
                              corpus: str = CORPUS) -> dict:
    """Exists: pretraining (the uncorrected arm) beats scratch on B-D1 by SCRATCH_B_D1_MIN."""
    name = f"{objective}/none beats scratch on B-D1 (synonyms substituted), {corpus}"
    return verdicts.control(claim, name, verdicts.EXISTS, scratch_gain(downstream, f"{objective}/none", corpus),
                            SCRATCH_B_D1_MIN, bounds=(0, 1), field="downstream.b_d1 of arm 'scratch'")


def tables_differ_control(training: pd.DataFrame, arm: str, claim: str, corpus: str = CORPUS) -> dict:
    """Took (source claim): the two tables find false negatives at rates TABLES_DIFFER_MIN apart."""
    default = arm.split("@")[0]
    name = f"the two tables find different false negatives: |{default} - {arm}| among replaced tokens"
    a = last_windows(training, default, corpus, "fn_rate_replaced", claim, name)
    b = last_windows(training, arm, corpus, "fn_rate_replaced", claim, name)
    return verdicts.control(claim, name, verdicts.TOOK, abs(a - b), TABLES_DIFFER_MIN, bounds=(0, 1),
                            field="training.fn_rate_replaced")


def controls_for(claim: str, arm: str, other: str, training: pd.DataFrame, intrinsic: pd.DataFrame,
                 downstream: pd.DataFrame, corpus: str = CORPUS) -> list[dict]:
    """A claim's positive controls on `corpus` (`arm` against `other`): the generator makes false
    negatives and (ELECTRA) the discriminator discriminates; the source claim's two tables
    differ; pretraining helps B-D1."""
    objective = arm.split("/")[0]
    took = [fn_rate_control(training, objective, claim, corpus)]
    if objective == "electra":
        took.append(discriminates_control(intrinsic, claim, corpus))
    if claim == SOURCE:
        took.append(tables_differ_control(training, other, claim, corpus))
    return took + [pretraining_helps_control(downstream, objective, claim, corpus)]


# ---------------------------------------------------------------- claims


def _comparisons(downstream: pd.DataFrame):
    """(claim, arm, compared-with arm, effect in words) for every corrected arm the records hold."""
    arms = sorted(set(downstream["arm"]) - {"scratch"}) if len(downstream) else []
    for arm in arms:
        if arm.endswith("/none"):
            continue
        if "@" in arm:
            default = arm.split("@")[0]
            if default in arms:
                yield SOURCE, default, arm, f"{default} (exact table) - {arm}"
            continue
        baseline = arm.split("/")[0] + "/none"
        if baseline in arms:
            for claim in (SCORE, ROBUST):
                yield claim, arm, baseline, f"{arm} - {baseline}"


def claim_rows(training: pd.DataFrame, downstream: pd.DataFrame, intrinsic: pd.DataFrame,
               delta: float = DELTA) -> pd.DataFrame:
    """One row per claim and compared pair, on `mix` (judged, with its controls) and on `shift`
    (the control corpus: shown, verdict left empty). Each interval is over languages
    (`blocked_interval`); a verdict that is not resolved names the languages that would resolve it
    at the measured spread."""
    rows = []
    for claim, arm, other, effect in _comparisons(downstream):
        column, direction = MEASURES[claim]
        for corpus in (CORPUS, CONTROL_CORPUS):
            diffs = paired(downstream, arm, other, corpus, column)
            if not len(diffs):
                continue
            ci = blocked_interval(diffs)
            row = {"claim": claim, "arm": arm, "baseline": other, "corpus": corpus, "measure": column,
                   "effect": effect, "direction": direction, "difference": ci.mean, "ci_low": ci.low,
                   "ci_high": ci.high, "languages": ci.n, "runs": len(diffs), "verdict": "",
                   "controls": [], "languages_to_resolve": float("nan")}
            if corpus == CORPUS:
                row["controls"] = controls_for(claim, arm, other, training, intrinsic, downstream, corpus)
                row["verdict"] = verdicts.judge(ci, direction, delta, row["controls"], claim)
                if row["verdict"] == verdicts.NOT_RESOLVED and ci.n >= verdicts.MIN_SEEDS:
                    row["languages_to_resolve"] = verdicts.seeds_to_resolve(
                        ci.mean, ci.low, ci.high, ci.n, delta, direction)
            rows.append(row)
    return pd.DataFrame(rows)


def cost_rows(arms: pd.DataFrame) -> pd.DataFrame:
    """Per corrected arm: its step time over its objective's uncorrected arm's in the same run
    (corpora averaged), minus 1, with the interval over languages and the verdict on the paper's
    target (HC at most 5%, SR at most 15%); the timing must resolve the target (its control)."""
    if not len(arms):
        return pd.DataFrame()
    runs = ["language_seed", "pretrain_seed"]
    per_run = arms.groupby(["arm", *runs])["step_ms"].mean()
    rows = []
    for arm in sorted(set(arms["arm"])):
        claim = claims.target_claim(arm)
        baseline = arm.split("/")[0] + "/none"
        if claim is None or baseline not in per_run.index.get_level_values(0):
            continue
        a, b = per_run[arm], per_run[baseline]
        both = a.index.intersection(b.index)
        ratios = pd.DataFrame({"difference": a[both] / b[both] - 1.0}).reset_index()
        ci = blocked_interval(ratios)
        target = COST[claim]
        judged = ci.n >= verdicts.MIN_SEEDS
        controls = claims.cost_controls(claim, ci, target) if judged else []
        verdict = verdicts.judge(ci, "at_most", target, controls, claim) if judged else verdicts.NOT_RESOLVED
        rows.append({"claim": claim, "arm": arm, "step_ms": float(a.mean()), "baseline_ms": float(b.mean()),
                     "overhead": ci.mean, "ci_low": ci.low, "ci_high": ci.high, "languages": ci.n,
                     "target": target, "controls": controls, "verdict": verdict})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- what the page shows


def control_values(training: pd.DataFrame, intrinsic: pd.DataFrame, downstream: pd.DataFrame) -> pd.DataFrame:
    """The controls' quantities on both corpora, side by side (shift: where FNs should be rare)."""
    rows = []
    for corpus in (CORPUS, CONTROL_CORPUS):
        if not len(training) or not (training["corpus"] == corpus).any():
            continue
        row = {"corpus": corpus}
        for objective in ("electra", "mlm"):
            part = training[(training["arm"] == f"{objective}/none") & (training["corpus"] == corpus)]
            if len(part):
                last = part.sort_values("step").groupby(["language_seed", "pretrain_seed"]).tail(LAST_WINDOWS)
                row[f"{objective}/none FN / replaced"] = float(last["fn_rate_replaced"].mean())
                gain = scratch_gain(downstream, f"{objective}/none", corpus)
                row[f"{objective}/none - scratch, B-D1"] = float("nan") if gain is None else gain
        probe = intrinsic[(intrinsic["arm"] == "electra/none") & (intrinsic["corpus"] == corpus)] \
            if len(intrinsic) else intrinsic
        if len(probe) and "acc_true_replaced" in probe:
            row["disc. acc. true replacements"] = float(probe["acc_true_replaced"].mean())
            row["disc. acc. false negatives"] = float(probe["acc_false_negative"].mean())
        rows.append(row)
    return pd.DataFrame(rows)


def means_table(rows: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Per corpus and arm, the mean of each column over runs, with its interval over languages."""
    if not len(rows):
        return pd.DataFrame()
    out = []
    for (corpus, arm), part in rows.groupby(["corpus", "arm"], sort=False):
        row = {"corpus": corpus or "(none)", "arm": arm}
        for column in columns:
            if column in part and part[column].notna().any():
                ci = blocked_interval(part.dropna(subset=[column]), column)
                row[column] = verdicts.interval_text(ci.mean, ci.low, ci.high, ci.n, unit=BLOCK, explain=False)
        out.append(row)
    return pd.DataFrame(out).set_index(["corpus", "arm"])


def downstream_table(downstream: pd.DataFrame) -> pd.DataFrame:
    """Accuracy on A-D1, B-D1 and A-D2 and the drop, per corpus and arm (scratch: corpus none)."""
    return means_table(downstream, ["a_d1", "b_d1", "a_d2", "robustness_drop"]).rename(columns=MEASURE_NAMES)


def intrinsic_table(intrinsic: pd.DataFrame) -> pd.DataFrame:
    """The probe (ELECTRA) and the synonym-pair embedding cosine (every arm), per corpus and arm."""
    columns = ["auc_true_vs_fn", "p_replaced_true", "p_replaced_fn", "acc_false_negative",
               "generator_set_acc", "synonym_cosine", "random_cosine"]
    return means_table(intrinsic, columns).rename(columns={
        "auc_true_vs_fn": "AUC true replacement vs FN", "p_replaced_true": "P(replaced): true",
        "p_replaced_fn": "P(replaced): FN", "acc_false_negative": "FN flagged",
        "generator_set_acc": "generator: right set", "synonym_cosine": "cos synonyms",
        "random_cosine": "cos random pairs"})


def dose_text(ours: list[dict], paper: list[dict]) -> str:
    """Pretraining tokens per arm (steps x batch x (length + [CLS])), ours against the paper profile's."""
    def tokens(params: dict) -> int:
        setup = params["setup"]
        return int(setup["steps"]) * int(setup["batch_size"]) * (int(setup["corpus_length"]) + 1)
    return verdicts.dose_text(tokens(ours[0]) if ours else None, tokens(paper[0]) if paper else None,
                              "tokens of pretraining per arm")


def scorecard(rows: pd.DataFrame, cost: pd.DataFrame, delta: float = DELTA, dose: str = "") -> list[dict]:
    """The testbed's claims as scorecard rows (testbed TESTBED), judged on `mix`; a claim with no
    row at all gets one, not measured."""
    source = verdicts.delta_against_paper(delta, claims.PAPER_EFFECT, DELTA_SOURCE)
    common = {"dose": dose, "testbed": TESTBED}
    judged = rows[rows["corpus"] == CORPUS] if len(rows) else rows
    out = []
    for claim in (SCORE, ROBUST, SOURCE):
        part = judged[judged["claim"] == claim] if len(judged) else judged
        for r in part.to_dict("records") if len(part) else []:
            diff = stats.Interval(r["difference"], r["ci_low"], r["ci_high"], r["languages"])
            effect = (f"{MEASURE_NAMES[r['measure']]}, {r['effect']} = "
                      + verdicts.interval_text(diff.mean, diff.low, diff.high, diff.n, unit=BLOCK))
            if r["verdict"] == verdicts.NOT_RESOLVED and r["languages_to_resolve"] == r["languages_to_resolve"]:
                effect += f"; about {r['languages_to_resolve']:.0f} languages would resolve it"
            out.append(claims._card(f"{claim[0].upper()}{claim[1:]}: {r['arm']} (mix)", effect, diff.n, delta,
                                    r["verdict"], unit=BLOCK, diff=diff, direction=r["direction"],
                                    controls=r["controls"], delta_source=source, **common))
        if not len(part):
            out.append(claims._card(f"{claim[0].upper()}{claim[1:]}", "not measured: no B4 run compared "
                                    "these arms", 0, delta, verdicts.NOT_RESOLVED, delta_source=source, **common))
    for claim, target in COST.items():
        part = cost[cost["claim"] == claim] if len(cost) else cost
        for r in part.to_dict("records") if len(part) else []:
            diff = stats.Interval(r["overhead"], r["ci_low"], r["ci_high"], r["languages"])
            effect = ("extra step time over the uncorrected arm in B4's runs = "
                      + verdicts.interval_text(diff.mean, diff.low, diff.high, diff.n, unit=BLOCK))
            out.append(claims._card(f"{claim}: {r['arm']}", effect, diff.n, target, r["verdict"], unit=BLOCK,
                                    diff=diff, direction="at_most", controls=r["controls"],
                                    delta_source=f"{claims.COST_SOURCE}: at most {target:.0%}", **common))
    return out


# ---------------------------------------------------------------- the summary page's one call


@dataclass
class SyntheticSummary:
    """Everything B3 shows and saves of the synthetic testbed, from B4's records."""

    training: pd.DataFrame
    downstream: pd.DataFrame
    intrinsic: pd.DataFrame
    rows: pd.DataFrame
    cost: pd.DataFrame
    controls: pd.DataFrame
    scorecard: list[dict]
    downstream_table: pd.DataFrame
    intrinsic_table: pd.DataFrame

    def saved(self) -> dict:
        """What the summary records (JSON-able)."""
        return {"claims": self.rows.to_dict("records"), "cost": self.cost.to_dict("records"),
                "controls": self.controls.to_dict("records")}


def explode(records: pd.DataFrame, key: str) -> pd.DataFrame:
    """One table of the row lists that B4's records hold under `key` (none: an empty table)."""
    if not len(records) or key not in records:
        return pd.DataFrame()
    return pd.DataFrame([row for rows in records[key] if isinstance(rows, list) for row in rows])


def summarise(records: pd.DataFrame, paper_params: list[dict], delta: float = DELTA) -> SyntheticSummary:
    """B4's records (a row per run) -> claim rows, cost rows, control values and scorecard rows;
    `paper_params`: the paper profile's B4 runs (the dose's reference)."""
    training, downstream, intrinsic, arms = (explode(records, k) for k in
                                             ("training", "downstream", "intrinsic", "arms"))
    rows = claim_rows(training, downstream, intrinsic, delta)
    cost = cost_rows(arms)
    ours = records.to_dict("records") if len(records) and "setup" in records else []
    card = scorecard(rows, cost, delta, dose_text(ours, paper_params))
    return SyntheticSummary(training, downstream, intrinsic, rows, cost,
                            control_values(training, intrinsic, downstream), card,
                            downstream_table(downstream), intrinsic_table(intrinsic))
