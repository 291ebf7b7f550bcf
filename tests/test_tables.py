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


def test_controls_table_one_row_per_control_with_its_interval():
    from mlmlib import verdicts
    from mlmlib.stats import Interval

    card = [{"claim": "c1", "controls": [
        verdicts.control("c1", "x", verdicts.TOOK, Interval(0.4, 0.35, 0.45, 4), 0.3, unit="languages", source="principle"),
        verdicts.control("c1", "y", verdicts.EXISTS, Interval(0.1, -0.2, 0.4, 4), 0.0, op=">",
                         unit="languages", source="principle")]}, {"claim": "c2", "controls": []}]
    frame = tables.controls_table(card)
    assert frame["claim"].tolist() == ["c1", "c1"]
    assert frame["status"].tolist() == ["passed", "failed"]
    assert frame["judged_on"].tolist() == [0.35, -0.2] and frame["unit"].tolist() == ["languages"] * 2
    assert list(frame.columns) == tables.CONTROL_COLUMNS
