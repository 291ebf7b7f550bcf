"""Paper B's figures and display tables: what B1, B2 and B3 draw from their rows.

The numbers come from the experiment and `claims`; these functions only lay them out (column
names a reader understands, several panels in one figure), so the pages stay short. A function
that draws leaves `plt.show()` to the page; a `show_*` function displays what it made.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from mlmlib import plots, tables

KIND_NAMES = {"disc_acc_original": "original tokens", "disc_acc_replaced": "replaced tokens",
              "disc_acc_false_negative": "false negatives"}
LAST_WINDOW = {"step": "step", "generator_acc": "generator accuracy",
               "fn_rate_replaced": "FN rate (replaced)", "fn_rate_masked": "FN rate (masked)",
               "disc_acc_original": "disc. acc. (original)",
               "disc_acc_replaced": "disc. acc. (replaced)",
               "disc_acc_false_negative": "disc. acc. (false negatives)"}


def false_negative_curves(log: pd.DataFrame) -> None:
    """B1: the false-negative rate and the generator's accuracy over training, one line per arm."""
    _, axes = plt.subplots(1, 2, figsize=(11, 3.5))
    plots.curves(log, x="step", y="fn_rate_replaced", hue="arm", xlabel="training step",
                 ylabel="false negatives / replaced", title="False-negative rate", ax=axes[0])
    plots.curves(log, x="step", y="generator_acc", hue="arm", xlabel="training step",
                 ylabel="accuracy at masked positions", title="Generator (MLM) accuracy",
                 ax=axes[1])
    plt.tight_layout()


def top_false_negatives(arm_rows: list[dict], per_arm: int = 3) -> pd.DataFrame:
    """B1: each arm's most frequent (original, sampled synonym) pairs."""
    top = pd.DataFrame([{"arm": r["arm"], **p} for r in arm_rows
                        for p in r["top_false_negatives"][:per_arm]])
    if top.empty:
        return top
    return top.set_index(["arm", "original"]).rename(columns={"sample": "sampled synonym",
                                                              "count": "times"})


def last_window(log: pd.DataFrame) -> pd.DataFrame:
    """B1: each ELECTRA arm's last logging window (empty without an ELECTRA arm)."""
    final = log[log["objective"] == "electra"].groupby("arm").tail(1)
    if final.empty:  # MLM arms only: their log has no discriminator columns
        return pd.DataFrame(columns=list(LAST_WINDOW.values()))
    return final.set_index("arm")[list(LAST_WINDOW)].rename(columns=LAST_WINDOW).round(4)


def downstream_table(downstream: list[dict], priors: dict[str, float]) -> pd.DataFrame:
    """B1: mean clean and synonym-swapped test accuracy per task and arm, next to the class prior."""
    columns = ["test_accuracy", "synonym_accuracy", "robustness_drop"]
    table = pd.DataFrame(downstream).groupby(["task", "arm"])[columns].mean()
    table["class_prior"] = table.index.get_level_values("task").map(priors)
    return table.rename(columns={"test_accuracy": "test accuracy",
                                 "synonym_accuracy": "with synonyms swapped",
                                 "robustness_drop": "drop", "class_prior": "class prior"}).round(4)


def overhead_bars(overhead: pd.DataFrame, model: str) -> None:
    """B2: each arm's extra step time over the plain step."""
    ax = plots.bars(overhead, x="arm", y="overhead", hue=None, xlabel="arm",
                    ylabel="extra step time (fraction)",
                    title=f"Overhead over the plain step ({model})",
                    baseline=0.0, baseline_label="plain")
    ax.tick_params(axis="x", rotation=45)


def overhead_shown(overhead: pd.DataFrame) -> pd.DataFrame:
    """B2: step time, the overhead of the medians and its paired interval over repetitions."""
    shown = tables.with_interval(overhead, "overhead_mean", "overhead_low", "overhead_high", "reps",
                                 name="ci", unit="repetition")
    shown = shown[["objective", "arm", "reference", "step_ms", "overhead", "ci", "reps"]]
    return shown.set_index(["objective", "arm"]).rename(columns={
        "step_ms": "step (ms, median)", "overhead": "extra step time (medians)",
        "ci": "extra step time, paired [95% CI]", "reps": "repetitions"}).round(3)


def seed_difference_bars(seed_diffs: pd.DataFrame) -> None:
    """B3: per corrected arm and task, the test-accuracy difference to its objective's baseline."""
    if not len(seed_diffs):
        print("no corrected arm was compared with its baseline")
        return
    ax = plots.bars(seed_diffs, x="arm", y="difference", hue="task",
                    xlabel="arm (vs. the uncorrected arm of its objective)",
                    ylabel="test accuracy difference",
                    title="Downstream score: method minus baseline",
                    baseline=0.0, baseline_label="no difference")
    ax.legend(fontsize=8, bbox_to_anchor=(1.01, 1), loc="upper left")
    ax.tick_params(axis="x", rotation=30)


