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
