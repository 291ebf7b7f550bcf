import math

import pandas as pd
import pytest

from mlmlib import tables


def test_with_interval_replaces_three_columns_by_text():
    table = pd.DataFrame({"arm": ["ref", "a", "b"], "m": [0.5, 0.1, 0.2], "lo": [0.5, 0.0, 0.2],
                          "hi": [0.5, 0.2, 0.2], "n": [math.nan, 3, 4]})
    shown = tables.with_interval(table, "m", "lo", "hi", "n")
    assert list(shown.columns) == ["arm", "n", "95% CI"]
    assert shown["95% CI"].tolist() == ["", "0.100 [0.000, 0.200]",
                                        "0.200 [0.200, 0.200] (all 4 seeds equal: zero width)"]


def test_with_interval_names_a_missing_column():
    with pytest.raises(KeyError, match="'low'"):
        tables.with_interval(pd.DataFrame({"m": [1.0]}), "m", "low", "hi", "n")


def test_controls_table_one_row_per_control():
    card = [{"claim": "c1", "controls": [
        {"kind": "took", "name": "x", "measured": 0.4, "op": ">=", "threshold": 0.3, "passed": True},
        {"kind": "exists", "name": "y", "measured": 0.0, "op": ">", "threshold": 0.0,
         "passed": False}]}, {"claim": "c2", "controls": []}]
    frame = tables.controls_table(card)
    assert frame["claim"].tolist() == ["c1", "c1"]
    assert frame["passed"].tolist() == [True, False]
    assert list(frame.columns) == tables.CONTROL_COLUMNS
