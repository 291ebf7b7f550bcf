"""The measured numbers the chapters quote, one registered `quantity` each, by chapter."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from mlmlib.runs.page_quantity import hours, interval, minutes, num, pct, quantity, span
from mlmlib.runs.records import explode_rows
from mlmlib.stats import mean_ci

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


@quantity("a3_bd1_majority", "A3_synthetic_finetune", "metrics.rows[*].prior",
          "B-D1's majority-class accuracy (its test set is fixed by the language seed)")
def _(records):
    rows = a3_largest(records)
    return num(rows[rows["test_set"] == "B-D1"]["prior"].mean())


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


# ----------------------------------------------------------------------------------------------
# Paper B (cpu): B1's training logs and downstream rows


def b1_training(records: pd.DataFrame, objective: str = "electra") -> pd.DataFrame:
    """B1's logging windows of one objective's arms."""
    rows = explode_rows(records, "training")
    return rows[rows["objective"] == objective]


def b1_downstream(records: pd.DataFrame) -> pd.DataFrame:
    """B1's downstream rows at each chain's last checkpoint (the full dose), and scratch's."""
    rows = explode_rows(records, "downstream")
    if "checkpoint" not in rows:  # records of a design without chains
        return rows
    top = rows.groupby("arm")["checkpoint"].transform("max")
    return rows[(rows["checkpoint"] == top) | rows["checkpoint"].isna()]


