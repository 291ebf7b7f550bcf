"""A shared check of scorecard rows, for the claims tests of every paper."""

from mlmlib import stats


def check_card(rows):
    """Every scorecard row has exactly the scorecard keys, a verdict of the vocabulary and plain types."""
    assert rows
    for row in rows:
        assert tuple(row) == stats.SCORECARD_KEYS
        assert row["verdict"] in stats.VERDICTS
        assert isinstance(row["claim"], str) and isinstance(row["effect"], str) and row["effect"]
        assert isinstance(row["seeds"], int) and (row["delta"] is None or isinstance(row["delta"], float))
    return rows
