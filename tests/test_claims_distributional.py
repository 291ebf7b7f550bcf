"""Paper A's claims as code: verdicts from small hand-made records, in the one vocabulary of mlmlib.verdicts."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scorecards import check_card

from mlmlib import stats, verdicts
from mlmlib.papers.distributional import real_text_claims, synthetic_claims, synthetic_measures
from mlmlib.stats import Interval

SIZES = (100, 200, 400)
# Accuracy per (model, test set) at each training size, as the paper describes the models.
PAPER = {
    "with": {"A-D1": (0.80, 0.85, 0.90), "B-D1": 0.85, "A-D2": 0.75},
    "without": {"A-D1": (0.70, 0.78, 0.88), "B-D1": 0.60, "A-D2": 0.75},
    "scratch": {"A-D1": (0.60, 0.65, 0.70), "B-D1": 0.55, "A-D2": 0.60},
    "shuffled": {"A-D1": (0.60, 0.64, 0.69), "B-D1": 0.55, "A-D2": 0.60},
    "cbow": {"A-D1": (0.62, 0.67, 0.72), "B-D1": 0.65, "A-D2": 0.61},
}


def synthetic_rows(accuracy=PAPER, seeds=(0, 1, 2, 3, 4), fractions=(0.0,), noise=0.003, jitter=None,
                   prior=0.5):
    """A3's rows for the given seeds: accuracy per model and test set, a little seeded noise and
    jitter(model, seed); `prior`: every test set's majority-class accuracy."""
    rng = np.random.default_rng(0)
    rows = []
    for seed in seeds:
        for fraction in fractions:
            for model, tests in accuracy.items():
                for test_set, acc in tests.items():
                    for i, size in enumerate(SIZES):
                        base = (acc[i] if isinstance(acc, tuple) else acc) + (jitter(model, seed) if jitter else 0)
                        rows.append({"seed": seed, "model": model, "bd2_fraction": fraction, "train_size": size,
                                     "test_set": test_set, "accuracy": base + noise * rng.standard_normal(),
                                     "prior": prior})
    return pd.DataFrame(rows)


def pretraining(with_cosine=0.7, without_cosine=0.0, seeds=(0, 1, 2)):
    """A2's records: the synonym-pair cosine of each corpus' models (the control that WITH took)."""
    return pd.DataFrame([{"corpus": corpus, "seed": s,
                          "embedding_similarity": {"synonyms": cos, "random pairs": 0.0}}
                         for corpus, cos in (("mix", with_cosine), ("shift", without_cosine)) for s in seeds])


PRE = pretraining()


def claims_of(frame, pre=PRE, **kw):
    return synthetic_claims.claims(frame, pre, **kw)


def scorecard_of(frame, pre=PRE, **kw):
    return synthetic_claims.scorecard(frame, pre, **kw)


def differences_of(frame, pre=PRE, **kw):
    return synthetic_claims.differences(frame, pre, **kw)


def by_claim(table):
    """{the claim's words before the first colon or parenthesis: verdict}."""
    return {c.split(":")[0].split(" (")[0]: v for c, v in zip(table.claim, table.verdict)}


# ---------------------------------------------------------------- synthetic experiment


def test_learning_curve_statistics():
    sizes, accs = [100, 200, 400, 800], [0.6, 0.7, 0.8, 0.9]
    assert synthetic_measures.examples_needed(sizes, accs, 0.75) == pytest.approx(math.sqrt(200 * 400))
    assert synthetic_measures.examples_needed(sizes, accs, 0.5) == 100
    assert synthetic_measures.examples_needed(sizes, accs, 0.95) == math.inf
    assert synthetic_measures.learning_curve_area(sizes, accs) == pytest.approx(0.75)
    assert synthetic_measures.learning_curve_area([100], [0.6]) == pytest.approx(0.6)
    assert synthetic_measures.needed_text([100.0, math.inf, 200.0]) == "2/3 seeds reached it"
    assert "examples (n=3)" in synthetic_measures.needed_text([100.0, 110.0, 120.0])


def test_per_seed_and_paired_align_seeds():
    frame = synthetic_rows(seeds=(0, 1, 2))
    area = synthetic_measures.per_seed(frame, "A-D1", 0.0, synthetic_measures.learning_curve_area)
    assert len(area) == 3 * len(PAPER) and set(area.model) == set(PAPER)
    a, b, languages = synthetic_measures.paired(pd.concat([area[(area.model == "with") & (area.seed != 1)],
                                               area[area.model == "without"]]), "with", "without")
    assert len(a) == len(b) == 2 and (a > b).all() and list(languages) == [0, 0]


def test_claims_reproduced_when_the_runs_say_what_the_paper_says():
    table = claims_of(synthetic_rows(), margin=0.02)
    assert list(table.columns) == synthetic_claims.COLUMNS
    assert (table.seeds == 5).all()
    assert [c.split(":")[0] for c in table.claim] == [
        "B-D1 synonym transfer", "Sample efficiency",
        "D2 generalization not fully explained by the property (B-D2 fraction 0)", "Control", "Control"]
    assert (table.verdict == verdicts.REPRODUCED).all()


def test_claims_contradicted_when_the_runs_say_the_opposite():
    # WITH transfers less than WITHOUT (both above scratch and their majority class); on A-D2
    # pretraining helps only WITH the property (WITHOUT below scratch, above its majority class)
    flipped = {**PAPER, "with": {**PAPER["with"], "B-D1": 0.70},
               "without": {**PAPER["without"], "B-D1": 0.80, "A-D2": 0.55}}
    judged = by_claim(claims_of(synthetic_rows(flipped), margin=0.02))
    assert judged["B-D1 synonym transfer"] == verdicts.CONTRADICTED
    assert judged["D2 generalization not fully explained by the property"] == verdicts.CONTRADICTED
    slow = {**PAPER, "without": {**PAPER["without"], "A-D1": (0.85, 0.90, 0.95)}}  # WITHOUT learns A-D1 fastest
    assert by_claim(claims_of(synthetic_rows(slow)))["Sample efficiency"] == verdicts.CONTRADICTED


def test_claims_not_judged_with_too_few_seeds_or_overlapping_intervals():
    # two seeds: the pretraining-helps controls have no interval either, so every claim is not measured
    two = claims_of(synthetic_rows(seeds=(0, 1)))
    assert len(two) == 5 and (two.verdict == verdicts.NOT_MEASURED).all() and (two.seeds == 2).all()
    # WITH and WITHOUT alike, one ahead on even seeds and the other on odd ones: the intervals overlap
    alike = {**PAPER, "without": PAPER["with"]}

    def swing(model, seed):
        return {"with": 0.02, "without": -0.02}.get(model, 0.0) * (-1) ** seed

    judged = by_claim(claims_of(synthetic_rows(alike, jitter=swing)))
    assert judged["B-D1 synonym transfer"] == verdicts.NOT_RESOLVED
    assert judged["Sample efficiency"] == verdicts.NOT_RESOLVED


