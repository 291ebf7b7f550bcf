"""B1's chains in B3: the claims take each chain's last checkpoint; the curves are over seeds."""

import pandas as pd
import pytest

from mlmlib.papers.true_negatives import chain_figures


def downstream_rows():
    rows = []
    for seed, gain in ((0, 0.0), (1, 0.1)):
        for step in (10, 30, 100):
            for arm in ("electra/none", "electra/relabel"):
                for ft in (0, 1):
                    rows.append({"arm": arm, "objective": "electra", "pretrain_seed": seed, "checkpoint": step,
                                 "task": "t", "finetune_seed": ft,
                                 "test_accuracy": 0.5 + step / 1000 + gain + 0.01 * ft})
        rows.append({"arm": "scratch", "objective": "scratch", "pretrain_seed": seed, "checkpoint": None,
                     "task": "t", "finetune_seed": 0, "test_accuracy": 0.4})
    return pd.DataFrame(rows)


def test_final_rows_keep_each_chains_last_checkpoint_and_scratch():
    final = chain_figures.final_rows(downstream_rows())
    assert set(final.loc[final["arm"] != "scratch", "checkpoint"]) == {100}
    assert (final["arm"] == "scratch").sum() == 2 and len(final) == 2 * 2 * 2 + 2
    old = downstream_rows().drop(columns="checkpoint")  # records made before the chains
    assert chain_figures.final_rows(old).equals(old)


def test_seed_curves_average_finetune_seeds_then_interval_over_pretraining_seeds():
    checkpoints = pd.DataFrame([{"arm": "electra/none", "objective": "electra", "pretrain_seed": s,
                                 "checkpoint": step, "disc_acc_replaced": 0.1 * s + step / 100,
                                 "disc_acc_false_negative": 0.2} for s in (0, 1) for step in (10, 30, 100)])
    curves = chain_figures.seed_curves(checkpoints, downstream_rows())
    acc = curves[(curves["measure"] == "test accuracy") & (curves["arm"] == "electra/none")
                 & (curves["step"] == 30)].iloc[0]
    assert acc["seeds"] == 2 and acc["mean"] == pytest.approx(0.5 + 0.03 + 0.05 + 0.005)
    assert acc["ci_low"] < acc["mean"] < acc["ci_high"]
    flags = curves[(curves["measure"] == "flags replaced") & (curves["step"] == 100)].iloc[0]
    assert flags["mean"] == pytest.approx(1.05)
    scratch = curves[curves["arm"] == "scratch"]
    assert set(scratch["step"]) == {0} and scratch["mean"].iloc[0] == pytest.approx(0.4)
    assert chain_figures.seed_curves(pd.DataFrame(), downstream_rows().drop(columns="checkpoint")).empty


def test_b1_tables_read_the_records_rows():
    down = downstream_rows()
    records = pd.DataFrame({"downstream": [down[down["pretrain_seed"] == s].to_dict("records") for s in (0, 1)],
                            "checkpoints": [[{"arm": "electra/none", "checkpoint": 10}], []]})
    final, whole, checkpoints = chain_figures.b1_tables(records)
    assert len(whole) == len(down) and len(final) == len(chain_figures.final_rows(down)) and len(checkpoints) == 1
