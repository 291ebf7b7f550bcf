"""Seeds, confidence intervals, paired tests and computed verdicts."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps


def seed_everything(seed: int) -> np.random.Generator:
    """Seed python, numpy and torch; return the run's numpy generator."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return np.random.default_rng(seed)


def class_prior(labels) -> float:
    """Majority-class accuracy: what a classifier that ignores its input gets (any number of classes)."""
    counts = np.bincount(np.asarray(labels, dtype=np.int64).ravel())
    return float(counts.max() / counts.sum())


@dataclass
class Interval:
    """A mean with a confidence interval over n values."""

    mean: float
    low: float
    high: float
    n: int

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}] (n={self.n})"


def mean_ci(values, level: float = 0.95) -> Interval:
    """Student-t interval of the mean (over seeds); a single value gives a zero-width interval."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    m = float(x.mean())
    if len(x) < 2:
        return Interval(m, m, m, 1)
    half = float(sps.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))
    return Interval(m, m - half, m + half, len(x))


def bootstrap_ci(statistic, *arrays, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> Interval:
    """Percentile bootstrap interval of statistic(*arrays), resampling rows jointly."""
    arrays = [np.asarray(a) for a in arrays]
    n = len(arrays[0])
    rng = np.random.default_rng(seed)
    point = float(statistic(*arrays))
    boots = []
    for _ in range(n_boot):
        idx = rng.integers(0, n, size=n)
        value = statistic(*(a[idx] for a in arrays))
        if np.isfinite(value):
            boots.append(value)
    low, high = np.percentile(boots, [50 * (1 - level), 50 * (1 + level)])
    return Interval(point, float(low), float(high), n)


@dataclass
class PairedTest:
    """Difference a - b over paired seeds: its interval and two p-values."""

    diff: Interval
    t_pvalue: float
    wilcoxon_pvalue: float


def paired_test(a, b, level: float = 0.95) -> PairedTest:
    """Paired comparison of two arms run with the same seeds (t-test and Wilcoxon)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired arms need the same seeds: got {a.shape} and {b.shape}")
    d = a - b
    t_p = float(sps.ttest_rel(a, b).pvalue) if len(d) > 1 and d.std() > 0 else float("nan")
    try:
        w_p = float(sps.wilcoxon(d).pvalue) if np.any(d != 0) else 1.0
    except ValueError:
        w_p = float("nan")
    return PairedTest(mean_ci(d, level), t_p, w_p)


# ---------------------------------------------------------------- verdicts
# One vocabulary and one set of rules for every claim of every paper.
REPRODUCED = "reproduced"
CONTRADICTED = "contradicted"
EQUIVALENT = "equivalent within ±delta"
NOT_RESOLVED = "not resolved"
VERDICTS = (REPRODUCED, CONTRADICTED, EQUIVALENT, NOT_RESOLVED)

# A verdict needs at least this many values per interval: with two seeds whose differences
# happen to be equal (accuracies on a few hundred examples often are), the interval has width 0.
MIN_SEEDS = 3
# A classifier has learned its task when it beats the majority class by more than this.
LEARNED_MARGIN = 0.02


