"""Computed verdicts: one vocabulary and one rule set for every claim of the three papers.

A claim's verdict is computed from the 95% interval of its difference (`mlmlib.stats`), never
typed: reproduced, contradicted, equivalent within ±delta, insensitive (a declared positive
control failed, so the experiment could not have shown the effect) or not resolved. The summary
notebooks turn records into claim rows with `card`; the book builds its scorecard from them.
Only summary code imports this module, so an edit here reruns the summaries, not the training.
"""

from __future__ import annotations

import math
import operator

import numpy as np
from scipy import stats as sps

from mlmlib.stats import Interval

# ---------------------------------------------------------------- verdicts
# One vocabulary and one set of rules for every claim of every paper.
REPRODUCED = "reproduced"
CONTRADICTED = "contradicted"
EQUIVALENT = "equivalent within ±delta"
INSENSITIVE = "insensitive"  # a positive control failed: the experiment could not have shown the effect
NOT_RESOLVED = "not resolved"
VERDICTS = (REPRODUCED, CONTRADICTED, EQUIVALENT, INSENSITIVE, NOT_RESOLVED)

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
    Else any insensitive: insensitive. Anything else, and no conditions at all: not resolved.
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
    if any(v == INSENSITIVE for v in verdicts):
        return INSENSITIVE
    return NOT_RESOLVED


def learned(accuracy: float, prior: float, margin: float = LEARNED_MARGIN) -> bool:
    """True when an accuracy beats the majority-class accuracy `prior` by more than `margin`."""
    return bool(accuracy > prior + margin)


# ---------------------------------------------------------------- positive controls
# A null or "equivalent" result means something only if the experiment could have shown the
# effect (assay sensitivity, as equivalence trials require). Every claim declares controls of two
# kinds, each a measured value against a stated threshold; a failed one makes the verdict
# INSENSITIVE, unless the interval already cleared zero (which shows sensitivity by itself).
TOOK = "manipulation took"      # the intervention did what it is supposed to do
EXISTS = "effect exists"        # there is an effect for the claim to explain or compare
CONTROL_KINDS = (TOOK, EXISTS)
_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}


class ControlError(ValueError):
    """A claim without a declared control, a control without its measurement, a bad threshold."""


def control(claim: str, name: str, kind: str, measured, threshold: float, op: str = ">=",
            bounds: tuple[float, float] = (-math.inf, math.inf), field: str = "") -> dict:
    """One positive control of `claim`: `measured` (read from record `field`) `op` `threshold`.

    `bounds` is the range a meaningful threshold lies in (an accuracy's [0, 1]); a threshold outside
    it, an unknown kind or operator, or a missing measurement stops with an error naming the claim,
    the control and the record field, never a silent pass.
    """
    if kind not in CONTROL_KINDS:
        raise ControlError(f"claim {claim!r}, control {name!r}: kind={kind!r}; kinds: {CONTROL_KINDS}")
    if op not in _OPS:
        raise ControlError(f"claim {claim!r}, control {name!r}: op={op!r}; operators: {list(_OPS)}")
    low, high = bounds
    if not (isinstance(threshold, (int, float)) and low <= threshold <= high):
        raise ControlError(f"claim {claim!r}, control {name!r}: threshold={threshold!r} lies outside "
                           f"its range [{low:g}, {high:g}]")
    if measured is None or not np.isfinite(float(measured)):
        raise ControlError(f"claim {claim!r}, control {name!r}: no measurement; the record field "
                           f"{field or '(unnamed)'!r} is missing or not finite")
    measured = float(measured)
    return {"name": name, "kind": kind, "measured": measured, "threshold": float(threshold), "op": op,
            "field": field, "passed": bool(_OPS[op](measured, threshold))}


def record_value(table, column: str, claim: str, name: str):
    """`table[column]`, or a ControlError naming the claim, the control and the missing field."""
    if table is None or column not in table or not len(table):
        raise ControlError(f"claim {claim!r}, control {name!r}: the records hold no field {column!r}")
    return table[column]


def failed_controls(controls: list[dict]) -> list[dict]:
    """The controls that did not pass."""
    return [c for c in controls if not c["passed"]]


def control_text(c: dict) -> str:
    """A control as a reader reads it: 'name: 0.000 (needs >= 0.3)'."""
    return f"{c['name']}: {c['measured']:.3g} (needs {c['op']} {c['threshold']:g})"


def judge(diff: Interval, direction: str, delta: float | None, controls: list[dict],
          claim: str = "") -> str:
    """`verdict` of one difference, made INSENSITIVE when a declared control failed
    (`apply_controls`; a claim in direction "at_most" or "equivalent" is a bound claim)."""
    return apply_controls(verdict(diff, direction, delta), controls, claim,
                          bound=direction in ("at_most", "equivalent"))


