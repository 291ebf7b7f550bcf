"""Paper A's claims as code: records in, a claim table out (claim, measured, interval, seeds, verdict).

Every verdict uses the one vocabulary and rules of `mlmlib.stats`. The synthetic experiment's claims
read the rows of A3_synthetic_finetune (`claims`); the real-text claim reads the records of
A5_real_finetune_perturb (`correlation_cells`, `overall_verdict`, `correlation_claims`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mlmlib import stats
from mlmlib.papers.distributional.perturbation_deltas import correlation

COLUMNS = ["claim", "measured", "interval", "seeds", "verdict"]
CELL_COLUMNS = ["model", "template", "r", "r_low", "r_high", "n", "verdict", "learned", "group", "value",
                "kind", "run", "seed", "too_few"]
# Not a verdict: the cell of a model that has not learned its task, left out of the claim.
EXCLUDED = "excluded: model at chance"


def _row(claim: str, measured: str, intervals: dict[str, stats.Interval], verdict: str) -> dict:
    """One claim-table row; `seeds` is the fewest values behind any of its intervals."""
    return {"claim": claim, "measured": measured,
            "interval": "; ".join(f"{name}: {ci}" for name, ci in intervals.items()),
            "seeds": min((ci.n for ci in intervals.values()), default=0), "verdict": verdict}


# ---------------------------------------------------------------- synthetic experiment


def examples_needed(sizes, accuracies, target: float) -> float:
    """Training examples needed to reach `target` accuracy: log-linear interpolation; inf if never."""
    sizes, accs = np.asarray(sizes, float), np.asarray(accuracies, float)
    order = np.argsort(sizes)
    sizes, accs = sizes[order], accs[order]
    if accs[0] >= target:
        return float(sizes[0])
    for i in range(1, len(sizes)):
        if accs[i] >= target:
            frac = (target - accs[i - 1]) / (accs[i] - accs[i - 1])
            return float(np.exp(np.log(sizes[i - 1]) + frac * (np.log(sizes[i]) - np.log(sizes[i - 1]))))
    return math.inf


def learning_curve_area(sizes, accuracies) -> float:
    """Mean accuracy over the training sizes, trapezoids on a log-size axis (sample efficiency)."""
    sizes, accs = np.asarray(sizes, float), np.asarray(accuracies, float)
    order = np.argsort(sizes)
    x, y = np.log(sizes[order]), accs[order]
    if len(x) == 1:
        return float(y[0])
    return float(np.trapezoid(y, x) / (x[-1] - x[0]))


def per_seed(rows, test_set: str, bd2_fraction: float, statistic, **kw) -> pd.DataFrame:
    """Apply statistic(sizes, accuracies, **kw) to each (model, seed) learning curve: a table."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    part = frame[(frame.test_set == test_set) & np.isclose(frame.bd2_fraction, bd2_fraction)]
    out = [{"model": model, "seed": seed, "value": statistic(g.train_size.values, g.accuracy.values, **kw)}
           for (model, seed), g in part.groupby(["model", "seed"])]
    return pd.DataFrame(out, columns=["model", "seed", "value"])


def paired(frame, model_a: str, model_b: str, value: str = "value"):
    """Values of two models over the seeds both have, aligned: (a, b)."""
    a = frame[frame.model == model_a].set_index("seed")[value]
    b = frame[frame.model == model_b].set_index("seed")[value]
    seeds = sorted(set(a.index) & set(b.index))
    return a.loc[seeds].to_numpy(float), b.loc[seeds].to_numpy(float)


def _at(frame, test_set: str, bd2_fraction: float, size=None) -> pd.DataFrame:
    """Per-(model, seed) accuracy on one test set and fraction, at `size` (default: the largest)."""
    part = frame[(frame.test_set == test_set) & np.isclose(frame.bd2_fraction, bd2_fraction)]
    size = part.train_size.max() if size is None else size
    part = part[part.train_size == size]
    return part.rename(columns={"accuracy": "value"})[["model", "seed", "value"]]