def b1_wordnet(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of arms that correct with WordNet's table (every arm but the '@' ones)."""
    return rows[~rows["arm"].str.contains("@")]


def b1_by_checkpoint(rows: pd.DataFrame, arm: str, column: str) -> str:
    """`column` of `arm` at each checkpoint, mean over seeds: '0.47 / 0.57 / 0.66 at steps 10 / 30
    / 100'."""
    means = rows[rows["arm"] == arm].groupby("checkpoint")[column].mean().dropna()
    if means.empty:
        raise ValueError(f"no {column} of {arm}")
    return (" / ".join(num(v, 2) for v in means) + " at steps "
            + " / ".join(str(int(c)) for c in means.index))


@quantity("b1_disc_replaced", "B1_true_negatives_pretrain",
          "metrics.checkpoints[*].disc_acc_replaced",
          "the uncorrected discriminator's accuracy on replaced tokens in the logging window that "
          "ends at each checkpoint, mean over seeds")
def _(records):
    return b1_by_checkpoint(explode_rows(records, "checkpoints"), "electra/none", "disc_acc_replaced")


@quantity("b1_disc_original", "B1_true_negatives_pretrain",
          "metrics.training[*].disc_acc_original",
          "the discriminator's lowest accuracy on original tokens in any ELECTRA logging window")
def _(records):
    return num(b1_training(records)["disc_acc_original"].min())


@quantity("b1_flag_fn", "B1_true_negatives_pretrain",
          "metrics.training[*].disc_acc_false_negative",
          "the share of false negatives each ELECTRA arm's discriminator calls 'replaced' (mean of "
          "every logging window and seed)")
def _(records):
    flagged = b1_training(records).groupby("arm", sort=False)["disc_acc_false_negative"].mean().dropna()
    if flagged.empty:
        raise ValueError("no false negatives")
    return ", ".join(f"`{arm}` {pct(v, 0)}" for arm, v in flagged.items())


@quantity("b1_injected", "B1_true_negatives_pretrain", "metrics.training[*].fn_rate_masked",
          "the share of masked tokens whose ELECTRA sample is a WordNet synonym (mean of windows)")
def _(records):
    return pct(b1_wordnet(b1_training(records))["fn_rate_masked"].mean())


@quantity("b1_injected_range", "B1_true_negatives_pretrain",
          "metrics.training[*].fn_rate_masked",
          "the same share's range over logging windows")
def _(records):
    rate = b1_wordnet(b1_training(records))["fn_rate_masked"]
    return span(pct(rate.min()), pct(rate.max()))


@quantity("b1_majority", "B1_true_negatives_pretrain", "metrics.tasks[*].majority_accuracy",
          "the gloss-category test set's majority-class accuracy")
def _(records):
    return num(explode_rows(records, "tasks")["majority_accuracy"].mean())


def b1_arm_means(records: pd.DataFrame) -> pd.Series:
    """Each B1 arm's mean test accuracy over seeds, at its chain's last checkpoint."""
    return b1_downstream(records).groupby("arm")["test_accuracy"].mean()


@quantity("b1_scratch", "B1_true_negatives_pretrain", "metrics.downstream[*].test_accuracy",
          "the randomly initialised encoder's test accuracy (mean over seeds)")
def _(records):
    return num(b1_arm_means(records)["scratch"])


@quantity("b1_electra", "B1_true_negatives_pretrain", "metrics.downstream[*].test_accuracy",
          "the range of the ELECTRA arms' mean test accuracy at the last checkpoint")
def _(records):
    means = b1_arm_means(records)
    means = means[means.index.str.startswith("electra/")]
    return span(num(means.min()), num(means.max()))


@quantity("b1_electra_none_steps", "B1_true_negatives_pretrain",
          "metrics.downstream[*].test_accuracy",
          "the uncorrected ELECTRA arm's test accuracy at each checkpoint, mean over seeds")
def _(records):
    return b1_by_checkpoint(explode_rows(records, "downstream"), "electra/none", "test_accuracy")


@quantity("b1_electra_none_seeds", "B1_true_negatives_pretrain",
          "metrics.downstream[*].test_accuracy",
          "the uncorrected ELECTRA arm's test accuracy at the last checkpoint, lowest to highest seed")
def _(records):
    rows = b1_downstream(records)
    acc = rows[rows["arm"] == "electra/none"]["test_accuracy"]
    return span(num(acc.min()), num(acc.max()))


@quantity("b1_drop_electra", "B1_true_negatives_pretrain",
          "metrics.downstream[*].robustness_drop",
          "the uncorrected ELECTRA arm's accuracy drop under synonym substitution at the last "
          "checkpoint (mean over seeds)")
def _(records):
    rows = b1_downstream(records)
    return num(rows[rows["arm"] == "electra/none"]["robustness_drop"].mean())


@quantity("b1_drop_scratch", "B1_true_negatives_pretrain",
          "metrics.downstream[*].robustness_drop",
          "the scratch encoder's accuracy drop under synonym substitution (mean over seeds)")
def _(records):
    rows = b1_downstream(records)
    return num(rows[rows["arm"] == "scratch"]["robustness_drop"].mean())


@quantity("b1_run_time", "B1_true_negatives_pretrain", "wall_time_s",
          "one B1 seed's wall time, shortest to longest")
def _(records):
    return span(minutes(records["wall_time_s"].min()), minutes(records["wall_time_s"].max()))


@quantity("b1_swaps", "B1_true_negatives_pretrain", "metrics.tasks[*].substituted_per_example",
          "words swapped per test gloss by the robustness test")
def _(records):
    return num(explode_rows(records, "tasks")["substituted_per_example"].mean(), 2)


@quantity("b1_changed", "B1_true_negatives_pretrain", "metrics.tasks[*].examples_changed",
          "the share of test glosses that the robustness test changes")
def _(records):
    return pct(explode_rows(records, "tasks")["examples_changed"].mean(), 0)


# ----------------------------------------------------------------------------------------------
# Paper C (cpu): C1's masking rates, C2's accuracies


def c2_accuracy(records: pd.DataFrame) -> pd.DataFrame:
    """C2's test accuracy, one row per seed and one column per arm."""
    rows = explode_rows(records, "rows", keep=["run_id"])
    return rows.pivot_table(index="seed", columns="arm", values="accuracy")


for _arm in ("none", "random", "exponential"):
    quantity(f"c2_{_arm}", "C2_selective_mlm", "metrics.rows[*].accuracy",
             f"the {_arm} arm's test accuracy at the top dose, mean and 95% interval over seeds"
             )(lambda records, arm=_arm: interval(c2_accuracy(records)[arm]))


@quantity("c2_majority", "C2_selective_mlm", "metrics.majority_accuracy",
          "the test set's majority-class accuracy")
def _(records):
    return num(records["majority_accuracy"].mean())


@quantity("c2_seed_range", "C2_selective_mlm", "metrics.rows[*].accuracy",
          "the pretrained arms' test accuracy, lowest to highest single seed")
def _(records):
    acc = c2_accuracy(records).drop(columns="scratch", errors="ignore")
    return span(num(acc.min().min()), num(acc.max().max()))


@quantity("c2_paired_sd", "C2_selective_mlm", "metrics.rows[*].accuracy",
          "the standard deviation over seeds of exponential - random")
def _(records):
    acc = c2_accuracy(records)
    return num((acc["exponential"] - acc["random"]).std(ddof=1), 4)


@quantity("c2_half_width", "C2_selective_mlm", "metrics.rows[*].accuracy",
          "the half-width of the 95% interval of exponential - random")
def _(records):
    acc = c2_accuracy(records)
    ci = mean_ci(list(acc["exponential"] - acc["random"]))
    return num((ci.high - ci.low) / 2, 4)


@quantity("c1_rate_gap", "C1_task_scores", "metrics.max_rate_gap_points",
          "the largest gap between an arm's realised masking rate and its target, in points")
def _(records):
    return num(records["max_rate_gap_points"].max(), 2)


@quantity("c1_overhead", "C1_task_scores", "metrics.max_overhead",
          "the largest extra cost of drawing selective masks, as a share of a training step")
def _(records):
    return pct(records["max_overhead"].max(), 3)


def c1_vader_example(records: pd.DataFrame, word: str) -> pd.Series:
    """C1's example row of `word` under the VADER list."""
    rows = explode_rows(records, "examples", keep=["word_list"])
    return rows[(rows["word_list"] == "vader") & (rows["word"] == word)].iloc[0]


@quantity("c1_exp_great", "C1_task_scores", "metrics.examples[*].exponential",
          "exponential masking's probability for 'great' (a VADER list word)")
def _(records):
    return num(c1_vader_example(records, "great")["exponential"], 2)


@quantity("c1_exp_the", "C1_task_scores", "metrics.examples[*].exponential",
          "exponential masking's probability for 'the'")
def _(records):
    return num(c1_vader_example(records, "the")["exponential"], 2)


@quantity("c1_score_the", "C1_task_scores", "metrics.examples[*].score",
          "the task score of 'the' under the VADER list")
def _(records):
    return num(c1_vader_example(records, "the")["score"], 2)


# ----------------------------------------------------------------------------------------------
# The cpu batch as a whole (every record of the profile)


@quantity("cpu_runs", "*", "one record per run", "how many runs the cpu profile's records hold")
def _(records):
    return str(len(records))


@quantity("cpu_core_time", "*", "wall_time_s", "the cpu runs' wall times added up")
def _(records):
    return f"{records['wall_time_s'].sum():,.0f} s ({hours(records['wall_time_s'].sum())})"


@quantity("cpu_two_cores", "*", "wall_time_s",
          "the batch's time on two cores: its core time plus B2's, whose run leaves a core idle, "
          "halved")
def _(records):
    alone = records[records["notebook"] == "B2_true_negatives_overhead"]["wall_time_s"].sum()
    return hours((records["wall_time_s"].sum() + alone) / 2)


@quantity("cpu_commits", "*", "git_sha", "the commits whose code made the cpu records")
def _(records):
    return ", ".join(sorted(records["git_sha"].str[:7].unique()))


@quantity("cpu_longest", "*", "wall_time_s", "the notebooks with the longest runs, time per run")
def _(records):
    times = records.groupby("notebook")["wall_time_s"].agg(["min", "max", "count"])
    times = times.sort_values("max", ascending=False).head(7)
    runs = [f"{nb} {span(minutes(t['min']), minutes(t['max']))}"
            + (f" ({int(t['count'])} runs)" if t["count"] > 1 else "") for nb, t in times.iterrows()]
    return "; ".join(runs)


# ----------------------------------------------------------------------------------------------
# Paper B (cpu): B4, the synthetic testbed. One value per run (a language and its pretraining
# seed), the claims' own readers (last logging windows, the held-out probe), then over runs.

B4 = "B4_synthetic_true_negatives"
# The claims' controls read each run's last two logging windows (LAST_WINDOWS in
# mlmlib/papers/true_negatives/claims.py); the runs package imports no paper code, so the
# number is repeated here and tests/test_page_numbers.py holds the two equal.
LAST_WINDOWS = 2


def b4_per_run(records: pd.DataFrame, section: str, arm: str, corpus: str, column: str,
               last_windows: bool = False) -> pd.Series:
    """`column` of `arm` on `corpus` in B4's `section` rows, one mean per run; with
    `last_windows`, over the run's last logging windows only (as the claims' controls read it)."""
    rows = explode_rows(records, section, keep=["run_id"])
    rows = rows[(rows["arm"] == arm) & (rows["corpus"] == corpus)]
    if last_windows:
        rows = rows.sort_values("step").groupby("run_id").tail(LAST_WINDOWS)
    if rows.empty or rows[column].isna().all():
        raise ValueError(f"no {column} of {arm} on {corpus}")
    return rows.groupby("run_id")[column].mean()


def b4_scratch(records: pd.DataFrame, column: str) -> pd.Series:
    """The scratch encoder's `column`, one value per run."""
    rows = explode_rows(records, "downstream", keep=["run_id"])
    return rows[rows["arm"] == "scratch"].groupby("run_id")[column].mean()


B4_POINTS = {  # name: (section, arm, corpus, column, last windows, what it is)
    "b4_fn_mix": ("training", "electra/none", "mix", "fn_rate_replaced", True,
                  "false negatives among the uncorrected generator's replacements on mix"),
    "b4_fn_shift": ("training", "electra/none", "shift", "fn_rate_replaced", True,
                    "false negatives among the uncorrected generator's replacements on shift"),
    "b4_mlm_fn_mix": ("training", "mlm/none", "mix", "fn_rate_replaced", True,
                      "the MLM's wrong predictions that are the original's synonym, on mix"),
    "b4_flag_true": ("intrinsic", "electra/none", "mix", "acc_true_replaced", False,
                     "the uncorrected discriminator's accuracy on true replacements (probe, mix)"),
    "b4_flag_fn": ("intrinsic", "electra/none", "mix", "acc_false_negative", False,
                   "the uncorrected discriminator's accuracy on false negatives (probe, mix)"),
    "b4_auc": ("intrinsic", "electra/none", "mix", "auc_true_vs_fn", False,
               "the uncorrected discriminator's AUC, true replacements against false negatives"),
    "b4_cosine_mix": ("intrinsic", "electra/none", "mix", "synonym_cosine", False,
                      "the synonym pairs' embedding cosine, uncorrected ELECTRA on mix"),
    "b4_cosine_shift": ("intrinsic", "electra/none", "shift", "synonym_cosine", False,
                        "the synonym pairs' embedding cosine, uncorrected ELECTRA on shift"),
    "b4_none_bd1": ("downstream", "electra/none", "mix", "b_d1", False,
                    "the uncorrected ELECTRA's B-D1 accuracy (synonyms substituted), mix"),
}


def _b4_point(section, arm, corpus, column, last):
    return lambda records: interval(b4_per_run(records, section, arm, corpus, column, last))


for _name, (_section, _arm, _corpus, _column, _last, _what) in B4_POINTS.items():
    quantity(_name, B4, f"metrics.{_section}[*].{_column}",
             f"{_what}: mean and 95% interval over runs (languages)"
             )(_b4_point(_section, _arm, _corpus, _column, _last))


@quantity("b4_runs", B4, "one record per run", "how many B4 runs (languages) the records hold")
def _(records):
    return str(len(records))


@quantity("b4_scratch_bd1", B4, "metrics.downstream[*].b_d1",
          "the scratch encoder's B-D1 accuracy: mean over runs, and its lowest and highest run")
def _(records):
    values = b4_scratch(records, "b_d1")
    return f"{num(values.mean())} ({span(num(values.min()), num(values.max()))} by language)"


@quantity("b4_flag_arms", B4, "metrics.intrinsic[*].acc_true_replaced",
          "each ELECTRA arm's accuracy on true replacements on mix (held-out probe, mean over runs)")
def _(records):
    rows = explode_rows(records, "intrinsic")
    rows = rows[(rows["corpus"] == "mix") & rows["arm"].str.startswith("electra/")]
    flags = rows.groupby("arm", sort=False)["acc_true_replaced"].mean().dropna()
    if flags.empty:
        raise ValueError("no probe")
    return "; ".join(f"`{arm}` {num(v, 2)}" for arm, v in flags.items())


@quantity("b4_ad1", B4, "metrics.downstream[*].a_d1",
          "the range of every arm's and scratch's mean A-D1 accuracy over runs")
def _(records):
    means = explode_rows(records, "downstream").groupby(["arm", "corpus"], dropna=False)["a_d1"].mean()
    return span(num(means.min()), num(means.max()))


@quantity("b4_drops", B4, "metrics.downstream[*].robustness_drop",
          "each arm's drop from A-D1 to B-D1 on mix (mean over runs), and scratch's")
def _(records):
    rows = explode_rows(records, "downstream")
    rows = rows[(rows["corpus"] == "mix") | (rows["arm"] == "scratch")]
    drops = rows.groupby("arm", sort=False)["robustness_drop"].mean()
    return "; ".join(f"`{arm}` {num(d)}" for arm, d in drops.items())


@quantity("b4_step_ms", B4, "metrics.arms[*].step_ms",
          "the pretraining step time of ELECTRA's arms and of the MLM's (range of run means)")
def _(records):
    rows = explode_rows(records, "arms")
    means = rows.groupby("arm")["step_ms"].mean()
    parts = []
    for objective, name in (("electra/", "ELECTRA"), ("mlm/", "the MLM")):
        ms = means[means.index.str.startswith(objective)]
        if len(ms):
            parts.append(f"{name} {span(f'{ms.min():.0f}', f'{ms.max():.0f}')} ms")
    if not parts:
        raise ValueError("no step times")
    return ", ".join(parts)


@quantity("b4_run_time", B4, "wall_time_s", "one B4 run's wall time, shortest to longest")
def _(records):
    return span(minutes(records["wall_time_s"].min()), minutes(records["wall_time_s"].max()))


# ----------------------------------------------------------------------------------------------
# Paper C (cpu): the dose-response of C2 (MiniLM) and of C4 (the synthetic analogue)


def dose_values(records: pd.DataFrame, field: str, arm: str, dose: str) -> pd.Series:
    """One value per seed of `field` in the `dose_rows` of `arm` at dose 0 ("base") or at the
    records' top dose ("top")."""
    rows = explode_rows(records, "dose_rows", keep=["run_id"])
    at = 0 if dose == "base" else rows["dose"].max()
    rows = rows[(rows["arm"] == arm) & (rows["dose"] == at)]
    if rows.empty or rows[field].isna().all():
        raise ValueError(f"no {field} of {arm} at dose {at}")
    return rows.groupby("run_id")[field].mean()


DOSE_FIELDS = {"share": ("list_share", "the list words' share of the masked tokens"),
               "loss": ("heldout_loss", "the masked-LM loss on held-out text (one fixed masking)"),
               "probe": ("probe_accuracy", "the probe's test accuracy on frozen features"),
               "acc": ("accuracy", "the few-label fine-tuned test accuracy")}
DOSE_QUANTITIES = {  # (testbed, field): the (arm, dose) points a page quotes
    ("c2", "share"): [("random", "top"), ("exponential", "top")],
    ("c2", "loss"): [("random", "base"), ("random", "top"), ("exponential", "top")],
    ("c2", "probe"): [("random", "base"), ("random", "top"), ("exponential", "top")],
    ("c4", "share"): [("random", "top"), ("exponential", "top")],
    ("c4", "loss"): [("random", "base"), ("random", "top"), ("exponential", "top")],
    ("c4", "acc"): [("random", "base"), ("random", "top"), ("exponential", "top")],
}
DOSE_NOTEBOOKS = {"c2": "C2_selective_mlm", "c4": "C4_synthetic_selective"}


def _dose_text(field: str, arm: str, dose: str, share: bool) -> Callable[[pd.DataFrame], str]:
    def compute(records):
        values = dose_values(records, field, arm, dose)
        return num(values.mean()) if share else interval(values)
    return compute


for (_bed, _what), _points in DOSE_QUANTITIES.items():
    _field, _meaning = DOSE_FIELDS[_what]
    for _arm, _dose in _points:
        _name = f"{_bed}_{_what}_{'base' if _dose == 'base' else _arm}"
        _where = "the base (dose 0)" if _dose == "base" else f"the {_arm} arm at the top dose"
        quantity(_name, DOSE_NOTEBOOKS[_bed], f"metrics.dose_rows[*].{_field}",
                 f"{_meaning}: {_where}, " + ("mean over seeds" if _what == "share"
                                              else "mean and 95% interval over seeds")
                 )(_dose_text(_field, _arm, _dose, _what == "share"))


@quantity("c4_majority", "C4_synthetic_selective", "metrics.majority_accuracy",
          "the synthetic task's majority-class accuracy, mean over languages")
def _(records):
    return num(records["majority_accuracy"].mean())
