"""Paper A's synthetic measurements: A3's rows as per-seed statistics and intervals over blocks.

A3_synthetic_finetune saves one row per (language, seed, model, B-D2 fraction, training size, test
set) with an `accuracy` and its test set's majority-class accuracy (`prior`). Here those rows become
the numbers the claims judge (`synthetic_claims`): learning-curve statistics per seed, differences
paired over seeds, and 95% intervals with the language as the block (`block_ci`); plus what the
summary page says and saves about the runs themselves (blocks, capped runs, mean accuracies).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from mlmlib import stats

# The seeds of one comparison: a language and, within it, a pretraining (= fine-tuning) seed.
BLOCK = ["language_seed", "seed"]


def with_language(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows with a `language_seed` column (0 in records that have none)."""
    frame = frame if isinstance(frame, pd.DataFrame) else pd.DataFrame(frame)
    if "language_seed" not in frame:
        frame = frame.assign(language_seed=0)
    return frame.assign(language_seed=frame.language_seed.fillna(0).astype(int))


def block_ci(values, languages) -> stats.Interval:
    """Mean and 95% interval with the language as the block: with several languages, the mean of
    each language's seeds, then a Student-t interval across languages (n counts languages); with
    one language, a t interval across its seeds (n counts seeds).

    Seeds of one language share its chains and label patterns, so they are not independent draws
    of what the claim is about; the per-language means are.
    """
    values, languages = np.asarray(values, float), np.asarray(languages)
    if len(set(languages.tolist())) < 2:
        return stats.mean_ci(values)
    means = [values[languages == lang].mean() for lang in sorted(set(languages.tolist()))]
    return stats.mean_ci(means)


def paired(frame, model_a: str, model_b: str, value: str = "value"):
    """Values of two models over the (language, seed) pairs both have, aligned: (a, b, languages)."""
    frame = with_language(frame)
    a = frame[frame.model == model_a].set_index(BLOCK)[value]
    b = frame[frame.model == model_b].set_index(BLOCK)[value]
    keys = sorted(set(a.index) & set(b.index))
    return (a.loc[keys].to_numpy(float), b.loc[keys].to_numpy(float),
            np.array([k[0] for k in keys], dtype=int))


def paired_diff(table, model_a: str, model_b: str) -> stats.Interval:
    """Mean difference model_a - model_b over the (language, seed) pairs both have, with its 95%
    interval, the language as the block (`block_ci`).

    A3's arms of one seed share everything a seed draws (the language, the fine-tuning seed, its
    sample, the pretraining seed of WITH and WITHOUT): pairing removes that shared noise.
    """
    a, b, languages = paired(table, model_a, model_b)
    return block_ci(a - b, languages)


def arm_ci(table, model: str) -> stats.Interval:
    """One arm's mean with its 95% interval, the language as the block (`block_ci`)."""
    table = with_language(table)
    part = table[table.model == model]
    return block_ci(part.value, part.language_seed)


def at_size(frame, test_set: str, bd2_fraction: float, size=None) -> pd.DataFrame:
    """Per-(model, language, seed) accuracy on one test set and fraction, at `size` (default: the
    largest), with the test set's majority-class accuracy (`prior`; NaN in rows made without it)."""
    frame = with_language(frame)
    part = frame[(frame.test_set == test_set) & np.isclose(frame.bd2_fraction, bd2_fraction)]
    size = part.train_size.max() if size is None else size
    part = part[part.train_size == size]
    part = part if "prior" in part else part.assign(prior=math.nan)
    return part.rename(columns={"accuracy": "value"})[["model", *BLOCK, "value", "prior"]]


def per_seed(rows, test_set: str, bd2_fraction: float, statistic, **kw) -> pd.DataFrame:
    """Apply statistic(sizes, accuracies, **kw) to each (model, language, seed) learning curve;
    `prior`: the test set's majority-class accuracy (NaN in rows made without it)."""
    frame = with_language(rows)
    part = frame[(frame.test_set == test_set) & np.isclose(frame.bd2_fraction, bd2_fraction)]
    out = [{"model": model, "language_seed": lang, "seed": seed,
            "value": statistic(g.train_size.values, g.accuracy.values, **kw),
            "prior": float(g.prior.mean()) if "prior" in g else math.nan}
           for (model, lang, seed), g in part.groupby(["model", *BLOCK])]
    return pd.DataFrame(out, columns=["model", *BLOCK, "value", "prior"])


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