def false_negative_panels(training: pd.DataFrame) -> None:
    """B3: the false-negative rate over training, and per objective against generator accuracy."""
    if not len(training):
        return
    objectives = sorted(training["objective"].unique())
    _, axes = plt.subplots(1, 1 + len(objectives), figsize=(5 + 4 * len(objectives), 3.8))
    plots.curves(training, x="step", y="fn_rate_replaced", hue="arm", xlabel="training step",
                 ylabel="false negatives / replaced", title="False-negative rate", ax=axes[0])
    if (training["fn_rate_replaced"] > 0).any():  # no positive rate: nothing to log-scale
        axes[0].set_yscale("log")  # MLM's rate is ten times ELECTRA's: both readable on a log axis
    axes[0].legend(fontsize=8, bbox_to_anchor=(1.01, 1), loc="upper left")
    for ax, objective in zip(axes[1:], objectives):  # one fit per objective, not across them
        plots.scatter_with_fit(training[training["objective"] == objective], x="generator_acc",
                               y="fn_rate_replaced", xlabel="generator (MLM) accuracy",
                               ylabel="false negatives / replaced",
                               title=f"{objective}: rate against generator accuracy", ax=ax)
    plt.tight_layout()


def floor_shown(floor: pd.DataFrame) -> pd.DataFrame:
    """B3: every arm's test accuracy with its interval, against the class prior."""
    shown = tables.with_interval(floor, "test_accuracy", "ci_low", "ci_high", "seeds", name="ci")
    return shown[["task", "arm", "ci", "seeds", "class_prior", "learned"]].rename(columns={
        "ci": "test accuracy [95% CI]", "seeds": "pretraining seeds", "class_prior": "class prior",
        "learned": "learned the task"}).set_index(["task", "arm"]).round(4)


def scores_shown(scores: pd.DataFrame) -> pd.DataFrame:
    """B3: each task's own score (GLUE's metric, SQuAD's F1 and EM) with its interval."""
    shown = tables.with_interval(scores, "score", "ci_low", "ci_high", "seeds", name="ci")
    return shown.set_index(["task", "metric", "arm"])[["ci", "seeds"]].rename(columns={
        "ci": "score [95% CI]", "seeds": "pretraining seeds"})


def false_negatives_shown(fn_table: pd.DataFrame) -> pd.DataFrame:
    """B3: `claims.false_negative_table` with readable column names."""
    return fn_table.set_index("arm").rename(columns={
        "fn_rate_replaced": "FN rate (replaced)", "fn_rate_masked": "FN rate (masked)",
        "zero_windows": "windows at zero", "windows": "windows",
        "injected_of_masked": "injected synonyms (masked)",
        "spearman_with_generator_acc": "Spearman with generator acc."}).round(4)


def claims_shown(claim_rows: pd.DataFrame, delta: float, measures: dict[str, str]) -> pd.DataFrame:
    """B3: each downstream claim row with its interval and what the design can detect: the
    smallest effect at 80% power and the seeds that would narrow the interval to ±delta.

    `measures` names each effect (claims.MEASURES): passed in, so the training pages that draw
    with this module never reach the claims module (a claims edit reruns only the summary).
    """
    from mlmlib.verdicts import design_from_interval

    design = [design_from_interval(r.ci_low, r.ci_high, r.seeds, delta)
              for r in claim_rows.itertuples()]
    shown = claim_rows.assign(effect=claim_rows["effect"].str.split(":").str[0].map(measures),
                              detectable=[round(d["mde"], 4) for d in design],
                              seeds_for_delta=[d["seeds_for_delta"] for d in design])
    shown = tables.with_interval(shown, "difference", "ci_low", "ci_high", "seeds", name="ci")
    shown = shown[["claim", "arm", "task", "effect", "method_mean", "baseline_mean", "ci", "seeds",
                   "detectable", "seeds_for_delta", "learned", "verdict"]].rename(columns={
        "detectable": "detectable (80% power)", "seeds_for_delta": f"seeds for ±{delta:g}",
        "effect": "compared", "method_mean": "method", "baseline_mean": "baseline",
        "ci": "difference [95% CI]", "seeds": "pretraining seeds", "learned": "both arms learned"})
    return shown.set_index(["claim", "arm", "task"]).round(4)


