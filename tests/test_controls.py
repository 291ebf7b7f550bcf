"""Positive controls, the majority-class gate and the six-verdict rule of mlmlib.verdicts, on
hand-made values."""

from __future__ import annotations

import math

import pytest

from mlmlib import verdicts
from mlmlib.stats import Interval

INSIDE = Interval(0.001, -0.003, 0.004, 8)     # inside +-0.01: equivalent when sensitive
ABOVE = Interval(0.05, 0.03, 0.07, 8)          # clear of zero in the paper's direction
BELOW = Interval(-0.05, -0.07, -0.03, 8)       # clear of zero the other way
WIDE = Interval(0.0, -0.05, 0.05, 8)           # spans zero and the margin


def took(low, high=None, threshold=0.3, op=">=", n=8):
    """A control whose interval is [low, high] (mean halfway) over n languages."""
    high = low if high is None else high
    return verdicts.control("claim", "the discriminator flags replacements", verdicts.TOOK,
                            Interval((low + high) / 2, low, high, n), threshold, op, bounds=(0, 1),
                            field="training.disc_acc_replaced", unit="languages", source="principle")


@pytest.mark.parametrize("low, high, op, passed", [
    (0.3, 0.9, ">=", True), (0.2999, 0.9, ">=", False), (0.3, 0.9, ">", False),
    (0.3001, 0.9, ">", True), (0.1, 0.3, "<=", True), (0.1, 0.3001, "<=", False)])
def test_a_control_is_judged_on_the_near_end_of_its_interval(low, high, op, passed):
    c = took(low, high, 0.3, op)
    assert c["passed"] is passed and c["status"] == (verdicts.PASSED if passed else verdicts.FAILED)
    assert c["judged_on"] == (low if op in (">=", ">") else high)
    assert (c["n"], c["unit"]) == (8, "languages")


def test_a_control_whose_mean_passes_but_whose_interval_does_not_fails():
    # the mean 0.366 clears 0.05; the interval's near end -0.64 does not
    c = verdicts.control("claim", "pretraining helps", verdicts.EXISTS, Interval(0.366, -0.64, 1.37, 3),
                         0.05, field="B4 downstream", unit="languages", source="principle")
    assert c["measured"] == 0.366 and not c["passed"] and c["status"] == verdicts.FAILED


def test_a_control_with_fewer_than_three_blocks_is_not_measured():
    for n in (0, 1, 2):
        c = took(0.9, n=n)
        assert c["status"] == verdicts.UNMEASURED and not c["passed"]
    assert verdicts.decide(verdicts.REPRODUCED, [took(0.9, n=2)]) == verdicts.NOT_MEASURED
    assert "not measured (2 languages" in verdicts.controls_note(verdicts.NOT_MEASURED, [took(0.9, n=2)])


def test_a_control_refuses_a_mean_or_a_missing_measurement():
    with pytest.raises(verdicts.ControlError, match="is not an interval"):
        verdicts.control("claim", "x", verdicts.TOOK, 0.5, 0.3, unit="seeds", source="principle")
    with pytest.raises(verdicts.ControlError, match="claim 'claim'.*training.disc_acc_replaced"):
        verdicts.control("claim", "x", verdicts.TOOK, None, 0.3, field="training.disc_acc_replaced",
                         unit="seeds", source="principle")
    for missing in (math.nan, math.inf):
        with pytest.raises(verdicts.ControlError, match="not finite"):
            took(missing)
    with pytest.raises(verdicts.ControlError, match="give the unit"):
        verdicts.control("claim", "x", verdicts.TOOK, Interval(0.5, 0.4, 0.6, 4), 0.3, source="principle")
    with pytest.raises(verdicts.ControlError, match="no threshold source"):
        verdicts.control("claim", "x", verdicts.TOOK, Interval(0.5, 0.4, 0.6, 4), 0.3, unit="seeds")


def test_a_threshold_outside_its_range_or_from_a_pilot_is_refused():
    with pytest.raises(verdicts.ControlError, match="threshold=1.5 lies outside its range"):
        took(0.5, threshold=1.5)
    with pytest.raises(verdicts.ControlError, match="kind="):
        verdicts.control("claim", "x", "took it", Interval(0.5, 0.4, 0.6, 4), 0.3, unit="seeds", source="principle")
    with pytest.raises(verdicts.ControlError, match="op="):
        verdicts.control("claim", "x", verdicts.TOOK, Interval(0.5, 0.4, 0.6, 4), 0.3, op="=>", unit="seeds", source="principle")
    with pytest.raises(verdicts.ControlError, match="never from a pilot"):
        verdicts.control("claim", "x", verdicts.TOOK, Interval(0.5, 0.4, 0.6, 4), 0.3, unit="seeds",
                         source="pilot")