def apply_controls(verdict_: str, controls: list[dict], claim: str = "", bound: bool = False) -> str:
    """A verdict computed from intervals, given the claim's positive controls.

    An interval beyond zero (reproduced or contradicted) shows by itself that the experiment could
    see a difference, so it keeps its verdict and a failed control is shown beside it. A bound
    claim's "reproduced" (an interval inside a margin: `bound`), an "equivalent within ±delta"
    and a "not resolved" need every control passed, else INSENSITIVE. A claim with no control is
    refused.
    """
    if not controls:
        raise ControlError(f"claim {claim!r} declares no positive control")
    if verdict_ not in VERDICTS:
        raise ValueError(f"unknown verdict {verdict_!r}; verdicts: {VERDICTS}")
    shows_sensitivity = verdict_ == CONTRADICTED or (verdict_ == REPRODUCED and not bound)
    if failed_controls(controls) and not shows_sensitivity:
        return INSENSITIVE
    return verdict_


def controls_note(verdict_: str, controls: list[dict]) -> str:
    """What a scorecard shows beside a verdict: every control passed, or the failed ones named."""
    failed = failed_controls(controls)
    if not controls:
        return "no control declared"
    if not failed:
        return f"all {len(controls)} controls passed"
    names = "; ".join(control_text(c) for c in failed)
    if verdict_ == INSENSITIVE:
        return f"insensitive: {names}"
    return f"control failed beside the verdict: {names}"


# ---------------------------------------------------------------- scorecard rows
# Every summary saves its claims as rows with these keys; the book builds its tables, its forest
# plot and its CSV from them. `estimate`/`low`/`high`: the judged difference and its interval
# (None for a row with no single difference); `direction`: what the paper says of it; `controls`:
# `control` dicts; `dose`: what was trained for the intervention, ours against the paper
# profile's; `testbed`: where the claim was tested; `delta_source`: where the margin comes from.
SCORECARD_KEYS = ("claim", "effect", "seeds", "delta", "verdict", "estimate", "low", "high",
                  "direction", "controls", "dose", "testbed", "delta_source")
# The scorecard as a table a reader reads: key -> column name.
SCORECARD_COLUMNS = {"claim": "Claim", "effect": "Effect [95% CI]", "seeds": "Seeds", "verdict": "Verdict",
                     "controls": "Controls", "dose": "Dose (ours / paper profile)"}


def card(claim: str, effect: str, seeds: int, delta: float | None, verdict_: str, *,
         diff: Interval | None = None, direction: str | None = None, controls: list[dict] = (),
         dose: str = "", testbed: str = "", delta_source: str = "") -> dict:
    """One scorecard row (SCORECARD_KEYS), checked: a verdict of the vocabulary, an "equivalent"
    only with every control passed, and an "insensitive" only with a failed one."""
    if verdict_ not in VERDICTS:
        raise ValueError(f"unknown verdict {verdict_!r}; verdicts: {VERDICTS}")
    controls = list(controls)
    if verdict_ == EQUIVALENT and failed_controls(controls):
        raise ControlError(f"claim {claim!r}: 'equivalent' with a failed control "
                           f"({controls_note(verdict_, controls)})")
    if verdict_ == INSENSITIVE and not failed_controls(controls):
        raise ControlError(f"claim {claim!r}: 'insensitive' needs a failed control")

    def number(x):
        return None if x is None or not np.isfinite(x) else float(x)

    return {"claim": claim, "effect": effect, "seeds": int(seeds),
            "delta": None if delta is None else float(delta), "verdict": verdict_,
            "estimate": number(diff.mean) if diff else None, "low": number(diff.low) if diff else None,
            "high": number(diff.high) if diff else None, "direction": direction, "controls": controls,
            "dose": dose, "testbed": testbed, "delta_source": delta_source}


def delta_against_paper(delta: float, paper_effect: float | None, source: str,
                        parameter: str = "delta") -> str:
    """The margin's source, checked: at most half the effect the paper (or its nearest anchor)
    reports; with no reported effect, says so. Returns the sentence the page shows."""
    if not delta > 0:
        raise ValueError(f"{parameter}={delta!r}: the equivalence margin must be above 0")
    if paper_effect is None:
        return f"±{delta:g} is ours: {source}"
    if delta > paper_effect / 2 + 1e-12:
        raise ValueError(f"{parameter}={delta:g} exceeds half the effect the anchor reports "
                         f"({paper_effect:g} / 2 = {paper_effect / 2:g}; {source}); "
                         f"use at most {paper_effect / 2:g}")
    return f"±{delta:g}, at most half of {paper_effect:g} ({source})"


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
    table["controls"] = [controls_note(r["verdict"], r["controls"]) for r in rows]
    if table["delta"].notna().any():  # the margin with where it comes from
        table["Margin"] = [r.get("delta_source") or ("" if r["delta"] is None else f"{r['delta']:g}")
                           for r in rows]
    shown = ["claim", "verdict", "controls", "effect", "seeds", "dose"]
    shown += ["Margin"] if "Margin" in table else []
    return table[shown].rename(columns=SCORECARD_COLUMNS)


def dose_text(ours: int | None, paper: int | None, what: str) -> str:
    """The intervention's dose, ours against the paper profile's, e.g. '30,720 / 16,384,000,000
    tokens of pretraining per arm (1.9e-06 of the paper profile's)'; ours None: not measured."""
    if ours is None:
        return "not measured"
    if not paper:
        return f"{ours:,} {what}"
    return f"{ours:,} / {paper:,} {what} ({ours / paper:.1e} of the paper profile's)"
