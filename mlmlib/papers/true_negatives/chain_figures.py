"""B1's view of each arm's chain: the discriminator and the downstream score at every checkpoint.

One row per arm and checkpoint (the record's `checkpoints` and `downstream`), with the 95%
interval of each test accuracy over the test examples (Wilson's score interval; the interval
over pretraining seeds is B3's), and the figure of both against the steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from scipy import stats as sps

LEVEL = 0.95
DISC_FLAGS_MIN = 0.3  # the control of this page: the uncorrected discriminator flags replacements


def accuracy_interval(accuracy: float, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Wilson's interval of an accuracy measured on n test examples."""
    if not n:
        return float("nan"), float("nan")
    ci = sps.binomtest(round(accuracy * n), n).proportion_ci(level, method="wilson")
    return float(ci.low), float(ci.high)


def checkpoint_table(checkpoints: Sequence[dict], downstream: Sequence[dict]) -> pd.DataFrame:
    """Per arm, checkpoint and task: the discriminator's flagging (replaced tokens, false
    negatives), how often the correction fires, and the test accuracy with its interval;
    `scratch` (checkpoint 0: no pretraining) once per task."""
    ck = pd.DataFrame(list(checkpoints))
    down = pd.DataFrame(list(downstream))
    rows = []
    for _, d in down.iterrows():
        low, high = accuracy_interval(d["test_accuracy"], int(d.get("test_n") or 0))
        step = 0 if pd.isna(d["checkpoint"]) else int(d["checkpoint"])
        match = ck[(ck["arm"] == d["arm"]) & (ck["checkpoint"] == step)] if len(ck) else ck
        state = match.iloc[0] if len(match) else {}
        rows.append({
            "arm": d["arm"], "step": step, "task": d["task"], "finetune seed": d["finetune_seed"],
            "flags replaced": state.get("disc_acc_replaced"),
            "flags false negatives": state.get("disc_acc_false_negative"),
            "correction fires (of masked)": state.get("fn_rate_masked")
            if d["method"] != "none" else None,
            "test accuracy": d["test_accuracy"], f"{LEVEL:.0%} interval": f"[{low:.3f}, {high:.3f}]",
            "synonym drop": d["robustness_drop"]})
    return pd.DataFrame(rows).sort_values(["task", "arm", "step"]).round(3).reset_index(drop=True)


def show_checkpoints(checkpoints: Sequence[dict], downstream: Sequence[dict]):
    """Against the steps of each chain: the discriminator's accuracy on replaced tokens and on
    false negatives (against ELECTRA's label 'replaced'), and the test accuracy with its interval
    (scratch: the dashed line)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    ck = pd.DataFrame(list(checkpoints))
    down = pd.DataFrame(list(downstream))
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    electra = ck[ck["objective"] == "electra"]
    if len(electra):
        long = electra.melt(["arm", "checkpoint"], ["disc_acc_replaced", "disc_acc_false_negative"],
                            var_name="position", value_name="flagged")
        long["position"] = long["position"].map({"disc_acc_replaced": "replaced",
                                                 "disc_acc_false_negative": "false negative"})
        sns.lineplot(long, x="checkpoint", y="flagged", hue="arm", style="position", marker="o",
                     ax=axes[0])
        axes[0].axhline(DISC_FLAGS_MIN, color="grey", lw=0.8, ls=":")
    axes[0].set(xscale="log", xlabel="pretraining step of the chain", ylim=(-0.02, 1.02),
                ylabel="called 'replaced' (share)", title="discriminator, logging window ending there")
    arms = down[down["arm"] != "scratch"].copy()
    arms["low"], arms["high"] = zip(*[accuracy_interval(a, int(n or 0)) for a, n in
                                      zip(arms["test_accuracy"], arms.get("test_n", 0))])
    for (arm, task), part in arms.groupby(["arm", "task"]):
        part = part.groupby("checkpoint")[["test_accuracy", "low", "high"]].mean().reset_index()
        axes[1].errorbar(part["checkpoint"], part["test_accuracy"], marker="o", capsize=3,
                         yerr=[part["test_accuracy"] - part["low"], part["high"] - part["test_accuracy"]],
                         label=f"{arm} ({task})")
    for accuracy in down[down["arm"] == "scratch"].groupby("task")["test_accuracy"].mean():
        axes[1].axhline(accuracy, color="grey", ls="--", lw=1)
    axes[1].set(xscale="log", xlabel="pretraining step of the chain", ylabel="test accuracy",
                title=f"fine-tuned at each checkpoint ({LEVEL:.0%} intervals)")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def at_step(downstream: Sequence[dict], step: int) -> list[dict]:
    """The downstream rows of the models at `step` of their chain, and scratch's."""
    return [r for r in downstream if r.get("checkpoint") in (None, step)]