def disc_accuracy_shown(disc_table: pd.DataFrame) -> pd.DataFrame:
    """B3: `claims.disc_accuracy_table` with readable column names."""
    return disc_table.rename(columns=KIND_NAMES).round(4)


def cost_shown(cost: pd.DataFrame) -> pd.DataFrame:
    """B3: B1's step time per arm and its extra time over the uncorrected arm."""
    return cost.set_index("arm").rename(columns={
        "step_ms": "B1 step (ms)", "vs_baseline": "extra time vs. the uncorrected arm"}).round(3)


def overhead_verdicts_shown(overhead: pd.DataFrame) -> pd.DataFrame:
    """B3: B2's overhead per model and arm with its interval over repetitions and the verdict."""
    shown = tables.with_interval(overhead, "overhead", "ci_low", "ci_high", "reps", name="ci",
                                 unit="repetition")
    shown = shown[["model", "arm", "step_ms", "ci", "reps", "claim", "target", "verdict"]]
    return (shown.rename(columns={"step_ms": "B2 step (ms)", "ci": "extra step time [95% CI]",
                                  "reps": "repetitions"})
            .set_index(["model", "arm"]).round(3))


def show_false_negatives(training: list[dict], arm_rows: list[dict]) -> None:
    """B1: the curves, how many logging windows saw no false negative, and the top pairs."""
    log = pd.DataFrame(training)
    false_negative_curves(log)
    plt.show()
    print("false-negative rate zero in a logging window:",
          int((log["fn_rate_replaced"] == 0).sum()), "of", len(log))
    top = top_false_negatives(arm_rows)
    if len(top):
        display(top)
    else:
        print("no false negatives logged")


def show_last_window(training: list[dict]) -> None:
    """B1: the discriminator's accuracy by kind of position in each ELECTRA arm's last window."""
    final = last_window(pd.DataFrame(training))
    if final.empty:  # an MLM arm alone (the paper plan runs one arm per run): no discriminator
        print("No ELECTRA arm in this run: discriminator accuracies exist for ELECTRA arms only.")
    else:
        display(final)


def lookup_table_info(tables: dict) -> pd.DataFrame:
    """B1: each correction table's size, and how many held-out pairs were removed from it."""
    return (pd.DataFrame([t.info for t in tables.values()]).set_index("source")
            .rename(columns=lambda c: c.replace("_", " ")))


def task_table(task_data: list) -> pd.DataFrame:
    """B1: each task's sizes, class prior and how much the substitution changed."""
    return (pd.DataFrame([t.info for t in task_data]).set_index("task")
            .rename(columns=lambda c: c.replace("_", " ")).round(3))


def substitution_samples(samples: list[dict]):
    """B1: the first swap of each of the first changed test examples, left-aligned."""
    return (pd.DataFrame(samples, columns=["task", "fragment", "word", "substitute", "pos"])
            .style.hide(axis="index").set_properties(**{"text-align": "left"}))


def scorecard_forest(scorecard: list[dict]) -> None:
    """B3: every claim's effect with its interval, coloured by verdict."""
    plots.forest(scorecard, title="Paper B: every claim's effect, coloured by verdict")


def show(table: pd.DataFrame, layout, *args, empty: str = "") -> None:
    """Display `layout(table, *args)` when the table has rows; otherwise print `empty`, if any
    (B3's sections stay quiet where a profile ran nothing for them)."""
    if len(table):
        display(layout(table, *args))
    elif empty:
        print(empty)


# ---------------------------------------------------------------- the synthetic testbed (B4, B3)
SYNTHETIC_COLUMNS = {"a_d1": "A-D1", "b_d1": "B-D1 (synonyms)", "a_d2": "A-D2",
                     "robustness_drop": "drop A-D1 -> B-D1", "auc_true_vs_fn": "AUC true vs FN",
                     "p_replaced_true": "P(replaced): true", "p_replaced_fn": "P(replaced): FN",
                     "acc_true_replaced": "true flagged", "acc_false_negative": "FN flagged",
                     "generator_set_acc": "generator: right set", "synonym_cosine": "cos synonyms",
                     "random_cosine": "cos random pairs", "step_ms": "step (ms)"}


def synthetic_fn_curves(training: pd.DataFrame | list[dict]) -> None:
    """B4, B3: false negatives among replaced tokens over training, one panel per corpus."""
    training = pd.DataFrame(training)
    if not len(training):
        print("no training windows recorded")
        return
    corpora = sorted(training["corpus"].unique())
    _, axes = plt.subplots(1, len(corpora), figsize=(5.5 * len(corpora), 3.6), squeeze=False)
    for ax, corpus in zip(axes[0], corpora):
        plots.curves(training[training["corpus"] == corpus], x="step", y="fn_rate_replaced", hue="arm",
                     xlabel="training step", ylabel="false negatives / replaced",
                     title=f"{corpus}: synonyms {'share' if corpus == 'mix' else 'never share'} contexts",
                     ax=ax)
        ax.legend(fontsize=7)
    plt.tight_layout()


