"""Intervals, paired tests and the verdicts computed from them."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from mlmlib import stats, verdicts
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


R, C, E, N = verdicts.REPRODUCED, verdicts.CONTRADICTED, verdicts.EQUIVALENT, verdicts.NOT_RESOLVED


@pytest.mark.parametrize("low, high, direction, delta, expected", [
    (0.01, 0.03, "greater", None, R),
    (-0.03, -0.01, "greater", None, C),
    (-0.03, -0.01, "less", None, R),
    (0.01, 0.03, "less", None, C),
    (-1.0, 1.0, "greater", None, N),
    (0.0, 0.03, "greater", None, N),        # touching zero is not beyond it
    (-0.005, 0.008, "greater", 0.01, E),    # inside +-delta: equivalent
    (-0.01, 0.008, "greater", 0.01, N),     # on the edge of delta is not inside it
    (-0.005, 0.02, "greater", 0.01, N),
    (0.002, 0.008, "greater", 0.01, R),     # beyond zero wins over "inside delta"
    (-0.02, 0.01, "at_most", 0.02, R),      # "no better by more than delta"
    (0.03, 0.05, "at_most", 0.02, C),
    (0.01, 0.03, "at_most", 0.02, N),
    (-0.01, 0.01, "equivalent", 0.02, R),
    (0.03, 0.05, "equivalent", 0.02, C),
    (-0.05, -0.03, "equivalent", 0.02, C),
    (0.01, 0.03, "equivalent", 0.02, N),
])
def test_four_way_verdict_on_hand_made_intervals(low, high, direction, delta, expected):
    assert verdicts.verdict(Interval((low + high) / 2, low, high, 5), direction, delta) == expected


def test_verdict_refuses_bad_input():
    diff = Interval(0.0, -0.01, 0.01, 5)
    for kwargs, message in (({"direction": "up"}, "direction='up'"),
                            ({"delta": 0.0}, "delta=0.0"), ({"delta": -1.0}, "delta=-1.0"),
                            ({"direction": "at_most"}, "needs a margin delta")):
        with pytest.raises(ValueError, match=message):
            verdicts.verdict(diff, **kwargs)


def test_unpaired_intervals_apart_or_overlapping():
    high, low = Interval(0.8, 0.75, 0.85, 3), Interval(0.5, 0.45, 0.55, 3)
    assert verdicts.verdict_apart(high, low) == R and verdicts.verdict_apart(low, high) == C
    assert verdicts.verdict_apart(low, high, "less") == R
    assert verdicts.verdict_apart(high, Interval(0.8, 0.7, 0.9, 3)) == N


def test_two_seeds_never_give_a_verdict():
    # two seeds with the same difference: an interval of width zero, not evidence
    tied = stats.paired_test([0.70, 0.72], [0.69, 0.71]).diff
    assert tied.low == tied.high > 0 and tied.n == 2
    assert verdicts.verdict(tied) == N and verdicts.verdict(tied, "at_most", 0.5) == N
    assert verdicts.verdict_apart(Interval(0.8, 0.8, 0.8, 2), Interval(0.5, 0.5, 0.5, 3)) == N
    assert verdicts.verdict(Interval(0.02, 0.01, 0.03, verdicts.MIN_SEEDS)) == R


def test_combine_never_calls_nothing_reproduced():
    assert verdicts.combine([]) == N
    assert verdicts.combine([R, R]) == R and verdicts.combine([R, C]) == C and verdicts.combine([R, N]) == N
    assert verdicts.combine([E, E]) == E and verdicts.combine([E, R]) == N
    with pytest.raises(ValueError, match="unknown verdict"):
        verdicts.combine(["not reproduced"])


def test_learned_means_above_the_prior_by_the_margin():
    assert verdicts.learned(0.70, 0.66) and not verdicts.learned(0.67, 0.66)
    assert not verdicts.learned(0.66 + verdicts.LEARNED_MARGIN, 0.66)
    assert verdicts.learned(0.67, 0.66, margin=0.005)


def test_class_prior_is_the_majority_share():
    assert stats.class_prior([0, 1, 1, 1]) == 0.75
    assert stats.class_prior([2, 2, 0, 1, 2]) == 0.6  # any number of classes


def test_seed_count_gives_the_smallest_n_whose_interval_fits_delta():
    sd, delta = 0.02, 0.01
    n = verdicts.seeds_for_half_width(sd, delta)
    t = lambda k: sps.t.ppf(0.975, k - 1) * sd / np.sqrt(k)
    assert t(n) <= delta < t(n - 1)
    assert n == 18  # t(17) = 2.110: 2.110 * 0.02 / sqrt(18) = 0.00995
    assert verdicts.seeds_for_half_width(0.0, 0.01) == verdicts.MIN_SEEDS  # never fewer than a verdict needs
    assert verdicts.seeds_for_half_width(sd, 2 * delta) < n  # a wider margin needs fewer seeds
    # the interval from n seeds of exactly that spread has half-width <= delta
    rng = np.random.default_rng(0)
    d = rng.normal(size=n)
    d = (d - d.mean()) / d.std(ddof=1) * sd
    ci = stats.mean_ci(d)
    assert (ci.high - ci.low) / 2 <= delta + 1e-12


@pytest.mark.parametrize("sd, delta, message", [
    (0.02, 0.0, "delta=0.0: the half-width must be above 0"),
    (0.02, -1.0, "delta=-1.0"),
    (float("nan"), 0.01, "sd=nan"),
    (5.0, 1e-4, "more than max_seeds"),
])
def test_seed_count_refuses_bad_input(sd, delta, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        verdicts.seeds_for_half_width(sd, delta)


def test_minimal_detectable_effect():
    # df 9: t(0.975) = 2.2622, t(0.8) = 0.8834; (2.2622 + 0.8834) * 1 / sqrt(10) = 0.9947
    assert verdicts.minimal_detectable_effect(1.0, 10) == pytest.approx(0.9947, abs=1e-3)
    assert verdicts.minimal_detectable_effect(1.0, 40) < verdicts.minimal_detectable_effect(1.0, 10)
    with pytest.raises(ValueError, match="n=2: a verdict needs at least 3 seeds"):
        verdicts.minimal_detectable_effect(1.0, 2)


def test_the_design_read_from_an_interval_inverts_the_interval():
    sd, n = 0.03, 5
    ci = stats.mean_ci([0.0, 0.03, -0.03, 0.04, -0.04])  # any values; rebuild their interval's sd
    design = verdicts.design_from_interval(ci.low, ci.high, ci.n, delta=0.01)
    assert design["sd"] == pytest.approx(np.std([0.0, 0.03, -0.03, 0.04, -0.04], ddof=1))
    assert design["mde"] == pytest.approx(verdicts.minimal_detectable_effect(design["sd"], 5))
    assert design["seeds_for_delta"] == verdicts.seeds_for_half_width(design["sd"], 0.01)
    half = sps.t.ppf(0.975, n - 1) * sd / np.sqrt(n)
    assert verdicts.design_from_interval(-half, half, n)["sd"] == pytest.approx(sd)
    assert np.isnan(verdicts.design_from_interval(-half, half, n)["seeds_for_delta"])  # no delta given


def test_the_design_needs_an_interval_of_enough_seeds():
    for design in (verdicts.design_from_interval(-0.1, 0.1, 2, delta=0.01),
                   verdicts.design_from_interval(float("nan"), 0.1, 5)):
        assert design.keys() == {"sd", "mde", "seeds_for_delta"}
        assert all(np.isnan(v) for v in design.values()), design


def test_seeds_to_resolve_at_the_measured_mean():
    # sd 0.02 implied by a 5-seed interval; a mean of 0.01 inside +-0.05 resolves as equivalent soon,
    # the same mean against +-0.02 needs the interval to shrink to 0.01 either way
    half = sps.t.ppf(0.975, 4) * 0.02 / math.sqrt(5)
    assert verdicts.seeds_to_resolve(0.01, 0.01 - half, 0.01 + half, 5, 0.05) == \
        verdicts.seeds_for_half_width(0.02, 0.04)
    assert verdicts.seeds_to_resolve(0.01, 0.01 - half, 0.01 + half, 5, 0.02) == \
        verdicts.seeds_for_half_width(0.02, 0.01)
    # "at most delta": the interval must clear delta, 0.03 away from a mean of 0.05
    assert verdicts.seeds_to_resolve(0.05, 0.05 - half, 0.05 + half, 5, 0.02, "at_most") == \
        verdicts.seeds_for_half_width(0.02, 0.03)
    assert math.isnan(verdicts.seeds_to_resolve(0.01, 0.0, 0.02, 2, 0.02))  # two seeds: no spread to read
    assert math.isnan(verdicts.seeds_to_resolve(0.02, 0.0, 0.04, 5, 0.02, "at_most"))  # on the margin
