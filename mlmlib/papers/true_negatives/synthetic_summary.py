"""B3's one call for the synthetic testbed (B4): records -> mechanism, claims, cost, tables.

The mechanism comes first (synthetic_mechanism: the flagging of true replacements a correction
restores, over training and at its end, and its benefit against the false-negative share), then
the paper's downstream claims and cost (synthetic_claims), and the fine-tuning curve that shows
where pretraining helps. Torch-free except `majority_baselines`, which regenerates test sets.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mlmlib import verdicts
from mlmlib.papers.true_negatives import claims
from mlmlib.papers.true_negatives import synthetic_claims as sc
from mlmlib.papers.true_negatives import synthetic_mechanism as sm


@dataclass
class SyntheticSummary:
    """Everything B3 shows and saves of the synthetic testbed, from B4's records."""

    training: pd.DataFrame
    downstream: pd.DataFrame
    intrinsic: pd.DataFrame
    majority: pd.DataFrame
    rows: pd.DataFrame
    cost: pd.DataFrame
    controls: pd.DataFrame
    scorecard: list[dict]
    downstream_table: pd.DataFrame
    intrinsic_table: pd.DataFrame
    mechanism: pd.DataFrame
    flagging: pd.DataFrame
    benefit: pd.DataFrame
    curve: pd.DataFrame
    languages: pd.DataFrame

    def saved(self) -> dict:
        """What the summary records (JSON-able)."""
        return {"claims": self.rows.to_dict("records"), "cost": self.cost.to_dict("records"),
                "controls": self.controls.to_dict("records"),
                "majority": self.majority.to_dict("records"),
                "mechanism": self.mechanism.to_dict("records"),
                "benefit": self.benefit.to_dict("records"), "curve": self.curve.to_dict("records"),
                "languages": self.languages.to_dict("records")}


def curve_table(curve: pd.DataFrame, downstream: pd.DataFrame, claims_size: int | None = None) -> pd.DataFrame:
    """Per fine-tuning size (the curve's and the claims' own, `claims_size`) and scored set:
    electra/none and scratch on `mix`, and electra/none - scratch with its interval over
    languages: where pretraining helps."""
    rows = pd.concat([curve, downstream.assign(train_size=-1)]) if len(curve) else downstream.assign(train_size=-1)
    if not len(rows):
        return pd.DataFrame()
    out = []
    for size, part in rows.groupby("train_size"):
        for column in ("a_d1", "b_d1", "a_d2"):
            mine = sc.per_run(part, "electra/none", sc.CORPUS, column)
            scratch = sc.per_run(part, "scratch", None, column)
            gain = sc.block_interval(mine - scratch)
            claims_own = f"{claims_size} (the claims')" if claims_size else "the claims'"
            out.append({"train_size": claims_own if size == -1 else str(int(size)),
                        "test set": sc.MEASURE_NAMES[column], "electra/none": float(mine.mean()),
                        "scratch": float(scratch.mean()),
                        "electra/none - scratch": verdicts.interval_text(
                            gain.mean, gain.low, gain.high, gain.n, unit=sc.BLOCK, explain=False),
                        "low": gain.low})
    return pd.DataFrame(out)


def languages_table(downstream: pd.DataFrame) -> pd.DataFrame:
    """How many languages ran each arm on each corpus: the rows' n, said once per arm."""
    if not len(downstream):
        return pd.DataFrame(columns=["corpus", "arm", "languages"])
    return (downstream.groupby(["corpus", "arm"])["language_seed"].nunique()
            .rename("languages").reset_index())


def summarise(records: pd.DataFrame, paper_params: list[dict], delta: float = sc.DELTA,
              majority: pd.DataFrame | None = None) -> SyntheticSummary:
    """B4's records (a row per run) -> mechanism rows, claim rows, cost rows, control values and
    scorecard rows (the mechanism first); `paper_params`: the paper profile's B4 runs (the dose's
    reference and its departures); `majority`: each run's test sets' majority class (default:
    `sc.majority_baselines`)."""
    training, downstream, intrinsic, arms, curve = (sc.explode(records, k) for k in
                                                    ("training", "downstream", "intrinsic", "arms", "curve"))
    majority = sc.majority_baselines(records) if majority is None else majority
    rows = sc.claim_rows(training, downstream, intrinsic, majority, delta)
    mechanism = sm.mechanism_rows(training, intrinsic, downstream, majority)
    cost = sc.cost_rows(arms)
    ours = records.to_dict("records") if len(records) and "setup" in records else []
    dose = verdicts.with_departures(sc.dose_text(ours, paper_params),
                                    claims.departures(ours, paper_params, sc.DEPARTURES)
                                    | sc.after_failure(ours) | claims.REDECLARED)
    card = sm.scorecard(mechanism, dose=dose) + sc.scorecard(rows, cost, delta, dose)
    return SyntheticSummary(training, downstream, intrinsic, majority, rows, cost,
                            sc.control_values(training, intrinsic, downstream), card,
                            sc.downstream_table(downstream), sc.intrinsic_table(intrinsic), mechanism,
                            sm.flagging_curves(training), sm.benefit_by_share(training, intrinsic, downstream),
                            curve_table(curve, downstream, claims_size(records)),
                            languages_table(downstream))


def claims_size(records: pd.DataFrame) -> int | None:
    """The fine-tuning size the claims are judged at (the records' `finetune.train_size`)."""
    if not len(records) or "finetune" not in records:
        return None
    sizes = {int(f.get("train_size", 0)) for f in records["finetune"] if isinstance(f, dict)}
    return sizes.pop() if len(sizes) == 1 else None
