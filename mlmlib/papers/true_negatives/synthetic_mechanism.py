"""Paper B's causal chain on the synthetic testbed (B4): false negatives impair the discriminator,
and a correction restores it.

Paper B says that labelling a synonym "replaced" pushes the discriminator's gradients the wrong
way. On the synthetic languages that impairment is measured directly: the discriminator's
flagging of *true* replacements (samples that are neither the original nor its synonym), read by
the held-out probe at the end of pretraining, corrected arm minus uncorrected arm of the same
language and seed. A second measure is where the paper's soft regularisation acts: the cosine of
synonym pairs' input embeddings, corrected minus uncorrected. And the benefit of a correction
against the false-negative share that drives it: the mechanism predicts a benefit that grows
with the share (about none on `shift`, where synonyms never share contexts).

Intervals are over languages (`synthetic_claims.blocked_interval`); each claim declares its
controls once (`claims.CLAIM_CONTROLS`). Torch-free: only summaries import it.
"""

from __future__ import annotations

import pandas as pd

from mlmlib import stats, verdicts
from mlmlib.papers.true_negatives import claims
from mlmlib.papers.true_negatives import synthetic_claims as sc

FLAGGING, EMBEDDINGS = claims.MECHANISM_CLAIMS
# The measure each mechanism claim compares (one value per run), its record table and field.
MEASURES = {FLAGGING: ("intrinsic", "acc_true_replaced", "true replacements flagged (held-out probe)"),
            EMBEDDINGS: ("intrinsic", "synonym_cosine", "synonym-pair embedding cosine")}
DELTA = 0.05
DELTA_SOURCE = ("ours: five points of flagging or of cosine, the size of change the controls ask "
                "of a correction's own target (claim_controls.LOSS_SHARE_CHANGE_MIN)")
TRAINING_FLAGGING = "disc_acc_replaced"  # the same flagging per logging window, during training


def _corrected_arms(intrinsic: pd.DataFrame) -> list[str]:
    """The exact-table corrected arms whose uncorrected arm the records also hold."""
    arms = set(intrinsic["arm"]) if len(intrinsic) else set()
    return sorted(a for a in arms if not a.endswith("/none") and "@" not in a
                  and f"{a.split('/')[0]}/none" in arms)


def mechanism_rows(training: pd.DataFrame, intrinsic: pd.DataFrame, downstream: pd.DataFrame,
                   majority: pd.DataFrame, delta: float = DELTA) -> pd.DataFrame:
    """One row per mechanism claim and corrected arm on `mix`: arm minus its objective's
    uncorrected arm, the interval over languages, its controls and verdict (direction: greater)."""
    rows = []
    for claim, (_, column, what) in MEASURES.items():
        for arm in _corrected_arms(intrinsic):
            objective = arm.split("/")[0]
            if claim == FLAGGING and (objective != "electra" or not claims.corrects_flagging(arm)):
                continue  # an MLM has no discriminator; soft regularisation acts on embeddings
            baseline = f"{objective}/none"
            diff = (sc.per_run(intrinsic, arm, sc.CORPUS, column)
                    - sc.per_run(intrinsic, baseline, sc.CORPUS, column)).dropna()
            ci = sc.block_interval(diff)
            measured = sc.measurements(sc.SCORE, arm, baseline, training, intrinsic, downstream,
                                       majority, delta)
            controls = claims.declared_controls(claim, objective, measured, sc.UNIT, delta)
            verdict = verdicts.judge(ci, "greater", delta, controls, claim)
            rows.append({"claim": claim, "arm": arm, "baseline": baseline, "measure": column,
                         "what": what, "difference": ci.mean, "ci_low": ci.low, "ci_high": ci.high,
                         "languages": ci.n, "controls": controls, "verdict": verdict,
                         "languages_to_resolve": (verdicts.seeds_to_resolve(
                             ci.mean, ci.low, ci.high, ci.n, delta, "greater")
                             if verdict == verdicts.NOT_RESOLVED and ci.n >= verdicts.MIN_SEEDS
                             else float("nan"))})
    return pd.DataFrame(rows)


