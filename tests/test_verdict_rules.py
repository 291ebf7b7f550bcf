"""The rule sweep: the shared verdict rules hold for every combination a claim can meet, for every
row the committed cpu summaries saved, and the checker that says so catches each way to break them.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest
from scorecards import check_card, rule_problems

from mlmlib import verdicts
from mlmlib.stats import Interval

ROOT = Path(__file__).resolve().parents[1]
SUMMARIES = ("A4_synthetic_summary", "A6_real_summary", "B3_true_negatives_summary",
             "C3_selective_summary")
DIFFS = {"above": Interval(0.05, 0.03, 0.07, 8), "below": Interval(-0.05, -0.07, -0.03, 8),
         "inside": Interval(0.001, -0.003, 0.004, 8), "wide": Interval(0.0, -0.05, 0.05, 8),
         "one seed": Interval(0.05, 0.05, 0.05, 1), "two seeds": Interval(0.05, 0.03, 0.07, 2),
         "never run": Interval(math.nan, math.nan, math.nan, 0)}
CONTROLS = {"passed": Interval(0.6, 0.5, 0.7, 4), "failed on its near end": Interval(0.6, 0.1, 1.1, 4),
            "one block": Interval(0.6, 0.6, 0.6, 1)}
ARMS = {"learned": {"a": (0.9, 0.5), "b": (0.8, 0.5)}, "one at majority": {"a": (0.9, 0.5), "b": (0.51, 0.5)}}


def _control(kind: str) -> dict:
    return verdicts.control("claim", kind, verdicts.TOOK, CONTROLS[kind], 0.3, bounds=(0, 1), unit="languages", source="principle")


@pytest.mark.parametrize("direction, delta", [("greater", 0.01), ("less", 0.01), ("at_most", 0.05),
                                              ("equivalent", 0.01)])
def test_every_combination_gets_the_verdict_the_rules_give(direction, delta):
    cases = list(itertools.product(
        DIFFS.items(), itertools.combinations_with_replacement(CONTROLS, 2), ARMS.items()))
    # every difference, every pair of control states and every arm set (a pair: n(n+1)/2)
    assert len(cases) == len(DIFFS) * len(CONTROLS) * (len(CONTROLS) + 1) // 2 * len(ARMS) > 0
    for (d, diff), states, (a, arms) in cases:
        controls = [_control(s) for s in states]
        below = verdicts.at_majority(arms)
        v = verdicts.judge(diff, direction, delta, controls, majority=below)
        if "failed on its near end" in states:
            assert v == verdicts.INSENSITIVE, (d, states, a)
        elif "one block" in states:
            assert v == verdicts.NOT_MEASURED, (d, states, a)
        elif diff.n < 3:
            assert v in (verdicts.NOT_RESOLVED, verdicts.NOT_MEASURED), (d, states, a)
        elif below:
            assert v not in verdicts.JUDGED, (d, states, a)
        row = verdicts.card("claim", "effect", diff.n, delta, v, diff=diff, direction=direction,
                            controls=controls, majority=arms, unit="languages", testbed="t")
        assert not rule_problems(row), (d, states, a, v)


def test_card_refuses_every_verdict_the_rules_forbid():
    carded = set()
    for v, (d, diff), state, (a, arms) in itertools.product(
            verdicts.VERDICTS, DIFFS.items(), CONTROLS, ARMS.items()):
        controls = [_control(state)]
        try:
            row = verdicts.card("claim", "effect", diff.n, 0.01, v, diff=diff, controls=controls,
                                majority=arms, unit="languages", testbed="t")
        except verdicts.ControlError:
            continue
        assert not rule_problems(row), (v, d, state, a)
        carded.add(v)
    assert carded, "the card refused every verdict: the rules were checked on no row"


def _row(**changes) -> dict:
    ok = verdicts.card("claim", "effect", 8, 0.01, verdicts.REPRODUCED, diff=DIFFS["above"],
                       controls=[_control("passed")], majority=ARMS["learned"], unit="languages",
                       testbed="t")
    return {**ok, **changes}


def test_the_checker_catches_each_way_to_break_the_rules():
    assert not rule_problems(_row())
    failed = _control("failed on its near end")
    unmeasured = _control("one block")
    bad = {"a reproduced beside a failed control": _row(controls=[failed]),
           "a control passed on its mean": _row(controls=[{**failed, "status": "passed", "passed": True}]),
           "a control without an interval": _row(controls=[{k: v for k, v in failed.items() if k != "low"}]),
           "a verdict beside an unmeasured control": _row(controls=[unmeasured]),
           "a verdict from two seeds": _row(seeds=2),
           "an arm at its majority class": _row(majority={"b": {"accuracy": 0.51, "majority": 0.5}}),
           "an accuracy row without its majority class": _row(majority={}),
           "insensitive without a failed control": _row(verdict=verdicts.INSENSITIVE)}
    for what, row in bad.items():
        assert rule_problems(row), what


def test_the_committed_cpu_scorecards_keep_the_rules():
    found = []
    for notebook in SUMMARIES:
        for path in sorted((ROOT / "book" / "runs" / "cpu" / notebook).glob("*.json")):
            rows = json.loads(path.read_text())["metrics"].get("scorecard") or []
            check_card(rows)
            found.append(notebook)
    assert sorted(set(found)) == sorted(SUMMARIES)
