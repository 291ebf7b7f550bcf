"""The measured numbers paper A's chapter quotes (A2, A3, A6, and the base MLM), one
registered `quantity` each."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from mlmlib.page_quantities import explode_rows, interval, num, pct, quantity, span

# ----------------------------------------------------------------------------------------------
# Paper A (cpu): A2 pretraining, A3 fine-tuning, A6 correlations

A3_COLUMNS = {"with": "WITH", "without": "WITHOUT", "scratch": "scratch", "shuffled": "shuffled",
              "cbow-frozen": "frozen CBOW"}


def a3_largest(records: pd.DataFrame) -> pd.DataFrame:
    """A3's rows at the largest training set without B-D2 examples (where the claims are read)."""
    rows = explode_rows(records, "rows")
    rows = rows[rows["bd2_fraction"] == 0]
    return rows[rows["train_size"] == rows["train_size"].max()]


def a3_mean(test_set: str, model: str) -> Callable[[pd.DataFrame], str]:
    """Mean accuracy of `model` on `test_set` over A3's seeds."""
    def compute(records):
        rows = a3_largest(records)
        return num(rows[(rows["test_set"] == test_set) & (rows["model"] == model)]["accuracy"].mean())
    return compute


for _set, _model in [("B-D1", "with"), ("B-D1", "without"), ("B-D1", "scratch"),
                     ("B-D1", "cbow-frozen"), ("A-D1", "with"), ("A-D1", "shuffled"),
                     ("A-D2", "without"), ("A-D2", "scratch")]:
    quantity(f"a3_{_set.lower().replace('-', '')}_{_model.replace('-', '_')}",
             "A3_synthetic_finetune", "metrics.rows[*].accuracy",
             f"{A3_COLUMNS[_model]}'s mean {_set} accuracy over seeds, largest training set"
             )(a3_mean(_set, _model))


def a3_majority(test_set: str) -> Callable[[pd.DataFrame], str]:
    """Mean majority-class accuracy of `test_set` over A3's runs (its test set is fixed by the
    language seed)."""
    def compute(records):
        rows = a3_largest(records)
        return num(rows[rows["test_set"] == test_set]["prior"].mean())
    return compute


for _set in ("B-D1", "A-D1", "A-D2"):
    quantity(f"a3_{_set.lower().replace('-', '')}_majority", "A3_synthetic_finetune", "metrics.rows[*].prior",
             f"{_set}'s mean majority-class accuracy (its test set is fixed by the language seed)"
             )(a3_majority(_set))


def a3_paired(rows: pd.DataFrame, model_a: str, model_b: str):
    """Per-language mean of model_a - model_b, paired over (language, seed), as A4 blocks them."""
    rows = rows.assign(language_seed=rows.get("language_seed", 0))
    keys = ["language_seed", "seed"]
    a = rows[rows["model"] == model_a].set_index(keys)["accuracy"]
    b = rows[rows["model"] == model_b].set_index(keys)["accuracy"]
    diff = (a - b).dropna()
    return diff.groupby(level="language_seed").mean()


@quantity("a3_bd1_cbow_frozen_minus_with", "A3_synthetic_finetune", "metrics.rows[*].accuracy",
          "frozen CBOW - WITH on B-D1 at the largest training set, paired over seeds, each language's "
          "mean, 95% interval over languages (A4's blocks)")
def _(records):
    rows = a3_largest(records)
    return interval(a3_paired(rows[rows["test_set"] == "B-D1"], "cbow-frozen", "with"))


@quantity("a3_d2_without_minus_scratch", "A3_synthetic_finetune", "metrics.rows[*].accuracy",
          "WITHOUT - scratch on A-D2 at the largest training set, mean over languages, at each B-D2 fraction")
def _(records):
    rows = explode_rows(records, "rows")
    rows = rows[(rows["test_set"] == "A-D2")
                & (rows["train_size"] == rows.groupby("bd2_fraction")["train_size"].transform("max"))]
    means = {f: a3_paired(part, "without", "scratch").mean() for f, part in rows.groupby("bd2_fraction")}
    return ", ".join(f"{num(m)} (fraction {f:g})" for f, m in sorted(means.items()))


@quantity("a3_d2_negative", "A3_synthetic_finetune", "metrics.rows[*].accuracy",
          "how many of the D2 claim's WITHOUT - scratch point estimates (one per B-D2 fraction) are negative")
def _(records):
    rows = explode_rows(records, "rows")
    rows = rows[(rows["test_set"] == "A-D2")
                & (rows["train_size"] == rows.groupby("bd2_fraction")["train_size"].transform("max"))]
    means = [a3_paired(part, "without", "scratch").mean() for _, part in rows.groupby("bd2_fraction")]
    negative = sum(m < 0 for m in means)
    return f"all {len(means)}" if negative == len(means) else f"{negative} of {len(means)}"