def scorecard(rows: pd.DataFrame, delta: float = DELTA, dose: str = "") -> list[dict]:
    """The mechanism claims as scorecard rows (not accuracies: no majority class applies)."""
    source = verdicts.delta_against_paper(delta, None, DELTA_SOURCE)
    out = []
    for claim in MEASURES:
        part = rows[rows["claim"] == claim] if len(rows) else rows
        for r in part.to_dict("records") if len(part) else []:
            diff = stats.Interval(r["difference"], r["ci_low"], r["ci_high"], r["languages"])
            effect = (f"{r['what']}, {r['arm']} - {r['baseline']} = "
                      + verdicts.interval_text(diff.mean, diff.low, diff.high, diff.n, unit=sc.BLOCK))
            if r["languages_to_resolve"] == r["languages_to_resolve"]:
                effect += f"; about {r['languages_to_resolve']:.0f} languages would resolve it"
            out.append(claims._card(f"{claim[0].upper()}{claim[1:]}: {r['arm']} (mix)", effect, diff.n,
                                    delta, r["verdict"], unit=sc.UNIT, diff=diff, direction="greater",
                                    controls=r["controls"], scale=MEASURES[claim][2], dose=dose,
                                    testbed=sc.TESTBED, delta_source=source))
        if not len(part):
            out.append(claims._card(f"{claim[0].upper()}{claim[1:]}", "not measured: no B4 run holds a "
                                    "corrected arm beside its uncorrected one", 0, delta,
                                    verdicts.NOT_MEASURED, unit=sc.UNIT, scale=MEASURES[claim][2],
                                    dose=dose, testbed=sc.TESTBED, delta_source=source))
    return out


def flagging_curves(training: pd.DataFrame, column: str = TRAINING_FLAGGING) -> pd.DataFrame:
    """The discriminator's flagging of true replacements (or another training `column`, such as
    its loss share at false negatives) per logging window on `mix`, a row per (arm, step,
    language): what the figures over training average over languages."""
    if not len(training) or column not in training:
        return pd.DataFrame(columns=["arm", "step", "language_seed", column])
    part = training[(training["corpus"] == sc.CORPUS) & (training["objective"] == "electra")]
    part = part[~part["arm"].str.contains("@")]
    return (part.groupby(["arm", "step", "language_seed"], as_index=False)[column].mean()
            .dropna(subset=[column]))


def benefit_by_share(training: pd.DataFrame, intrinsic: pd.DataFrame,
                     downstream: pd.DataFrame) -> pd.DataFrame:
    """A row per run, corpus and corrected ELECTRA arm: the uncorrected generator's false-negative
    share (last windows), and the arm's benefit over the uncorrected arm of the same run on the
    flagging of true replacements and on A-D1 / B-D1 accuracy. The mechanism predicts benefits
    that grow with the share."""
    rows = []
    corpora = sorted(set(intrinsic["corpus"])) if len(intrinsic) else []
    for corpus in corpora:
        share = sc.last_windows(training, "electra/none", corpus, "fn_rate_replaced")
        part = intrinsic[intrinsic["corpus"] == corpus]
        for arm in _corrected_arms(part):
            if not arm.startswith("electra/"):
                continue
            benefit = {"flagging": sc.per_run(intrinsic, arm, corpus, "acc_true_replaced")
                       - sc.per_run(intrinsic, "electra/none", corpus, "acc_true_replaced")}
            for column in ("a_d1", "b_d1"):
                benefit[column] = (sc.per_run(downstream, arm, corpus, column)
                                   - sc.per_run(downstream, "electra/none", corpus, column))
            table = pd.DataFrame({"fn_share": share, **benefit}).dropna(subset=["fn_share", "flagging"])
            rows += [{"corpus": corpus, "arm": arm, **r} for r in table.reset_index().to_dict("records")]
    columns = ["corpus", "arm", *sc.RUNS, "fn_share", "flagging", "a_d1", "b_d1"]
    return pd.DataFrame(rows, columns=columns)


def benefit_by_corpus(table: pd.DataFrame) -> pd.DataFrame:
    """`benefit_by_share` per corpus and arm: the mean share and each benefit with its interval
    over languages, as text (synthetic_claims.means_table)."""
    return sc.means_table(table, ["fn_share", "flagging", "a_d1", "b_d1"]).reset_index()