def test_exact_is_an_interval_of_zero_width():
    c = verdicts.control("claim", "the timing resolves the target", verdicts.TOOK, verdicts.exact(0.01, 87),
                         0.025, op="<=", unit="timing repetitions", source="principle")
    assert c["passed"] and c["low"] == c["high"] == 0.01 and c["n"] == 87


def test_record_value_names_a_missing_field():
    import pandas as pd

    with pytest.raises(verdicts.ControlError, match="no field 'fn_rate_masked'"):
        verdicts.record_value(pd.DataFrame({"other": [1.0]}), "fn_rate_masked", "claim", "fires")


def test_equivalent_only_when_every_control_passed():
    assert verdicts.judge(INSIDE, "greater", 0.01, [took(0.6)]) == verdicts.EQUIVALENT
    assert verdicts.judge(INSIDE, "greater", 0.01, [took(0.6), took(0.0)]) == verdicts.INSENSITIVE


def test_not_resolved_with_a_failed_control_is_insensitive():
    assert verdicts.judge(WIDE, "greater", 0.01, [took(0.6)]) == verdicts.NOT_RESOLVED
    assert verdicts.judge(WIDE, "greater", 0.01, [took(0.0)]) == verdicts.INSENSITIVE


def test_a_failed_control_makes_every_verdict_insensitive_with_no_exception():
    for diff in (ABOVE, BELOW, INSIDE, WIDE):
        for direction, delta in (("greater", 0.01), ("less", 0.01), ("at_most", 0.05), ("equivalent", 0.01)):
            assert verdicts.judge(diff, direction, delta, [took(0.6), took(0.0)]) == verdicts.INSENSITIVE
    assert verdicts.controls_note(verdicts.INSENSITIVE, [took(0.0)]).startswith("insensitive: the discriminator")
    assert verdicts.controls_note(verdicts.EQUIVALENT, [took(0.6)]) == "all 1 controls passed"


def test_an_arm_at_its_majority_class_is_not_judged():
    arms = {"WITH": (0.85, 0.577), "WITHOUT": (0.515, 0.577), "scratch": (0.59, 0.577)}
    below = verdicts.at_majority(arms, "transfer")
    assert below == ["WITHOUT", "scratch"]  # 0.59 is within the 0.02 margin of 0.577
    assert verdicts.judge(ABOVE, "greater", 0.01, [took(0.6)], majority=below) == verdicts.NOT_RESOLVED
    assert verdicts.judge(ABOVE, "greater", 0.01, [took(0.6)], majority=[]) == verdicts.REPRODUCED
    # a failed control still comes first
    assert verdicts.judge(ABOVE, "greater", 0.01, [took(0.0)], majority=below) == verdicts.INSENSITIVE
    with pytest.raises(verdicts.ControlError, match="arm 'WITH' has no majority-class baseline"):
        verdicts.at_majority({"WITH": (0.85, float("nan"))}, "transfer")


def test_a_claim_never_measured_is_not_measured_and_one_seed_is_not_resolved():
    assert verdicts.verdict(Interval(math.nan, math.nan, math.nan, 0)) == verdicts.NOT_MEASURED
    assert verdicts.verdict(Interval(0.5, 0.5, 0.5, 1)) == verdicts.NOT_RESOLVED
    assert verdicts.verdict(Interval(0.5, 0.4, 0.6, 2)) == verdicts.NOT_RESOLVED


def test_a_bound_claim_reproduced_inside_its_margin_needs_its_controls():
    # "at most 5% extra time": reproduced below the bound is an equivalence-like statement
    cheap = Interval(0.0, -0.01, 0.01, 20)
    assert verdicts.judge(cheap, "at_most", 0.05, [took(0.6)]) == verdicts.REPRODUCED
    assert verdicts.judge(cheap, "at_most", 0.05, [took(0.0)]) == verdicts.INSENSITIVE
    assert verdicts.judge(Interval(0.2, 0.1, 0.3, 20), "at_most", 0.05, [took(0.0)]) == verdicts.INSENSITIVE


def test_a_claim_without_controls_is_refused():
    with pytest.raises(verdicts.ControlError, match="declares no positive control"):
        verdicts.judge(INSIDE, "greater", 0.01, [], "the claim")