def synthetic_run_tables(run) -> None:
    """B4: one seed's downstream accuracies, the discriminator probe and the embedding cosines."""
    down = pd.DataFrame(run.downstream).set_index(["corpus", "arm"])
    display(down[["a_d1", "b_d1", "a_d2", "robustness_drop"]].rename(columns=SYNTHETIC_COLUMNS).round(3))
    probe = pd.DataFrame(run.intrinsic).set_index(["corpus", "arm"])
    cost = pd.DataFrame(run.arms).set_index(["corpus", "arm"])["step_ms"]
    shown = [c for c in SYNTHETIC_COLUMNS if c in probe and c not in down]
    display(probe[shown].join(cost).rename(columns=SYNTHETIC_COLUMNS).round(3))
    if run.curve:  # the fine-tuning curve: A-D1 accuracy by training size, every arm and scratch
        curve = pd.DataFrame(run.curve)
        display(curve.pivot_table(index="train_size", columns=["corpus", "arm"], values="a_d1").round(3))


def synthetic_findings(run, last_windows: int = 2) -> None:
    """B4: the measured values next to the paper's premise and the controls' targets (the page
    states the targets; the summary judges them over every seed)."""
    log = pd.DataFrame(run.training)
    down = pd.DataFrame(run.downstream).set_index(["corpus", "arm"])
    probe = pd.DataFrame(run.intrinsic).set_index(["corpus", "arm"])
    scratch = down.loc[("", "scratch"), "b_d1"]
    for corpus in sorted(log["corpus"].unique()):
        for objective in ("electra", "mlm"):
            arm = f"{objective}/none"
            part = log[(log["corpus"] == corpus) & (log["arm"] == arm)]
            if not len(part):
                continue
            rate = part.sort_values("step")["fn_rate_replaced"].tail(last_windows).mean()
            line = (f"{corpus}, {arm}: false negatives {rate:.3f} of replaced tokens at the end; "
                    f"B-D1 {down.loc[(corpus, arm), 'b_d1']:.3f} against scratch {scratch:.3f}")
            if objective == "electra":
                line += (f"; discriminator flags {probe.loc[(corpus, arm), 'acc_true_replaced']:.3f} "
                         f"of true replacements, {probe.loc[(corpus, arm), 'acc_false_negative']:.3f} "
                         "of false negatives")
            print(line)


def synthetic_shown(table: pd.DataFrame) -> pd.DataFrame:
    """B3: a synthetic_claims table (intervals as text) with readable column names."""
    return table.rename(columns=SYNTHETIC_COLUMNS)


def synthetic_claims_shown(rows: pd.DataFrame) -> pd.DataFrame:
    """B3: the synthetic testbed's claim rows, mix (judged) beside shift (the control corpus)."""
    shown = tables.with_interval(rows, "difference", "ci_low", "ci_high", "languages", name="ci",
                                 unit="language")
    shown = shown[["claim", "arm", "corpus", "effect", "measure", "ci", "languages",
                   "languages_to_resolve", "verdict"]]
    return shown.rename(columns={"ci": "difference [95% CI]", "measure": "compared",
                                 "languages_to_resolve": "languages to resolve"}).set_index(
        ["claim", "arm", "corpus"]).round(3)


def show_synthetic(summary) -> None:
    """B3: the synthetic testbed's tables: the controls' values on both corpora, the claim rows
    (mix judged, shift beside it), the downstream accuracies and the probe."""
    if not len(summary.downstream):
        print("no B4 records: the synthetic testbed did not run in this profile")
        return
    display(summary.controls.set_index("corpus").round(3))
    if len(summary.rows):
        display(synthetic_claims_shown(summary.rows))
    display(synthetic_shown(summary.downstream_table))
    display(synthetic_shown(summary.intrinsic_table))


def show_floor_checks(scores: pd.DataFrame, margin: float) -> list[dict]:
    """B3: every pretrained arm against scratch by `margin` on each task's score: a banner, and
    the missed rows in red; returns the checks (floors.above_scratch)."""
    from mlmlib import floors

    checks = floors.above_scratch(scores, "score", margin, ["task", "metric"]) if len(scores) else []
    display(floors.banner(checks))
    if checks:
        display(floors.styled(checks))
    return checks
