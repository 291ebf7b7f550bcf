"""The measured numbers paper C's chapter quotes (C1's masking rates, C2's accuracies, the
dose-response of C2 and C4), one registered `quantity` each."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from mlmlib.page_quantities import explode_rows, interval, num, pct, quantity, span
from mlmlib.stats import mean_ci

# ----------------------------------------------------------------------------------------------
# Paper C (cpu): C1's masking rates, C2's accuracies


def c2_accuracy(records: pd.DataFrame) -> pd.DataFrame:
    """C2's test accuracy, one row per seed and one column per arm."""
    rows = explode_rows(records, "rows", keep=["run_id"])
    return rows.pivot_table(index="seed", columns="arm", values="accuracy")


for _arm in ("none", "random", "exponential"):
    quantity(f"c2_{_arm}", "C2_selective_mlm", "metrics.rows[*].accuracy",
             f"the {_arm} arm's test accuracy at the top dose, mean and 95% interval over seeds"
             )(lambda records, arm=_arm: interval(c2_accuracy(records)[arm]))


@quantity("c2_majority", "C2_selective_mlm", "metrics.majority_accuracy",
          "the test set's majority-class accuracy")
def _(records):
    return num(records["majority_accuracy"].mean())


@quantity("c2_seed_range", "C2_selective_mlm", "metrics.rows[*].accuracy",
          "the pretrained arms' test accuracy, lowest to highest single seed")
def _(records):
    acc = c2_accuracy(records).drop(columns="scratch", errors="ignore")
    return span(num(acc.min().min()), num(acc.max().max()))


@quantity("c2_paired_sd", "C2_selective_mlm", "metrics.rows[*].accuracy",
          "the standard deviation over seeds of exponential - random")
def _(records):
    acc = c2_accuracy(records)
    return num((acc["exponential"] - acc["random"]).std(ddof=1), 4)


@quantity("c2_half_width", "C2_selective_mlm", "metrics.rows[*].accuracy",
          "the half-width of the 95% interval of exponential - random")
def _(records):
    acc = c2_accuracy(records)
    ci = mean_ci(list(acc["exponential"] - acc["random"]))
    return num((ci.high - ci.low) / 2, 4)


@quantity("c1_rate_gap", "C1_task_scores", "metrics.max_rate_gap_points",
          "the largest gap between an arm's realised masking rate and its target, in points")
def _(records):
    return num(records["max_rate_gap_points"].max(), 2)


@quantity("c1_overhead", "C1_task_scores", "metrics.max_overhead",
          "the largest extra cost of drawing selective masks, as a share of a training step")
def _(records):
    return pct(records["max_overhead"].max(), 3)


def c1_vader_example(records: pd.DataFrame, word: str) -> pd.Series:
    """C1's example row of `word` under the VADER list."""
    rows = explode_rows(records, "examples", keep=["word_list"])
    return rows[(rows["word_list"] == "vader") & (rows["word"] == word)].iloc[0]


@quantity("c1_exp_great", "C1_task_scores", "metrics.examples[*].exponential",
          "exponential masking's probability for 'great' (a VADER list word)")
def _(records):
    return num(c1_vader_example(records, "great")["exponential"], 2)


@quantity("c1_exp_the", "C1_task_scores", "metrics.examples[*].exponential",
          "exponential masking's probability for 'the'")
def _(records):
    return num(c1_vader_example(records, "the")["exponential"], 2)


@quantity("c1_score_the", "C1_task_scores", "metrics.examples[*].score",
          "the task score of 'the' under the VADER list")
def _(records):
    return num(c1_vader_example(records, "the")["score"], 2)


# ----------------------------------------------------------------------------------------------
# Paper C (cpu): the dose-response of C2 (MiniLM) and of C4 (the synthetic analogue)


def dose_values(records: pd.DataFrame, field: str, arm: str, dose: str) -> pd.Series:
    """One value per seed of `field` in the `dose_rows` of `arm` at dose 0 ("base"), at the
    records' top dose ("top") or at their lowest dose above 0 ("first")."""
    rows = explode_rows(records, "dose_rows", keep=["run_id"])
    at = {"base": 0, "top": rows["dose"].max(), "first": rows["dose"][rows["dose"] > 0].min()}[dose]
    rows = rows[(rows["arm"] == arm) & (rows["dose"] == at)]
    if rows.empty or rows[field].isna().all():
        raise ValueError(f"no {field} of {arm} at dose {at}")
    return rows.groupby("run_id")[field].mean()


DOSE_FIELDS = {"share": ("list_share", "the list words' share of the masked tokens"),
               "loss": ("heldout_loss", "the masked-LM loss on held-out text (one fixed masking)"),
               "probe": ("probe_accuracy", "the probe's test accuracy on frozen features"),
               "acc": ("accuracy", "the few-label fine-tuned test accuracy")}
DOSE_QUANTITIES = {  # (testbed, field): the (arm, dose) points a page quotes
    ("c2", "share"): [("random", "top"), ("exponential", "top")],
    ("c2", "loss"): [("random", "base"), ("random", "top"), ("exponential", "top")],
    ("c2", "probe"): [("random", "base"), ("random", "top"), ("exponential", "top")],
    ("c4", "share"): [("random", "top"), ("exponential", "top"), ("exponential-b1", "top")],
    ("c4", "loss"): [("random", "base"), ("random", "top"), ("exponential", "top")],
    ("c4", "acc"): [("random", "base"), ("random", "top"), ("exponential", "top")],
}
DOSE_NOTEBOOKS = {"c2": "C2_selective_mlm", "c4": "C4_synthetic_selective"}


