"""Computed verdicts: one vocabulary and one rule set for every claim of the three papers.

A claim's verdict is computed from the 95% interval of its difference (`mlmlib.stats`), never
typed: reproduced, contradicted, equivalent within ±delta, insensitive (a declared positive
control failed, so the experiment could not have shown the effect), not resolved, or not
measured (the difference, or a control the claim declares, has no interval). The summary
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
NOT_MEASURED = "not measured"  # no interval: the claim's arms, or one of its controls, were not run
VERDICTS = (REPRODUCED, CONTRADICTED, EQUIVALENT, INSENSITIVE, NOT_RESOLVED, NOT_MEASURED)
# The verdicts an interval gives by itself: a claim with a failed control, a control without an
# interval or an arm at its majority class never gets one of these (`decide`).
JUDGED = (REPRODUCED, CONTRADICTED, EQUIVALENT)

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
    if not diff.n:
        return NOT_MEASURED
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

    Any insensitive: insensitive (a failed control leaves no exception). Else any not measured:
    not measured. All reproduced: reproduced. Any contradicted: contradicted. All equivalent:
    equivalent. Anything else, and no conditions at all: not resolved.
    """
    verdicts = list(verdicts)
    for v in verdicts:
        if v not in VERDICTS:
            raise ValueError(f"unknown verdict {v!r}; verdicts: {VERDICTS}")
    if not verdicts:
        return NOT_RESOLVED
    for first in (INSENSITIVE, NOT_MEASURED):
        if first in verdicts:
            return first
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


# ---------------------------------------------------------------- positive controls
# A null or "equivalent" result means something only if the experiment could have shown the
# effect (assay sensitivity, as equivalence trials require). Every claim declares controls of two
# kinds, each a measured interval against a stated threshold. A control is judged on the near end
# of its 95% interval (the low end for ">=" and ">", the high end for "<=" and "<"), never on a
# mean; one with fewer than MIN_SEEDS blocks behind its interval is "not measured". A failed
# control makes the claim INSENSITIVE whatever its own interval says, with no exception.
TOOK = "manipulation took"      # the intervention did what it is supposed to do
EXISTS = "effect exists"        # there is an effect for the claim to explain or compare
CONTROL_KINDS = (TOOK, EXISTS)
PASSED = "passed"
FAILED = "failed"
UNMEASURED = "not measured"
_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
# Where a control's threshold comes from: the paper's own figure, or a principle the page states.
# A threshold read off a pilot of the same testbed is a control tuned to pass, and is refused.
THRESHOLD_SOURCES = ("paper", "principle")


class ControlError(ValueError):
    """A claim without a declared control, a control without its measurement, a bad threshold."""


def exact(value: float, n: int) -> Interval:
    """A quantity with no spread over its n blocks, as an interval of zero width: a property of the
    judged interval itself (its half-width) or of the design (a count every block shares)."""
    value = float(value) if value is not None else math.nan
    return Interval(value, value, value, int(n))


def control(claim: str, name: str, kind: str, measured: Interval | None, threshold: float,
            op: str = ">=", bounds: tuple[float, float] = (-math.inf, math.inf), field: str = "",
            unit: str = "", source: str = "") -> dict:
    """One positive control of `claim`: the near end of `measured`'s 95% interval `op` `threshold`.

    `measured` is an Interval over `unit` (languages, seeds; its n blocks), read from record
    `field`; fewer than MIN_SEEDS blocks make the control "not measured" (and the claim with it).
    `bounds` is the range a meaningful threshold lies in (an accuracy's [0, 1]); `source` where
    the threshold comes from (THRESHOLD_SOURCES). A threshold outside its range, an unknown kind,
    operator or source, a measurement that is not an interval or is missing stops with an error
    naming the claim, the control and the record field, never a silent pass.
    """
    where = f"claim {claim!r}, control {name!r}"
    if kind not in CONTROL_KINDS:
        raise ControlError(f"{where}: kind={kind!r}; kinds: {CONTROL_KINDS}")
    if op not in _OPS:
        raise ControlError(f"{where}: op={op!r}; operators: {list(_OPS)}")
    if not source:
        raise ControlError(f"{where}: no threshold source: say where its threshold comes from "
                           f"(source=, one of {THRESHOLD_SOURCES})")
    if source not in THRESHOLD_SOURCES:
        raise ControlError(f"{where}: source={source!r}: a threshold comes from {THRESHOLD_SOURCES}, "
                           "never from a pilot of the same testbed")
    low, high = bounds
    if not (isinstance(threshold, (int, float)) and low <= threshold <= high):
        raise ControlError(f"{where}: threshold={threshold!r} lies outside its range [{low:g}, {high:g}]")
    if measured is None:
        raise ControlError(f"{where}: no measurement; the record field {field or '(unnamed)'!r} is missing")
    if not isinstance(measured, Interval):
        raise ControlError(f"{where}: measured={measured!r} is not an interval: a control is judged "
                           f"on the near end of its 95% interval over {unit or 'its blocks'}, never "
                           "on a mean or a single run")
    if not unit:
        raise ControlError(f"{where}: give the unit its interval varies over (languages, seeds)")
    near = measured.low if op in (">=", ">") else measured.high
    record = {"name": name, "kind": kind, "measured": float(measured.mean), "low": float(measured.low),
              "high": float(measured.high), "n": int(measured.n), "unit": unit,
              "judged_on": float(near), "threshold": float(threshold), "op": op, "field": field,
              "source": source}
    if measured.n >= MIN_SEEDS and not np.isfinite(near):
        raise ControlError(f"{where}: no measurement; the record field {field or '(unnamed)'!r} "
                           "is not finite")
    status = UNMEASURED if measured.n < MIN_SEEDS else PASSED if _OPS[op](near, threshold) else FAILED
    return {**record, "status": status, "passed": status == PASSED}