def small_sizes_accuracy(sizes, accuracies) -> float:
    """Mean accuracy at the smaller half of the training sizes (the middle one included): where
    pretraining's sample efficiency shows, before scratch catches up."""
    sizes, accs = np.asarray(sizes, float), np.asarray(accuracies, float)
    order = np.argsort(sizes)
    return float(accs[order][: (len(sizes) + 1) // 2].mean())


def needed_text(values) -> str:
    """Examples needed over seeds: mean and interval when every seed got there, else how many did."""
    values = np.asarray(values, float)
    reached = np.isfinite(values)
    if reached.all():
        ci = stats.mean_ci(values)
        why = ", one seed: no interval" if ci.n == 1 else ", all equal: zero width" if ci.low == ci.high else ""
        return str(ci).replace(" (n=", " examples (n=")[:-1] + why + ")"
    return f"{reached.sum()}/{len(values)} seeds reached it"


def unit_of(frame) -> str:
    """What the blocks of `block_ci` are in these rows: languages when there are several, else seeds."""
    return "languages" if with_language(frame).language_seed.nunique() > 1 else "seeds"


def blocks_text(frame) -> str:
    """How the intervals treat languages and seeds, for the page."""
    frame = with_language(frame)
    per = frame.groupby("language_seed").seed.nunique()
    if len(per) < 2:
        return (f"one language (seed {int(per.index[0])}), {int(per.iloc[0])} seeds: Student-t "
                "intervals across seeds") if len(per) else "no runs"
    count = f"{int(per.min())}" if per.min() == per.max() else f"{int(per.min())}-{int(per.max())}"
    return (f"{len(per)} languages (seeds {[int(x) for x in per.index]}), {count} pretraining seeds each: "
            "each language's mean over its seeds, then a Student-t interval across languages (n counts "
            "languages)")


def capped_runs(frame: pd.DataFrame) -> dict:
    """How many fine-tuning runs reached the step cap instead of stopping on validation patience.

    A run is one (language, seed, model, B-D2 fraction, size); records whose rows lack
    `hit_cap` count as not measured.
    """
    frame = with_language(frame)
    runs = frame.drop_duplicates([*BLOCK, "model", "bd2_fraction", "train_size"])
    if "hit_cap" not in runs or runs.hit_cap.isna().any():
        return {"runs": len(runs), "capped": None, "share": None}
    capped = int(runs.hit_cap.astype(bool).sum())
    return {"runs": len(runs), "capped": capped, "share": capped / len(runs) if len(runs) else None}


def capped_text(counts: dict) -> str:
    """`capped_runs` as a sentence."""
    if counts["capped"] is None:
        return f"{counts['runs']} fine-tuning runs; whether they reached the step cap was not recorded"
    others = "; every other run stopped on validation patience" if counts["capped"] < counts["runs"] else ""
    return (f"{counts['capped']} of {counts['runs']} fine-tuning runs ({counts['share']:.0%}) reached the "
            f"step cap{others}")


def finetune_frame(rows: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """A3's rows (its records' `rows`, one per entry) ready to summarise: with a `language_seed`
    (`with_language`), each (language, seed, model, fraction, size, test set) once, and each
    model's display name from `labels` as `label`."""
    frame = with_language(rows)
    frame = frame.drop_duplicates([*BLOCK, "model", "bd2_fraction", "train_size", "test_set"])
    return frame.assign(label=frame.model.map(labels))


def saved_measures(frame: pd.DataFrame) -> dict:
    """What the summary saves about the rows beside its verdicts: the seeds and languages run,
    each arm's mean accuracy per (fraction, model, size, test set), and the majority-class
    accuracy of each test set (its mean over languages, and per language)."""
    frame = with_language(frame)
    by_model = frame.groupby(["bd2_fraction", "model", "train_size", "test_set"]).accuracy.mean()
    by_language = frame.groupby(["language_seed", "test_set"]).prior.first()
    return {"seeds": [int(s) for s in sorted(frame.seed.unique())],
            "languages": sorted(int(x) for x in frame.language_seed.unique()),
            "accuracy_by_model": by_model.reset_index().to_dict("records"),
            "class_prior": frame.groupby("test_set").prior.mean().to_dict(),
            "class_prior_by_language": by_language.reset_index().to_dict("records")}
