"""A shared check of scorecard rows, for the claims tests of every paper."""

from mlmlib import verdicts


def check_card(rows):
    """Every scorecard row has exactly the scorecard keys, a verdict of the vocabulary and plain types."""
    assert rows
    for row in rows:
        assert tuple(row) == verdicts.SCORECARD_KEYS
        assert row["verdict"] in verdicts.VERDICTS
        assert isinstance(row["claim"], str) and isinstance(row["effect"], str) and row["effect"]
        assert isinstance(row["seeds"], int) and (row["delta"] is None or isinstance(row["delta"], float))
        assert isinstance(row["controls"], list) and isinstance(row["dose"], str)
        assert row["testbed"] and isinstance(row["delta_source"], str)
        failed = [c for c in row["controls"] if not c["passed"]]
        if row["verdict"] == verdicts.EQUIVALENT:  # an equivalence only with every control passed
            assert row["controls"] and not failed
        if row["verdict"] == verdicts.INSENSITIVE:  # insensitive names the control that failed
            assert failed
    return rows
