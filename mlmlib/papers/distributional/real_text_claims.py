"""Paper A's real-text claim as code: A5's records in, correlation cells, verdicts and scorecard rows out.

The claim: how much a fine-tuned model's prediction moves under a meaning-preserving perturbation
(Delta-pred) correlates only weakly with how different the pretrained MLM finds the two
(Delta-distribution). One verdict per task and perturbation kind (`correlation_cells`,
`kind_verdicts`, `correlation_claims`, `correlation_scorecard`), by the rules of `mlmlib.verdicts`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mlmlib import configs, stats, verdicts
from mlmlib.base_config import BaseModelConfig
from mlmlib.papers.distributional.perturbation_deltas import correlation
from mlmlib.verdicts import (  # noqa: F401 - shared by the three papers, used by the notebooks
    SCORECARD_COLUMNS,
    SCORECARD_KEYS,
    scorecard_table,
)

COLUMNS = ["claim", "measured", "interval", "seeds", "verdict"]
CELL_COLUMNS = ["task", "kind", "model", "template", "r", "r_low", "r_high", "n", "paper_r", "verdict", "learned",
                "too_few", "judged", "group", "value", "run", "seed"]
# Not verdicts: the cell of a model that has not learned its task, and a cell with too few
# perturbed inputs, are left out of the claim.
EXCLUDED = "excluded: model at chance"
TOO_SMALL = "excluded: too few perturbed inputs"
REAL_TESTBED = "real text"
# Pearson r the paper reports, {(task, perturbation kind, template): r}. Our notes on paper A
# (book/paper_a.md) record none (the paper's body was not readable offline), so the A6 table's
# column stays blank until a value is added here with where it comes from.
PAPER_R: dict[tuple[str, str, str], float] = {}



def low_correlation_verdict(r: stats.Interval, r_low: float = 0.3, ci_max: float = 0.5, min_n: int = 30) -> str:
    """Verdict on "r is low": reproduced if |r| < r_low with its interval inside (-ci_max, ci_max),
    contradicted if the interval lies wholly beyond +-r_low, else (or under min_n pairs) not resolved."""
    if r.n < min_n or not np.isfinite([r.mean, r.low, r.high]).all():
        return verdicts.NOT_RESOLVED
    if abs(r.mean) < r_low and -ci_max < r.low and r.high < ci_max:
        return verdicts.REPRODUCED
    if r.low > r_low or r.high < -r_low:
        return verdicts.CONTRADICTED
    return verdicts.NOT_RESOLVED


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


REAL_CLAIM = "Delta-pred and Delta-distribution correlate weakly (every template, checkpoint and data ratio)"


def _claim_text(task: str, kind: str) -> str:
    return f"{REAL_CLAIM}: {task}, {kind} perturbations"


def paper_r(task: str, kind: str, template: str) -> float:
    """The r the paper reports for a cell (PAPER_R), NaN where our note has none."""
    return PAPER_R.get((task, kind, template), float("nan"))


def correlation_cells(records: pd.DataFrame, *, r_low: float = 0.3, ci_max: float = 0.5, min_n: int = 30,
                      n_boot: int = 1000, seed: int = 0, margin: float = verdicts.LEARNED_MARGIN,
                      priors: dict[str, float] | None = None) -> pd.DataFrame:
    """One row per (run, perturbation kind, fine-tuned model, template): r, its interval, n and the verdict.

    records: A5_real_finetune_perturb's records. A cell is judged (`judged`) unless its model has
    not learned its task (validation accuracy not above the majority class by `margin`,
    verdicts.learned; verdict EXCLUDED) or it is too small (`too_few`: fewer than min_n pairs, or its
    kind has fewer perturbed inputs than the run's min_examples; verdict TOO_SMALL).
    priors: {task: majority-class accuracy}; a task not in it is loaded. paper_r: PAPER_R's value.
    """
    priors = dict(priors or {})
    tables = []
    for rec in records.itertuples():
        if rec.task not in priors:
            priors[rec.task] = validation_prior(rec.task)
        learned = {m["model"]: verdicts.learned(m["val_accuracy"], priors[rec.task], margin) for m in rec.models}
        group = {m["model"]: m["group"] for m in rec.models}
        value = {m["model"]: m["value"] for m in rec.models}
        kinds = np.array([p["kind"] for p in rec.perturbations])
        for kind in sorted(set(kinds)):
            keep = kinds == kind
            dp = {m: np.asarray(v)[keep] for m, v in rec.delta_pred.items()}
            dd = {t: np.asarray(v)[keep] for t, v in rec.delta_distribution.items()}
            table = correlation_table(dp, dd, n_boot=n_boot, seed=seed, r_low=r_low, ci_max=ci_max, min_n=min_n)
            table["learned"] = table["model"].map(learned).eq(True)
            table["too_few"] = (table["n"] < min_n) | (int(keep.sum()) < rec.min_examples)
            table["judged"] = table["learned"] & ~table["too_few"]
            table["verdict"] = table["verdict"].where(~table["too_few"], TOO_SMALL).where(table["learned"], EXCLUDED)
            table["group"] = table["model"].map(group)
            table["value"] = table["model"].map(value)
            table["paper_r"] = [paper_r(rec.task, kind, t) for t in table["template"]]
            tables.append(table.assign(task=rec.task, kind=kind, run=rec.run_id, seed=rec.seed))
    if not tables:
        return pd.DataFrame(columns=CELL_COLUMNS)
    return pd.concat(tables, ignore_index=True)[CELL_COLUMNS]


def kind_verdicts(cells: pd.DataFrame) -> pd.DataFrame:
    """One verdict per task and perturbation kind: verdicts.combine over its judged cells (`cells`),
    given only with at least MIN_SEEDS fine-tuning seeds behind them (`verdict`: else not resolved,
    or not measured with no judged cell of any seed), with what was left out."""
    columns = ["task", "kind", "verdict", "cells", "judged", "low", "too_small", "at_chance", "seeds"]
    rows = []
    for (task, kind), part in cells.groupby(["task", "kind"], sort=True):
        judged = part[part["judged"].eq(True)]
        combined = verdicts.combine(judged["verdict"])
        seeds = int(judged["seed"].nunique())
        verdict = (combined if seeds >= verdicts.MIN_SEEDS else
                   verdicts.NOT_RESOLVED if seeds else verdicts.NOT_MEASURED)
        rows.append({"task": task, "kind": kind, "verdict": verdict, "cells": combined,
                     "judged": len(judged), "low": int((judged["verdict"] == verdicts.REPRODUCED).sum()),
                     "too_small": int((part["learned"].eq(True) & part["too_few"].eq(True)).sum()),
                     "at_chance": int((~part["learned"].eq(True)).sum()), "seeds": seeds})
    return pd.DataFrame(rows, columns=columns)


def _threshold_text(r_low: float, ci_max: float) -> str:
    return (f"|r| < {r_low:g}, 95% bootstrap interval inside ±{ci_max:g}: our thresholds (parameters; the "
            "paper states none)")


def _left_out_text(part: pd.DataFrame, min_n: int) -> str:
    """What a task x kind leaves out of its verdict, and why ("" when nothing)."""
    out = []
    small = int((part["learned"].eq(True) & part["too_few"].eq(True)).sum())
    if small:
        out.append(f"{small} cell{'s' if small > 1 else ''} with too few perturbed inputs (fewer than {min_n} "
                   "pairs, or fewer inputs than the run's min_examples)")
    chance = sorted(set(part.loc[~part["learned"].eq(True), "model"]))
    if chance:
        out.append(f"the cells of models not above the majority class on validation: {', '.join(chance)}")
    return "left out: " + "; ".join(out) if out else ""


def correlation_claims(cells: pd.DataFrame, r_low: float = 0.3, ci_max: float = 0.5,
                       min_n: int = 30) -> pd.DataFrame:
    """The real-text claim next to what was measured, one row per task and perturbation kind."""
    if not len(cells):
        row = {"claim": REAL_CLAIM, "measured": "no A5 perturbation records", "interval": "no judged cell",
               "seeds": 0, "verdict": verdicts.NOT_MEASURED}
        return pd.DataFrame([row], columns=COLUMNS)
    rows = []
    for v in kind_verdicts(cells).itertuples():
        part = cells[(cells["task"] == v.task) & (cells["kind"] == v.kind)]
        judged = part[part["judged"].eq(True)]
        measured = (f"Pearson r of Delta-pred and Delta-distribution per fine-tuned model x template: "
                    f"{v.judged} judged cells, {v.low} low ({_threshold_text(r_low, ci_max)})")
        left_out = _left_out_text(part, min_n)
        interval = (f"r from {judged['r'].min():.2f} to {judged['r'].max():.2f}; intervals within "
                    f"[{judged['r_low'].min():.2f}, {judged['r_high'].max():.2f}]" if len(judged) else "no judged cell")
        rows.append({"claim": _claim_text(v.task, v.kind),
                     "measured": measured + (f"; {left_out}" if left_out else ""), "interval": interval,
                     "seeds": v.seeds, "verdict": v.verdict})
    return pd.DataFrame(rows, columns=COLUMNS)


# Controls of the real-text claim: a low r means something only if the perturbations move the
# fine-tuned models and Delta-pred is a reproducible quantity (it agrees between fine-tuned models).
# Each is judged on an interval over fine-tuning seeds (the A5 runs): the models of one run share
# its fine-tuning and its perturbed inputs, so they are not independent blocks; fewer than
# MIN_SEEDS seeds leave the controls, and the claim, not measured.
MOVES_MIN = 0.02        # mean Delta-pred (L1 distance of output distributions, 0 to 2)
MOVES_SOURCE = "principle: 1% of the L1 distance's range (0 to 2)"
RELIABLE_MIN = 0.3      # median Pearson r of Delta-pred between two distinct fine-tuned models
RELIABLE_SOURCE = ("principle: a quantity reproducible at r can correlate with anything at most "
                   "sqrt(r) (Spearman's attenuation); sqrt(0.3) = 0.55 lets a correlation beyond "
                   "the page's ci_max 0.5 show")
SEED_UNIT = "seeds"


def distinct_models(delta_pred: dict[str, np.ndarray]) -> list[str]:
    """The models of one run with their own Delta-pred: a name whose Delta-pred equals an earlier
    one's on every input is the same model saved twice (the full-data run's last checkpoint is also
    "ratio 1") and is dropped."""
    kept: list[str] = []
    for name, values in delta_pred.items():
        if not any(np.array_equal(values, delta_pred[k], equal_nan=True) for k in kept):
            kept.append(name)
    return kept


def control_values(records: pd.DataFrame, task: str, kind: str,
                   learned: dict[tuple[str, str], bool] | None = None) -> pd.DataFrame:
    """Per fine-tuning seed, from A5's records of `task`: the mean Delta-pred of `kind`'s perturbed
    inputs over its learned, distinct models (`moves`), the median Pearson r of Delta-pred between
    every pair of them (`reliable`) and how many pairs (`pairs`).

    learned: {(run, model): whether the model beat its majority class by the learned margin}
    (`correlation_cells`' `learned`); a model that did not learn is left out. None: every model.
    """
    rows = []
    part = records[records["task"] == task] if "task" in records else records
    for rec in part.itertuples():
        kinds = np.array([p["kind"] for p in rec.perturbations])
        preds = {m: np.asarray(v, dtype=float)[kinds == kind] for m, v in rec.delta_pred.items()}
        preds = {m: v for m, v in preds.items() if len(v) and (learned or {}).get((rec.run_id, m), True)}
        models = distinct_models(preds)
        pairs = [float(pd.Series(preds[a]).corr(pd.Series(preds[b])))
                 for i, a in enumerate(models) for b in models[i + 1:] if len(preds[a]) > 2]
        rows.append({"seed": rec.seed, "run": rec.run_id,
                     "moves": float(np.mean([np.nanmean(preds[m]) for m in models])) if models else np.nan,
                     "reliable": float(np.nanmedian(pairs)) if pairs else np.nan, "pairs": len(pairs)})
    frame = pd.DataFrame(rows, columns=["seed", "run", "moves", "reliable", "pairs"])
    return frame.groupby("seed", as_index=False).agg(moves=("moves", "mean"), reliable=("reliable", "mean"),
                                                     pairs=("pairs", "sum"))


def correlation_controls(records: pd.DataFrame, task: str, kind: str, claim: str,
                         cells: pd.DataFrame | None = None) -> list[dict]:
    """The real-text claim's positive controls for one task and perturbation kind, from A5's
    records, each an interval over fine-tuning seeds (`control_values`): the perturbations move the
    fine-tuned models (took), and Delta-pred is reproducible across distinct fine-tuned models
    that learned the task, so that it could correlate with something (exists).

    cells: `correlation_cells` of the same records, for which models learned; None: every model.
    """
    learned = (None if cells is None else
               {(r.run, r.model): bool(r.learned) for r in cells.itertuples()})
    values = control_values(records, task, kind, learned)
    field = "A5 delta_pred"
    return [verdicts.control(claim, "the perturbations move the fine-tuned models: mean Delta-pred", verdicts.TOOK,
                             stats.mean_ci(values["moves"]), MOVES_MIN, bounds=(0, 2), field=field,
                             unit=SEED_UNIT, source="principle"),
            verdicts.control(claim, "Delta-pred is reproducible: median r between distinct learned fine-tuned "
                             "models", verdicts.EXISTS, stats.mean_ci(values["reliable"]), RELIABLE_MIN,
                             bounds=(-1, 1), field=field, unit=SEED_UNIT, source="principle")]


def _controls_values_text(records: pd.DataFrame, task: str, kind: str, cells: pd.DataFrame) -> str:
    """The controls' per-seed values, for a row whose controls have too few seeds for an interval."""
    learned = {(r.run, r.model): bool(r.learned) for r in cells.itertuples()}
    values = control_values(records, task, kind, learned)
    return "; ".join(f"seed {int(v.seed)}: mean Delta-pred {v.moves:.3f}, median r {v.reliable:.3f} over "
                     f"{int(v.pairs)} pairs of distinct learned models" for v in values.itertuples())


def correlation_scorecard(cells: pd.DataFrame, records: pd.DataFrame | None = None, r_low: float = 0.3,
                          ci_max: float = 0.5, min_n: int = 30, dose: str = "") -> list[dict]:
    """The real-text claim as scorecard rows (SCORECARD_KEYS), one per task and perturbation kind.

    effect: the judged cell with the largest |r|, its 95% bootstrap interval and where it is, how
    many judged cells are low, and how many cells were left out and why; `delta` is r_low, our
    "low" margin around 0. The verdict (`kind_verdicts`: none from fewer than MIN_SEEDS fine-tuning
    seeds) goes through `verdicts.decide` with the controls of `correlation_controls`. With no cell
    at all, one row, not measured, says so.
    """
    common = {"dose": dose, "testbed": REAL_TESTBED, "unit": SEED_UNIT, "scale": "correlation r",
              "delta_source": f"|r| < {r_low:g} is ours: paper A states no threshold for a low r"}
    if not len(cells):
        return [verdicts.card(REAL_CLAIM, "not measured: no A5 perturbation records", 0, r_low,
                              verdicts.NOT_MEASURED, **common)]
    rows = []
    for v in kind_verdicts(cells).itertuples():
        part = cells[(cells["task"] == v.task) & (cells["kind"] == v.kind)]
        judged = part[part["judged"].eq(True)]
        diff = None
        if len(judged):
            top = judged.loc[judged["r"].abs().fillna(-1).idxmax()]
            diff = stats.Interval(float(top["r"]), float(top["r_low"]), float(top["r_high"]), int(top["n"]))
            effect = (f"largest |r|: r = {top['r']:.3f} [{top['r_low']:.3f}, {top['r_high']:.3f}] "
                      f"({top['model']}, template {top['template']}, {int(top['n'])} pairs); "
                      f"{v.low} of {v.judged} judged cells low ({_threshold_text(r_low, ci_max)})")
        else:
            effect = "not judged: no cell of a model that learned the task has enough perturbed inputs"
        left_out = _left_out_text(part, min_n)
        claim = _claim_text(v.task, v.kind)
        if records is None:
            raise verdicts.ControlError(f"claim {claim!r}: its controls need A5's records (records=None)")
        controls = correlation_controls(records, v.task, v.kind, claim, part)
        if 0 < v.seeds < verdicts.MIN_SEEDS:
            effect += (f"; not resolved: {'one seed' if v.seeds == 1 else f'{v.seeds} seeds'} (the cells "
                       f"say {v.cells}; a verdict needs {verdicts.MIN_SEEDS} fine-tuning seeds); controls "
                       f"by seed: {_controls_values_text(records, v.task, v.kind, part)}")
        rows.append(verdicts.card(claim, effect + (f"; {left_out}" if left_out else ""), v.seeds, r_low,
                                  verdicts.decide(v.verdict, controls, claim), diff=diff,
                                  direction="equivalent", controls=controls, **common))
    return rows


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
    if not points:
        return pd.DataFrame(columns=columns)
    # a unit whose tag has no tag-matched template has no Delta-distribution there: no point
    return pd.concat(points, ignore_index=True).dropna(subset=["Delta-distribution"]).reset_index(drop=True)


def base_model_name(params: dict) -> str:
    """The base model of an A5 run: its `base` group's name (overrides or resolved), or, in records
    without the group, its flat `base_model` parameter."""
    group = params.get("base")
    if isinstance(group, dict):
        return str(configs.resolve(BaseModelConfig, group)["name"])
    return str(params.get("base_model", "-"))


def dose_text(records: pd.DataFrame, paper: list[dict]) -> str:
    """The pretrained encoder whose distribution is read: ours against the paper profile's plan."""
    ours = base_model_name(records.iloc[0].to_dict()) if len(records) else "-"
    return f"{ours} / {base_model_name(paper[0]) if paper else '-'}"
