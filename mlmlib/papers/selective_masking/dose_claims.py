"""Selective - random against the dose of continued MLM, each dose judged with its controls.

From the dose rows of C2 (real text, the probe at every dose; blocks: seeds) and C4 (the
controlled analogue, fine-tuning at every dose; blocks: languages): per (testbed, word list,
dose > 0) the paired difference selective - random over blocks with its 95% interval, judged with
paper C's three positive controls at that dose (`claims.selective_controls`, each an interval over
the same blocks):

* took: the selective arm masks list words at least `claims.LIST_SHARE_RATIO_MIN` times as often
  as random (per block, the ratio of their list shares of masked tokens);
* took: continued MLM lowers the held-out masked-LM loss at that dose: loss(dose 0) -
  loss(random at the dose), paired by block, above zero;
* exists: continued MLM moves the score at that dose: random(dose) - random(0) clears zero
  (dose 0 is the base, the `none` arm).

The compared arms' scores are classifiers' accuracies (the probe's on frozen features, or a
fine-tuned classifier's): each is set beside its test set's majority class, recorded with every
run. The verdict is `verdicts.judge`: a failed control gives insensitive, an arm at its majority
class not resolved.
"""

from __future__ import annotations

from functools import partial

import pandas as pd

from mlmlib import stats, verdicts
from mlmlib.papers.selective_masking import claims

# What each testbed's dose claim is scored on, its blocks and scale, and its scorecard testbed.
TESTBEDS = {
    "real": {"score": "probe_accuracy", "testbed": "real text: MiniLM base, dose-response",
             "score_name": "probe accuracy (frozen features)", "unit": "seeds",
             "scale": "probe accuracy difference"},
    "synthetic": {"score": "accuracy", "testbed": "synthetic: exact task word list (controlled analogue)",
                  "score_name": "few-label fine-tuned accuracy", "unit": "languages",
                  "scale": verdicts.ACCURACY},
}
SELECTIVE_ARM = "exponential"
# C4 settings chosen after one of its controls failed: the scorecard names each one a run uses,
# with its reason (book/design_history.md, paper C), so no departure hides in a verdict.
SYNTHETIC_DEPARTURES = {
    ("base_alphabet", "A"): (
        "a vocabulary shift (the base reads alphabet A of chain D1 only; the task's text mixes "
        "both alphabets on D2), chosen after the chain-only shift's control 'continued MLM moves "
        "the score' failed on sixteen languages (records of 2026-12-06); piloted on languages "
        "the records never use"),
}
# The record fields of each run's majority class, by the score's metric.
MAJORITY_FIELDS = {"accuracy": "majority_accuracy", "f1": "majority_f1"}


def majority_field(score: str) -> str:
    """The record field of the majority class on `score`'s metric (probe_f1 -> majority_f1)."""
    return MAJORITY_FIELDS["f1" if score.endswith("f1") else "accuracy"]


def _majority(part: pd.DataFrame, arms: list[str], dose: int, score: str,
              blocks: list) -> dict[str, tuple[float, float]]:
    """Each arm's mean `score` at `dose` over `blocks` and the mean majority class of the same
    blocks' test sets (NaN where the rows carry none: `verdicts.at_majority` then names it)."""
    field = majority_field(score)
    out = {}
    for arm in arms:
        rows = part[(part["arm"] == arm) & (part["dose"] == dose) & part["seed"].isin(blocks)]
        if rows.empty:
            continue
        prior = rows[field].astype(float).mean() if field in rows else float("nan")
        out[arm] = (float(rows[score].astype(float).mean()), float(prior))
    return out