@quantity("a2_tokens_seen", "A2_synthetic_pretrain", "metrics.tokens_seen",
          "tokens one A2 pretraining read (padding not counted), mean over A2's runs")
def _(records):
    return f"{round(records['tokens_seen'].mean()):,}"


@quantity("a2_final_loss_max", "A2_synthetic_pretrain", "metrics.final_loss",
          "the highest final MLM loss of any A2 run (both corpora, every seed)")
def _(records):
    return num(records["final_loss"].max(), 2)


@quantity("a2_unigram_loss", "A2_synthetic_pretrain", "metrics.unigram_loss",
          "the unigram model's loss on A2's corpora (the loss of knowing only token frequencies)")
def _(records):
    return num(records["unigram_loss"].mean(), 1)


def a2_cosine(corpus: str, pairs: str) -> Callable[[pd.DataFrame], str]:
    """Mean cosine of A2's input embeddings for `pairs` after pretraining on `corpus`."""
    def compute(records):
        mine = records[records["corpus"] == corpus]["embedding_similarity"]
        return num(pd.Series([e[pairs] for e in mine]).mean(), 2)
    return compute


for _corpus, _pairs in [("mix", "synonyms"), ("shift", "synonyms"), ("mix", "random pairs")]:
    quantity(f"a2_cos_{_corpus}_{_pairs.split()[0]}", "A2_synthetic_pretrain",
             "metrics.embedding_similarity",
             f"mean cosine of the input embeddings of {_pairs} after pretraining on {_corpus}"
             )(a2_cosine(_corpus, _pairs))


def a7_stronger(records: pd.DataFrame, measure: str) -> pd.DataFrame:
    """The dose pilot's WITH minus the stronger baseline on `measure`, one row per dose."""
    from mlmlib.papers.distributional.dose_pilot import by_dose

    table = by_dose(records)
    return table[table.stronger & (table.measure == measure)].sort_values("dose")


def a7_by_dose(measure: str) -> Callable[[pd.DataFrame], str]:
    """WITH minus the stronger baseline on `measure` at every piloted dose, with its interval."""
    def compute(records):
        return "; ".join(f"{r.dose}x {r.mean:+.3f} [{r.low:+.3f}, "
                         f"{r.high:+.3f}] (against {r.baseline})"
                         for r in a7_stronger(records, measure).itertuples())
    return compute


for _name, _measure in [("a7_ad1_small", "A-D1, smaller half of the sizes"),
                        ("a7_ad2", "A-D2, largest size"), ("a7_bd1", "B-D1, largest size")]:
    quantity(_name, "A7_dose_pilot", "metrics.rows[*].accuracy",
             f"the dose pilot's WITH minus the stronger baseline ({_measure}) at each dose, 95% interval "
             "over the pilot languages")(a7_by_dose(_measure))


@quantity("a7_languages", "A7_dose_pilot", "metrics.language_seed",
          "how many pilot languages the dose pilot ran")
def _(records):
    return str(records["language_seed"].nunique())


def a6_judged(records: pd.DataFrame) -> pd.DataFrame:
    """A6's judged correlation cells."""
    cells = explode_rows(records, "correlations")
    return cells[cells["judged"].astype(bool)]


@quantity("a6_r_range", "A6_real_summary", "metrics.correlations[*].r",
          "the range of Pearson r over A6's judged cells")
def _(records):
    r = a6_judged(records)["r"]
    return span(num(r.min(), 2), num(r.max(), 2))


@quantity("a6_largest_r", "A6_real_summary", "metrics.correlations[*].r, r_low, r_high",
          "the largest |r| of A6's judged cells with its 95% bootstrap interval")
def _(records):
    cells = a6_judged(records)
    top = cells.loc[cells["r"].abs().idxmax()]
    return f"{num(top['r'])} [{num(top['r_low'])}, {num(top['r_high'])}]"


@quantity("a6_cells", "A6_real_summary", "metrics.correlations[*].judged",
          "how many of A6's cells were judged, of how many")
def _(records):
    cells = explode_rows(records, "correlations")
    return f"{int(cells['judged'].astype(bool).sum())} of {len(cells)}"


# ----------------------------------------------------------------------------------------------
# The base MLM (cpu): MiniLM with its head fitted here


@quantity("base_head_accuracy", "base_model", "metrics.accuracy.mean",
          "the base MLM's accuracy on masked pieces of held-out text")
def _(records):
    return pct(records["accuracy"].iloc[0]["mean"])


@quantity("base_unigram_accuracy", "base_model", "metrics.unigram_accuracy.mean",
          "the same accuracy for always predicting the commonest piece")
def _(records):
    return pct(records["unigram_accuracy"].iloc[0]["mean"])