def test_d2_claim_is_without_above_scratch_judged_with_its_controls():
    # pretraining helps on A-D2 (WITH 0.15 above scratch) and WITHOUT keeps all of it: reproduced,
    # at every B-D2 fraction, with the property's share (WITH - WITHOUT) / (WITH - scratch) near 0
    rows = synthetic_rows(fractions=(0.0, 0.5))
    card = [r for r in check_card(scorecard_of(rows, margin=0.02)) if r["claim"].startswith("D2")]
    assert len(card) == 2 and card[1]["claim"].endswith("(B-D2 fraction 0.5)")
    assert all(r["verdict"] == verdicts.REPRODUCED and r["direction"] == "greater" for r in card)
    shares = [float(r["effect"].split("(WITH - WITHOUT) / (WITH - scratch) = ")[1]) for r in card]
    assert all(abs(x) < 0.1 for x in shares)
    assert card[0]["estimate"] == pytest.approx(0.15, abs=0.01)  # WITHOUT - scratch, the judged leg
    # WITHOUT level with scratch, WITH above both: the property explains all of it, within +-0.02
    explained = {**PAPER, "without": {**PAPER["without"], "A-D2": 0.60}}
    d2 = by_claim(claims_of(synthetic_rows(explained, noise=0.0), margin=0.02))
    assert d2["D2 generalization not fully explained by the property"] == verdicts.EQUIVALENT
    # nobody beats scratch on A-D2: no benefit to explain, so the same null says insensitive
    flat = {**explained, "with": {**PAPER["with"], "A-D2": 0.60}}
    table = claims_of(synthetic_rows(flat, noise=0.0), margin=0.02)
    assert by_claim(table)["D2 generalization not fully explained by the property"] == verdicts.INSENSITIVE
    effect = next(r for r in scorecard_of(synthetic_rows(flat, noise=0.0)) if r["claim"].startswith("D2"))
    assert "undefined: no benefit to share" in effect["effect"]
    assert any(not c["passed"] and c["kind"] == verdicts.EXISTS for c in effect["controls"])
    # pretraining hurts on A-D2, WITHOUT most: an interval below zero, but no benefit to explain, so
    # not "contradicted" either
    hurts = {**PAPER, "with": {**PAPER["with"], "A-D2": 0.55}, "without": {**PAPER["without"], "A-D2": 0.45}}
    assert by_claim(claims_of(synthetic_rows(hurts)))["D2 generalization not fully explained by the property"] \
        == verdicts.INSENSITIVE


def test_frozen_cbow_is_judged_on_its_own_row():
    # fine-tuned CBOW at scratch's level on B-D1, frozen CBOW well above it
    both = {**PAPER, "cbow": {**PAPER["cbow"], "B-D1": 0.55},
            "cbow-frozen": {"A-D1": (0.61, 0.66, 0.71), "B-D1": 0.75, "A-D2": 0.60}}
    table = claims_of(synthetic_rows(both, noise=0.0))
    cbow = table[table.claim.str.contains("CBOW")]
    # fine-tuned CBOW - scratch is inside the margin: the control shows no transfer, and says so
    assert list(cbow.verdict) == [verdicts.EQUIVALENT, verdicts.REPRODUCED]
    assert cbow.claim.iloc[1].startswith("Control: frozen CBOW embeddings")
    card = check_card(scorecard_of(synthetic_rows(both)))
    frozen = [r for r in card if r["claim"] == synthetic_claims.SYNTHETIC_CLAIMS["cbow"] + " (frozen embeddings)"]
    assert len(frozen) == 1 and frozen[0]["effect"].startswith("B-D1 accuracy: CBOW frozen 0.7")
    assert frozen[0]["verdict"] == verdicts.REPRODUCED


def test_comparisons_are_paired_over_seeds():
    # every arm of a seed shifted alike (a hard or easy fine-tuning sample): unpaired intervals of
    # WITH and scratch overlap, the paired differences do not move
    def shift(model, seed):
        return 0.15 * (seed - 2)

    frame = synthetic_rows(jitter=shift, prior=0.2)  # every arm above its majority class on every seed
    b = synthetic_measures.at_size(frame, "B-D1", 0.0)
    with_, scratch = stats.mean_ci(b[b.model == "with"].value), stats.mean_ci(b[b.model == "scratch"].value)
    assert with_.low < scratch.high  # apart only when paired
    assert synthetic_measures.paired_diff(b, "with", "scratch").low > 0.25
    assert (claims_of(frame, margin=0.02).verdict == verdicts.REPRODUCED).all()
    # a seed that one arm lacks is left out of its pair
    assert synthetic_measures.paired_diff(b[~((b.model == "with") & (b.seed == 4))], "with", "scratch").n == 4


def test_a_control_inside_the_margin_is_equivalent():
    # shuffled weights as good as WITH on A-D1 and B-D1: no benefit removed, within +-0.02
    same = {**PAPER, "shuffled": PAPER["with"]}
    def shuffled_verdict(table):
        return table[table.claim.str.contains("shuffling")].verdict.item()

    assert shuffled_verdict(claims_of(synthetic_rows(same, noise=0.0), margin=0.02)) == verdicts.EQUIVALENT
    # the same difference against a margin narrower than its interval: not resolved
    noisy = claims_of(synthetic_rows(same, noise=0.02), margin=0.01)
    assert shuffled_verdict(noisy) == verdicts.NOT_RESOLVED


def _diff(low, high, n=21):
    return Interval((low + high) / 2, low, high, n)


@pytest.mark.parametrize("parts, verdict", [
    ([(0.136, 0.189), (0.188, 0.236)], verdicts.REPRODUCED),            # both clear zero
    ([(0.001, 0.2), (-0.05, -0.001)], verdicts.CONTRADICTED),          # one below zero
    ([(-0.004, 0.027), (-0.009, 0.012)], verdicts.EQUIVALENT),         # one inside +-0.02, none below -0.02
    ([(0.05, 0.10), (-0.01, 0.01)], verdicts.EQUIVALENT),              # one reproduced, one equivalent
    ([(-0.03, 0.05), (-0.01, 0.01)], verdicts.NOT_RESOLVED),           # the other may lie below -0.02
    ([(-0.02, 0.05), (-0.01, 0.01)], verdicts.NOT_RESOLVED),           # -margin itself is not inside
    ([(-0.004, 0.027), (-0.010, 0.021)], verdicts.NOT_RESOLVED),       # neither inside +-0.02
    ([(-0.01, 0.01), (-0.01, 0.01)], verdicts.EQUIVALENT),             # as verdicts.combine: all equivalent
    ([(0.136, 0.189)], verdicts.REPRODUCED),                           # one difference: verdicts.verdict
])
def test_a_claim_needing_every_difference_is_judged_by_its_weakest(parts, verdict):
    diffs = {f"d{i}": _diff(low, high) for i, (low, high) in enumerate(parts)}
    assert synthetic_claims.all_above_zero(diffs, margin=0.02) == verdict
    if len(parts) == 1:
        assert verdict == verdicts.verdict(diffs["d0"], "greater", 0.02)