def verdict(diff: Interval, direction: str = "greater", delta: float | None = None) -> str:
    """Four-way verdict on the paper's claim about a difference a - b, from its interval.

    direction "greater" (the paper says a > b) or "less": reproduced when the interval lies
    beyond zero in the paper's direction, contradicted when beyond zero the other way,
    equivalent within +-delta when the whole interval lies inside (-delta, delta) (two one-sided
    tests), else not resolved. direction "at_most" (the paper says a is no better than b by
    more than delta): reproduced when the interval lies below delta, contradicted above it.
    direction "equivalent" (the paper says a = b within delta): reproduced inside +-delta,
    contradicted when the interval lies wholly beyond +delta or -delta.
    """
    if direction not in ("greater", "less", "at_most", "equivalent"):
        raise ValueError(f"direction={direction!r}: use 'greater', 'less', 'at_most' or 'equivalent'")
    if delta is not None and not delta > 0:
        raise ValueError(f"delta={delta!r}: the equivalence margin must be above 0")
    if direction in ("at_most", "equivalent") and delta is None:
        raise ValueError(f"direction={direction!r} needs a margin delta")
    if diff.n < MIN_SEEDS or not np.isfinite([diff.low, diff.high]).all():
        return NOT_RESOLVED
    inside = delta is not None and -delta < diff.low and diff.high < delta
    if direction == "at_most":
        return REPRODUCED if diff.high < delta else CONTRADICTED if diff.low > delta else NOT_RESOLVED
    if direction == "equivalent":
        if inside:
            return REPRODUCED
        return CONTRADICTED if diff.low > delta or diff.high < -delta else NOT_RESOLVED
    sign = 1 if direction == "greater" else -1
    low, high = sorted((sign * diff.low, sign * diff.high))
    if low > 0:
        return REPRODUCED
    if high < 0:
        return CONTRADICTED
    return EQUIVALENT if inside else NOT_RESOLVED


def seeds_for_half_width(sd: float, delta: float, level: float = 0.95, max_seeds: int = 1000) -> int:
    """Paired seeds needed so that the Student-t interval of the mean paired difference has a
    half-width of at most delta: the smallest n >= MIN_SEEDS with t(n-1) * sd / sqrt(n) <= delta.

    sd is the seed-to-seed standard deviation of the paired difference, measured first (a pilot).
    The rule sizes the interval, not a test: with the planned n, a true difference of 0 gives
    "equivalent within +-delta" only when the interval also lands inside +-delta, and a true
    difference must exceed about delta to be called reproduced (see minimal_detectable_effect).
    """
    if not delta > 0:
        raise ValueError(f"delta={delta!r}: the half-width must be above 0")
    if not (np.isfinite(sd) and sd >= 0):
        raise ValueError(f"sd={sd!r}: give the measured seed-to-seed standard deviation (>= 0)")
    for n in range(MIN_SEEDS, max_seeds + 1):
        if sps.t.ppf(0.5 + level / 2, n - 1) * sd / np.sqrt(n) <= delta:
            return n
    raise ValueError(f"sd={sd:.4g}, delta={delta:.4g}: more than max_seeds={max_seeds} seeds needed")


def minimal_detectable_effect(sd: float, n: int, level: float = 0.95, power: float = 0.8) -> float:
    """The smallest true paired difference that a design of n seeds calls reproduced with the given
    power (two-sided level, Student-t): (t_{1-alpha/2} + t_{power}) * sd / sqrt(n), df = n - 1."""
    if n < MIN_SEEDS:
        raise ValueError(f"n={n}: a verdict needs at least {MIN_SEEDS} seeds (MIN_SEEDS)")
    if not 0 < power < 1:
        raise ValueError(f"power={power!r}: give a probability in (0, 1)")
    df = n - 1
    return float((sps.t.ppf(0.5 + level / 2, df) + sps.t.ppf(power, df)) * sd / np.sqrt(n))


def design_from_interval(low: float, high: float, n: int, delta: float | None = None,
                         level: float = 0.95, power: float = 0.8) -> dict:
    """What a measured Student-t interval of a paired difference says about the design: the seed-
    to-seed sd it implies, the minimal detectable effect with its n seeds, and (given a margin
    delta) how many seeds would make the interval's half-width at most delta.

    NaN where the interval cannot say (fewer than MIN_SEEDS seeds, or no interval).
    """
    out = {"sd": float("nan"), "mde": float("nan"), "seeds_for_delta": float("nan")}
    if n is None or n < MIN_SEEDS or not np.isfinite([low, high]).all():
        return out
    sd = float((high - low) / 2 * np.sqrt(n) / sps.t.ppf(0.5 + level / 2, n - 1))
    out["sd"] = sd
    out["mde"] = minimal_detectable_effect(sd, n, level, power)
    if delta is not None:
        out["seeds_for_delta"] = seeds_for_half_width(sd, delta, level, max_seeds=10**6)
    return out


