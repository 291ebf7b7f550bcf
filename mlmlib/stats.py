"""Seeds, confidence intervals and paired tests: the statistics every run uses.

The verdict rules that judge claims from these intervals are in `mlmlib.verdicts`.
"""

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
