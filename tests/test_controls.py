"""Positive controls and the five-verdict rule of mlmlib.stats, on hand-made values."""

from __future__ import annotations

import math

import pytest

from mlmlib import verdicts
from mlmlib.stats import Interval

INSIDE = Interval(0.001, -0.003, 0.004, 8)     # inside +-0.01: equivalent when sensitive
ABOVE = Interval(0.05, 0.03, 0.07, 8)          # clear of zero in the paper's direction
BELOW = Interval(-0.05, -0.07, -0.03, 8)       # clear of zero the other way
WIDE = Interval(0.0, -0.05, 0.05, 8)           # spans zero and the margin


def took(measured, threshold=0.3, op=">="):
    return verdicts.control("claim", "the discriminator flags replacements", verdicts.TOOK, measured, threshold, op,
                         bounds=(0, 1), field="training.disc_acc_replaced")


@pytest.mark.parametrize("measured, op, passed", [(0.3, ">=", True), (0.2999, ">=", False), (0.3, ">", False),
                                                  (0.3001, ">", True), (0.3, "<=", True), (0.3001, "<=", False)])
def test_a_control_at_its_edge(measured, op, passed):
    assert took(measured, 0.3, op)["passed"] is passed


def test_a_control_names_its_claim_and_field_when_its_measurement_is_missing():
    for missing in (None, float("nan"), math.inf):
        with pytest.raises(verdicts.ControlError, match="claim 'claim'.*training.disc_acc_replaced"):
            took(missing)


def test_a_threshold_outside_its_range_is_refused():
    with pytest.raises(verdicts.ControlError, match="threshold=1.5 lies outside its range"):
        took(0.5, threshold=1.5)
    with pytest.raises(verdicts.ControlError, match="kind="):
        verdicts.control("claim", "x", "took it", 0.5, 0.3)
    with pytest.raises(verdicts.ControlError, match="op="):
        verdicts.control("claim", "x", verdicts.TOOK, 0.5, 0.3, op="=>")


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


def test_an_interval_clear_of_zero_keeps_its_verdict_and_shows_the_failed_control():
    assert verdicts.judge(ABOVE, "greater", 0.01, [took(0.0)]) == verdicts.REPRODUCED
    assert verdicts.judge(BELOW, "greater", 0.01, [took(0.0)]) == verdicts.CONTRADICTED
    note = verdicts.controls_note(verdicts.REPRODUCED, [took(0.0)])
    assert note.startswith("control failed beside the verdict") and "0 (needs >= 0.3)" in note
    assert verdicts.controls_note(verdicts.INSENSITIVE, [took(0.0)]).startswith("insensitive: the discriminator")
    assert verdicts.controls_note(verdicts.EQUIVALENT, [took(0.6)]) == "all 1 controls passed"


def test_a_bound_claim_reproduced_inside_its_margin_needs_its_controls():
    # "at most 5% extra time": reproduced below the bound is an equivalence-like statement
    cheap = Interval(0.0, -0.01, 0.01, 20)
    assert verdicts.judge(cheap, "at_most", 0.05, [took(0.6)]) == verdicts.REPRODUCED
    assert verdicts.judge(cheap, "at_most", 0.05, [took(0.0)]) == verdicts.INSENSITIVE
    assert verdicts.judge(Interval(0.2, 0.1, 0.3, 20), "at_most", 0.05, [took(0.0)]) == verdicts.CONTRADICTED


def test_a_claim_without_controls_is_refused():
    with pytest.raises(verdicts.ControlError, match="declares no positive control"):
        verdicts.judge(INSIDE, "greater", 0.01, [], "the claim")


def test_combine_knows_insensitive():
    assert verdicts.combine([verdicts.EQUIVALENT, verdicts.INSENSITIVE]) == verdicts.INSENSITIVE
    assert verdicts.combine([verdicts.CONTRADICTED, verdicts.INSENSITIVE]) == verdicts.CONTRADICTED
    assert verdicts.combine([verdicts.REPRODUCED, verdicts.REPRODUCED]) == verdicts.REPRODUCED
    assert verdicts.combine([verdicts.NOT_RESOLVED, verdicts.REPRODUCED]) == verdicts.NOT_RESOLVED


def test_a_scorecard_row_refuses_equivalent_with_a_failed_control():
    with pytest.raises(verdicts.ControlError, match="'equivalent' with a failed control"):
        verdicts.card("claim", "effect", 8, 0.01, verdicts.EQUIVALENT, diff=INSIDE, controls=[took(0.0)])
    with pytest.raises(verdicts.ControlError, match="'insensitive' needs a failed control"):
        verdicts.card("claim", "effect", 8, 0.01, verdicts.INSENSITIVE, diff=INSIDE, controls=[took(0.6)])
    row = verdicts.card("claim", "effect", 8, 0.01, verdicts.INSENSITIVE, diff=INSIDE, controls=[took(0.0)],
                     dose="20 / 1,000,000 steps", testbed="synthetic", delta_source="ours")
    assert tuple(row) == verdicts.SCORECARD_KEYS and row["estimate"] == 0.001 and row["low"] == -0.003


def test_delta_is_at_most_half_the_effect_the_paper_reports():
    assert "at most half of 0.0088" in verdicts.delta_against_paper(0.004, 0.0088, "Train No Evil")
    with pytest.raises(ValueError, match="delta=0.01 exceeds half"):
        verdicts.delta_against_paper(0.01, 0.0088, "Train No Evil")
    assert verdicts.delta_against_paper(0.02, None, "no effect size in our notes").startswith("±0.02 is ours")