def control_status(c: dict) -> str:
    """passed, failed or not measured (a control without `status` has only `passed`: from it)."""
    return c.get("status") or (PASSED if c.get("passed") else FAILED)


def record_value(table, column: str, claim: str, name: str):
    """`table[column]`, or a ControlError naming the claim, the control and the missing field."""
    if table is None or column not in table or not len(table):
        raise ControlError(f"claim {claim!r}, control {name!r}: the records hold no field {column!r}")
    return table[column]


def failed_controls(controls: list[dict]) -> list[dict]:
    """The controls that did not pass on their interval."""
    return [c for c in controls if control_status(c) == FAILED]


def unmeasured_controls(controls: list[dict]) -> list[dict]:
    """The controls without an interval (fewer than MIN_SEEDS blocks)."""
    return [c for c in controls if control_status(c) == UNMEASURED]


def control_text(c: dict) -> str:
    """A control as a reader reads it: 'name: 0.412 [0.301, 0.523] over 4 languages (needs >= 0.3)'."""
    if control_status(c) == UNMEASURED:
        return f"{c['name']}: not measured ({c.get('n', 0)} {c.get('unit', 'blocks')}; needs {MIN_SEEDS})"
    if "low" not in c:
        return f"{c['name']}: {c['measured']:.3g} (needs {c['op']} {c['threshold']:g})"
    spread = "" if c["low"] == c["high"] else f" [{c['low']:.3g}, {c['high']:.3g}]"
    return f"{c['name']}: {c['measured']:.3g}{spread} over {c['n']} {c['unit']} (needs {c['op']} {c['threshold']:g})"


# ---------------------------------------------------------------- the majority class
def at_majority(arms: dict[str, tuple[float, float]], claim: str = "",
                margin: float = LEARNED_MARGIN) -> list[str]:
    """The arms that have not learned: arm -> (mean accuracy, its test set's majority-class
    accuracy); an arm within `margin` of its majority class (`learned` false) is named.

    A majority baseline that is missing or not finite stops with an error naming the claim and the
    arm: every classification measurement carries its majority class.
    """
    out = []
    for arm, (accuracy, majority) in arms.items():
        if majority is None or not np.isfinite(float(majority)):
            raise ControlError(f"claim {claim!r}: arm {arm!r} has no majority-class baseline (record "
                               "field 'majority'): every labelled test set records one")
        if not learned(float(accuracy), float(majority), margin):
            out.append(arm)
    return out


def decide(verdict_: str, controls: list[dict], claim: str = "", majority: list[str] = ()) -> str:
    """A claim's verdict from its interval's verdict, its positive controls and its arms at their
    majority class, in this order: a failed control gives INSENSITIVE (no exception: the
    experiment could not have shown what the claim is about); a control without an interval gives
    NOT_MEASURED; an arm at its majority class (`majority`, from `at_majority`) gives NOT_RESOLVED
    (a comparison between classifiers that have not learned is not judged); else the interval's
    verdict. A claim with no control is refused.
    """
    if not controls:
        raise ControlError(f"claim {claim!r} declares no positive control")
    if verdict_ not in VERDICTS:
        raise ValueError(f"unknown verdict {verdict_!r}; verdicts: {VERDICTS}")
    if failed_controls(controls):
        return INSENSITIVE
    if unmeasured_controls(controls):
        return NOT_MEASURED
    if majority and verdict_ in JUDGED:
        return NOT_RESOLVED
    return verdict_


def judge(diff: Interval, direction: str, delta: float | None, controls: list[dict],
          claim: str = "", majority: list[str] = ()) -> str:
    """`verdict` of one difference, then `decide` with the claim's controls and arms at majority."""
    return decide(verdict(diff, direction, delta), controls, claim, majority)


def controls_note(verdict_: str, controls: list[dict], majority: list[str] = ()) -> str:
    """What a summary page shows beside a verdict: every control passed, or the failed (or
    unmeasured) ones named, or the arms at their majority class."""
    if not controls:
        return "no control declared"
    failed, unmeasured = failed_controls(controls), unmeasured_controls(controls)
    if failed:
        return "insensitive: " + "; ".join(control_text(c) for c in failed)
    if unmeasured:
        return "not measured: " + "; ".join(control_text(c) for c in unmeasured)
    if majority:
        return "not resolved: at the majority class: " + ", ".join(majority)
    return f"all {len(controls)} controls passed"