def test_the_weakest_difference_needs_its_seeds():
    assert synthetic_claims.all_above_zero({}, margin=0.02) == verdicts.NOT_RESOLVED
    few = {"a": _diff(0.1, 0.2), "b": _diff(0.1, 0.2, n=verdicts.MIN_SEEDS - 1)}
    assert synthetic_claims.all_above_zero(few, margin=0.02) == verdicts.NOT_RESOLVED
    nan = {"a": _diff(0.1, 0.2), "b": Interval(float("nan"), float("nan"), float("nan"), 0)}
    assert synthetic_claims.all_above_zero(nan, margin=0.02) == verdicts.NOT_MEASURED  # no interval


def test_sample_efficiency_is_with_above_without_in_curve_area_with_its_control():
    judged = by_claim(claims_of(synthetic_rows(), margin=0.02))
    assert judged["Sample efficiency"] == verdicts.REPRODUCED
    card = next(r for r in scorecard_of(synthetic_rows()) if r["claim"].startswith("Sample efficiency"))
    # the judged leg is WITH - WITHOUT in area; PAPER's curves differ by 0.10, 0.07, 0.02 at the
    # three sizes: trapezoids on log size (equal steps) give (0.10 + 2 * 0.07 + 0.02) / 4
    assert card["estimate"] == pytest.approx(0.065, abs=0.005)
    control = next(c for c in card["controls"] if c["kind"] == verdicts.EXISTS)
    assert control["passed"] and "smaller half of the sizes" in control["name"]
    assert control["measured"] > 0.15  # WITH - scratch at 100 and 200 examples: 0.20 each, its interval's low end


def test_sample_efficiency_insensitive_when_with_is_no_better_than_scratch_at_small_sizes():
    # WITH and WITHOUT level (inside +-0.02), and WITH no better than scratch at the small sizes:
    # there is no sample efficiency to explain (the effect-exists control fails): insensitive, not
    # equivalent
    level = {**PAPER, "without": PAPER["with"],
             "scratch": {**PAPER["scratch"], "A-D1": (0.80, 0.85, 0.80)}}
    def swing(model, seed):  # WITH a little ahead on even seeds, behind on odd ones
        return 0.005 * (-1) ** seed * (model == "with")

    rows = synthetic_rows(level, seeds=tuple(range(8)), noise=0.0, jitter=swing)
    assert by_claim(claims_of(rows, margin=0.02))["Sample efficiency"] == verdicts.INSENSITIVE
    # with the small-size benefit there, the same null is equivalent
    rows = synthetic_rows({**level, "scratch": PAPER["scratch"]}, seeds=tuple(range(8)), noise=0.0,
                          jitter=swing)
    assert by_claim(claims_of(rows, margin=0.02))["Sample efficiency"] == verdicts.EQUIVALENT


def test_small_sizes_accuracy_reads_the_smaller_half():
    assert synthetic_measures.small_sizes_accuracy([400, 100, 200], [0.9, 0.5, 0.7]) == pytest.approx(0.6)
    assert synthetic_measures.small_sizes_accuracy([25, 100, 400, 1600], [0.5, 0.6, 0.8, 0.9]) == pytest.approx(0.55)


def test_intervals_block_by_language():
    # two seeds in each of three languages; the languages differ far more than the seeds
    diffs = np.array([0.10, 0.12, 0.30, 0.32, 0.50, 0.52])
    languages = np.array([0, 0, 1, 1, 2, 2])
    ci = synthetic_measures.block_ci(diffs, languages)
    across = stats.mean_ci([0.11, 0.31, 0.51])
    assert ci.n == 3 and (ci.mean, ci.low, ci.high) == pytest.approx((across.mean, across.low, across.high))
    naive = stats.mean_ci(diffs)
    assert ci.high - ci.low > naive.high - naive.low  # the seeds of a language are not independent
    assert synthetic_measures.block_ci(diffs, np.zeros(6)).n == 6  # one language: across seeds
    # through the claims: rows of three languages, seeds 0-1 each, WITH's lead varying by language
    rows = pd.concat([synthetic_rows(seeds=(0, 1), jitter=lambda m, s, lang=lang: 0.02 * lang * (m == "with"))
                      .assign(language_seed=lang) for lang in (0, 1, 2)])
    b = synthetic_measures.at_size(rows, "B-D1", 0.0)
    assert synthetic_measures.paired_diff(b, "with", "scratch").n == 3
    assert (claims_of(rows).seeds == 3).all()
    assert synthetic_measures.blocks_text(rows).startswith("3 languages (seeds [0, 1, 2]), 2 pretraining seeds each")
    assert synthetic_measures.blocks_text(synthetic_rows()).startswith("one language (seed 0), 5 seeds")


def test_capped_runs_are_counted_once_per_run():
    rows = synthetic_rows(seeds=(0, 1)).assign(hit_cap=False)
    rows.loc[(rows.model == "scratch") & (rows.train_size == 400), "hit_cap"] = True
    counts = synthetic_measures.capped_runs(rows)
    runs = 2 * len(PAPER) * len(SIZES)
    assert counts == {"runs": runs, "capped": 2, "share": 2 / runs}
    assert synthetic_measures.capped_text(counts).startswith(f"2 of {runs} fine-tuning runs (7%) reached")
    assert synthetic_measures.capped_runs(synthetic_rows(seeds=(0,)))["capped"] is None  # not recorded


def test_differences_are_the_intervals_behind_the_verdicts():
    frame = synthetic_rows(fractions=(0.0, 0.5))
    diffs = differences_of(frame, margin=0.02)
    assert list(diffs.columns) == synthetic_claims.DIFFERENCE_COLUMNS
    # transfer 2, efficiency 1, D2 1 per fraction, shuffled 2, CBOW 1 (controls' differences aside)
    assert len(diffs) == 2 + 1 + 2 + 2 + 1 and (diffs.seeds == 5).all() and (diffs.delta == 0.02).all()
    d2 = diffs[diffs.claim.str.startswith("D2")]
    assert list(d2.direction) == ["greater"] * 2 and set(d2.difference) == {"WITHOUT - scratch"}
    assert set(diffs.claim) == {r["claim"] for r in scorecard_of(frame, margin=0.02)}
    b = synthetic_measures.at_size(frame, "B-D1", 0.0)
    row = diffs[diffs.difference == "CBOW - scratch"].iloc[0]
    assert row["mean"] == pytest.approx(synthetic_measures.paired_diff(b, "cbow", "scratch").mean)
    assert differences_of(pd.DataFrame()).empty