def test_combine_puts_insensitive_and_not_measured_first():
    assert verdicts.combine([verdicts.EQUIVALENT, verdicts.INSENSITIVE]) == verdicts.INSENSITIVE
    assert verdicts.combine([verdicts.CONTRADICTED, verdicts.INSENSITIVE]) == verdicts.INSENSITIVE
    assert verdicts.combine([verdicts.REPRODUCED, verdicts.NOT_MEASURED]) == verdicts.NOT_MEASURED
    assert verdicts.combine([verdicts.REPRODUCED, verdicts.REPRODUCED]) == verdicts.REPRODUCED
    assert verdicts.combine([verdicts.NOT_RESOLVED, verdicts.REPRODUCED]) == verdicts.NOT_RESOLVED


MAJ = {"a": (0.9, 0.5), "b": (0.8, 0.5)}


def test_a_scorecard_row_refuses_what_the_rules_forbid():
    with pytest.raises(verdicts.ControlError, match="'equivalent within ±delta' with a failed control"):
        verdicts.card("claim", "effect", 8, 0.01, verdicts.EQUIVALENT, diff=INSIDE, controls=[took(0.0)],
                      majority=MAJ)
    with pytest.raises(verdicts.ControlError, match="'reproduced' with a failed control"):
        verdicts.card("claim", "effect", 8, 0.01, verdicts.REPRODUCED, diff=ABOVE, controls=[took(0.0)],
                      majority=MAJ)
    with pytest.raises(verdicts.ControlError, match="'insensitive' needs a failed control"):
        verdicts.card("claim", "effect", 8, 0.01, verdicts.INSENSITIVE, diff=INSIDE, controls=[took(0.6)],
                      majority=MAJ)
    with pytest.raises(verdicts.ControlError, match="a control that has no interval"):
        verdicts.card("claim", "effect", 8, 0.01, verdicts.NOT_RESOLVED, diff=WIDE,
                      controls=[took(0.6, n=1)], majority=MAJ)
    with pytest.raises(verdicts.ControlError, match="from 2 seeds; a verdict needs 3"):
        verdicts.card("claim", "effect", 2, 0.01, verdicts.REPRODUCED, diff=ABOVE, controls=[took(0.6)],
                      majority=MAJ)
    with pytest.raises(verdicts.ControlError, match="arms at their majority class: \\['b'\\]"):
        verdicts.card("claim", "effect", 8, 0.01, verdicts.REPRODUCED, diff=ABOVE, controls=[took(0.6)],
                      majority={"a": (0.9, 0.5), "b": (0.51, 0.5)})
    with pytest.raises(verdicts.ControlError, match="an accuracy row without majority-class baselines"):
        verdicts.card("claim", "effect", 8, 0.01, verdicts.REPRODUCED, diff=ABOVE, controls=[took(0.6)])
    row = verdicts.card("claim", "effect", 8, 0.01, verdicts.INSENSITIVE, diff=INSIDE, controls=[took(0.0)],
                        dose="20 / 1,000,000 steps", testbed="synthetic", delta_source="ours", majority=MAJ,
                        unit="languages")
    assert tuple(row) == verdicts.SCORECARD_KEYS and row["estimate"] == 0.001 and row["low"] == -0.003
    assert row["majority"]["a"] == {"accuracy": 0.9, "majority": 0.5} and row["unit"] == "languages"
    timing = verdicts.card("cost", "effect", 87, 0.05, verdicts.REPRODUCED, diff=Interval(0.0, -0.01, 0.01, 87),
                           controls=[took(0.6)], scale="extra step time (fraction)", unit="timing repetitions")
    assert timing["majority"] == {} and timing["at_majority"] == []


def test_departures_are_listed_in_the_dose():
    dose = verdicts.with_departures("8,000 steps", {"generator temperature 1.5 (ELECTRA: 1)": "ours"})
    assert dose == "8,000 steps; departs from the paper: generator temperature 1.5 (ELECTRA: 1): ours"
    assert verdicts.with_departures("8,000 steps", {}) == "8,000 steps"


def test_delta_is_at_most_half_the_effect_the_paper_reports():
    assert "at most half of 0.0088" in verdicts.delta_against_paper(0.004, 0.0088, "Train No Evil")
    with pytest.raises(ValueError, match="delta=0.01 exceeds half"):
        verdicts.delta_against_paper(0.01, 0.0088, "Train No Evil")
    assert verdicts.delta_against_paper(0.02, None, "no effect size in our notes").startswith("±0.02 is ours")
