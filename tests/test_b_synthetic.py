"""Paper B's synthetic testbed (B4): the tables, the corrections at false negatives, the bad-input
errors, the claims on hand-made records, and a tiny run of the seed function."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import torch
from scorecards import check_card

from mlmlib import configs, verdicts
from mlmlib.data import synthetic as syn
from mlmlib.models import ModelSize, electra
from mlmlib.papers.true_negatives import claims
from mlmlib.papers.true_negatives import negatives as neg
from mlmlib.papers.true_negatives import synthetic_claims as sc
from mlmlib.papers.true_negatives import synthetic_testbed as tb
from mlmlib.papers.true_negatives.arm_config import ArmConfig
from mlmlib.papers.true_negatives.monitor import Injection, NegativesMonitor
from mlmlib.papers.true_negatives.synthetic_config import SyntheticFinetune, SyntheticSetup
from mlmlib.pretrain import Objective, PretrainConfig

N = 10  # synonym sets
S = tb.NUM_SPECIAL
TINY = {"preset": "tiny"}  # the test plan's B4 sizes
TINY_FT = {"preset": "tiny", "curve_sizes": ()}  # and its fine-tuning, without the curve


# ---------------------------------------------------------------- tables


def test_exact_table_finds_every_synonym_pair_and_nothing_else():
    table = tb.exact_table(N)
    vocab = S + 2 * N
    a, b = torch.meshgrid(torch.arange(vocab), torch.arange(vocab), indexing="ij")
    found = table.contains(a.flatten(), b.flatten()).view(vocab, vocab)
    expected = torch.zeros(vocab, vocab, dtype=torch.bool)
    for s in range(N):  # a <-> a + n_sets, in model ids, and nothing else (no specials, no self)
        expected[S + s, S + N + s] = expected[S + N + s, S + s] = True
    assert torch.equal(found, expected)
    words = tb.vocabulary(N)
    assert all(words[S + s][1:] == words[S + N + s][1:] for s in range(N))  # a3 <-> b3


def test_the_false_negative_indicator_on_hand_made_samples():
    table = tb.exact_table(N)
    def a(s):  # alphabet A's token of set s
        return S + s

    def b(s):
        return S + N + s

    targets = torch.tensor([a(1), a(1), a(1), b(2), b(2), a(3), a(4)])
    samples = torch.tensor([b(1), a(1), a(2), a(2), b(3), tb.MASK, b(5)])
    #        synonym  identical  other set  synonym  other set  special  other set
    assert neg.false_negatives(targets, samples, table).tolist() == [True, False, False, True, False, False, False]


def test_the_imperfect_table_drops_the_stated_share_seeded():
    exact = tb.exact_table(40)
    for share in (0.0, 0.25, 0.5, 0.9):
        table = tb.imperfect_table(40, share, seed=3)
        assert len(table) == 2 * (40 - round(share * 40))
        assert torch.isin(table.keys, exact.keys).all()  # a subset of the exact pairs, both ways
        pairs = table.pairs()
        assert table.contains(pairs[:, 1], pairs[:, 0]).all()
    assert torch.equal(tb.imperfect_table(40, 0.5, 3).keys, tb.imperfect_table(40, 0.5, 3).keys)
    assert not torch.equal(tb.imperfect_table(40, 0.5, 3).keys, tb.imperfect_table(40, 0.5, 4).keys)


def test_encode_puts_cls_first_and_shifts_the_alphabets():
    data = tb.encode(np.array([[0, N, 2 * N - 1]]), np.array([1]))
    assert data["input_ids"].tolist() == [[tb.CLS, S, S + N, S + 2 * N - 1]]
    assert data["labels"].tolist() == [1]


# ---------------------------------------------------------------- corrections at false negatives


def _disc_logit_grad(method: str) -> tuple[torch.Tensor, torch.Tensor]:
    """One ELECTRA step on the synthetic vocabulary whose every sample is the original's synonym
    (an injection at rate 1): the gradient of the loss at the discriminator's logits, and where
    the false negatives are."""
    table = tb.exact_table(N)
    size = ModelSize(vocab_size=S + 2 * N, hidden=16, layers=1, heads=2, max_len=16, dropout=0.0)
    pair = electra(size, 0.5, seed=0)
    monitor = NegativesMonitor(ArmConfig("electra", method), table, tb.vocabulary(N),
                               injection=Injection(table, 1.0), seed=0).attach(pair)
    captured = {}

    def keep(module, args, output):
        output.logits.retain_grad()
        captured["logits"] = output.logits

    handle = pair.discriminator.register_forward_hook(keep)
    config = PretrainConfig(objective="electra", steps=1, batch_size=4)
    ids = tb.encode(syn.swap_alphabet(np.arange(24).reshape(4, 6) % N, N) % (2 * N))["input_ids"]
    masked = torch.zeros_like(ids, dtype=torch.bool)
    masked[:, 2:5] = True
    loss, _ = Objective(pair, config, monitor)(1, ids, None, ids.masked_fill(masked, tb.MASK), masked,
                                               torch.Generator().manual_seed(0))
    loss.backward()
    handle.remove()
    monitor.detach()
    return captured["logits"].grad, masked


def test_relabel_and_shield_act_on_the_discriminator_at_false_negatives():
    none, masked = _disc_logit_grad("none")
    relabel, _ = _disc_logit_grad("relabel")
    shield, _ = _disc_logit_grad("shield")
    # every masked position holds the synonym: uncorrected, the loss pushes it to "replaced"
    assert (none[masked] < 0).all()
    assert (relabel[masked] > 0).all()  # relabelled "original": pushed the other way
    assert torch.equal(shield[masked], torch.zeros_like(shield[masked]))  # shielded: no gradient
    assert (shield[~masked] != 0).all()  # the other positions still train


# ---------------------------------------------------------------- bad input, before any training


@pytest.mark.parametrize("arms, match", [
    (["electra/none", "electra/bogus"], "parameter arms: 'electra/bogus'"),
    (["bert/none"], "parameter arms: 'bert/none'"),
    (["electra/shield@wordnet"], "parameter arms: .*names the table 'wordnet'"),
    (["electra/none@imperfect"], "corrects nothing"),
    (["electra/none", "electra/none"], "lists an arm twice"),
    ("electra/none", "non-empty list"),
])
def test_an_unknown_arm_stops_naming_the_parameter(arms, match):
    with pytest.raises(ValueError, match=match):
        tb.parse_arms(arms)


def test_a_table_of_another_vocabulary_stops():
    with pytest.raises(ValueError, match="exact table: built for a vocabulary of 43 ids, the corpus has 23"):
        tb.check_table(tb.exact_table(20), N, "exact table")
    bad = neg.PairLookup.from_pairs([0], [S], S + 2 * N)  # pairs [PAD] with a token
    with pytest.raises(ValueError, match="does not cover this corpus's vocabulary"):
        tb.check_table(bad, N)


def test_a_corpus_without_synonym_pairs_stops_before_training(monkeypatch):
    def one_alphabet(lang, kind, n, length, seed):
        return np.zeros((n, length), dtype=np.int64)

    monkeypatch.setattr(syn, "pretraining_corpus", one_alphabet)
    monkeypatch.setattr(tb, "pretrain_arm", lambda *a, **k: pytest.fail("trained"))
    with pytest.raises(ValueError, match="parameter corpora: 'mix' holds no synonym pair"):
        tb.run_seed(SyntheticSetup(**TINY), SyntheticFinetune(**TINY_FT), ["electra/shield"], ["mix"], seed=0)
    assert tb.pairs_in_corpus(tb.encode(np.array([[0, N]])), tb.exact_table(N)) == 1


@pytest.mark.parametrize("kwargs, match", [
    ({"corpora": ["mix", "sorted"]}, "parameter corpora: unknown"),
    ({"language_seed": -2}, "parameter language_seed"),
    ({"corpus_arms": {"mix": ["mlm/none"]}}, r"corpus_arms\['mix'\] must be a non-empty list of the page's arms"),
    ({"corpus_arms": {"mix": []}}, r"corpus_arms\['mix'\] must be a non-empty list"),
    ({"corpus_arms": {"shift": ["electra/none"]}}, r"names corpora \['shift'\] that are not in corpora"),
    ({"corpus_arms": ["electra/none"]}, "corpus_arms must be a mapping"),
])
def test_bad_corpora_and_language_seed_stop(kwargs, match, monkeypatch):
    monkeypatch.setattr(tb, "pretrain_arm", lambda *a, **k: pytest.fail("trained"))
    args = {"corpora": ["mix"], **kwargs}
    with pytest.raises(ValueError, match=match):
        tb.run_seed(SyntheticSetup(**TINY), SyntheticFinetune(**TINY_FT), ["electra/none"], seed=0, **args)


@pytest.mark.parametrize("field, value, match", [
    ("missing_share", 1.0, "missing_share must be in"), ("hidden", 15, "divisible"),
    ("corpus_size", 4, "corpus_size"), ("steps", 0, "steps must be"),
    ("temperature", 0.0, "temperature must be a number > 0"),
    ("temperature", -1, "temperature must be a number > 0"),
])
def test_the_setup_group_checks_its_fields(field, value, match):
    with pytest.raises(ValueError, match=match):
        SyntheticSetup(**{**TINY, field: value})


# ---------------------------------------------------------------- the seed function, tiny


def test_a_tiny_seed_run_records_every_table():
    arms = ["electra/none", "electra/shield", "electra/relabel", "electra/sr-word", "mlm/none", "mlm/shield",
            "electra/shield@imperfect"]
    control = ["electra/none", "mlm/none"]  # the control corpus pretrains the uncorrected arms only
    run = tb.run_seed(SyntheticSetup(**TINY), SyntheticFinetune(**TINY_FT), arms, ["mix", "shift"], seed=1,
                      log=None, corpus_arms={"shift": control})
    json.dumps(run.metrics())  # a record is JSON
    assert run.info["language_seed"] == 1 and run.info["exact_pairs"] == 12 and run.info["imperfect_pairs"] == 6
    down = pd.DataFrame(run.downstream)
    assert len(down) == len(arms) + len(control) + 1 and (down["arm"] == "scratch").sum() == 1
    assert set(down.loc[down["corpus"] == "shift", "arm"]) == set(control)
    assert np.allclose(down["robustness_drop"], down["a_d1"] - down["b_d1"])
    training = pd.DataFrame(run.training)
    assert set(training["corpus"]) == {"mix", "shift"} and training["fn_rate_replaced"].between(0, 1).all()
    probes = pd.DataFrame(run.intrinsic)
    assert probes.loc[probes["objective"] == "electra", "generator_set_acc"].notna().all()
    assert probes["synonym_cosine"].between(-1, 1).all()
    assert {r["arm"] for r in run.arms} == set(arms) and all(r["step_ms"] > 0 for r in run.arms)


# ---------------------------------------------------------------- claims on hand-made records


def records(diff=0.03, spread=0.005, languages=4, fn_rate=0.3, clean=0.7, scratch_b=0.2, flag_gap=0.2,
            drop=0.2, arm="electra/shield"):
    """B4 rows of `languages` runs (one pretraining seed each): the uncorrected arm, `arm` (its
    A-D1 and B-D1 accuracy `diff` above, its drop `diff` below, +-spread), the same correction on
    the imperfect table (B-D1 `diff` below the exact one) and scratch; the controls pass by
    default: false negatives `fn_rate` of the replacements, the uncorrected discriminator flags
    `clean` of true replacements on shift, a correction flags false negatives `flag_gap` less,
    the uncorrected arm's drop `drop`, scratch `scratch_b` below it on B-D1, every test set's
    majority class 0.5 (the last of the returned tables)."""
    objective = arm.split("/")[0]
    down, training, intrinsic, arms, majority = [], [], [], [], []
    for lang in range(languages):
        d = diff + spread * (-1) ** lang
        run = {"language_seed": lang, "pretrain_seed": lang}
        majority.append({**run, "a_d1": 0.5, "b_d1": 0.5, "a_d2": 0.5})
        for corpus in ("mix", "shift"):
            for name, shift in ((f"{objective}/none", 0.0), (arm, d), (f"{arm}@imperfect", 0.0)):
                uncorrected = name.endswith("/none")
                down.append({"arm": name, "corpus": corpus, **run, "a_d1": 0.8 + shift + 0.01 * lang,
                             "b_d1": 0.8 - drop + shift, "robustness_drop": drop - shift})
                rate = (fn_rate if corpus == "mix" else 0.01) * (0.5 if "@" in name else 1.0)
                training += [{"arm": name, "corpus": corpus, **run, "step": s, "fn_rate_replaced": rate,
                              "disc_acc_false_negative": 0.3 if uncorrected else 0.3 - flag_gap,
                              "disc_loss_share_false_negative": 0.3 if uncorrected else 0.3 - flag_gap}
                             for s in (10, 20)]
                intrinsic.append({"arm": name, "corpus": corpus, **run,
                                  "acc_true_replaced": clean if corpus == "shift" else 0.6,
                                  "acc_false_negative": 0.5})
                arms.append({"arm": name, "corpus": corpus, **run, "step_ms": 100.0 * (1.02 if "/s" in name else 1)})
        down.append({"arm": "scratch", "corpus": "", **run, "a_d1": 0.8 - scratch_b,
                     "b_d1": 0.8 - drop - scratch_b, "robustness_drop": drop})
    return tuple(pd.DataFrame(x) for x in (training, down, intrinsic, arms, majority))


def verdict_of(rows, claim, arm="electra/shield"):
    part = rows[(rows["claim"] == claim) & (rows["corpus"] == "mix")]
    part = part[part["arm"] == arm]
    assert len(part) == 1, part
    return part.iloc[0]


def claim_rows(**kw):
    training, down, intrinsic, _, majority = records(**kw)
    return sc.claim_rows(training, down, intrinsic, majority)


def test_claims_reproduced_with_controls_passed():
    training, down, intrinsic, arms, majority = records()
    rows = sc.claim_rows(training, down, intrinsic, majority)
    for claim in (sc.SCORE, sc.ROBUST, sc.SOURCE):
        row = verdict_of(rows, claim)
        assert row["verdict"] == verdicts.REPRODUCED, (claim, row)
        assert all(c["passed"] and c["unit"] == "languages" and c["n"] == 4 for c in row["controls"])
        assert row["languages"] == 4 and abs(row["difference"]) == pytest.approx(0.03)
        assert row["at_majority"] == [] and set(row["majority"]) == {row["arm"], row["baseline"]}
    assert (rows.loc[rows["corpus"] == "shift", "verdict"] == "").all()  # the control corpus: not judged
    card = check_card(sc.scorecard(rows, sc.cost_rows(arms)))
    assert {r["testbed"] for r in card} == {sc.TESTBED}
    assert all(r["unit"] == "languages" for r in card)
    assert "(majority 0.500)" in card[0]["effect"]


def test_both_testbeds_declare_the_same_controls_for_a_claim():
    rows = claim_rows()
    for claim in (sc.SCORE, sc.ROBUST):
        names = [c["name"].split(":")[0] for c in verdict_of(rows, claim)["controls"]]
        assert names == list(claims.CLAIM_CONTROLS[claim])
    source = [c["name"].split(":")[0] for c in verdict_of(rows, sc.SOURCE)["controls"]]
    assert source == list(claims.CLAIM_CONTROLS[claims.EXACT_TABLE_CLAIM])


@pytest.mark.parametrize("bad, control", [
    ({"fn_rate": 0.05}, claims.FN_PRESENT),
    ({"clean": 0.3}, claims.LEARNS_CLEAN),
    ({"flag_gap": 0.01}, claims.TARGET_CHANGED),
    ({"scratch_b": -0.01}, claims.PRETRAINING_HELPS),
])
def test_a_failed_control_makes_every_verdict_insensitive(bad, control):
    assert verdict_of(claim_rows(diff=0.0, spread=0.001), sc.SCORE)["verdict"] == verdicts.EQUIVALENT
    for diff in (0.0, 0.03):  # a null, and an interval clear of zero: no exception
        row = verdict_of(claim_rows(diff=diff, spread=0.001, **bad), sc.SCORE)
        assert row["verdict"] == verdicts.INSENSITIVE, (bad, diff)
        assert [c["name"].split(":")[0] for c in row["controls"] if c["status"] == verdicts.FAILED] == [control]


def test_the_robustness_claim_needs_swaps_to_hurt_the_uncorrected_arm():
    row = verdict_of(claim_rows(drop=0.03), sc.ROBUST)  # under 2 x 0.02
    assert row["verdict"] == verdicts.INSENSITIVE
    assert [c["name"].split(":")[0] for c in row["controls"] if not c["passed"]] == [claims.SWAPS_HURT]


def test_pretraining_helps_needs_the_uncorrected_arm_above_its_majority_class():
    training, down, intrinsic, _, majority = records()
    majority[["a_d1", "b_d1", "a_d2"]] = 0.795  # within 0.02 of the uncorrected arm's A-D1
    row = verdict_of(sc.claim_rows(training, down, intrinsic, majority), sc.SCORE)
    assert row["verdict"] == verdicts.INSENSITIVE
    failed = [c for c in row["controls"] if not c["passed"]]
    assert [c["name"].split(":")[0] for c in failed] == [claims.ABOVE_MAJORITY]


def test_an_arm_at_its_majority_class_is_not_resolved_and_named():
    training, down, intrinsic, _, majority = records()
    down.loc[down["arm"] == "electra/shield", "a_d1"] = 0.51
    row = verdict_of(sc.claim_rows(training, down, intrinsic, majority), sc.SCORE)
    assert row["verdict"] == verdicts.NOT_RESOLVED and row["at_majority"] == ["electra/shield"]


def test_records_without_a_majority_baseline_stop_naming_the_claim():
    training, down, intrinsic, _, _ = records()
    with pytest.raises(verdicts.ControlError, match="better downstream score.*majority"):
        sc.claim_rows(training, down, intrinsic, pd.DataFrame())


def test_no_shift_corpus_leaves_its_control_not_measured():
    training, down, intrinsic, _, majority = records()
    row = verdict_of(sc.claim_rows(training, down, intrinsic[intrinsic["corpus"] == "mix"], majority), sc.SCORE)
    assert row["verdict"] == verdicts.NOT_MEASURED


def test_mlm_claims_have_no_discriminator_control_and_no_measured_target():
    row = verdict_of(claim_rows(arm="mlm/shield", clean=0.1), sc.SCORE, "mlm/shield")
    names = [c["name"].split(":")[0] for c in row["controls"]]
    assert claims.LEARNS_CLEAN not in names and row["verdict"] == verdicts.NOT_MEASURED


def test_a_wide_interval_is_not_resolved_and_names_the_languages_that_would_resolve_it():
    training, down, intrinsic, arms, majority = records(diff=0.01, spread=0.05)
    rows = sc.claim_rows(training, down, intrinsic, majority)
    row = verdict_of(rows, sc.SCORE)
    assert row["verdict"] == verdicts.NOT_RESOLVED and row["languages_to_resolve"] > 4
    card = sc.scorecard(rows, sc.cost_rows(arms))
    assert any("languages would resolve it" in r["effect"] for r in card)


def test_the_interval_is_over_language_blocks():
    diffs = pd.DataFrame({"language_seed": [0, 0, 1, 1, 2, 2], "pretrain_seed": [0, 1, 0, 1, 0, 1],
                          "difference": [0.1, 0.3, 0.0, 0.0, 0.5, 0.7]})
    ci = sc.blocked_interval(diffs)
    assert ci.n == 3 and ci.mean == pytest.approx(0.2667, abs=1e-3)  # means 0.2, 0.0, 0.6


def test_cost_rows_judge_the_targets():
    *_, arms, _ = records(languages=5)
    cost = sc.cost_rows(arms)
    row = cost[cost["arm"] == "electra/shield"].iloc[0]
    assert row["overhead"] == pytest.approx(0.02) and row["verdict"] == verdicts.REPRODUCED
    (timing,) = row["controls"]
    assert timing["unit"] == "languages" and timing["status"] == verdicts.PASSED


def test_no_records_give_not_measured_rows():
    empty = pd.DataFrame()
    rows = sc.claim_rows(empty, empty, empty, empty)
    card = check_card(sc.scorecard(rows, sc.cost_rows(empty)))
    assert all(r["verdict"] == verdicts.NOT_MEASURED for r in card)
    assert sc.control_values(empty, empty, empty).empty and sc.downstream_table(empty).empty
    assert sc.majority_baselines(empty).empty


def test_majority_baselines_regenerate_the_runs_test_sets():
    record = {"info": {"language_seed": 0, "pretrain_seed": 0},
              "setup": dataclasses.asdict(syn.LANGUAGES["tiny"]),
              # as a record holds it: every field (balanced sets: 0.5 everywhere)
              "finetune": {**configs.resolve(SyntheticFinetune, TINY_FT), "balanced": False}}
    (row,) = sc.majority_baselines(pd.DataFrame([record])).to_dict("records")
    lang = syn.make_language(syn.LanguageConfig(**record["setup"], seed=0))
    sets = tb.labelled_sets(lang, SyntheticFinetune(**TINY_FT, balanced=False), 0)
    labels = sets["B-D1"]["labels"].numpy()
    assert row["b_d1"] == pytest.approx(max(labels.mean(), 1 - labels.mean()))
    assert 0.5 <= row["a_d1"] <= 1 and row["language_seed"] == 0


def test_the_dose_lists_the_departures_from_the_paper_recipe():
    ours = [{"setup": {"temperature": 1.5, "lr": 0.002}, "corpus_arms": {}}]
    paper = [{"setup": {"temperature": 1.0, "lr": 0.002}, "corpus_arms": {}}]
    gone = claims.departures(ours, paper, sc.DEPARTURES)
    assert list(gone) == ["setup.temperature 1.5 (paper profile: 1.0)"]
    assert "share of false negatives" in gone["setup.temperature 1.5 (paper profile: 1.0)"]


def test_settings_and_controls_chosen_after_a_failed_control_are_named():
    assert list(sc.after_failure([{"setup": {"steps": 8000}}])) == ["setup.steps 8000"]
    assert sc.after_failure([{"setup": {"steps": 6000}}]) == {}
    assert any("loss share" in what for what in claims.REDECLARED)