def needed_text(values) -> str:
    """Examples needed over seeds: mean and interval when every seed got there, else how many did."""
    values = np.asarray(values, float)
    reached = np.isfinite(values)
    if reached.all():
        return str(stats.mean_ci(values)).replace(" (n=", " examples (n=")
    return f"{reached.sum()}/{len(values)} seeds reached it"


def claims(frame, margin: float = 0.02, target: float = 0.8) -> pd.DataFrame:
    """Each claim of the synthetic experiment next to what was measured, with a verdict from intervals.

    frame: one row per (seed, model, bd2_fraction, train_size, test_set) with an `accuracy`.
    margin: how much better WITH may be than WITHOUT on A-D2 and still count as "about as good".
    target: the A-D1 accuracy for the examples-needed comparison (reported, not the verdict).
    A claim whose models were not all run is left out; no rows at all when nothing was measured.
    """
    if frame is None or len(frame) == 0:
        return pd.DataFrame(columns=COLUMNS)
    out = []

    def ci(table, model):
        return stats.mean_ci(table[table.model == model].value)

    def have(table, *models):
        return all((table.model == m).any() for m in models)

    # 1. synonym transfer on B-D1
    b = _at(frame, "B-D1", 0.0)
    if have(b, "with", "without", "scratch"):
        arms = {"WITH": ci(b, "with"), "WITHOUT": ci(b, "without"), "scratch": ci(b, "scratch")}
        out.append(_row("B-D1 synonym transfer: WITH above WITHOUT and scratch",
                        "B-D1 accuracy at the largest training set (intervals over seeds, compared unpaired)",
                        arms, stats.combine(stats.verdict_apart(arms["WITH"], arms[o]) for o in ("WITHOUT", "scratch"))))
    # 2. sample efficiency on A-D1: area under the learning curve (log size), paired over seeds
    area = per_seed(frame, "A-D1", 0.0, learning_curve_area)
    if have(area, "with", "without", "scratch"):
        diffs = {f"WITH - {o}": stats.paired_test(*paired(area, "with", o)).diff for o in ("without", "scratch")}
        need = per_seed(frame, "A-D1", 0.0, examples_needed, target=target)
        needed = "; ".join(f"{m}: {needed_text(need[need.model == m].value)}" for m in ("with", "without", "scratch"))
        out.append(_row("Sample efficiency: WITH learns A-D1 from fewer examples",
                        "mean A-D1 accuracy over training sizes (log axis), differences paired over seeds. "
                        f"Examples to reach {target:.2f}: {needed}",
                        diffs, stats.combine(stats.verdict(d, "greater") for d in diffs.values())))
    # 3. generalization to D2 is not explained by the property
    for fraction in sorted(frame.bd2_fraction.unique()):
        a2 = _at(frame, "A-D2", fraction)
        if not have(a2, "with", "without", "scratch"):
            continue
        arms = {"WITH - WITHOUT": stats.paired_test(*paired(a2, "with", "without")).diff,
                "WITHOUT": ci(a2, "without"), "scratch": ci(a2, "scratch")}
        verdict = stats.combine([stats.verdict(arms["WITH - WITHOUT"], "at_most", margin),
                                 stats.verdict_apart(arms["WITHOUT"], arms["scratch"])])
        out.append(_row(f"D2 generalization not explained by the property (B-D2 fraction {fraction:g}): "
                        f"WITHOUT about as good as WITH on A-D2 (within {margin:g}) and above scratch",
                        "A-D2 accuracy at the largest training set: WITH - WITHOUT paired over seeds; "
                        "WITHOUT and scratch compared unpaired",
                        arms, verdict))
    # 4. controls
    if have(b, "with", "shuffled"):
        a1 = _at(frame, "A-D1", 0.0)
        arms = {"A-D1 WITH": ci(a1, "with"), "A-D1 shuffled": ci(a1, "shuffled"),
                "B-D1 WITH": ci(b, "with"), "B-D1 shuffled": ci(b, "shuffled")}
        verdict = stats.combine(stats.verdict_apart(arms[f"{t} WITH"], arms[f"{t} shuffled"]) for t in ("A-D1", "B-D1"))
        out.append(_row("Control: shuffling WITH's weights removes its benefit (WITH above shuffled)",
                        "A-D1 and B-D1 accuracy at the largest training set (compared unpaired)", arms, verdict))
    if have(b, "cbow", "scratch"):
        arms = {"CBOW": ci(b, "cbow"), "scratch": ci(b, "scratch")}
        if have(b, "with"):
            arms["WITH"] = ci(b, "with")  # for reference: how much of WITH's transfer CBOW gets
        out.append(_row("Control: CBOW embeddings (synonyms close) give some B-D1 transfer (above scratch)",
                        "B-D1 accuracy at the largest training set (compared unpaired)",
                        arms, stats.verdict_apart(arms["CBOW"], arms["scratch"])))
    return pd.DataFrame(out, columns=COLUMNS)