def test_claims_never_reproduced_without_measurements():
    assert claims_of(pd.DataFrame()).empty
    assert list(claims_of(pd.DataFrame()).columns) == synthetic_claims.COLUMNS
    only = synthetic_rows({"with": PAPER["with"], "scratch": PAPER["scratch"]})
    assert claims_of(only).empty  # every claim needs WITHOUT, shuffled or CBOW as well: left out
    one_seed = claims_of(synthetic_rows(seeds=(0,)))
    assert len(one_seed) and (one_seed.verdict == verdicts.NOT_MEASURED).all()  # controls without interval


# ---------------------------------------------------------------- real text


def test_low_correlation_verdict():
    assert real_text_claims.low_correlation_verdict(Interval(0.1, -0.1, 0.3, 100)) == verdicts.REPRODUCED
    assert real_text_claims.low_correlation_verdict(Interval(0.8, 0.7, 0.9, 100)) == verdicts.CONTRADICTED
    assert real_text_claims.low_correlation_verdict(Interval(-0.8, -0.9, -0.7, 100)) == verdicts.CONTRADICTED
    assert real_text_claims.low_correlation_verdict(Interval(0.2, -0.1, 0.6, 100)) == verdicts.NOT_RESOLVED  # overlaps
    assert real_text_claims.low_correlation_verdict(Interval(0.1, -0.1, 0.3, 10)) == verdicts.NOT_RESOLVED  # n < min_n
    assert real_text_claims.low_correlation_verdict(Interval(float("nan"), float("nan"), float("nan"), 100)) == verdicts.NOT_RESOLVED
    assert real_text_claims.low_correlation_verdict(Interval(0.1, -0.1, 0.3, 10), min_n=5) == verdicts.REPRODUCED


def test_correlation_table_per_model_and_template():
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    table = real_text_claims.correlation_table({"m": x}, {"same": x + 0.1 * rng.normal(size=200),
                                                "noise": rng.normal(size=200)}, n_boot=200)
    assert list(table.template) == ["same", "noise"] and (table.n == 200).all()
    assert list(table.verdict) == [verdicts.CONTRADICTED, verdicts.REPRODUCED]
    with pytest.raises(ValueError, match="at least one template"):
        real_text_claims.correlation_table({"m": x}, {})


def a5_record(run="r0", seed=0, n=120, correlated=(), val_accuracy=None, kinds=("word",), min_examples=30):
    """One A5 record: two checkpoints and a ratio model; the models in `correlated` track Delta-distribution."""
    rng = np.random.default_rng(seed)
    models = [{"model": "checkpoint 0.5", "group": "checkpoint", "value": 0.5},
              {"model": "checkpoint 1", "group": "checkpoint", "value": 1.0},
              {"model": "ratio 0.5", "group": "ratio", "value": 0.5}]
    for m in models:
        m["val_accuracy"] = (val_accuracy or {}).get(m["model"], 0.9)
    dd = rng.random(n)
    # a reproducible Delta-pred: what every model shares (the inputs' own sensitivity), unrelated to dd
    shared = rng.random(n)
    delta_pred = {m["model"]: (dd + 0.05 * rng.random(n) if m["model"] in correlated
                               else shared + 0.3 * rng.random(n)).tolist() for m in models}
    return {"run_id": run, "seed": seed, "task": "toy", "min_examples": min_examples, "models": models,
            "perturbations": [{"kind": kinds[i % len(kinds)]} for i in range(n)],
            "delta_pred": delta_pred, "delta_distribution": {"{x} [MASK]": dd.tolist()}}


def cells_of(*recs, **kw):
    return real_text_claims.correlation_cells(pd.DataFrame(list(recs)), n_boot=200, priors={"toy": 0.5}, **kw)


def three_seeds(**kw):
    """Three A5 records of the same design, fine-tuning seeds 0-2: the fewest a verdict needs."""
    return [a5_record(run=f"r{seed}", seed=seed, **kw) for seed in range(3)]


def card_of(*recs):
    """The real-text scorecard of hand-made A5 records, their controls read from the same records."""
    return real_text_claims.correlation_scorecard(cells_of(*recs), pd.DataFrame(list(recs)))


def test_correlation_cells_reproduced_and_contradicted():
    low = cells_of(*three_seeds())
    assert len(low) == 3 * 3 and list(low.columns) == real_text_claims.CELL_COLUMNS
    assert (low.verdict == verdicts.REPRODUCED).all() and low.judged.all() and not low.too_few.any()
    assert list(real_text_claims.kind_verdicts(low).verdict) == [verdicts.REPRODUCED]
    row = real_text_claims.correlation_claims(low).iloc[0]
    assert row.verdict == verdicts.REPRODUCED and row.seeds == 3 and "9 judged cells, 9 low" in row.measured
    assert "our thresholds (parameters; the paper states none)" in row.measured
    high = cells_of(*three_seeds()[:2], a5_record(run="r2", seed=2, correlated=("ratio 0.5",)))
    assert (high.verdict == verdicts.CONTRADICTED).sum() == 1
    assert list(real_text_claims.kind_verdicts(high).verdict) == [verdicts.CONTRADICTED]
    assert real_text_claims.correlation_claims(high).iloc[0].verdict == verdicts.CONTRADICTED


def test_fewer_than_three_seeds_give_no_verdict():
    two = real_text_claims.kind_verdicts(cells_of(*three_seeds()[:2])).iloc[0]
    assert two.verdict == verdicts.NOT_RESOLVED and two.cells == verdicts.REPRODUCED and two.seeds == 2
    (row,) = check_card(card_of(*three_seeds()[:1]))
    # one seed: the controls have no interval, so the row is not measured, and says why
    assert row["verdict"] == verdicts.NOT_MEASURED and row["seeds"] == 1 and row["unit"] == "seeds"
    assert "not resolved: one seed (the cells say reproduced; a verdict needs 3" in row["effect"]
    assert all(c["status"] == verdicts.UNMEASURED and c["n"] == 1 for c in row["controls"])


def test_small_cells_are_left_out_not_judged():
    # 20 pairs per kind < min_n = 30: every cell is too small, so no kind has a judged cell
    tracked = a5_record(n=40, kinds=("word", "short-phrase"), correlated=("checkpoint 1",), min_examples=10)
    cells = cells_of(tracked)
    assert sorted(set(cells.kind)) == ["short-phrase", "word"] and (cells.n == 20).all()
    assert (cells.verdict == real_text_claims.TOO_SMALL).all() and cells.too_few.all() and not cells.judged.any()
    by_kind = real_text_claims.kind_verdicts(cells)
    assert list(by_kind.verdict) == [verdicts.NOT_MEASURED] * 2 and list(by_kind.too_small) == [3, 3]
    assert "left out: 3 cells with too few perturbed inputs" in real_text_claims.correlation_claims(cells).iloc[0].measured
    fewer = cells_of(tracked, min_n=10)
    assert (fewer[fewer.model == "checkpoint 1"].verdict == verdicts.CONTRADICTED).all()
    below_run_minimum = cells_of(a5_record(n=120, min_examples=200))  # 120 pairs, but the run asked for 200
    assert below_run_minimum.too_few.all() and (below_run_minimum.verdict == real_text_claims.TOO_SMALL).all()


