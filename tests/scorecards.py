"""A shared check of scorecard rows, for the claims tests of every paper and the rule sweep.

It restates the rules every paper shares without calling the code that applies them
(`verdicts.decide`, `verdicts.card`), so a claim module that routes around them is caught.
"""

import math
import operator

from mlmlib import verdicts

MIN_BLOCKS = 3      # fewer blocks never give a verdict
MARGIN = 0.02       # an arm within this of its majority class has not learned
JUDGED = {"reproduced", "contradicted", "equivalent within ±delta"}
OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}


def control_problems(c: dict) -> list[str]:
    """What is wrong with one control record: no interval, or a status its interval does not give."""
    missing = [k for k in ("low", "high", "n", "unit", "judged_on", "status") if k not in c]
    if missing:
        return [f"control {c.get('name')!r} lacks {missing}"]
    near = c["low"] if c["op"] in (">=", ">") else c["high"]
    if c["n"] < MIN_BLOCKS:
        status = "not measured"
    else:
        status = "passed" if OPS[c["op"]](near, c["threshold"]) else "failed"
    problems = [] if status == c["status"] else [f"control {c['name']!r}: {c['status']}, its interval gives {status}"]
    if c["passed"] != (status == "passed"):
        problems.append(f"control {c['name']!r}: passed={c['passed']} but {status}")
    return problems


def rule_problems(row: dict) -> list[str]:
    """Every way a scorecard row breaks the shared rules (empty when it keeps them)."""
    problems = [p for c in row["controls"] for p in control_problems(c)]
    status = [c.get("status") for c in row["controls"]]
    verdict = row["verdict"]
    if "failed" in status and verdict != "insensitive":
        problems.append(f"{verdict!r} with a failed control")
    if verdict == "insensitive" and "failed" not in status:
        problems.append("insensitive without a failed control")
    if "not measured" in status and verdict not in ("insensitive", "not measured"):
        problems.append(f"{verdict!r} with a control that has no interval")
    if verdict in JUDGED:
        if row["seeds"] < MIN_BLOCKS:
            problems.append(f"{verdict!r} from {row['seeds']} {row.get('unit', 'blocks')}")
        below = [arm for arm, v in (row.get("majority") or {}).items()
                 if not v["accuracy"] > v["majority"] + MARGIN]
        if below or row.get("at_majority"):
            problems.append(f"{verdict!r} with arms at their majority class: {below or row['at_majority']}")
        if not row["controls"]:
            problems.append(f"{verdict!r} without a declared control")
    if row.get("scale") == verdicts.ACCURACY and verdict != "not measured":
        for arm, v in (row.get("majority") or {}).items():
            if v.get("majority") is None or math.isnan(v["majority"]):
                problems.append(f"arm {arm!r} without its majority class")
        if not row.get("majority"):
            problems.append("an accuracy row without majority-class baselines")
    return problems


def check_card(rows):
    """Every scorecard row has exactly the scorecard keys, a verdict of the vocabulary, plain types,
    and keeps the shared rules (`rule_problems`)."""
    assert rows
    for row in rows:
        assert sorted(row) == sorted(verdicts.SCORECARD_KEYS)  # records store keys sorted
        assert row["verdict"] in verdicts.VERDICTS
        assert isinstance(row["claim"], str) and isinstance(row["effect"], str) and row["effect"]
        assert isinstance(row["seeds"], int) and (row["delta"] is None or isinstance(row["delta"], float))
        assert isinstance(row["controls"], list) and isinstance(row["dose"], str)
        assert row["testbed"] and isinstance(row["delta_source"], str) and row["unit"]
        assert not rule_problems(row), (row["claim"], rule_problems(row))
    return rows