# ---------------------------------------------------------------- real text: Delta-pred vs Delta-distribution


def low_correlation_verdict(r: stats.Interval, r_low: float = 0.3, ci_max: float = 0.5, min_n: int = 30) -> str:
    """Verdict on "r is low": reproduced if |r| < r_low with its interval inside (-ci_max, ci_max),
    contradicted if the interval lies wholly beyond +-r_low, else (or under min_n pairs) not resolved."""
    if r.n < min_n or not np.isfinite([r.mean, r.low, r.high]).all():
        return stats.NOT_RESOLVED
    if abs(r.mean) < r_low and -ci_max < r.low and r.high < ci_max:
        return stats.REPRODUCED
    if r.low > r_low or r.high < -r_low:
        return stats.CONTRADICTED
    return stats.NOT_RESOLVED


def correlation_table(delta_pred: dict[str, np.ndarray], delta_dist: dict[str, np.ndarray], *,
                      n_boot: int = 1000, seed: int = 0, r_low: float = 0.3, ci_max: float = 0.5,
                      min_n: int = 30) -> pd.DataFrame:
    """One row per (fine-tuned model, template): Pearson r, its bootstrap interval, n and the verdict."""
    if not delta_pred:
        raise ValueError("delta_pred must hold at least one fine-tuned model")
    if not delta_dist:
        raise ValueError("delta_dist must hold at least one template")
    rows = []
    for model, dp in delta_pred.items():
        for template, dd in delta_dist.items():
            dp_, dd_ = np.asarray(dp, dtype=float), np.asarray(dd, dtype=float)
            ok = np.isfinite(dp_) & np.isfinite(dd_)
            r = correlation(dp_[ok], dd_[ok], n_boot=n_boot, seed=seed)
            rows.append({"model": model, "template": template, "r": r.mean, "r_low": r.low, "r_high": r.high,
                         "n": r.n, "verdict": low_correlation_verdict(r, r_low, ci_max, min_n)})
    return pd.DataFrame(rows)


def validation_prior(task: str) -> float:
    """Majority-class accuracy of a task's validation split (what a model that learned nothing gets)."""
    from mlmlib.data import load_task

    return stats.class_prior(load_task(task)["validation"]["label"])