def seeds_to_resolve(mean: float, low: float, high: float, n: int, delta: float,
                     direction: str = "greater") -> float:
    """Paired seeds at which an interval of this mean and implied spread would resolve: clear
    zero or fit inside +-delta ("greater"/"less"), clear delta ("at_most"). A projection from
    the measured mean and spread, not a promise; NaN where the interval cannot say."""
    sd = design_from_interval(low, high, n)["sd"]
    if direction == "at_most":
        half_width = abs(mean - delta)
    else:
        half_width = max(abs(mean), delta - abs(mean))
    if not (np.isfinite(sd) and half_width > 0):
        return float("nan")
    return float(seeds_for_half_width(sd, half_width, max_seeds=10**6))


def verdict_apart(a: Interval, b: Interval, direction: str = "greater") -> str:
    """Verdict from two unpaired intervals: a above b (or below, for "less"), apart or overlapping."""
    if direction not in ("greater", "less"):
        raise ValueError(f"direction={direction!r}: use 'greater' or 'less'")
    if a.n < MIN_SEEDS or b.n < MIN_SEEDS:
        return NOT_RESOLVED
    above, below = a.low > b.high, a.high < b.low
    if direction == "less":
        above, below = below, above
    return REPRODUCED if above else CONTRADICTED if below else NOT_RESOLVED


def combine(verdicts) -> str:
    """One verdict from the conditions a claim needs together.

    All reproduced: reproduced. Any contradicted: contradicted. All equivalent: equivalent.
    Anything else, and no conditions at all: not resolved.
    """
    verdicts = list(verdicts)
    for v in verdicts:
        if v not in VERDICTS:
            raise ValueError(f"unknown verdict {v!r}; verdicts: {VERDICTS}")
    if not verdicts:
        return NOT_RESOLVED
    if all(v == REPRODUCED for v in verdicts):
        return REPRODUCED
    if any(v == CONTRADICTED for v in verdicts):
        return CONTRADICTED
    if all(v == EQUIVALENT for v in verdicts):
        return EQUIVALENT
    return NOT_RESOLVED


def learned(accuracy: float, prior: float, margin: float = LEARNED_MARGIN) -> bool:
    """True when an accuracy beats the majority-class accuracy `prior` by more than `margin`."""
    return bool(accuracy > prior + margin)


# ---------------------------------------------------------------- scorecard rows
# Every summary saves its claims as rows with these keys; the book builds its tables from them.
SCORECARD_KEYS = ("claim", "effect", "seeds", "delta", "verdict")
# The scorecard as a table a reader reads: key -> column name.
SCORECARD_COLUMNS = {"claim": "Claim", "effect": "Effect [95% CI]", "seeds": "Seeds", "verdict": "Verdict"}


def interval_text(mean: float, low: float, high: float, n: int, unit: str = "seed",
                  explain: bool = True) -> str:
    """A mean and its 95% interval; an interval of zero width says why ("one seed: no interval").

    explain=False leaves the why out (a scorecard row says it once for all its intervals).
    """
    if not n or mean is None or np.isnan(mean):
        return "not measured"
    if n == 1:
        return f"{mean:.3f}" + (f" (one {unit}: no interval)" if explain else "")
    text = f"{mean:.3f} [{low:.3f}, {high:.3f}]"
    return text + (f" (all {n} {unit}s equal: zero width)" if explain and low == high else "")


def scorecard_table(rows: list[dict]) -> pandas.DataFrame:  # noqa: F821 - pandas imported lazily
    """Scorecard rows as a table with readable column names (and the margin, where one was used)."""
    import pandas as pd

    table = pd.DataFrame(list(rows), columns=list(SCORECARD_KEYS))
    if table["delta"].notna().any():
        table["Margin"] = table["delta"].map(lambda d: "" if d is None or pd.isna(d) else f"{d:g}")
    return table.drop(columns="delta").rename(columns=SCORECARD_COLUMNS)
