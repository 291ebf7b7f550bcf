"""Paper A's pretraining-dose pilot: where does pretraining beat its baselines, by dose?

The claims' positive controls ask that pretraining help where each claim looks (A-D1 at the small
training sizes, A-D2, B-D1) against the stronger of scratch and shuffled WITH. The pilot measures
that at several doses of the MLM (multiples of the setup's steps, the corpus scaled alike so
every dose sees its sequences the same number of times), on languages no record uses
(`config.PILOT_LANGUAGES`): WITH and shuffled WITH at every dose, scratch once (it starts from the
pretraining init, the same at every dose). The records' dose is chosen from it
(book/design_history.md); A4 draws its curve.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from mlmlib import configs, stats
from mlmlib.papers.distributional.config import PILOT_LANGUAGES, Setup, Sweep
from mlmlib.papers.distributional.synthetic_measures import small_sizes_accuracy

# What the pilot fine-tunes: A-D1 only (no mixtures), on the three test sets the controls read.
PILOT_SWEEP = {"bd2_fractions": [0.0], "bd2_models": None, "test_sets": ["A-D1", "B-D1", "A-D2"]}
# The controls' measures: (label, test set, which sizes)
MEASURES = (("A-D1, smaller half of the sizes", "A-D1", "small"),
            ("A-D2, largest size", "A-D2", "largest"), ("B-D1, largest size", "B-D1", "largest"))
BASELINES = ("scratch", "shuffled")


def check_pilot(language_seed: int, doses) -> tuple[int, ...]:
    """Fail before training: the language must be a pilot language, the doses increasing ints >= 1."""
    if language_seed not in PILOT_LANGUAGES:
        raise ValueError(f"language_seed={language_seed}: the dose pilot runs on the pilot languages "
                         f"{PILOT_LANGUAGES} only, which no recorded A2 or A3 run may use")
    doses = list(doses) if isinstance(doses, (list, tuple)) else doses
    if (not isinstance(doses, list) or not doses
            or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in doses)
            or sorted(set(doses)) != doses):
        raise ValueError(f"doses must be increasing ints >= 1 (multiples of the setup's MLM steps and "
                         f"corpus), got {doses!r}")
    return tuple(doses)


def dosed(setup: dict, dose: int, language_seed: int, seed: int) -> Setup:
    """The setup (Setup's defaults overridden by `setup`) at `dose` times its MLM steps and corpus.
    Every dose is fine-tuned, converged or not: the pilot records whether it was."""
    base = configs.build(Setup, setup, "setup")
    return configs.build(Setup, {**setup, "steps": base.steps * dose, "corpus_size": base.corpus_size * dose,
                                 "loss_threshold": 1e9}, "setup").with_seeds(language_seed, seed)


def run_language(setup: dict, sweep: dict, language_seed: int, seed: int, doses, log=print
                 ) -> tuple[list[dict], list[dict]]:
    """Pretrain WITH at every dose on one pilot language and fine-tune: (rows, pretraining runs)."""
    from mlmlib.papers.distributional import synthetic as dist

    doses = check_pilot(language_seed, doses)
    threshold = configs.build(Setup, setup, "setup").loss_threshold
    rows, pretraining = [], []
    for i, dose in enumerate(doses):
        at = dosed(setup, dose, language_seed, seed)
        start = time.perf_counter()
        history = dist.load_history(dist.pretrain_mlm(at, "mix", progress=False))
        pretraining.append({"dose": dose, "language_seed": language_seed, "final_loss": history[-1]["loss"],
                            "converged": bool(history[-1]["loss"] < threshold),
                            "tokens_seen": history[-1]["tokens_seen"],
                            "wall_s": time.perf_counter() - start})
        models = ["scratch", "with", "shuffled"] if i == 0 else ["with", "shuffled"]
        swept = configs.build(Sweep, {**PILOT_SWEEP, **sweep, "models": models}, "sweep")
        rows += [{**row, "dose": dose} for row in dist.run_sweep(at, swept, seed=seed, log=log)]
    return rows, pretraining


def differences(rows: pd.DataFrame) -> pd.DataFrame:
    """Per language, dose and measure: WITH minus each baseline (scratch's one run at every dose)."""
    rows = pd.DataFrame(rows)
    scratch = rows[rows.model == "scratch"]
    out = []
    for dose in sorted(rows.dose.unique()):
        part = pd.concat([rows[(rows.dose == dose) & (rows.model != "scratch")], scratch])
        wide = part.pivot_table(index=["test_set", "train_size", "language_seed"], columns="model",
                                values="accuracy")
        largest = wide.index.get_level_values("train_size").max()
        for label, test_set, sizes in MEASURES:
            if test_set not in wide.index.get_level_values("test_set"):
                continue
            table = wide.loc[test_set]
            for lang, group in table.groupby(level="language_seed"):
                group = group.droplevel("language_seed")
                values = ({m: small_sizes_accuracy(group.index, group[m]) for m in group.columns}
                          if sizes == "small" else group.loc[largest].to_dict())
                out += [{"dose": int(dose), "measure": label, "language_seed": int(lang), "baseline": b,
                         "difference": values["with"] - values[b]} for b in BASELINES if b in values]
    return pd.DataFrame(out)


def by_dose(rows) -> pd.DataFrame:
    """WITH minus each baseline per dose and measure, with its 95% interval over the languages,
    and which baseline is the stronger (the one WITH beats by the least). `rows`: the pilot's
    rows, or its records (one per language, the rows under "rows"), or nothing (an empty table)."""
    from mlmlib.page_quantities import explode_rows

    rows = pd.DataFrame(rows if len(rows) else [])
    if "rows" in rows:
        rows = explode_rows(rows, "rows")
    if rows.empty:
        return pd.DataFrame(columns=["dose", "measure", "baseline", "mean", "low", "high", "languages",
                                     "stronger"])
    out = []
    for (dose, measure, baseline), part in differences(rows).groupby(["dose", "measure", "baseline"]):
        ci = stats.mean_ci(part.difference)
        out.append({"dose": dose, "measure": measure, "baseline": baseline, "mean": ci.mean,
                    "low": ci.low, "high": ci.high, "languages": ci.n})
    table = pd.DataFrame(out)
    weakest = table.groupby(["dose", "measure"])["mean"].transform("min")
    return table.assign(stronger=np.isclose(table["mean"], weakest))


def smallest_passing_dose(table: pd.DataFrame) -> int | None:
    """The smallest dose at which WITH minus the stronger baseline has its interval above zero on
    every measure, or None."""
    stronger = table[table.stronger]
    passing = stronger.groupby("dose").low.min()
    passing = passing[passing > 0]
    return int(passing.index.min()) if len(passing) else None


def finding(table: pd.DataFrame) -> str:
    """What the pilot found: the smallest dose at which every measure passes, or that none did,
    with each measure's WITH minus the stronger baseline at every dose."""
    if table.empty:
        return "no dose-pilot records"
    dose = smallest_passing_dose(table)
    doses = ", ".join(f"{d}x" for d in sorted(table.dose.unique()))
    head = (f"Smallest dose at which WITH beats the stronger baseline on every measure: {dose}x"
            if dose is not None else f"At no dose piloted ({doses}) does WITH beat the stronger baseline "
            "on every measure")
    lines = [f"{head} ({int(table.languages.max())} pilot languages, 95% intervals)."]
    for measure, part in table[table.stronger].groupby("measure", sort=False):
        lines.append(f"{measure}: " + "; ".join(
            f"{r.dose}x WITH - {r.baseline} {r.mean:+.3f} [{r.low:+.3f}, {r.high:+.3f}]"
            for r in part.sort_values("dose").itertuples()))
    return "\n".join(lines)

