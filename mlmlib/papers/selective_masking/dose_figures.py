"""C3's lead figure: what continued MLM and selective masking each add, against the dose.

From a testbed's dose rows (`dose_claims.testbed_rows`: C4, the controlled analogue, blocks:
languages; C2, real text, blocks: seeds), per (task, word list, dose) two paired differences over
blocks on the testbed's score (`dose_claims.TESTBEDS`), each with its 95% interval
(`claims.paired`, i.e. `stats.paired_test(...).diff`):

* the adaptation benefit, random - none: the reference arm after `dose` steps of continued MLM
  against the base of the same block (dose 0, where the reference arm is the untouched base);
* the selective benefit, exponential - random at the same dose, the same block.

Beside them, each arm's mean list share of masked tokens at the dose (the manipulation itself).
Where a run trains the exponential function at a second strength, selectivity is a dose too:
each arm's benefit over random at the top dose against its list share (`selectivity`).
Dose 0 differences that are zero by construction (both sides the same base) are left out of the
figure and its table, not shown as evidence.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from mlmlib import verdicts
from mlmlib.papers.selective_masking import claims
from mlmlib.papers.selective_masking.dose_claims import SELECTIVE_ARM, TESTBEDS

BASE_ARM = "none"  # C2's explicit base arm; in C4 the reference arm at dose 0 is the base
TITLES = {"synthetic": "The controlled analogue (C4: synthetic languages, exact task word list)",
          "real": "Real text (C2: MiniLM base, nested doses of continued MLM)"}
COLUMNS = ["testbed", "task", "word_list", "dose", "difference", "mean", "low", "high", "n",
           "score", "unit"]


def _frame(dose_rows: list[dict]) -> pd.DataFrame:
    """The dose rows as a frame with a task column (C4's rows may carry none)."""
    frame = pd.DataFrame(dose_rows)
    if not frame.empty and "task" not in frame:
        frame["task"] = "-"
    return frame


def _base(frame: pd.DataFrame, task: str, word_list: str, reference: str,
          score: str) -> pd.Series:
    """The score per block before continued MLM: the reference arm at dose 0, else `none`."""
    base = claims.by_seed(frame, task, word_list, reference, 0, score)
    return base if not base.dropna().empty else claims.by_seed(frame, task, None, BASE_ARM, 0, score)


def _share(frame: pd.DataFrame, task: str, word_list: str, arm: str, dose: int) -> float:
    """An arm's mean list share of masked tokens at `dose` over its blocks (NaN where none)."""
    return float(claims.by_seed(frame, task, word_list, arm, dose, "list_share").mean())


def paired_by_dose(dose_rows: list[dict], testbed: str, score: str | None = None,
                   reference: str = "random", arm: str = SELECTIVE_ARM) -> pd.DataFrame:
    """Per (task, word list, dose), `reference` - none and `arm` - `reference` on `score`, paired
    over blocks: mean, low, high (95%), n, and each arm's mean list share (`list_share_<arm>`)."""
    if testbed not in TESTBEDS:
        raise ValueError(f"testbed must be one of {list(TESTBEDS)}, got {testbed!r}")
    score = score or TESTBEDS[testbed]["score"]
    frame = _frame(dose_rows)
    if frame.empty or score not in frame:
        return pd.DataFrame(columns=COLUMNS)
    out = []
    for (task, word_list), part in frame[frame["arm"].isin([arm, reference])].groupby(
            ["task", "word_list"], sort=False):
        base = _base(frame, task, word_list, reference, score)
        for dose in sorted(int(d) for d in part["dose"].unique()):
            ref = claims.by_seed(part, task, word_list, reference, dose, score)
            pairs = {f"{reference} - {BASE_ARM}": (ref, base),
                     f"{arm} - {reference}": (claims.by_seed(part, task, word_list, arm, dose,
                                                             score), ref)}
            shares = {f"list_share_{a}": _share(part, task, word_list, a, dose)
                      for a in (reference, arm)}
            for name, (a, b) in pairs.items():
                diff = claims.paired(a, b)
                out.append({"testbed": testbed, "task": task, "word_list": word_list, "dose": dose,
                            "difference": name, "mean": diff.mean, "low": diff.low,
                            "high": diff.high, "n": diff.n, "score": score,
                            "unit": TESTBEDS[testbed]["unit"]} | shares)
    table = pd.DataFrame(out, columns=[*COLUMNS, f"list_share_{reference}", f"list_share_{arm}"])
    return table[table["n"] > 0].reset_index(drop=True)


def by_construction(table: pd.DataFrame) -> pd.Series:
    """Rows that are zero by construction: dose 0, every block's difference exactly 0."""
    return (table["dose"] == 0) & (table["low"] == 0) & (table["high"] == 0)


def _symlog(ax, doses: pd.Series) -> None:
    """A log dose axis that still places dose 0, at its left edge (linear below the least dose)."""
    positive = doses[doses > 0]
    if positive.empty:
        return
    linthresh = max(1, int(positive.min()))
    ax.set_xscale("symlog", linthresh=linthresh)
    ax.set_xlim(-0.3 * linthresh, 1.5 * positive.max())
    ticks = sorted(int(d) for d in doses.unique())
    ax.set_xticks(ticks, [str(d) for d in ticks], minor=False)
    ax.xaxis.set_minor_locator(plt.NullLocator())


def _group_label(task: str, word_list: str, several: bool) -> str:
    return f"{task} ({word_list}): " if several else ""


def dose_response_figure(table: pd.DataFrame, title: str, ax=None):
    """Left: each paired difference of `paired_by_dose` against the dose with its 95% interval as
    error bars and a zero line; right: each arm's list share of masked tokens. `ax`: a pair of
    axes to draw on (None: a new figure). Returns the two axes."""
    if ax is None:
        _, ax = plt.subplots(1, 2, figsize=(11, 4.4), gridspec_kw={"width_ratios": [1.6, 1]})
    left, right = ax
    groups = list(table.groupby(["task", "word_list"], sort=False))
    shown = table[~by_construction(table)]
    names = list(dict.fromkeys(table["difference"]))
    for (task, word_list), _ in groups:
        label = _group_label(task, word_list, len(groups) > 1)
        part = shown[(shown["task"] == task) & (shown["word_list"] == word_list)]
        for i, name in enumerate(names):
            points = part[part["difference"] == name]
            shift = 1 + 0.06 * (i - (len(names) - 1) / 2)  # side by side on the log axis
            left.errorbar(points["dose"] * shift, points["mean"], fmt="o-", capsize=4,
                          yerr=[points["mean"] - points["low"], points["high"] - points["mean"]],
                          label=f"{label}{name}")
    left.axhline(0, color="grey", lw=1)
    first = table.iloc[0] if not table.empty else {}
    score = TESTBEDS.get(first.get("testbed"), {}).get("score_name", first.get("score", "score"))
    unit = first.get("unit", "blocks")
    left.set(xlabel="continued-MLM steps (dose)", ylabel=f"difference,\n{score}",
             title=f"paired differences, 95% interval over {unit}")
    for (task, word_list), part in groups:
        label = _group_label(task, word_list, len(groups) > 1)
        shares = part.drop_duplicates("dose")
        for column in [c for c in table.columns if c.startswith("list_share_")]:
            right.plot(shares["dose"], shares[column], marker="o",
                       label=f"{label}{column.removeprefix('list_share_')}")
    right.set(xlabel="continued-MLM steps (dose)", ylabel="list share of masked tokens",
              title="what each arm masks")
    right.set_ylim(0, 1.25 * max(right.get_ylim()[1], 1e-9))
    for axis in (left, right):
        _symlog(axis, table["dose"])
        axis.legend(fontsize=8)
    left.figure.suptitle(title)
    left.figure.tight_layout()
    return ax


def dose_table(table: pd.DataFrame) -> pd.DataFrame:
    """The figure's differences as a reader reads them: dose, difference, 95% interval, n."""
    shown = table[~by_construction(table)]
    return pd.DataFrame({
        "task": shown["task"], "word list": shown["word_list"], "dose (steps)": shown["dose"],
        "difference": shown["difference"],
        "mean [95% CI]": [verdicts.interval_text(r["mean"], r["low"], r["high"], r["n"],
                                                 explain=False) for _, r in shown.iterrows()],
        "n": shown["n"]}).set_index(["task", "word list", "dose (steps)", "difference"])


def selective_arms(dose_rows: list[dict]) -> list[str]:
    """The exponential arms of the rows: the calibrated one and any second strength
    (synthetic_task.second_arm), in order of their list share."""
    frame = _frame(dose_rows)
    if frame.empty:
        return []
    arms = frame[frame["arm"].str.startswith(SELECTIVE_ARM)]
    return list(arms.groupby("arm")["list_share"].mean().sort_values().index)


def selectivity(dose_rows: list[dict], testbed: str = "synthetic") -> pd.DataFrame:
    """Selectivity as a dose, at the testbed's top dose: for random and each exponential arm, its
    mean list share of masked tokens and its benefit over random on the testbed's score, paired
    over blocks (random's own row: 0 by construction)."""
    rows = []
    for arm in selective_arms(dose_rows):
        table = paired_by_dose(dose_rows, testbed, arm=arm)
        top = table[(table["dose"] == table["dose"].max()) & (table["difference"] == f"{arm} - random")]
        for _, r in top.iterrows():
            if not rows:
                rows.append({"task": r["task"], "word_list": r["word_list"], "dose": r["dose"],
                             "arm": "random", "list_share": r["list_share_random"], "mean": 0.0,
                             "low": 0.0, "high": 0.0, "n": r["n"]})
            rows.append({"task": r["task"], "word_list": r["word_list"], "dose": r["dose"],
                         "arm": arm, "list_share": r[f"list_share_{arm}"], "mean": r["mean"],
                         "low": r["low"], "high": r["high"], "n": r["n"]})
    return pd.DataFrame(rows, columns=["task", "word_list", "dose", "arm", "list_share", "mean",
                                       "low", "high", "n"])


def selectivity_figure(table: pd.DataFrame, score: str, ax=None):
    """Each arm's benefit over random (95% interval) against its list share of masked tokens."""
    ax = ax or plt.subplots(figsize=(5.5, 4))[1]
    for _, r in table.iterrows():
        ax.errorbar(r["list_share"], r["mean"], yerr=[[r["mean"] - r["low"]], [r["high"] - r["mean"]]],
                    fmt="o", capsize=4, label=r["arm"])
    ax.axhline(0, color="grey", lw=1)
    dose = int(table["dose"].max()) if len(table) else 0
    ax.set(xlabel="list share of masked tokens", ylabel=f"arm - random,\n{score}",
           title=f"selectivity as a dose, at {dose} steps")
    ax.legend(fontsize=8)
    return ax


def show(dose_rows: dict[str, list[dict]], tables: tuple[str, ...] = ("synthetic",)) -> None:
    """C3's lead section: the analogue's figure and its table, then real text's figure (and its
    table where `tables` names it), from `dose_claims.testbed_rows`."""
    from IPython.display import display

    for testbed in ("synthetic", "real"):
        table = paired_by_dose(dose_rows.get(testbed, []), testbed)
        if table.empty:
            print(f"{TITLES[testbed]}: no dose-response records for this profile")
            continue
        dose_response_figure(table, f"{TITLES[testbed]}\n{TESTBEDS[testbed]['score_name']}")
        plt.show()
        if testbed in tables:
            display(dose_table(table))
        if len(selective_arms(dose_rows.get(testbed, []))) > 1:  # a second strength was run
            strengths = selectivity(dose_rows[testbed], testbed)
            selectivity_figure(strengths, TESTBEDS[testbed]["score_name"])
            plt.show()
            display(strengths.set_index(["task", "word_list", "arm"]).round(3))
