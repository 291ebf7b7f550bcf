"""Sanity floors: levels a run must reach before its comparisons say anything about a method.

A masking or pretraining comparison made on classifiers that never learned their task, or on
pretraining that does not beat the same encoder trained from scratch, is not evidence about
the method. The summary pages check their runs against these floors and show every check; a
missed one is printed in red, never left out.
"""

from __future__ import annotations

import math

MET, MISSED, NOT_MEASURED = "met", "MISSED", "not measured"
MISSED_STYLE = "color: #b00020; font-weight: bold"  # red, on the page and in the HTML book


def check(what: str, measured: float | None, floor: float) -> dict:
    """One floor check: `measured` must reach `floor`; None or NaN is reported as not measured."""
    if measured is None or (isinstance(measured, float) and math.isnan(measured)):
        status = NOT_MEASURED
    else:
        status = MET if measured >= floor else MISSED
    return {"check": what, "measured": None if status == NOT_MEASURED else float(measured),
            "floor": float(floor), "status": status}


def at_least(means, score: str, floor: float, keys: list[str], what: str) -> list[dict]:
    """`score` of every row of `means` (one row per group in `keys`) against an absolute floor."""
    return [check(f"{what}: " + ", ".join(str(row[k]) for k in keys), row[score], floor)
            for row in means.to_dict("records")]


def above_scratch(means, score: str, margin: float, keys: list[str], arm: str = "arm",
                  scratch: str = "scratch") -> list[dict]:
    """Each pretrained arm's mean `score` minus scratch's, in the same group of `keys`, against
    `margin`. A group without a scratch arm is reported as not measured, not skipped."""
    checks = []
    for group, part in means.groupby(keys, sort=False):
        group = group if isinstance(group, tuple) else (group,)
        where = ", ".join(str(g) for g in group)
        base = part.loc[part[arm] == scratch, score]
        for row in part[part[arm] != scratch].to_dict("records"):
            gain = row[score] - float(base.iloc[0]) if len(base) else None
            checks.append(check(f"{row[arm]} minus scratch: {where}", gain, margin))
    return checks


def missed(checks: list[dict]) -> list[dict]:
    return [c for c in checks if c["status"] != MET]


def styled(checks: list[dict]):
    """The checks as a table whose missed (or unmeasured) rows are red."""
    import pandas as pd

    table = pd.DataFrame(checks, columns=["check", "measured", "floor", "status"]).round(4)

    def colour(row):
        return [MISSED_STYLE if row["status"] != MET else ""] * len(row)

    return table.style.hide(axis="index").apply(colour, axis=1).format(precision=3, na_rep="-")


def summary(checks: list[dict]) -> str:
    """One line: how many floors were met; the red line a reader cannot miss otherwise."""
    bad = missed(checks)
    if not checks:
        return "no sanity floor could be checked on these runs"
    if not bad:
        return f"every sanity floor met ({len(checks)} checks)"
    return (f"{len(bad)} of {len(checks)} sanity floors MISSED: the comparisons built on them "
            f"say little about the method at this scale")


def banner(checks: list[dict]):
    """The summary line as HTML, red when a floor was missed (a printed line cannot be red)."""
    from html import escape

    from IPython.display import HTML

    style = f' style="{MISSED_STYLE}"' if missed(checks) else ""
    return HTML(f"<p{style}>Sanity floors: {escape(summary(checks))}</p>")
