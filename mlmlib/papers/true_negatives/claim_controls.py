"""Paper B's positive controls: what each one is, its threshold, and how B1 measures it.

A verdict means something only if the experiment could have shown the effect. Each claim of
`claims` declares a set of these controls (`claims.CLAIM_CONTROLS`), and every testbed supplies
each declared control an interval over its blocks: B1 (real text, blocks: pretraining seeds;
`b1_measurements` here) and B4 (synthetic, blocks: languages; `synthetic_claims`), or an empty
one (`NOT_MEASURED`, via `not_measured`) where it does not measure it; B2's cost rows give theirs
over timing repetitions (`claims.cost_controls`). A control is judged on its interval's near end
(verdicts.control); its threshold comes from a principle the summary page states (CONTROLS).
Torch-free, and imports no claim: the claims import it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mlmlib import stats, verdicts

# Positive controls' thresholds (CONTROLS: each with the principle the summary page states):
FN_RATE_MIN = 0.2         # false negatives among the uncorrected generator's replacements
DISC_TRUE_MIN = 0.5       # the uncorrected discriminator flags true replacements where no FN exist
# a correction changes the share of the discriminator's training loss taken at false negatives by
# at least this (declared 2026-12-07, before B4's 8,000-step records: design history, paper B)
LOSS_SHARE_CHANGE_MIN = 0.05
TABLES_DIFFER_MIN = 0.05  # two lookup tables differ in the false negatives they find by this much
LAST_WINDOWS = 2          # the controls read the last logging windows, where training ended

# The controls, by name: the words the scorecard and the summary page show.
FN_PRESENT = "false negatives present"
LEARNS_CLEAN = "the discriminator learns where false negatives are absent"
TARGET_CHANGED = "the correction changes what it targets"
SWAPS_HURT = "synonym swaps hurt the uncorrected arm"
PRETRAINING_HELPS = "pretraining helps"
ABOVE_MAJORITY = "the uncorrected arm beats its majority class"
TABLES_DIFFER = "the two tables find different false negatives"
TIMING_RESOLVES = "the timing resolves the target"


@dataclass(frozen=True)
class Declared:
    """A control as its claims declare it: kind (verdicts.TOOK or EXISTS), threshold, operator,
    the principle the threshold comes from (shown on the page), the objectives it applies to
    (a control of the discriminator has nothing to read in an MLM), and whether the threshold is
    a multiple of the claim's margin delta."""

    kind: str
    threshold: float
    op: str
    principle: str
    objectives: tuple[str, ...] = ("electra", "mlm")
    times_delta: bool = False


CONTROLS = {
    FN_PRESENT: Declared(verdicts.TOOK, FN_RATE_MIN, ">=", "false negatives are a substantial share "
                         "of what the uncorrected model is taught to reject: one replacement in five "
                         "(fixed before any B4 run)"),
    LEARNS_CLEAN: Declared(verdicts.TOOK, DISC_TRUE_MIN, ">=", "where no replacement is a false "
                           "negative, the uncorrected discriminator flags at least half of the true "
                           "replacements: it has learned its task", objectives=("electra",)),
    TARGET_CHANGED: Declared(verdicts.TOOK, LOSS_SHARE_CHANGE_MIN, ">=", "the correction moves the "
                             "share of the discriminator's training loss taken at false negatives "
                             "(the signal a hard correction relabels or removes) by five points or "
                             "more, either way"),
    SWAPS_HURT: Declared(verdicts.EXISTS, 2.0, ">=", "the uncorrected arm's drop is at least twice "
                         "the margin, so a correction has room to remove more than the margin",
                         times_delta=True),
    PRETRAINING_HELPS: Declared(verdicts.EXISTS, 0.0, ">", "the uncorrected arm minus scratch lies "
                                "above zero: pretraining adds something for a correction to change"),
    ABOVE_MAJORITY: Declared(verdicts.EXISTS, verdicts.LEARNED_MARGIN, ">", "the uncorrected arm's "
                             "accuracy minus its test set's majority class lies above the book's "
                             "learned margin"),
    TABLES_DIFFER: Declared(verdicts.TOOK, TABLES_DIFFER_MIN, ">=", "the two tables find false "
                            "negatives at rates five points apart or more"),
    TIMING_RESOLVES: Declared(verdicts.TOOK, 0.5, "<=", "the interval's half-width is at most half "
                              "the target, so an overhead at the target cannot hide inside it"),
}
NOT_MEASURED = stats.Interval(float("nan"), float("nan"), float("nan"), 0)
# Controls declared anew after records failed them: every scorecard row of paper B names each,
# with why (book/design_history.md, paper B), so that no re-declaration hides in a verdict.
REDECLARED = {
    f"control '{TARGET_CHANGED}' read on the loss share at false negatives": (
        "declared before B4's 8,000-step records, after its earlier reading (the flagging of "
        "false negatives) could not pass on B4, whose uncorrected discriminator flags almost none"),
}


