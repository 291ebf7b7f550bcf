"""Paper A's testbed: balanced labelled sets, the scratch baseline's init, the stronger baseline,
the pilot languages no recorded run may use, and the dose pilot run tiny."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from mlmlib.data import synthetic as syn
from mlmlib.papers.distributional import config as groups
from mlmlib.papers.distributional import dose_pilot
from mlmlib.papers.distributional import synthetic as dist
from mlmlib.papers.distributional import synthetic_claims as claims
from mlmlib.runs.plans import load_plan
from tests.test_distributional import TINY


def language(seed: int = 3) -> syn.Language:
    return syn.make_language(dist.Setup(**TINY).with_seeds(seed, 0).language_config())


# ---------------------------------------------------------------- balanced sets


def test_every_prefix_of_a_balanced_training_pool_is_balanced():
    lang = language()
    for size in (2, 7, 25, 64):
        _, labels = dist.training_set(lang, 64, 10, size, 0.0, seed=4)
        assert abs(int(labels.sum()) - size / 2) <= 0.5, size
    _, mixed = dist.training_set(lang, 64, 10, 40, 0.5, seed=4)  # 20 A-D1 and 20 B-D2: each balanced
    assert mixed[:20].sum() == 10 and mixed[20:].sum() == 10


def test_balanced_sets_keep_the_generators_labels():
    lang = language()
    sets = dist.test_sets(lang, list(syn.TEST_SETS), 30, 10, seed=3)
    assert list(sets) == list(syn.TEST_SETS)
    for name, (tokens, labels) in sets.items():
        assert labels.sum() == 15, name
        set_ids = tokens % lang.config.n_sets  # both alphabets name the same synonym sets
        assert np.array_equal(syn.label(set_ids, lang.patterns), labels), name


def test_unbalanced_sets_are_the_generators_own_draw():
    lang = language()
    tokens, labels = dist.test_sets(lang, ["A-D1"], 40, 10, seed=3, balanced=False)["A-D1"]
    own = syn.labelled_set(lang, "A-D1", 40, 10, seed=10_000 + 97 * 3)
    assert np.array_equal(tokens, own[0]) and np.array_equal(labels, own[1])


def test_alternating_classes_orders_each_class_in_draw_order():
    labels = np.array([0, 0, 0, 1, 0, 1, 1, 1])
    order = dist.alternating_classes(labels)
    assert labels[order].tolist() == [0, 1, 0, 1, 0, 1, 0, 1]
    assert order.tolist() == [0, 3, 1, 5, 2, 6, 4, 7]


# ---------------------------------------------------------------- the scratch baseline


def test_scratch_starts_from_the_weights_the_pretrained_models_started_from(work, monkeypatch):
    import mlmlib.pretrain

    setup = dist.Setup(**TINY, loss_threshold=100.0).with_seeds(2, 7)
    started = {}
    real = mlmlib.pretrain.pretrain

    def spy(model, *args, **kwargs):
        started.update({k: v.clone() for k, v in model.state_dict().items()})
        return real(model, *args, **kwargs)

    monkeypatch.setattr(mlmlib.pretrain, "pretrain", spy)
    dist.pretrain_mlm(setup, "mix", progress=False)
    scratch = dist.build_classifier("scratch", setup, seed=99).state_dict()
    encoder = [k for k in scratch if k.startswith(("bert.encoder.", "bert.embeddings."))]
    assert encoder and all(torch.equal(scratch[k], started[k]) for k in encoder)
    fresh = dist.build_classifier("scratch", setup, seed=99, scratch_init="fresh").state_dict()
    assert not all(torch.equal(fresh[k], started[k]) for k in encoder)
    with pytest.raises(ValueError, match="scratch_init must be one of"):
        dist.Sweep(scratch_init="zero")


def rows(diffs: dict[str, list[float]]) -> pd.DataFrame:
    """A3-like rows on one test set: WITH at 0.8 in three languages, each baseline below it by
    its `diffs`."""
    out = []
    for lang in range(3):
        out.append({"model": "with", "value": 0.8, "language_seed": lang, "prior": 0.5, "seed": 0})
        for model, gaps in diffs.items():
            out.append({"model": model, "value": 0.8 - gaps[lang], "language_seed": lang, "prior": 0.5,
                        "seed": 0})
    return pd.DataFrame(out)


def test_pretraining_helps_is_judged_against_the_stronger_baseline():
    table = rows({"scratch": [0.20, 0.22, 0.21], "shuffled": [0.01, -0.02, 0.00]})
    baseline, diff = claims.stronger_baseline(table)
    assert baseline == "shuffled" and diff.mean == pytest.approx(-0.01 / 3)
    control = claims.pretraining_helps(table, "A-D1", "claim", "languages")[0]
    assert "shuffled" in control["name"] and control["status"] == "failed"
    only = claims.pretraining_helps(table, "A-D1", "claim", "languages", baselines=("scratch",))[0]
    assert "scratch" in only["name"] and only["status"] == "passed"


# ---------------------------------------------------------------- pilot languages


def test_a_recorded_run_may_not_use_a_pilot_language():
    groups.check_recorded_language(groups.PILOT_LANGUAGES[0], recording=False)  # the pilot itself
    groups.check_recorded_language(1, recording=True)
    with pytest.raises(ValueError, match="parameter language_seed: language 300 is a pilot language"):
        groups.check_recorded_language(300, recording=True)


@pytest.mark.parametrize("profile", ["test", "smoke", "cpu", "paper"])
def test_no_plan_records_a_pilot_language(profile):
    plan = load_plan(profile)
    seen = [run.params.get("language_seed", 0) for run in plan.runs if run.notebook.startswith(("A2", "A3"))]
    assert seen and not set(seen) & set(groups.PILOT_LANGUAGES)


# ---------------------------------------------------------------- the dose pilot


def test_the_dose_pilot_runs_tiny(work):
    sweep = {"train_sizes": [4, 8], "pool_size": 8, "valid_size": 8, "test_size": 8, "length": 10,
             "max_steps": 4, "eval_every": 2, "patience": 1, "warmup_steps": 1}
    with pytest.raises(ValueError, match="language_seed=1: the dose pilot runs on the pilot languages"):
        dose_pilot.run_language(TINY, sweep, 1, 15, [1, 2])
    for doses in ([2, 1], [0, 1], [1, 1], []):
        with pytest.raises(ValueError, match="doses must be increasing ints >= 1"):
            dose_pilot.check_pilot(300, doses)
    rows, runs = dose_pilot.run_language({**TINY, "loss_threshold": 100.0}, sweep, 300, 15, [1, 2], log=None)
    assert [r["tokens_seen"] for r in runs] == [runs[0]["tokens_seen"], 2 * runs[0]["tokens_seen"]]
    assert {(r["dose"], r["model"]) for r in rows} == {(1, "scratch"), (1, "with"), (1, "shuffled"),
                                                       (2, "with"), (2, "shuffled")}
    assert {r["test_set"] for r in rows} == {"A-D1", "B-D1", "A-D2"}


def pilot_rows(gain: dict[int, float]) -> list[dict]:
    """Hand-made pilot rows: three languages, scratch and shuffled at 0.6 on every set and size,
    WITH at 0.6 + gain[dose] (+- 0.01 by language)."""
    rows = []
    for lang, wobble in zip((300, 301, 302), (-0.01, 0.0, 0.01)):
        for test_set in ("A-D1", "B-D1", "A-D2"):
            for size in (25, 100, 400):
                rows.append({"model": "scratch", "dose": 1, "language_seed": lang, "test_set": test_set,
                             "train_size": size, "accuracy": 0.6})
                for dose, g in gain.items():
                    rows += [{"model": m, "dose": dose, "language_seed": lang, "test_set": test_set,
                              "train_size": size, "accuracy": a}
                             for m, a in (("shuffled", 0.6), ("with", 0.6 + g + wobble))]
    return rows


def test_the_dose_table_finds_the_smallest_dose_that_beats_the_stronger_baseline():
    table = dose_pilot.by_dose(pilot_rows({1: 0.0, 3: 0.1, 9: 0.2}))
    assert set(table.measure) == {m for m, _, _ in dose_pilot.MEASURES} and table.languages.eq(3).all()
    at3 = table[(table.dose == 3) & table.stronger]
    assert at3["mean"].round(6).eq(0.1).all() and (at3.low > 0).all()
    assert dose_pilot.smallest_passing_dose(table) == 3
    assert "Smallest dose at which WITH beats the stronger baseline on every measure: 3x" in \
        dose_pilot.finding(table)
    none = dose_pilot.by_dose(pilot_rows({1: 0.0, 3: -0.1}))
    assert dose_pilot.smallest_passing_dose(none) is None
    assert dose_pilot.finding(none).startswith("At no dose piloted (1x, 3x)")
    for nothing in ([], "", pd.DataFrame()):  # no pilot named, or no records of it
        assert dose_pilot.finding(dose_pilot.by_dose(nothing)) == "no dose-pilot records"