def test_one_verdict_per_task_and_kind():
    """A small cell no longer decides a verdict, and one kind's contradiction does not flip the other kind."""
    rng = np.random.default_rng(5)
    long = np.arange(240) % 2 == 1
    recs = three_seeds(n=240, kinds=("word", "long-phrase"), min_examples=30)
    for rec in recs:
        # long-phrase: every model tracks Delta-distribution (contradicted, and reproducible); word stays low
        dd = np.asarray(rec["delta_distribution"]["{x} [MASK]"])
        for model, values in rec["delta_pred"].items():
            rec["delta_pred"][model] = np.where(long, dd + 0.05 * rng.random(240), values).tolist()
    small = a5_record(run="r9", seed=1, n=20, correlated=("checkpoint 1",), min_examples=5)
    small["task"] = "other"
    records = pd.DataFrame([*recs, small])
    cells = real_text_claims.correlation_cells(records, n_boot=200, priors={"toy": 0.5, "other": 0.5})
    by_kind = real_text_claims.kind_verdicts(cells).set_index(["task", "kind"])
    assert by_kind.loc[("toy", "word"), "verdict"] == verdicts.REPRODUCED
    assert by_kind.loc[("toy", "long-phrase"), "verdict"] == verdicts.CONTRADICTED
    assert by_kind.loc[("other", "word"), "verdict"] == verdicts.NOT_MEASURED  # 20 pairs: left out, not judged
    assert by_kind.loc[("other", "word"), "too_small"] == 3 and by_kind.loc[("other", "word"), "judged"] == 0
    card = check_card(real_text_claims.correlation_scorecard(cells, records))
    assert [r["verdict"] for r in card] == [verdicts.NOT_MEASURED, verdicts.CONTRADICTED, verdicts.REPRODUCED]
    assert card[2]["claim"] == f"{real_text_claims.REAL_CLAIM}: toy, word perturbations"
    assert list(real_text_claims.correlation_claims(cells).verdict) == [r["verdict"] for r in card]


def test_paper_r_column(monkeypatch):
    cells = cells_of(a5_record())
    assert cells.paper_r.isna().all()  # the note reports no r: the column stays blank
    monkeypatch.setitem(real_text_claims.PAPER_R, ("toy", "word", "{x} [MASK]"), 0.12)
    assert (cells_of(a5_record()).paper_r == 0.12).all()


def test_models_at_chance_are_left_out():
    # the correlated model has not learned (0.515 is not above 0.5 + LEARNED_MARGIN): its cell is excluded
    rec = a5_record(correlated=("ratio 0.5",), val_accuracy={"ratio 0.5": 0.515, "checkpoint 1": 0.53})
    cells = cells_of(rec).set_index("model")
    assert not cells.loc["ratio 0.5", "learned"] and cells.loc["ratio 0.5", "verdict"] == real_text_claims.EXCLUDED
    assert cells.loc["checkpoint 1", "learned"]
    assert list(real_text_claims.kind_verdicts(cells.reset_index()).cells) == [verdicts.REPRODUCED]
    assert "not above the majority class on validation: ratio 0.5" in \
        real_text_claims.correlation_claims(cells.reset_index()).iloc[0].measured
    # a stricter margin leaves out checkpoint 1 (0.53) as well
    assert cells_of(rec, margin=0.05).learned.sum() == 1


def test_no_judged_cell_is_never_reproduced():
    chance = {m: 0.5 for m in ("checkpoint 0.5", "checkpoint 1", "ratio 0.5")}
    cells = cells_of(a5_record(val_accuracy=chance))
    assert not cells.learned.any() and (cells.verdict == real_text_claims.EXCLUDED).all()
    assert list(real_text_claims.kind_verdicts(cells).verdict) == [verdicts.NOT_MEASURED]
    empty = real_text_claims.correlation_cells(pd.DataFrame())
    assert empty.empty and real_text_claims.kind_verdicts(empty).empty
    row = real_text_claims.correlation_claims(empty).iloc[0]
    assert row.verdict == verdicts.NOT_MEASURED and row.seeds == 0 and row.interval == "no judged cell"
    assert real_text_claims.final_checkpoint_points(pd.DataFrame()).empty


def test_priors_default_to_the_validation_majority_class(monkeypatch):
    import mlmlib.data

    monkeypatch.setattr(mlmlib.data, "load_task", lambda task: {"validation": {"label": [0, 0, 0, 1]}})
    assert real_text_claims.validation_prior("toy") == 0.75
    # 0.9 on validation is above 0.75 + margin, 0.76 is not
    cells = real_text_claims.correlation_cells(pd.DataFrame([a5_record(val_accuracy={"ratio 0.5": 0.76})]), n_boot=50)
    assert dict(zip(cells.model, cells.learned)) == {"checkpoint 0.5": True, "checkpoint 1": True, "ratio 0.5": False}


def test_final_checkpoint_points():
    rec = a5_record(n=10, kinds=("word", "long-phrase"))
    points = real_text_claims.final_checkpoint_points(pd.DataFrame([rec]))
    assert len(points) == 10 and set(points.kind) == {"word", "long-phrase"}
    word = points[points.kind == "word"]
    assert np.allclose(word["Delta-pred"], np.asarray(rec["delta_pred"]["checkpoint 1"])[::2])
    assert np.allclose(word["Delta-distribution"], np.asarray(rec["delta_distribution"]["{x} [MASK]"])[::2])
    rec["delta_distribution"]["by tag"] = [float("nan")] * 4 + [0.5] * 6  # no tag-matched template for 4
    assert len(real_text_claims.final_checkpoint_points(pd.DataFrame([rec]))) == 10 + 6


# ---------------------------------------------------------------- scorecards


def test_scorecard_matches_the_claim_table():
    frame = synthetic_rows(fractions=(0.0, 0.5))
    card = check_card(scorecard_of(frame, margin=0.02))
    table = claims_of(frame, margin=0.02)
    assert [r["verdict"] for r in card] == list(table.verdict)
    assert [r["seeds"] for r in card] == list(table.seeds) == [5] * 6
    first = card[0]
    assert first["claim"] == synthetic_claims.SYNTHETIC_CLAIMS["transfer"]
    assert all(r["delta"] == 0.02 for r in card)  # every claim carries the margin it is judged with
    assert first["effect"].startswith("B-D1 accuracy: WITH 0.85") and "[" in first["effect"]
    d2 = [r for r in card if r["claim"].startswith("D2")]
    assert [r["claim"].endswith(f"(B-D2 fraction {f})") for r, f in zip(d2, ("0", "0.5"))] == [True, True]
    assert all(r["delta"] == 0.02 and r["effect"].startswith("A-D2 accuracy: WITHOUT - scratch = ") for r in d2)


