"""Selective - random against the dose of continued MLM, each dose judged with its controls.

From the dose rows of C2 (real text, the probe at every dose) and C4 (the controlled analogue,
fine-tuning at every dose): per (testbed, word list, dose > 0) the paired difference selective -
random over seeds with its 95% interval, and three positive controls at that dose:

* took: the selective arm masks list words at least `claims.LIST_SHARE_RATIO_MIN` times as often
  as random (mean over seeds of the ratio of their list shares of masked tokens);
* took: continued MLM lowers the held-out masked-LM loss at that dose: the interval of
  loss(dose 0) - loss(random at the dose), paired by seed, lies above zero;
* exists: continued MLM moves the score at that dose: the interval of random(dose) - random(0)
  clears zero (dose 0 is the base, the `none` arm).

The verdict is `verdicts.apply_controls` on the interval's verdict.
"""

from __future__ import annotations

import pandas as pd

from mlmlib import stats, verdicts
from mlmlib.papers.selective_masking.claims import LIST_SHARE_RATIO_MIN

# What each testbed's dose claim is scored on, and its scorecard testbed.
TESTBEDS = {
    "real": {"score": "probe_accuracy", "testbed": "real text: MiniLM base, dose-response",
             "score_name": "probe accuracy (frozen features)"},
    "synthetic": {"score": "accuracy", "testbed": "synthetic: exact task word list (controlled analogue)",
                  "score_name": "few-label fine-tuned accuracy"},
}
SELECTIVE_ARM = "exponential"


def _paired(a: pd.Series, b: pd.Series) -> stats.Interval:
    """a - b over the seeds both have."""
    seeds = sorted(set(a.index) & set(b.index))
    return stats.paired_test(a.loc[seeds].to_numpy(), b.loc[seeds].to_numpy()).diff


def _nearest_zero(diff: stats.Interval) -> float | None:
    """An interval's end nearest zero, signed toward its mean (> 0: it clears zero)."""
    if diff.n < verdicts.MIN_SEEDS:
        return None
    return diff.low if diff.mean >= 0 else -diff.high


def dose_claims(dose_rows: list[dict], testbed: str, score: str | None = None,
                reference: str = "random", arm: str = SELECTIVE_ARM,
                delta: float | None = None) -> list[dict]:
    """One claim row per (task, word list, dose > 0): `arm` - `reference` on `score`, its
    interval, controls and verdict."""
    if testbed not in TESTBEDS:
        raise ValueError(f"testbed must be one of {list(TESTBEDS)}, got {testbed!r}")
    score = score or TESTBEDS[testbed]["score"]
    frame = pd.DataFrame(dose_rows)
    if frame.empty:
        return []
    if score not in frame:
        raise ValueError(f"score {score!r}: the dose rows hold no such field; "
                         f"fields: {sorted(frame.columns)}")
    if "task" not in frame:
        frame["task"] = "-"
    out = []
    for (task, word_list), part in frame[frame["arm"].isin([arm, reference])].groupby(
            ["task", "word_list"], sort=False):
        def series(name, dose, column):
            rows = part[(part["arm"] == name) & (part["dose"] == dose)]
            return rows.set_index("seed")[column].astype(float)

        base = part[part["dose"] == 0]
        for dose in sorted(d for d in part["dose"].unique() if d > 0):
            text = (f"{arm} beats {reference} masking after {dose} steps of continued MLM: "
                    f"{TESTBEDS[testbed]['score_name']}, {task} ({word_list})")
            diff = _paired(series(arm, dose, score), series(reference, dose, score))
            ratio = (series(arm, dose, "list_share") / series(reference, dose, "list_share")).mean()
            base_loss = base[base["arm"] == reference].set_index("seed")["heldout_loss"].astype(float)
            loss_drop = _paired(base_loss, series(reference, dose, "heldout_loss"))
            moved = _paired(series(reference, dose, score),
                            base[base["arm"] == reference].set_index("seed")[score].astype(float))
            controls = [
                verdicts.control(text, f"{arm} masks list words more often than {reference}: "
                                 "list share of masked tokens, ratio", verdicts.TOOK, ratio,
                                 LIST_SHARE_RATIO_MIN, bounds=(1, float("inf")),
                                 field=f"dose rows: list_share ({task}, {word_list})"),
                verdicts.control(text, f"continued MLM lowers the held-out masked-LM loss at {dose} "
                                 "steps: loss(0) - loss(random), 95% interval's lower end",
                                 verdicts.TOOK, loss_drop.low, 0.0, op=">",
                                 field="dose rows: heldout_loss"),
                verdicts.control(text, f"continued MLM moves the score at {dose} steps: "
                                 f"{reference}({dose}) - {reference}(0), 95% interval's end nearest zero",
                                 verdicts.EXISTS, _nearest_zero(moved), 0.0, op=">",
                                 field=f"dose rows: {score}"),
            ] if diff.n >= verdicts.MIN_SEEDS else []
            found = verdicts.verdict(diff, "greater", delta)
            if controls:
                found = verdicts.apply_controls(found, controls, text)
            out.append({"claim": text, "testbed": testbed, "task": task, "word_list": word_list,
                        "dose": int(dose), "score": score, "effect": diff.mean, "low": diff.low,
                        "high": diff.high, "seeds": diff.n, "delta": delta, "verdict": found,
                        "list_share_ratio": float(ratio), "loss_drop": loss_drop.mean,
                        "loss_drop_low": loss_drop.low, "loss_drop_high": loss_drop.high,
                        "moved": moved.mean, "moved_low": moved.low, "moved_high": moved.high,
                        "controls": controls})
    return out


