"""Tables the summary pages share: an interval as one text column, and the positive controls.

Each summary page of the three papers shows its claims' intervals and controls the same way;
the helpers live here once so a change of wording reaches every page.
"""

from __future__ import annotations

import pandas as pd

from mlmlib.verdicts import interval_text

CONTROL_COLUMNS = ["claim", "kind", "name", "measured", "low", "high", "n", "unit", "op", "threshold",
                   "judged_on", "status"]


def with_interval(table: pd.DataFrame, mean: str, low: str, high: str, n: str,
                  name: str = "95% CI", unit: str = "seed") -> pd.DataFrame:
    """`table` with its mean, low and high columns replaced by one text column `name`.

    A row whose `n` is missing (a reference arm, with no difference to itself) gets an empty cell;
    an interval of zero width says why (`verdicts.interval_text`).
    """
    for column in (mean, low, high, n):
        if column not in table.columns:
            raise KeyError(f"with_interval: no column {column!r} in {list(table.columns)}")
    text = ["" if pd.isna(r[3]) else interval_text(r[0], r[1], r[2], int(r[3]), unit=unit)
            for r in table[[mean, low, high, n]].itertuples(index=False)]
    return table.drop(columns=[mean, low, high]).assign(**{name: text})


def controls_table(scorecard: list[dict]) -> pd.DataFrame:
    """One row per positive control of each scorecard row: its interval over its blocks, the end it
    was judged on against the threshold, and its status (passed, failed, not measured)."""
    return pd.DataFrame([{"claim": r["claim"], **c} for r in scorecard for c in r["controls"]],
                        columns=CONTROL_COLUMNS)


def show_controls(scorecard: list[dict]):
    """The controls table styled for a page: left-aligned, four decimals, no index."""
    return (controls_table(scorecard).style.hide(axis="index").format(precision=4)
            .set_properties(**{"text-align": "left"}))
