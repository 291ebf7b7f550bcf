"""The measured numbers paper B's chapter quotes (B1's training logs and downstream rows, and
B4, the synthetic testbed), one registered `quantity` each (mlmlib.page_quantities renders them)."""

from __future__ import annotations

import pandas as pd

from mlmlib.page_quantities import explode_rows, interval, minutes, num, pct, quantity, span
# the windows the claims read, and the loss share their target control reads
from mlmlib.papers.true_negatives.claim_controls import LAST_WINDOWS, LOSS_SHARE

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


@quantity("b1_seeds", "B1_true_negatives_pretrain", "seed",
          "how many pretraining seeds B1's records hold, and which")
def _(records):
    seeds = sorted(int(s) for s in records["seed"].dropna().unique())
    if not seeds:
        raise ValueError("no seeds")
    listed = (f"{seeds[0]}-{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1))
              else ", ".join(map(str, seeds)))
    return f"{len(seeds)} seeds, {listed}"


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
# Paper B (cpu): B4, the synthetic testbed. One value per run (a language and its pretraining
# seed), the claims' own readers (last logging windows, the held-out probe), then over runs.

B4 = "B4_synthetic_true_negatives"


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
    "b4_flag_true": ("intrinsic", "electra/none", "mix", "acc_true_replaced", False,
                     "the uncorrected discriminator's accuracy on true replacements (probe, mix)"),
    "b4_flag_shift": ("intrinsic", "electra/none", "shift", "acc_true_replaced", False,
                      "the uncorrected discriminator's accuracy on true replacements (probe, shift)"),
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
    **{f"b4_share_{arm}": ("training", f"electra/{arm}", "mix", LOSS_SHARE, True,
                           f"electra/{arm}'s share of its discriminator's training loss taken at "
                           "false negatives on mix (last windows)")
       for arm in ("none", "relabel", "shield")},
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


def b4_paired(records: pd.DataFrame, section: str, arm: str, baseline: str, column: str,
              corpus: str = "mix") -> str:
    """`arm` minus `baseline` on `column`, paired per run: mean and 95% interval over runs."""
    mine = b4_per_run(records, section, arm, corpus, column)
    return interval(mine - b4_per_run(records, section, baseline, corpus, column).reindex(mine.index))


for _arm in ("relabel", "shield"):
    quantity(f"b4_{_arm}_flag_gain", B4, "metrics.intrinsic[*].acc_true_replaced",
             f"electra/{_arm} minus electra/none on the probe's flagging of true replacements (mix), "
             "paired per run: mean and 95% interval over runs (languages)"
             )(lambda records, arm=_arm: b4_paired(records, "intrinsic", f"electra/{arm}", "electra/none",
                                                   "acc_true_replaced"))


STALLED = 0.05  # a discriminator that flags fewer true replacements than this has not started


@quantity("b4_stalled", B4, "metrics.intrinsic[*].acc_true_replaced",
          f"per ELECTRA arm on mix, the runs whose discriminator flags under {STALLED} of the true "
          "replacements on the probe (it never left 'original'), of the runs of that arm")
def _(records):
    rows = explode_rows(records, "intrinsic", keep=["run_id"])
    rows = rows[(rows["corpus"] == "mix") & rows["arm"].str.startswith("electra/")]
    flags = rows.groupby(["arm", "run_id"], sort=False)["acc_true_replaced"].mean()
    counts = flags.groupby(level=0, sort=False).agg(lambda f: (f < STALLED).sum()).astype(int)
    totals = flags.groupby(level=0, sort=False).size()
    return "; ".join(f"`{arm}` {counts[arm]} of {totals[arm]}" for arm in counts.index)


@quantity("b4_arm_languages", B4, "metrics.downstream[*].arm",
          "how many runs (languages) pretrained each arm on mix")
def _(records):
    rows = explode_rows(records, "downstream", keep=["run_id"])
    counts = rows[rows["corpus"] == "mix"].groupby("arm", sort=False)["run_id"].nunique()
    return "; ".join(f"`{arm}` {n}" for arm, n in counts.items())


@quantity("b4_none_minus_scratch_ad1", B4, "metrics.downstream[*].a_d1",
          "the uncorrected ELECTRA's A-D1 accuracy minus scratch's, paired per run: mean and 95% "
          "interval over runs (languages)")
def _(records):
    none = b4_per_run(records, "downstream", "electra/none", "mix", "a_d1")
    return interval(none - b4_scratch(records, "a_d1").reindex(none.index))




@quantity("b4_none_minus_scratch_bd1", B4, "metrics.downstream[*].b_d1",
          "the uncorrected ELECTRA's B-D1 accuracy minus scratch's, paired per run: mean and 95% "
          "interval over runs (languages)")
def _(records):
    none = b4_per_run(records, "downstream", "electra/none", "mix", "b_d1")
    return interval(none - b4_scratch(records, "b_d1").reindex(none.index))


@quantity("b4_majority_bd1", "B3_true_negatives_summary", "metrics.synthetic.majority[*].b_d1",
          "B4's B-D1 test sets' majority-class accuracy (regenerated by B3 from the seeded test sets), "
          "lowest to highest language")
def _(records):
    rows = pd.DataFrame([m for rec in records["synthetic"] for m in rec["majority"]])
    return span(num(rows["b_d1"].min()), num(rows["b_d1"].max()))


@quantity("b4_mechanism_verdicts", "B3_true_negatives_summary", "metrics.scorecard[*].verdict",
          "B3's verdict on each correction's restored flagging of true replacements (B4, mix), "
          "with its interval over languages and the controls it did not pass")
def _(records):
    from mlmlib.papers.true_negatives.synthetic_mechanism import FLAGGING
    from mlmlib.verdicts import PASSED, control_status

    rows = [r for r in explode_rows(records, "scorecard", keep=[]).to_dict("records")
            if r["claim"].lower().startswith(FLAGGING.lower())]
    if not rows:
        raise ValueError("no mechanism row")
    parts = []
    for r in rows:
        arm = r["claim"].split(": ", 1)[1].split(" ")[0]
        failed = [c["name"].split(":")[0] for c in r["controls"] if control_status(c) != PASSED]
        said = f"failed: {'; '.join(failed)}" if failed else f"all {len(r['controls'])} controls passed"
        parts.append(f"`{arm}` {r['verdict']}, {num(r['estimate'])} [{num(r['low'])}, "
                     f"{num(r['high'])}] over {r['seeds']} languages ({said})")
    return "; ".join(parts)