def _dose_text(field: str, arm: str, dose: str, share: bool) -> Callable[[pd.DataFrame], str]:
    def compute(records):
        values = dose_values(records, field, arm, dose)
        return num(values.mean()) if share else interval(values)
    return compute


for (_bed, _what), _points in DOSE_QUANTITIES.items():
    _field, _meaning = DOSE_FIELDS[_what]
    for _arm, _dose in _points:
        _name = f"{_bed}_{_what}_{'base' if _dose == 'base' else _arm.replace('-', '_')}"
        _where = "the base (dose 0)" if _dose == "base" else f"the {_arm} arm at the top dose"
        quantity(_name, DOSE_NOTEBOOKS[_bed], f"metrics.dose_rows[*].{_field}",
                 f"{_meaning}: {_where}, " + ("mean over seeds" if _what == "share"
                                              else "mean and 95% interval over seeds")
                 )(_dose_text(_field, _arm, _dose, _what == "share"))


@quantity("c4_languages", "C4_synthetic_selective", "one record per run",
          "how many C4 runs (languages) the records hold")
def _(records):
    return str(len(records))


@quantity("c4_doses", "C4_synthetic_selective", "metrics.dose_rows[*].dose",
          "the doses of continued MLM the C4 records read, in steps")
def _(records):
    doses = sorted({int(d) for d in explode_rows(records, "dose_rows", keep=[])["dose"]})
    return ", ".join(f"{d:,}" for d in doses[:-1]) + f" and {doses[-1]:,}"


@quantity("c4_majority", "C4_synthetic_selective", "metrics.majority_accuracy",
          "the synthetic task's majority-class accuracy, mean over languages")
def _(records):
    return num(records["majority_accuracy"].mean())


def dose_difference(field: str, a: tuple[str, str],
                    b: tuple[str, str]) -> Callable[[pd.DataFrame], str]:
    """(arm, dose) a minus (arm, dose) b on `field`, paired by run (seed or language): mean and
    95% interval."""
    def compute(records):
        diff = dose_values(records, field, *a) - dose_values(records, field, *b)
        return interval(diff.dropna())
    return compute


DOSE_DIFFERENCES = {  # name: (testbed, field, a, b, what the page says of it)
    "c2_probe_diff": ("c2", "probe", ("exponential", "top"), ("random", "top"),
                      "exponential - random at the top dose"),
    "c4_acc_diff": ("c4", "acc", ("exponential", "top"), ("random", "top"),
                    "exponential - random at the top dose"),
    "c4_acc_diff_b1": ("c4", "acc", ("exponential-b1", "top"), ("random", "top"),
                       "the weaker exponential (beta 1) - random at the top dose"),
    "c4_acc_diff_first": ("c4", "acc", ("exponential", "first"), ("random", "first"),
                          "exponential - random at the lowest dose above 0"),
    "c4_moved": ("c4", "acc", ("random", "top"), ("random", "base"),
                 "random at the top dose - the base (random - none)"),
    "c4_moved_first": ("c4", "acc", ("random", "first"), ("random", "base"),
                       "random at the lowest dose above 0 - the base (random - none)"),
}
for _name, (_bed, _what, _a, _b, _meaning) in DOSE_DIFFERENCES.items():
    _field = DOSE_FIELDS[_what][0]
    quantity(_name, DOSE_NOTEBOOKS[_bed], f"metrics.dose_rows[*].{_field}",
             f"{DOSE_FIELDS[_what][1]}: {_meaning}, paired by seed, mean and 95% interval"
             )(dose_difference(_field, _a, _b))


@quantity("c2_moved", "C2_selective_mlm", "metrics.rows[*].accuracy",
          "fine-tuned test accuracy, random - none at the top dose, paired by seed: mean and 95% "
          "interval")
def _(records):
    acc = c2_accuracy(records)
    return interval(acc["random"] - acc["none"])


def _c4_top_claim(records: pd.DataFrame) -> dict:
    """C3's claim on the analogue (C4) at its top dose: exponential - random, its controls and
    verdict (metrics.dose_claims)."""
    claims = [c for c in explode_rows(records, "dose_claims", keep=[]).to_dict("records")
              if c.get("testbed") == "synthetic"]
    if not claims:
        raise ValueError("no dose claim of the synthetic testbed in C3's record")
    return max(claims, key=lambda c: c["dose"])


@quantity("c4_top_verdict", "C3_selective_summary", "metrics.dose_claims[*].verdict",
          "C3's verdict on exponential - random in the analogue at its top dose")
def _(records):
    claim = _c4_top_claim(records)
    return f"{claim['verdict']} at {int(claim['dose']):,} steps over {claim['seeds']} languages"


@quantity("c4_top_controls", "C3_selective_summary", "metrics.dose_claims[*].controls",
          "which of the claim's controls passed in the analogue at its top dose")
def _(records):
    from mlmlib.verdicts import PASSED, control_status

    controls = _c4_top_claim(records)["controls"]
    failed = [f"{c['name']} ({control_status(c)})" for c in controls
              if control_status(c) != PASSED]
    if not failed:
        return f"all {len(controls)} controls passed"
    return f"{len(failed)} of {len(controls)} controls not passed: " + "; ".join(failed)