def test_scorecard_wording_does_not_depend_on_the_parameters():
    frame = synthetic_rows()
    assert [r["claim"] for r in scorecard_of(frame, margin=0.02, target=0.8)] == \
        [r["claim"] for r in scorecard_of(frame, margin=0.05, target=0.7)]


def test_scorecard_says_why_a_claim_is_not_judged():
    one = check_card(scorecard_of(synthetic_rows(seeds=(0,))))
    # one seed: no interval for the differences nor for the controls, so not measured
    assert all(r["verdict"] == verdicts.NOT_MEASURED and r["seeds"] == 1 for r in one)
    assert all("one seed: no interval" in r["effect"] and "not judged: 1 seed" in r["effect"] for r in one)
    nothing = check_card(scorecard_of(pd.DataFrame()))
    assert [r["claim"] for r in nothing] == list(synthetic_claims.SYNTHETIC_CLAIMS.values())
    assert all(r["verdict"] == verdicts.NOT_MEASURED and r["effect"].startswith("not measured") for r in nothing)
    partial = check_card(scorecard_of(synthetic_rows({"with": PAPER["with"], "cbow": PAPER["cbow"],
                                                          "scratch": PAPER["scratch"]})))
    assert len(partial) == len(synthetic_claims.SYNTHETIC_CLAIMS)  # every claim has a row, measured or not
    assert partial[-1]["verdict"] == verdicts.REPRODUCED and partial[0]["effect"].startswith("not measured")


def test_scorecard_table_has_readable_columns():
    table = synthetic_claims.scorecard_table(scorecard_of(synthetic_rows()))
    assert list(table.columns) == ["Claim", "Verdict", "Controls", "Effect [95% CI]", "Blocks",
                                   "Dose (ours / paper profile)", "Margin"]
    assert list(synthetic_claims.scorecard_table([])) == ["Claim", "Verdict", "Controls", "Effect [95% CI]",
                                                          "Blocks", "Dose (ours / paper profile)"]


def test_ci_text_explains_a_zero_width_interval():
    assert synthetic_claims.ci_text(Interval(0.5, 0.5, 0.5, 1)) == "0.500 (one seed: no interval)"
    assert synthetic_claims.ci_text(Interval(0.5, 0.5, 0.5, 3)) == "0.500 [0.500, 0.500] (all 3 seeds equal: zero width)"
    assert synthetic_claims.ci_text(Interval(0.5, 0.4, 0.6, 3)) == "0.500 [0.400, 0.600]"
    assert synthetic_claims.interval_text(0.5, 0.5, 0.5, 1, "repetition") == "0.500 (one repetition: no interval)"
    assert synthetic_claims.interval_text(float("nan"), float("nan"), float("nan"), 0) == "not measured"
    assert synthetic_claims.ci_text(Interval(0.5, 0.5, 0.5, 1), explain=False) == "0.500"
    assert synthetic_measures.needed_text([16.0, 16.0]) == "16.000 [16.000, 16.000] examples (n=2, all equal: zero width)"
    assert synthetic_measures.needed_text([16.0]) == "16.000 [16.000, 16.000] examples (n=1, one seed: no interval)"


def test_scorecard_says_once_why_its_intervals_have_zero_width():
    card = check_card(scorecard_of(synthetic_rows(seeds=(0, 1, 2), noise=0.0)))
    transfer = card[0]
    assert transfer["effect"].count("[0.850, 0.850]") == 1 and transfer["seeds"] == 3
    assert transfer["effect"].endswith("; an interval of zero width: its seeds gave equal values")
    assert "not judged" not in transfer["effect"]


def test_correlation_scorecard():
    low = check_card(card_of(*three_seeds()))
    (row,) = low
    assert row["claim"] == f"{real_text_claims.REAL_CLAIM}: toy, word perturbations" and row["verdict"] == verdicts.REPRODUCED
    assert row["seeds"] == 3 and row["delta"] == 0.3 and "9 of 9 judged cells low" in row["effect"]
    assert row["effect"].startswith("largest |r|: r = ") and "our thresholds" in row["effect"]
    assert row["scale"] == "correlation r" and all(c["status"] == verdicts.PASSED and c["n"] == 3
                                                   for c in row["controls"])
    # every model tracks Delta-distribution: reproducible, and not low
    high = card_of(*three_seeds(correlated=("checkpoint 0.5", "checkpoint 1", "ratio 0.5")))
    assert high[0]["verdict"] == verdicts.CONTRADICTED
    # one model tracks it, the others do not agree with it: Delta-pred is not reproducible
    lone = card_of(*three_seeds(correlated=("ratio 0.5",)))
    assert lone[0]["verdict"] == verdicts.INSENSITIVE and "ratio 0.5" in lone[0]["effect"]
    chance = {m: 0.5 for m in ("checkpoint 0.5", "checkpoint 1", "ratio 0.5")}
    # no model learned: no judged cell, and no learned model for the controls either
    (unjudged,) = check_card(card_of(*three_seeds(val_accuracy=chance)))
    assert unjudged["verdict"] == verdicts.NOT_MEASURED and "not above the majority class" in unjudged["effect"]
    (empty,) = check_card(real_text_claims.correlation_scorecard(real_text_claims.correlation_cells(pd.DataFrame())))
    assert empty["verdict"] == verdicts.NOT_MEASURED and empty["effect"].startswith("not measured")
    few = card_of(*three_seeds(n=40, kinds=("word", "short-phrase"), min_examples=25))
    assert [r["verdict"] for r in few] == [verdicts.NOT_MEASURED] * 2
    assert all("9 cells with too few perturbed inputs (fewer than 30 pairs" in r["effect"] for r in few)


# ---------------------------------------------------------------- positive controls


def test_without_a_benefit_to_explain_sample_efficiency_is_insensitive():
    flat = {**PAPER, "with": {**PAPER["with"], "A-D1": PAPER["scratch"]["A-D1"]},
            "without": {**PAPER["without"], "A-D1": PAPER["scratch"]["A-D1"]}}
    def swing(model, seed):  # WITH a little ahead on even seeds, behind on odd ones: a null
        return 0.005 * (-1) ** seed * (model == "with")

    rows = synthetic_rows(flat, noise=0.0, jitter=swing, seeds=tuple(range(6)))
    card = {r["claim"].split(":")[0]: r for r in check_card(scorecard_of(rows))}
    row = card["Sample efficiency (A-D1)"]
    assert row["verdict"] == verdicts.INSENSITIVE
    assert "WITH - scratch" in verdicts.controls_note(row["verdict"], row["controls"])


@pytest.mark.parametrize("gap, passed", [(0.101, True), (0.099, False)])
def test_the_synonyms_closer_control_at_its_edge(gap, passed):
    (control,) = [synthetic_claims.synonyms_closer(pretraining(0.5 + gap, 0.5), "claim")]
    assert control["passed"] is passed and control["kind"] == verdicts.TOOK


