import math

import pandas as pd

from mlmlib import floors


def test_a_check_is_met_at_the_floor_missed_below_and_not_measured_without_a_value():
    assert floors.check("x", 0.80, 0.80)["status"] == floors.MET
    assert floors.check("x", 0.7999, 0.80)["status"] == floors.MISSED
    assert floors.check("x", None, 0.80)["status"] == floors.NOT_MEASURED
    assert floors.check("x", math.nan, 0.80) == {"check": "x", "measured": None, "floor": 0.8,
                                                 "status": floors.NOT_MEASURED}


def test_pretrained_arms_are_compared_with_scratch_of_their_own_task():
    means = pd.DataFrame({"task": ["a", "a", "a", "b", "b"],
                          "arm": ["scratch", "none", "random", "scratch", "none"],
                          "score": [0.60, 0.70, 0.62, 0.90, 0.70]})
    checks = floors.above_scratch(means, "score", 0.05, ["task"])
    got = {c["check"]: (round(c["measured"], 3), c["status"]) for c in checks}
    assert got == {"none minus scratch: a": (0.10, floors.MET),
                   "random minus scratch: a": (0.02, floors.MISSED),
                   "none minus scratch: b": (-0.20, floors.MISSED)}


def test_a_task_without_scratch_is_reported_not_skipped():
    means = pd.DataFrame({"task": ["a"], "arm": ["none"], "score": [0.9]})
    assert [c["status"] for c in floors.above_scratch(means, "score", 0.05, ["task"])] == [
        floors.NOT_MEASURED]


def test_absolute_floors_name_their_group_and_the_summary_counts_misses():
    means = pd.DataFrame({"task": ["t", "t"], "arm": ["none", "random"], "accuracy": [0.85, 0.7]})
    checks = floors.at_least(means, "accuracy", 0.8, ["task", "arm"], "test accuracy")
    assert [c["check"] for c in checks] == ["test accuracy: t, none", "test accuracy: t, random"]
    assert floors.summary(checks).startswith("1 of 2 sanity floors MISSED")
    assert floors.summary(checks[:1]) == "every sanity floor met (1 checks)"
    assert floors.MISSED_STYLE not in floors.banner(checks[:1]).data
    assert floors.MISSED_STYLE in floors.banner(checks).data
    html = floors.styled(checks).to_html()
    assert html.count("#b00020") == 1  # one style rule, applied to the missed row's cells