def top_dose_card(claimed: list[dict], dose_text: str = "", delta_source: str = "") -> list[dict]:
    """Scorecard rows (verdicts.card): each (testbed, task, word list)'s claim at its top dose."""
    rows = []
    for c in claimed:
        top = max(d["dose"] for d in claimed if (d["testbed"], d["task"], d["word_list"])
                  == (c["testbed"], c["task"], c["word_list"]))
        if c["dose"] != top:
            continue
        diff = stats.Interval(c["effect"], c["low"], c["high"], c["seeds"])
        effect = (f"{c['score']}, {SELECTIVE_ARM} - random at {c['dose']} steps = "
                  + verdicts.interval_text(c["effect"], c["low"], c["high"], c["seeds"]))
        rows.append(verdicts.card(c["claim"], effect, c["seeds"], c["delta"], c["verdict"], diff=diff,
                                  direction="greater", controls=c["controls"],
                                  dose=dose_text or f"{top} steps of continued MLM per arm",
                                  testbed=TESTBEDS[c["testbed"]]["testbed"],
                                  delta_source=delta_source))
    return rows


def dose_table(claimed: list[dict]) -> pd.DataFrame:
    """The dose claims as a table a reader reads: intervals as text, controls' values, verdict."""
    if not claimed:
        return pd.DataFrame()

    def text(m, lo, hi, n):
        return verdicts.interval_text(m, lo, hi, n, explain=False)

    return pd.DataFrame([{
        "testbed": c["testbed"], "task": c["task"], "word list": c["word_list"], "dose (steps)": c["dose"],
        f"{SELECTIVE_ARM} - random [95% CI]": text(c["effect"], c["low"], c["high"], c["seeds"]),
        "list share ratio (>= 1.5)": round(c["list_share_ratio"], 2),
        "held-out loss drop (> 0)": text(c["loss_drop"], c["loss_drop_low"], c["loss_drop_high"], c["seeds"]),
        "random - none (clears 0)": text(c["moved"], c["moved_low"], c["moved_high"], c["seeds"]),
        "verdict": c["verdict"]} for c in claimed]).set_index(["testbed", "task", "word list", "dose (steps)"])


def rows_of(records: pd.DataFrame, key: str = "dose_rows") -> list[dict]:
    """The dose rows of a notebook's records (records without any are skipped), with their task."""
    if records.empty or key not in records:
        return []
    return [dict(row) for value in records[key] if isinstance(value, list) for row in value]


def show(claimed: list[dict]) -> None:
    """C3's dose section: selective - random against the dose per testbed, then the table."""
    import matplotlib.pyplot as plt
    from IPython.display import display

    from mlmlib.papers.selective_masking.figures import dose_differences

    if not claimed:
        print("no dose-response records (C2 with mlm.doses, C4) for this profile")
        return
    dose_differences(claimed, TESTBEDS)
    plt.show()
    display(dose_table(claimed))


def testbed_rows(mlm_runs: pd.DataFrame, synthetic_runs: pd.DataFrame) -> dict[str, list[dict]]:
    """The dose rows per testbed: C2's with mlm.doses (real text), C4's (the analogue)."""
    return {"real": rows_of(mlm_runs), "synthetic": rows_of(synthetic_runs)}
