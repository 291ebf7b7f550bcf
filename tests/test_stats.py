"""Intervals, paired tests and the verdicts computed from them."""

import math

import pytest

from mlmlib import stats
from mlmlib.stats import Interval


def test_mean_ci_is_the_student_t_interval():
    ci = stats.mean_ci([1.0, 2.0, 3.0])
    # mean 2, sd 1, t(0.975, 2) = 4.3027
    assert ci.mean == 2.0 and ci.n == 3
    assert ci.high - ci.mean == pytest.approx(4.302653 / math.sqrt(3), rel=1e-5)
    assert stats.mean_ci([0.5]).low == 0.5 and stats.mean_ci([float("nan")]).n == 0


def test_paired_test_uses_the_per_seed_differences():
    test = stats.paired_test([0.71, 0.74, 0.70, 0.73], [0.70, 0.72, 0.69, 0.71])
    assert test.diff.mean == pytest.approx(0.015) and test.diff.low > 0
    with pytest.raises(ValueError, match="same seeds"):
        stats.paired_test([1, 2, 3], [1, 2])


def test_verdicts_from_intervals():
    above, below, spans = Interval(0.02, 0.01, 0.03, 5), Interval(-0.02, -0.03, -0.01, 5), Interval(0, -1, 1, 5)
    assert stats.verdict_difference(above) == "reproduced"
    assert stats.verdict_difference(below) == "not reproduced"
    assert stats.verdict_difference(below, positive_claim=False) == "reproduced"
    assert stats.verdict_difference(spans) == "not resolved at this scale"
    assert stats.verdict_greater(Interval(0.8, 0.75, 0.85, 3), Interval(0.5, 0.45, 0.55, 3)) == "reproduced"
    assert stats.verdict_greater(Interval(0.5, 0.45, 0.55, 3), Interval(0.8, 0.75, 0.85, 3)) == "not reproduced"


def test_two_seeds_never_give_a_verdict():
    # two seeds with the same difference: an interval of width zero, not evidence
    tied = stats.paired_test([0.70, 0.72], [0.69, 0.71]).diff
    assert tied.low == tied.high > 0 and tied.n == 2
    assert stats.verdict_difference(tied) == "not resolved at this scale"
    assert stats.verdict_greater(Interval(0.8, 0.8, 0.8, 2), Interval(0.5, 0.5, 0.5, 3)) == "not resolved at this scale"


def test_class_prior_is_the_majority_share():
    assert stats.class_prior([0, 1, 1, 1]) == 0.75
    assert stats.class_prior([2, 2, 0, 1, 2]) == 0.6  # any number of classes