def test_a_with_corpus_that_did_not_make_synonyms_close_flags_every_claim():
    card = check_card(scorecard_of(synthetic_rows(), pretraining(0.05, 0.0)))
    judged = [r for r in card if r["controls"]]
    assert judged and all(any(not c["passed"] for c in r["controls"]) for r in judged)
    # a failed control gives insensitive, whatever the interval says
    assert {r["verdict"] for r in judged} == {verdicts.INSENSITIVE}


def test_the_controls_need_the_pretraining_records():
    with pytest.raises(verdicts.ControlError, match="embedding_similarity"):
        claims_of(synthetic_rows(), None)


def test_a_low_correlation_of_noise_is_insensitive():
    noise = three_seeds()
    rng = np.random.default_rng(9)
    for rec in noise:
        rec["delta_pred"] = {m: rng.random(120).tolist() for m in rec["delta_pred"]}  # nothing reproducible
    (row,) = check_card(card_of(*noise))
    assert row["verdict"] == verdicts.INSENSITIVE and "reproducible" in verdicts.controls_note(row["verdict"], row["controls"])
    still = three_seeds()
    for rec in still:
        rec["delta_pred"] = {m: [0.001] * 120 for m in rec["delta_pred"]}  # perturbations move nothing
    controls = real_text_claims.correlation_controls(pd.DataFrame(still), "toy", "word", "claim")
    assert controls[0]["status"] == verdicts.FAILED and controls[0]["unit"] == "seeds"


def test_the_reliability_control_never_pairs_a_model_with_itself_nor_an_unlearned_one():
    # ratio 1 is checkpoint 1 saved twice; ratio 0.5 did not learn and tracks nothing the others do
    recs = three_seeds(val_accuracy={"ratio 0.5": 0.5})
    rng = np.random.default_rng(3)
    for rec in recs:
        rec["models"].append({"model": "ratio 1", "group": "ratio", "value": 1.0, "val_accuracy": 0.9})
        rec["delta_pred"]["ratio 1"] = list(rec["delta_pred"]["checkpoint 1"])
        rec["delta_pred"]["checkpoint 0.5"] = rng.random(120).tolist()  # unrelated to checkpoint 1
        rec["delta_pred"]["ratio 0.5"] = (np.asarray(rec["delta_pred"]["checkpoint 1"])
                                          + 0.01 * rng.random(120)).tolist()  # would lift the median
    assert real_text_claims.distinct_models(
        {m: np.asarray(v) for m, v in recs[0]["delta_pred"].items()}) == ["checkpoint 0.5", "checkpoint 1",
                                                                          "ratio 0.5"]
    cells = cells_of(*recs)
    values = real_text_claims.control_values(pd.DataFrame(recs), "toy", "word",
                                             {(r.run, r.model): r.learned for r in cells.itertuples()})
    assert list(values.pairs) == [1, 1, 1] and (values.reliable.abs() < 0.3).all()  # one honest pair each
    (row,) = check_card(real_text_claims.correlation_scorecard(cells, pd.DataFrame(recs)))
    assert row["verdict"] == verdicts.INSENSITIVE
    # counting every name as a model (the self-pair and the unlearned model in) would have passed it
    preds = [pd.Series(v) for v in recs[0]["delta_pred"].values()]
    naive = np.median([a.corr(b) for i, a in enumerate(preds) for b in preds[i + 1:]])
    assert naive > real_text_claims.RELIABLE_MIN


# ---------------------------------------------------------------- the summary pages' helpers


def test_pretraining_tokens_read_the_setup_group_or_flat_records():
    flat = {"steps": 10, "batch_size": 4, "max_len": 8}
    assert synthetic_claims.pretraining_tokens(flat) == 320
    assert synthetic_claims.pretraining_tokens({"setup": {"steps": 10, "batch_size": 4, "max_len": 8}}) == 320
    assert synthetic_claims.pretraining_tokens({"setup": {}}) == 1000 * 64 * 64  # Setup's defaults
    assert "tokens of pretraining" in synthetic_claims.dose_text([flat], [{"setup": {"steps": 20}}])


def test_base_model_name_reads_the_base_group_or_flat_records():
    assert real_text_claims.base_model_name({"base": {"name": "minilm-l6"}}) == "minilm-l6"
    assert real_text_claims.base_model_name({"base": {}}) == "embedded"
    assert real_text_claims.base_model_name({"base_model": "bert-base-uncased"}) == "bert-base-uncased"
    records = pd.DataFrame([{"base": float("nan"), "base_model": "minilm-l6"}])  # an older record
    assert real_text_claims.dose_text(records, [{"base": {"name": "bert-base-uncased"}}]) == \
        "minilm-l6 / bert-base-uncased"
    assert real_text_claims.dose_text(records, []) == "minilm-l6 / -"


def test_summary_tables_of_the_synthetic_runs():
    rows = synthetic_rows()
    mixed = rows[(rows.bd2_fraction == 0.0) & (rows.train_size == rows.train_size.max())].assign(bd2_fraction=0.5)
    frame = pd.concat([rows, mixed], ignore_index=True)
    assert synthetic_claims.curve_fractions(frame) == [0.0]  # the mixture ran at one size only
    largest = synthetic_claims.at_largest_size(frame)
    assert set(largest.train_size) == {rows.train_size.max()} and set(largest.bd2_fraction) == {0.0, 0.5}
    assert synthetic_claims.test_sets_run(frame) == [t for t in ("A-D1", "B-D1", "A-D2", "B-D2")
                                                      if t in set(rows.test_set)]
    labels = {"with": "WITH (mix)"}
    efficiency = synthetic_claims.efficiency_table(rows, 0.8, labels)
    assert "WITH (mix)" in efficiency.index and efficiency.shape[1] == 2
    design = synthetic_claims.design_table(rows, PRE, margin=0.02, target=0.8)
    assert list(design.columns)[3] == "difference [95% CI]" and len(design) == len(
        synthetic_claims.differences(rows, PRE, margin=0.02, target=0.8))


def test_seeds_text_says_whether_the_intervals_cover_pretraining():
    own = pd.DataFrame({"seed": [15, 16, 17], "pretrain_seed": [15, 16, 17]})
    assert "cover pretraining" in synthetic_claims.seeds_text(own)
    shared = pd.DataFrame({"seed": [0, 1, 2], "pretrain_seed": [0, 0, 0]})
    assert "fine-tuning noise only" in synthetic_claims.seeds_text(shared)
    assert "[0]" in synthetic_claims.seeds_text(pd.DataFrame({"seed": [0, 1]}))  # before the column


def test_pretraining_table_shows_what_varies():
    pre = pd.DataFrame([{"corpus": "mix", "seed": 0, "final_loss": 1.23456, "loss_threshold": 2.5},
                        {"corpus": "shift", "seed": 0, "final_loss": 2.0, "loss_threshold": 2.5}])
    table = synthetic_claims.pretraining_table(pre)
    assert list(table.index) == ["mix", "shift"] and table.loc["mix", "final MLM loss"] == 1.235
    assert synthetic_claims.pretraining_table(pd.DataFrame()).empty