def dose_claims(dose_rows: list[dict], testbed: str, score: str | None = None,
                reference: str = "random", arm: str = SELECTIVE_ARM,
                delta: float | None = None) -> list[dict]:
    """One claim row per (task, word list, dose > 0): `arm` - `reference` on `score`, its
    interval over blocks, its controls, its arms beside their majority class and its verdict."""
    if testbed not in TESTBEDS:
        raise ValueError(f"testbed must be one of {list(TESTBEDS)}, got {testbed!r}")
    score = score or TESTBEDS[testbed]["score"]
    unit = TESTBEDS[testbed]["unit"]
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
        by_block = partial(claims.by_seed, part, task, word_list)  # (arm, dose, column) -> per block
        for dose in sorted(d for d in part["dose"].unique() if d > 0):
            text = (f"{arm} beats {reference} masking after {dose} steps of continued MLM: "
                    f"{TESTBEDS[testbed]['score_name']}, {task} ({word_list})")
            diff = claims.paired(by_block(arm, dose, score), by_block(reference, dose, score))
            ratio = claims.share_ratio(part, task, word_list, arm, dose, reference)
            drop = claims.loss_drop(part, task, word_list, dose, reference)
            moved = claims.paired(by_block(reference, dose, score), by_block(reference, 0, score))
            controls = claims.selective_controls(text, ratio, drop, moved, unit,
                                                 f"dose rows, {task}, {word_list}", f"{dose} steps")
            blocks = sorted(set(by_block(arm, dose, score).index)
                            & set(by_block(reference, dose, score).index))
            majority = _majority(part, [arm, reference], dose, score, blocks)
            below = verdicts.at_majority(majority, text)
            out.append({"claim": text, "testbed": testbed, "task": task, "word_list": word_list,
                        "dose": int(dose), "score": score, "unit": unit, "effect": diff.mean,
                        "low": diff.low, "high": diff.high, "seeds": diff.n, "delta": delta,
                        "verdict": verdicts.judge(diff, "greater", delta, controls, text, below),
                        "list_share_ratio": ratio.mean, "list_share_ratio_low": ratio.low,
                        "list_share_ratio_high": ratio.high, "loss_drop": drop.mean,
                        "loss_drop_low": drop.low, "loss_drop_high": drop.high,
                        "moved": moved.mean, "moved_low": moved.low, "moved_high": moved.high,
                        "majority": majority, "at_majority": below, "controls": controls})
    return out


def synthetic_departures(synthetic_runs: pd.DataFrame) -> dict[str, str]:
    """The SYNTHETIC_DEPARTURES the C4 records use: '{setting} {value}' -> why."""
    used = [r for r in synthetic_runs.get("synthetic", pd.Series(dtype=object))
            if isinstance(r, dict)]
    return {f"synthetic.{field} {value}": why for (field, value), why in SYNTHETIC_DEPARTURES.items()
            if any(r.get(field) == value for r in used)}


def top_dose_card(claimed: list[dict], dose_text: str = "", delta_source: str = "",
                  departures: dict[str, dict[str, str]] | None = None) -> list[dict]:
    """Scorecard rows (verdicts.card): each (testbed, task, word list)'s claim at its top dose,
    its dose text naming the testbed's `departures` (setting -> why)."""
    rows = []
    for c in claimed:
        top = max(d["dose"] for d in claimed if (d["testbed"], d["task"], d["word_list"])
                  == (c["testbed"], c["task"], c["word_list"]))
        if c["dose"] != top:
            continue
        diff = stats.Interval(c["effect"], c["low"], c["high"], c["seeds"])
        bed = TESTBEDS[c["testbed"]]
        effect = (f"{c['score']}, {SELECTIVE_ARM} - random at {c['dose']} steps = "
                  + verdicts.interval_text(c["effect"], c["low"], c["high"], c["seeds"],
                                           bed["unit"].rstrip("s"))
                  + f"; {claims.arms_text(c['majority'])}")
        if c["at_majority"]:
            effect += ("; not judged: at the majority class (within "
                       f"{verdicts.LEARNED_MARGIN:g}): " + ", ".join(c["at_majority"]))
        rows.append(verdicts.card(c["claim"], effect, c["seeds"], c["delta"], c["verdict"], diff=diff,
                                  direction="greater", controls=c["controls"],
                                  dose=verdicts.with_departures(
                                      dose_text or f"{top} steps of continued MLM per arm",
                                      (departures or {}).get(c["testbed"], {})),
                                  testbed=bed["testbed"], delta_source=delta_source,
                                  unit=bed["unit"], majority=c["majority"], scale=bed["scale"]))
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
        f"list share ratio (>= {claims.LIST_SHARE_RATIO_MIN:g})": text(
            c["list_share_ratio"], c["list_share_ratio_low"], c["list_share_ratio_high"],
            c["seeds"]),
        "held-out loss drop (> 0)": text(c["loss_drop"], c["loss_drop_low"], c["loss_drop_high"], c["seeds"]),
        "random - none (clears 0)": text(c["moved"], c["moved_low"], c["moved_high"], c["seeds"]),
        "arms (majority class)": claims.arms_text(c["majority"]),
        "verdict": c["verdict"]} for c in claimed]).set_index(["testbed", "task", "word list", "dose (steps)"])


def rows_of(records: pd.DataFrame, key: str = "dose_rows") -> list[dict]:
    """The dose rows of a notebook's records (records without any are skipped), with their task
    and their run's majority class on its test set (`MAJORITY_FIELDS`, where the record has it)."""
    if records.empty or key not in records:
        return []
    fields = [f for f in MAJORITY_FIELDS.values() if f in records]
    return [dict(row) | {f: record[f] for f in fields} for _, record in records.iterrows()
            if isinstance(record[key], list) for row in record[key]]


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