# ---------------------------------------------------------------- scorecard rows
# Every summary saves its claims as rows with these keys; the book builds its tables, its forest
# plot and its CSV from them. `estimate`/`low`/`high`: the judged difference and its interval
# (None for a row with no single difference); `seeds`: the blocks behind it, counted in `unit`
# (languages, seeds, timing repetitions); `direction`: what the paper says of it; `controls`:
# `control` dicts; `majority`: arm -> its accuracy and its test set's majority-class accuracy (every
# row about a classifier's score); `at_majority`: the arms that did not beat it by the learned
# margin; `scale`: what the difference measures (the forest plot draws one panel per scale);
# `dose`: what was trained for the intervention, ours against the paper profile's, and any setting
# that departs from the paper's recipe; `testbed`: where the claim was tested; `delta_source`:
# where the margin comes from.
SCORECARD_KEYS = ("claim", "effect", "seeds", "unit", "delta", "verdict", "estimate", "low", "high",
                  "direction", "controls", "majority", "at_majority", "scale", "dose", "testbed",
                  "delta_source")
# The scorecard as a table a reader reads: key -> column name.
SCORECARD_COLUMNS = {"claim": "Claim", "effect": "Effect [95% CI]", "seeds": "Blocks", "verdict": "Verdict",
                     "controls": "Controls", "dose": "Dose (ours / paper profile)"}
ACCURACY = "accuracy difference"


def card(claim: str, effect: str, seeds: int, delta: float | None, verdict_: str, *,
         diff: Interval | None = None, direction: str | None = None, controls: list[dict] = (),
         dose: str = "", testbed: str = "", delta_source: str = "", unit: str = "seeds",
         majority: dict[str, tuple[float, float]] | None = None, scale: str = ACCURACY) -> dict:
    """One scorecard row (SCORECARD_KEYS), checked against the rules every paper shares.

    A row about a classifier's score (`scale` ACCURACY) gives `majority`: arm -> (its mean
    accuracy, its test set's majority-class accuracy). Refused, naming the claim: a verdict outside
    the vocabulary; an "insensitive" without a failed control; any other verdict with a failed
    control; a control without an interval under anything but "insensitive" or "not measured"; a
    judged verdict (reproduced, contradicted, equivalent) from fewer than MIN_SEEDS blocks or with
    an arm at its majority class; an accuracy row without majority baselines.
    """
    if verdict_ not in VERDICTS:
        raise ValueError(f"unknown verdict {verdict_!r}; verdicts: {VERDICTS}")
    controls = list(controls)
    failed, unmeasured = failed_controls(controls), unmeasured_controls(controls)
    if verdict_ == INSENSITIVE and not failed:
        raise ControlError(f"claim {claim!r}: 'insensitive' needs a failed control")
    if failed and verdict_ != INSENSITIVE:
        raise ControlError(f"claim {claim!r}: {verdict_!r} with a failed control "
                           f"({controls_note(verdict_, controls)}): a failed control gives 'insensitive'")
    if unmeasured and verdict_ not in (INSENSITIVE, NOT_MEASURED):
        raise ControlError(f"claim {claim!r}: {verdict_!r} with a control that has no interval "
                           f"({controls_note(verdict_, controls)})")
    if verdict_ in JUDGED and seeds < MIN_SEEDS:
        raise ControlError(f"claim {claim!r}: {verdict_!r} from {seeds} {unit}; a verdict needs {MIN_SEEDS}")
    if scale == ACCURACY and verdict_ not in (NOT_MEASURED,) and majority is None:
        raise ControlError(f"claim {claim!r}: an accuracy row without majority-class baselines "
                           "(give majority=arm -> (accuracy, majority-class accuracy))")
    below = at_majority(majority or {}, claim)
    if below and verdict_ in JUDGED:
        raise ControlError(f"claim {claim!r}: {verdict_!r} with arms at their majority class: {below}")

    def number(x):
        return None if x is None or not np.isfinite(x) else float(x)

    return {"claim": claim, "effect": effect, "seeds": int(seeds), "unit": unit,
            "delta": None if delta is None else float(delta), "verdict": verdict_,
            "estimate": number(diff.mean) if diff else None, "low": number(diff.low) if diff else None,
            "high": number(diff.high) if diff else None, "direction": direction, "controls": controls,
            "majority": {arm: {"accuracy": number(a), "majority": number(m)}
                         for arm, (a, m) in (majority or {}).items()},
            "at_majority": below, "scale": scale, "dose": dose, "testbed": testbed,
            "delta_source": delta_source}


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
    table["controls"] = [controls_note(r["verdict"], r["controls"], r.get("at_majority") or ())
                         for r in rows]
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


def with_departures(dose: str, departures: dict[str, str]) -> str:
    """A dose text with the settings that depart from the paper's recipe, each with its reason
    ('...; departs from the paper: generator temperature 1.5 (ELECTRA: 1): why'), so a scorecard
    row never hides a departure in a chapter."""
    if not departures:
        return dose
    listed = "; ".join(f"{what}: {why}" for what, why in departures.items())
    return f"{dose}; departs from the paper: {listed}" if dose else f"departs from the paper: {listed}"
