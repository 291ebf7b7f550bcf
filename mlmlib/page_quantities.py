"""A measured number on a book page: the registry of quantities, how one renders from its records,
and how numbers are written.

Each paper declares the numbers its chapter quotes in its own package (`page_quantities.py`
there: names, the record fields they read, how they are written); the run report's are in
mlmlib.runs.quantities. mlmlib.runs.page_numbers loads every declaration and renders them into
the pages, naming no paper's arm, test set or field itself. Torch-free: pandas and stats only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from mlmlib.stats import mean_ci

# ----------------------------------------------------------------------------------------------
# The registry


@dataclass(frozen=True)
class Quantity:
    """A measured number on a page: the records it reads and how it is written."""

    name: str
    notebook: str
    field: str
    description: str
    compute: Callable[[pd.DataFrame], str]
    profile: str = "cpu"


QUANTITIES: dict[str, Quantity] = {}


def quantity(name: str, notebook: str, field: str, description: str, profile: str = "cpu"):
    """Register the decorated function (records of `notebook` -> text) as quantity `name`."""
    def register(compute: Callable[[pd.DataFrame], str]):
        QUANTITIES[name] = Quantity(name, notebook, field, description, compute, profile)
        return compute
    return register


def not_measured(profile: str, field: str = "") -> str:
    """The text of a quantity whose records are missing (or lack its field)."""
    return f"not measured (no {profile} records{f' of {field}' if field else ''})"


def render(q: Quantity, records: pd.DataFrame) -> str:
    """The text of quantity `q` from a table of its profile's records."""
    mine = records
    if q.notebook != "*" and not records.empty:  # "*": every record of the profile
        mine = records[records["notebook"] == q.notebook]
    if mine.empty:
        return not_measured(q.profile)
    try:
        return q.compute(mine)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return not_measured(q.profile, q.field)


def explode_rows(records: pd.DataFrame, key: str, keep: list[str] | None = None) -> pd.DataFrame:
    """Expand a metric holding a list of row dicts into a long table, one row per entry."""
    if records.empty or key not in records:
        return pd.DataFrame()
    keep = keep or [c for c in ("run_id", "profile", "seed") if c in records]
    out = []
    for _, rec in records.iterrows():
        for item in rec[key] or []:
            out.append({**{k: rec[k] for k in keep}, **item})
    return pd.DataFrame(out)


# ----------------------------------------------------------------------------------------------
# How numbers are written


def num(x: float, digits: int = 3) -> str:
    """A number with a fixed count of decimals; NaN (nothing measured) raises ValueError."""
    if pd.isna(x):
        raise ValueError("no value")
    return f"{float(x):.{digits}f}"


def pct(x: float, digits: int = 1) -> str:
    """A share as a percentage."""
    return num(100 * float(x), digits) + "%"


def span(lo: str, hi: str) -> str:
    """'lo to hi', or one value when both are written the same."""
    return lo if lo == hi else f"{lo} to {hi}"


def interval(values) -> str:
    """Mean and 95% Student-t interval over seeds: '0.660 [0.646, 0.674]'."""
    ci = mean_ci(list(values))
    return f"{num(ci.mean)} [{num(ci.low)}, {num(ci.high)}]"


def minutes(seconds: float) -> str:
    """A duration in whole minutes."""
    return f"{float(seconds) / 60:.0f} min"


def hours(seconds: float) -> str:
    """A duration in hours and minutes."""
    total = round(float(seconds) / 60)
    return f"{total // 60} h {total % 60:02d} min"
