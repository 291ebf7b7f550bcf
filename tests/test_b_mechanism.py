"""Paper B's mechanism on the synthetic testbed: the probe's flagging measure on hand-made
discriminator outputs, the mechanism claims and their controls on hand-made records, the
benefit-against-share table and the summary that leads with them."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch
from scorecards import check_card
from test_b_synthetic import records

from mlmlib import verdicts
from mlmlib.papers.true_negatives import synthetic_mechanism as sm
from mlmlib.papers.true_negatives import synthetic_summary as ss
from mlmlib.papers.true_negatives import synthetic_testbed as tb

FLAGGING, EMBEDDINGS = sm.MEASURES


def test_the_flagging_measure_on_hand_made_discriminator_outputs():
    # positions 0-1: true replacements; 2-3: false negatives (synonyms); 4-5: the original kept
    targets = torch.tensor([5, 6, 7, 8, 9, 10])
    samples = torch.tensor([11, 12, 27, 28, 9, 10])
    fn = torch.tensor([False, False, True, True, False, False])
    p = torch.tensor([0.9, 0.2, 0.7, 0.4, 0.1, 0.6])
    m = tb.probe_measures(p, targets, samples, fn)
    assert m["acc_true_replaced"] == 0.5 and m["acc_false_negative"] == 0.5
    assert m["p_replaced_true"] == pytest.approx(0.55) and m["p_replaced_original"] == pytest.approx(0.35)
    assert m["auc_true_vs_fn"] == pytest.approx(0.5)  # 0.9 beats both FNs, 0.2 neither
    assert m["probe_fn_rate_replaced"] == 0.5 and m["generator_set_acc"] == pytest.approx(4 / 6)
    assert m["probe_true_replaced"] == 2 and m["probe_false_negatives"] == 2
    none = tb.probe_measures(p[4:], targets[4:], samples[4:], fn[4:])  # nothing replaced
    assert math.isnan(none["acc_true_replaced"]) and math.isnan(none["auc_true_vs_fn"])


def mechanism_records(gain=0.15, spread=0.02, cosine_gain=0.1, languages=4, **kw):
    """records() of test_b_synthetic with the probe's flagging and cosine: the corrected arm flags
    `gain` more true replacements than electra/none on mix (+-spread by language), its synonym
    cosine `cosine_gain` higher; and the flagging per training window."""
    training, down, intrinsic, arms, majority = records(languages=languages, **kw)
    corrected = intrinsic["arm"] == "electra/shield"
    sign = intrinsic["language_seed"].map(lambda lang: (-1) ** lang)
    intrinsic["acc_true_replaced"] = 0.4 + corrected * (gain + spread * sign)
    intrinsic["synonym_cosine"] = 0.3 + corrected * cosine_gain
    training["objective"] = training["arm"].str.split("/").str[0]
    training["disc_acc_replaced"] = 0.4 + (training["arm"] == "electra/shield") * gain
    return training, down, intrinsic, arms, majority


def rows_of(**kw):
    training, down, intrinsic, _, majority = mechanism_records(**kw)
    return sm.mechanism_rows(training, intrinsic, down, majority)


def row(rows, claim, arm="electra/shield"):
    part = rows[(rows["claim"] == claim) & (rows["arm"] == arm)]
    assert len(part) == 1, part
    return part.iloc[0]


def test_a_restored_flagging_is_reproduced_with_its_controls_passed():
    rows = rows_of()
    r = row(rows, FLAGGING)
    assert r["difference"] == pytest.approx(0.15) and r["languages"] == 4
    assert r["verdict"] == verdicts.REPRODUCED
    assert [c["status"] for c in r["controls"]] == ["passed", "passed"]
    assert row(rows, EMBEDDINGS)["verdict"] == verdicts.REPRODUCED
    check_card(sm.scorecard(rows))


def test_no_false_negatives_make_the_mechanism_insensitive():
    r = row(rows_of(fn_rate=0.05), FLAGGING)
    assert r["verdict"] == verdicts.INSENSITIVE
    assert any(c["status"] == "failed" and "false negatives present" in c["name"] for c in r["controls"])


def test_a_correction_that_leaves_false_negatives_alone_is_insensitive():
    assert row(rows_of(flag_gap=0.0), FLAGGING)["verdict"] == verdicts.INSENSITIVE


def test_no_change_in_flagging_is_equivalent_and_a_loss_contradicted():
    assert row(rows_of(gain=0.0, spread=0.005), FLAGGING)["verdict"] == verdicts.EQUIVALENT
    assert row(rows_of(gain=-0.2), FLAGGING)["verdict"] == verdicts.CONTRADICTED


def test_two_languages_give_no_verdict():
    r = row(rows_of(languages=2), FLAGGING)  # its controls from 2 languages are not measured
    assert r["verdict"] == verdicts.NOT_MEASURED and r["languages"] == 2


def test_no_records_give_not_measured_mechanism_rows():
    empty = pd.DataFrame()
    card = check_card(sm.scorecard(sm.mechanism_rows(empty, empty, empty, empty)))
    assert [r["verdict"] for r in card] == [verdicts.NOT_MEASURED] * 2


def test_the_benefit_against_share_table():
    training, down, intrinsic, _, _ = mechanism_records(gain=0.15, spread=0.0)
    table = sm.benefit_by_share(training, intrinsic, down)
    # one row per corpus and run of the corrected arm; the share is electra/none's, per corpus
    assert len(table) == 8 and set(table["corpus"]) == {"mix", "shift"}
    assert table.loc[table["corpus"] == "mix", "fn_share"].eq(0.3).all()
    assert table.loc[table["corpus"] == "shift", "fn_share"].eq(0.01).all()
    assert table["flagging"].round(6).eq(0.15).all()
    a_d1 = down.set_index(["arm", "corpus", "language_seed"])["a_d1"]
    first = table.iloc[0]
    key = (first["corpus"], first["language_seed"])
    assert first["a_d1"] == pytest.approx(a_d1[("electra/shield", *key)] - a_d1[("electra/none", *key)])
    by_corpus = sm.benefit_by_corpus(table)
    assert list(by_corpus["corpus"]) == ["mix", "shift"] and by_corpus["flagging"].str.startswith("0.150").all()


def test_the_flagging_curves_are_per_arm_step_and_language_on_mix():
    training, *_ = mechanism_records()
    curves = sm.flagging_curves(training)
    assert set(curves["arm"]) == {"electra/none", "electra/shield"}  # no imperfect table
    assert len(curves) == 2 * 2 * 4 and not curves.duplicated(["arm", "step", "language_seed"]).any()


def test_the_mechanism_panels_draw_the_loss_share_the_flagging_and_the_benefit():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mlmlib.papers.true_negatives import mechanism_figures

    training, down, intrinsic, arms, majority = mechanism_records()
    shares = sm.flagging_curves(training, "disc_loss_share_false_negative")
    assert set(shares["arm"]) == {"electra/none", "electra/shield"} and len(shares) == 16
    frame = pd.DataFrame([{"training": training.to_dict("records"), "downstream": down.to_dict("records"),
                           "intrinsic": intrinsic.to_dict("records"), "arms": arms.to_dict("records")}])
    mechanism_figures.mechanism_panels(ss.summarise(frame, [], majority=majority))
    axes = plt.gcf().axes
    assert [ax.get_ylabel() for ax in axes] == ["loss share at false negatives",
                                                "true replacements flagged",
                                                "flagging benefit over electra/none"]
    assert all(ax.lines or ax.collections for ax in axes)
    plt.close("all")


def test_the_summary_leads_its_scorecard_with_the_mechanism():
    training, down, intrinsic, arms, majority = mechanism_records()
    frame = pd.DataFrame([{"training": training.to_dict("records"), "downstream": down.to_dict("records"),
                           "intrinsic": intrinsic.to_dict("records"), "arms": arms.to_dict("records"),
                           "curve": [{**r, "train_size": 50} for r in down.to_dict("records")]}])
    summary = ss.summarise(frame, [], majority=majority)
    card = check_card(summary.scorecard)
    assert card[0]["claim"].startswith("A correction restores the flagging")
    assert set(summary.curve["train_size"]) == {"50", "the claims'"}
    assert summary.languages.set_index(["corpus", "arm"]).loc[("mix", "electra/shield"), "languages"] == 4
    assert {"mechanism", "benefit", "curve", "languages"} <= set(summary.saved())