def measurement(values, what: str, field: str) -> tuple[stats.Interval, str, str]:
    """A control's measurement: the interval of one value per block (stats.mean_ci), in words,
    and the record field it reads."""
    return stats.mean_ci(pd.Series(values, dtype=float).to_numpy()), what, field


def not_measured(why: str) -> tuple[stats.Interval, str, str]:
    """A declared control a testbed does not measure: an empty interval, and why."""
    return NOT_MEASURED, why, ""


def oriented(ci: stats.Interval) -> stats.Interval:
    """The interval of |difference|, oriented by the sign of its mean: an interval that spans
    zero keeps a near end below zero, so 'changed by at least x' fails on it."""
    if not ci.mean < 0:
        return ci
    return stats.Interval(-ci.mean, -ci.high, -ci.low, ci.n)


def corrects_flagging(arm: str) -> bool:
    """Whether an arm's correction acts on the discriminator's label at false negatives (an HC
    method of negatives.METHODS, alone or combined); SR acts on the embeddings instead."""
    # imported here: the page numbers read this module without the corrections' tensor code
    from mlmlib.papers.true_negatives.negatives import HC, method_kinds

    return HC in method_kinds(arm.split("/", 1)[-1].split("@")[0])


# What TARGET_CHANGED reads: the discriminator's loss at false negatives over its whole loss, per
# logging window, with the labels and weights the arm trains on (monitor.disc_loss_at_fn).
LOSS_SHARE = "disc_loss_share_false_negative"


def target_changed(mine: pd.Series, base: pd.Series, target: str, baseline: str,
                   where: str = "") -> tuple[stats.Interval, str, str]:
    """TARGET_CHANGED from each block's loss share (last windows) of the corrected arm and of
    the uncorrected one; not measured where the records predate the loss share."""
    diff = (mine - base).dropna()
    if not len(diff):
        return not_measured("these records hold no loss share at false-negative positions (logged "
                            "from 2026-12-07 on)")
    return (oriented(stats.mean_ci(diff.to_numpy())), f"|{target} - {baseline}| on the "
            f"discriminator's loss share at false negatives{where} (last windows)", f"training.{LOSS_SHARE}")


def target_not_measured(arm: str) -> tuple[stats.Interval, str, str]:
    """TARGET_CHANGED for a correction whose target the records do not hold."""
    if arm.startswith("mlm/"):
        return not_measured("the records hold no MLM loss at false-negative positions")
    return not_measured(f"{arm} regularises embeddings; the records hold no measure of its pull "
                        "at false-negative positions")


# ---- B1's measurements: one value per pretraining seed
B1_UNIT = "pretraining seeds"