def test_figures_draw_one_panel_per_test_set_and_template():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mlmlib.papers.distributional import figures

    rows = synthetic_rows().assign(prior=0.6, label=lambda f: f.model)
    fig = figures.learning_curves(rows, ["A-D1", "B-D1"], title="{test_set}!")
    assert [ax.get_title() for ax in fig.axes] == ["A-D1!", "B-D1!"]
    assert fig.axes[0].get_legend() is None and fig.axes[1].get_legend() is not None
    assert any(list(line.get_ydata()) == [0.6, 0.6] for line in fig.axes[0].lines)  # the class prior
    fig = figures.mixture_bars(rows.assign(bd2_fraction=0.5), ["A-D2"])
    assert len(fig.axes) == 1
    points = pd.DataFrame({"Delta-pred": [0.1, 0.2, 0.3, 0.4], "Delta-distribution": [0.3, 0.1, 0.4, 0.2],
                           "template": ["t1", "t1", "t2", "t2"], "kind": "word", "run": "r"})
    cells = pd.DataFrame({"template": ["t1", "t1", "t2"], "group": "checkpoint", "value": [0.5, 1.0, 1.0],
                          "r": [0.9, 0.1, 0.2], "r_low": [0.0, -0.1, 0.0], "r_high": [1.0, 0.3, 0.4],
                          "task": "sst2", "kind": "word"})
    fig = figures.delta_scatters(points, cells, columns=3)
    assert fig.axes[0].get_title() == "t1\nr = 0.10 [-0.10, 0.30]"  # the last checkpoint's r
    assert not fig.axes[2].axison  # no third template: the panel is blank
    fig = figures.correlation_trends(cells, r_low=0.3)
    assert len(fig.axes) == 2 and len(fig.axes[0].lines) >= 1
    plt.close("all")


# ---------------------------------------------------------------- controls on intervals, the majority class


def test_synonyms_closer_is_an_interval_over_languages():
    # three languages, two pretraining seeds each: one language's gap is small
    pre = pd.concat([pretraining(0.5 + gap, 0.5, seeds=(0, 1)).assign(language_seed=lang)
                     for lang, gap in ((1, 0.6), (2, 0.6), (3, 0.6))])
    control = synthetic_claims.synonyms_closer(pre, "claim")
    assert control["unit"] == "languages" and control["n"] == 3 and control["status"] == verdicts.PASSED
    assert control["judged_on"] == pytest.approx(0.6) and control["source"] == "principle"
    uneven = pd.concat([pretraining(0.5 + gap, 0.5, seeds=(0, 1)).assign(language_seed=lang)
                        for lang, gap in ((1, 0.6), (2, 0.3), (3, 0.0))])
    control = synthetic_claims.synonyms_closer(uneven, "claim")
    # mean 0.3 is above 0.1, but the interval's low end is not
    assert control["measured"] == pytest.approx(0.3) and control["low"] < 0.1
    assert control["status"] == verdicts.FAILED
    two = synthetic_claims.synonyms_closer(pretraining(0.9, 0.0, seeds=(0, 1)), "claim")
    assert two["unit"] == "seeds" and two["status"] == verdicts.UNMEASURED


def test_pretraining_helps_needs_with_above_its_majority_class():
    # WITH 0.85 on B-D1 and above scratch, but its test set's majority class is 0.84
    rows = synthetic_rows()
    rows.loc[rows.test_set == "B-D1", "prior"] = 0.84
    transfer = check_card(scorecard_of(rows))[0]
    assert transfer["verdict"] == verdicts.INSENSITIVE
    (failed,) = verdicts.failed_controls(transfer["controls"])
    assert failed["name"].startswith("pretraining helps: WITH - its majority class on B-D1")
    assert failed["judged_on"] == pytest.approx(0.01, abs=0.005) and failed["unit"] == "seeds"
    # the paired interval itself is the other half of the control, judged on its low end
    benefit = next(c for c in transfer["controls"] if c["name"].startswith("pretraining helps: WITH - scratch"))
    assert benefit["status"] == verdicts.PASSED and benefit["judged_on"] == pytest.approx(transfer["controls"][1]["low"])


def test_an_arm_at_its_majority_class_is_not_judged():
    # scratch at 0.55 on B-D1 where the majority class scores 0.54: WITH's lead over it is not judged
    rows = synthetic_rows()
    rows.loc[rows.test_set == "B-D1", "prior"] = 0.54
    card = {r["claim"]: r for r in check_card(scorecard_of(rows))}
    transfer = card[synthetic_claims.SYNTHETIC_CLAIMS["transfer"]]
    assert transfer["verdict"] == verdicts.NOT_RESOLVED and transfer["at_majority"] == ["scratch"]
    assert "scratch 0.55" in transfer["effect"] and "(majority 0.540)" in transfer["effect"]
    assert transfer["majority"]["WITH"] == {"accuracy": pytest.approx(0.85, abs=0.01), "majority": 0.54}
    assert card[synthetic_claims.SYNTHETIC_CLAIMS["cbow"]]["at_majority"] == ["scratch"]


def test_every_accuracy_row_needs_its_majority_class():
    with pytest.raises(verdicts.ControlError, match="rows.prior"):
        scorecard_of(synthetic_rows().drop(columns="prior"))


def test_a_failed_control_makes_a_clear_difference_insensitive_too():
    # shuffled far below WITH on both test sets (a clear interval), but WITH no better than scratch
    # on A-D1 at the small sizes: the shuffled control's pretraining-helps control fails
    rows = synthetic_rows({**PAPER, "scratch": {**PAPER["scratch"], "A-D1": (0.80, 0.85, 0.90)},
                           "shuffled": {**PAPER["shuffled"], "A-D1": (0.55, 0.56, 0.57)}})
    shuffled = next(r for r in check_card(scorecard_of(rows)) if "shuffling" in r["claim"])
    assert shuffled["low"] > 0 and shuffled["verdict"] == verdicts.INSENSITIVE


def test_the_dose_counts_tokens_seen():
    ours = [{"tokens_seen": 2_112_000, "setup": {"steps": 1000, "batch_size": 64, "max_len": 64}}]
    paper = [{"setup": {"steps": 2000, "batch_size": 64, "max_len": 64}}]
    text = synthetic_claims.dose_text(ours, paper)
    assert text.startswith("2,112,000 / 8,192,000 tokens of pretraining") and "tokens seen" in text
    old = synthetic_claims.dose_text([{"setup": {"steps": 1000, "batch_size": 64, "max_len": 64}}], paper)
    assert old.startswith("4,096,000 / 8,192,000") and "a record lacks tokens_seen" in old
    faster = [{**ours[0], "setup": {**ours[0]["setup"], "lr": 0.5}}]
    assert "; departs from the paper: MLM lr 0.5 (paper: " in synthetic_claims.dose_text(faster, paper)