def b1_tables(records: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """B1's records as (the downstream rows the claims compare: each chain's last checkpoint,
    the downstream rows at every checkpoint, the checkpoint rows)."""
    def rows(key: str) -> pd.DataFrame:
        return pd.DataFrame([r for runs in (records[key] if key in records else []) for r in runs or []])

    downstream = rows("downstream")
    return final_rows(downstream), downstream, rows("checkpoints")


def final_rows(downstream: pd.DataFrame) -> pd.DataFrame:
    """The downstream rows of each chain's last checkpoint (what the claims compare: the whole
    dose), and scratch's; records without checkpoints are returned as they are."""
    if "checkpoint" not in downstream or not len(downstream):
        return downstream
    step = downstream["checkpoint"]
    last = downstream.groupby(["arm", "pretrain_seed"])["checkpoint"].transform("max")
    return downstream[step.isna() | (step == last)].reset_index(drop=True)


SEED_CURVES = {"test_accuracy": "test accuracy", "disc_acc_replaced": "flags replaced",
               "disc_acc_false_negative": "flags false negatives"}


def seed_curves(checkpoints: pd.DataFrame, downstream: pd.DataFrame) -> pd.DataFrame:
    """Per arm, task, measure and checkpoint: the mean over pretraining seeds and its 95% Student-t
    interval (fine-tuning seeds averaged first), for the test accuracy and the discriminator's
    flagging; `scratch` at step 0."""
    from mlmlib import stats

    if "checkpoint" not in downstream or not len(downstream):
        return pd.DataFrame(columns=["arm", "task", "measure", "step", "mean", "ci_low", "ci_high", "seeds"])
    down = downstream.assign(step=downstream["checkpoint"].fillna(0).astype(int))
    per_seed = down.groupby(["arm", "task", "step", "pretrain_seed"])["test_accuracy"].mean().reset_index()
    long = [per_seed.rename(columns={"test_accuracy": "value"}).assign(measure=SEED_CURVES["test_accuracy"])]
    electra = checkpoints[checkpoints["objective"] == "electra"] if len(checkpoints) else checkpoints
    for column in ("disc_acc_replaced", "disc_acc_false_negative"):
        if len(electra) and column in electra:
            part = electra.rename(columns={"checkpoint": "step", column: "value"})
            long.append(part[["arm", "step", "pretrain_seed", "value"]].assign(task="", measure=SEED_CURVES[column]))
    rows = []
    for (arm, task, measure, step), part in pd.concat(long).groupby(["arm", "task", "measure", "step"]):
        ci = stats.mean_ci(part["value"])
        rows.append({"arm": arm, "task": task, "measure": measure, "step": step, "mean": ci.mean,
                     "ci_low": ci.low, "ci_high": ci.high, "seeds": ci.n})
    return pd.DataFrame(rows)


def show_seed_curves(checkpoints: pd.DataFrame, downstream: pd.DataFrame) -> pd.DataFrame:
    """B3's view of B1's chains: each measure against the chain's steps, mean over pretraining
    seeds with its 95% interval (scratch: the dashed line), drawn and tabled; returns the curves."""
    import matplotlib.pyplot as plt
    from IPython.display import display

    from mlmlib.tables import with_interval

    curves = seed_curves(checkpoints, downstream)
    measures = [m for m in SEED_CURVES.values() if m in set(curves.get("measure", []))]
    if not measures:
        print("the B1 records hold no checkpoints (their chains were not fine-tuned at checkpoints)")
        return curves
    fig, axes = plt.subplots(1, len(measures), figsize=(4.6 * len(measures), 3.8), squeeze=False)
    for ax, measure in zip(axes[0], measures):
        part = curves[curves["measure"] == measure]
        for (arm, task), line in part[part["arm"] != "scratch"].groupby(["arm", "task"]):
            ax.errorbar(line["step"], line["mean"], yerr=[line["mean"] - line["ci_low"], line["ci_high"] - line["mean"]],
                        marker="o", capsize=3, label=f"{arm} ({task})" if task else arm)
        for value in part[part["arm"] == "scratch"]["mean"]:
            ax.axhline(value, color="grey", ls="--", lw=1)
        if measure == SEED_CURVES["disc_acc_replaced"]:
            ax.axhline(DISC_FLAGS_MIN, color="grey", lw=0.8, ls=":")
        ax.set(xscale="symlog", xlabel="pretraining step of the chain", ylabel="mean over seeds", title=measure)
        ax.legend(fontsize=7)
    fig.tight_layout()
    plt.show()
    display(with_interval(curves.round(3), "mean", "ci_low", "ci_high", "seeds"))
    return curves