def last_windows(training: pd.DataFrame, arm: str, column: str, claim: str, name: str) -> pd.Series:
    """`column` of `arm` over its last LAST_WINDOWS logging windows, one mean per pretraining
    seed; an error naming the claim and the field when the records lack it."""
    values = verdicts.record_value(training, column, claim, name)
    part = training[training["arm"] == arm].assign(_value=values)
    if not len(part):
        raise verdicts.ControlError(f"claim {claim!r}, control {name!r}: no training windows of arm {arm!r}")
    last = part.sort_values("step").groupby("pretrain_seed").tail(LAST_WINDOWS)
    return last.groupby("pretrain_seed")["_value"].mean()


def _per_seed_accuracy(downstream: pd.DataFrame, arm: str, task: str) -> pd.Series:
    """Test accuracy of `arm` on `task`, one mean per pretraining seed (fine-tuning seeds averaged)."""
    part = downstream[(downstream["task"] == task) & (downstream["arm"] == arm)]
    return part.groupby("pretrain_seed")["test_accuracy"].mean()


def prior_of(priors: dict[str, float], task: str, claim: str) -> float:
    """The task's majority-class accuracy, or an error naming the claim and the record field."""
    if task not in priors or priors[task] != priors[task]:
        raise verdicts.ControlError(f"claim {claim!r}: task {task!r} has no majority-class baseline "
                                    "(record field 'tasks[*].majority_accuracy')")
    return priors[task]


def b1_measurements(claim: str, objective: str, arm: str, task: str, training: pd.DataFrame,
                    downstream: pd.DataFrame, priors: dict[str, float], other: str = "") -> dict:
    """Every control a claim of `claims` declares, as B1 measures it for `arm`: one value per
    pretraining seed. For the source claim, `other` names the arm on the other lookup table (the
    target and the tables compared are then the same correction on the default table and it);
    for the others it stays empty and the target is `arm` itself."""
    baseline = f"{objective}/none"
    out = {FN_PRESENT: measurement(last_windows(training, baseline, "fn_rate_replaced", claim, FN_PRESENT),
                                   f"{baseline}'s replacements that are false negatives (last windows)",
                                   "training.fn_rate_replaced"),
           LEARNS_CLEAN: not_measured("B1 has no corpus without false negatives")}
    target = arm.split("@")[0] if other else arm
    if corrects_flagging(target) and objective == "electra":
        if LOSS_SHARE in training:
            out[TARGET_CHANGED] = target_changed(
                last_windows(training, target, LOSS_SHARE, claim, TARGET_CHANGED),
                last_windows(training, baseline, LOSS_SHARE, claim, TARGET_CHANGED), target, baseline)
        else:
            out[TARGET_CHANGED] = target_changed(pd.Series(dtype=float), pd.Series(dtype=float),
                                                 target, baseline)
    else:
        out[TARGET_CHANGED] = target_not_measured(target)
    base_acc = _per_seed_accuracy(downstream, baseline, task)
    scratch = _per_seed_accuracy(downstream, "scratch", task)
    out[PRETRAINING_HELPS] = measurement((base_acc - scratch).dropna(), f"{baseline} - scratch, "
                                         f"test accuracy on {task}", "downstream.test_accuracy")
    out[ABOVE_MAJORITY] = measurement(base_acc - prior_of(priors, task, claim),
                                      f"{baseline} - majority class, test accuracy on {task}",
                                      "tasks.majority_accuracy")
    drop = downstream[(downstream["task"] == task) & (downstream["arm"] == baseline)]
    out[SWAPS_HURT] = measurement(drop.groupby("pretrain_seed")["robustness_drop"].mean(),
                                  f"{baseline}'s drop under synonym substitution on {task}",
                                  "downstream.robustness_drop")
    if other:
        a = last_windows(training, arm.split("@")[0], "fn_rate_replaced", claim, TABLES_DIFFER)
        b = last_windows(training, other, "fn_rate_replaced", claim, TABLES_DIFFER)
        out[TABLES_DIFFER] = (oriented(stats.mean_ci((a - b).dropna().to_numpy())),
                              f"|{arm.split('@')[0]} - {other}| among replaced tokens (last windows)",
                              "training.fn_rate_replaced")
    return out