def correlation_cells(records: pd.DataFrame, *, r_low: float = 0.3, ci_max: float = 0.5, min_n: int = 30,
                      n_boot: int = 1000, seed: int = 0, margin: float = stats.LEARNED_MARGIN,
                      priors: dict[str, float] | None = None) -> pd.DataFrame:
    """One row per (run, perturbation kind, fine-tuned model, template): r, its interval, n and the verdict.

    records: A5_real_finetune_perturb's records. A model that has not learned its task (validation
    accuracy not above the majority class by `margin`, stats.learned) has `learned` False and the
    verdict EXCLUDED. priors: {task: majority-class accuracy}; a task not in it is loaded.
    `too_few`: the kind has fewer perturbed inputs than the run's min_examples.
    """
    priors = dict(priors or {})
    tables = []
    for rec in records.itertuples():
        if rec.task not in priors:
            priors[rec.task] = validation_prior(rec.task)
        learned = {m["model"]: stats.learned(m["val_accuracy"], priors[rec.task], margin) for m in rec.models}
        group = {m["model"]: m["group"] for m in rec.models}
        value = {m["model"]: m["value"] for m in rec.models}
        kinds = np.array([p["kind"] for p in rec.perturbations])
        for kind in sorted(set(kinds)):
            keep = kinds == kind
            dp = {m: np.asarray(v)[keep] for m, v in rec.delta_pred.items()}
            dd = {t: np.asarray(v)[keep] for t, v in rec.delta_distribution.items()}
            table = correlation_table(dp, dd, n_boot=n_boot, seed=seed, r_low=r_low, ci_max=ci_max, min_n=min_n)
            table["learned"] = table["model"].map(learned).eq(True)
            table["verdict"] = table["verdict"].where(table["learned"], EXCLUDED)
            table["group"] = table["model"].map(group)
            table["value"] = table["model"].map(value)
            tables.append(table.assign(kind=kind, run=rec.run_id, seed=rec.seed,
                                       too_few=int(keep.sum()) < rec.min_examples))
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=CELL_COLUMNS)


def overall_verdict(cells: pd.DataFrame) -> str:
    """The claim "r is low everywhere" over the cells of models that learned: stats.combine of their verdicts."""
    return stats.combine(cells.loc[cells["learned"].eq(True), "verdict"])


def correlation_claims(cells: pd.DataFrame, r_low: float = 0.3, ci_max: float = 0.5) -> pd.DataFrame:
    """The real-text claim next to what was measured (one row), from `correlation_cells`'s table."""
    judged = cells[cells["learned"].eq(True)]
    excluded = sorted(set(cells.loc[~cells["learned"].eq(True), "model"]))
    measured = (f"Pearson r of Delta-pred and Delta-distribution per perturbation kind x fine-tuned model x "
                f"template: {len(judged)} judged cells, {int((judged['verdict'] == stats.REPRODUCED).sum())} low "
                f"(|r| < {r_low:g}, 95% bootstrap interval inside ±{ci_max:g})")
    if excluded:
        measured += f"; left out (not above the majority class on validation): {', '.join(excluded)}"
    interval = (f"r from {judged['r'].min():.2f} to {judged['r'].max():.2f}; intervals within "
                f"[{judged['r_low'].min():.2f}, {judged['r_high'].max():.2f}]" if len(judged) else "no judged cell")
    row = {"claim": "Delta-pred and Delta-distribution correlate weakly for every template, checkpoint and "
                    "training-data ratio: distributional similarity does not explain fine-tuned generalization",
           "measured": measured, "interval": interval, "seeds": int(judged["seed"].nunique()),
           "verdict": overall_verdict(cells)}
    return pd.DataFrame([row], columns=COLUMNS)


def final_checkpoint_points(records: pd.DataFrame) -> pd.DataFrame:
    """Delta-pred of each run's fully trained model (last checkpoint) against every template's Delta-distribution."""
    points = []
    for rec in records.itertuples():
        kinds = np.array([p["kind"] for p in rec.perturbations])
        final = [m["model"] for m in rec.models if m["group"] == "checkpoint"][-1]
        for kind in sorted(set(kinds)):
            keep = kinds == kind
            for t, v in rec.delta_distribution.items():
                points.append(pd.DataFrame({"Delta-pred": np.asarray(rec.delta_pred[final])[keep],
                                            "Delta-distribution": np.asarray(v)[keep], "template": t,
                                            "kind": kind, "run": rec.run_id}))
    columns = ["Delta-pred", "Delta-distribution", "template", "kind", "run"]
    return pd.concat(points, ignore_index=True) if points else pd.DataFrame(columns=columns)
