"""Paper C's claims on small hand-made record rows: paired verdicts, the learned gate, the conclusion."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scorecards import check_card

from mlmlib import verdicts
from mlmlib.papers.selective_masking import claims

PRIORS = {"t": 0.5}


def arm(name, accuracies, word_list="-", labels="few", task="t", f1=None):
    """Record rows of one arm, one per seed (seeds 0, 1, ...)."""
    return [{"task": task, "arm": name, "word_list": word_list, "labels": labels, "seed": seed,
             "accuracy": acc, "f1": acc if f1 is None else f1[seed]}
            for seed, acc in enumerate(accuracies)]


RANDOM = arm("random", [0.70, 0.72, 0.74, 0.71])


def composition_for(rows, ratio=2.0, reference="random"):
    """C1's masked composition for every (task, word list, arm) of `rows`: the selective arms mask
    list words `ratio` times as often as `reference` (the control passes at the default)."""
    out = []
    for task, word_list, name in {(r["task"], r["word_list"], r["arm"]) for r in rows}:
        if word_list != "-":
            out += [{"task": task, "word_list": word_list, "arm": name, "list_share": 0.1 * ratio},
                    {"task": task, "word_list": word_list, "arm": reference, "list_share": 0.1}]
    return pd.DataFrame(out).drop_duplicates()


def dose_rows_for(rows, ratio=2.0, drop=0.5, reference_share=0.1, reference="random"):
    """C2's dose rows (doses 0 and 10) for every (task, word list, selective arm) of `rows` and its
    seeds: the selective arm masks list words `ratio` times as often as `reference`, and continued
    MLM lowers the held-out loss by `drop` + 0.01 x seed (the controls pass at the defaults)."""
    out = []
    for task, word_list, name in {(r["task"], r["word_list"], r["arm"]) for r in rows}:
        if word_list == "-":
            continue
        for seed in {r["seed"] for r in rows if r["task"] == task}:
            for dose, loss in ((0, 3.0), (10, 3.0 - drop - 0.01 * seed)):
                common = {"task": task, "word_list": word_list, "seed": seed, "dose": dose}
                out += [common | {"arm": name, "list_share": reference_share * ratio,
                                  "heldout_loss": loss},
                        common | {"arm": reference, "list_share": reference_share,
                                  "heldout_loss": loss}]
    return out


def selective_claims(rows, priors, *args, dose_rows=None, **kw):
    """`claims.selective_claims` with controls that pass unless a test sets them: dose rows where
    selective arms mask list words twice as often and continued MLM lowers the held-out loss, and,
    where the rows have no `none` arm, one 0.1 below `random` on every seed (continued MLM moves
    the score)."""
    if not any(r["arm"] == "none" for r in rows):
        rows = rows + [r | {"arm": "none", "word_list": "-", "accuracy": r["accuracy"] - 0.1,
                            "f1": r["f1"] - 0.1} for r in rows if r["arm"] == "random"]
    return claims.selective_claims(rows, priors, *args, dose_rows=dose_rows_for(rows)
                                   if dose_rows is None else dose_rows, **kw)


def only(table, **match):
    """The one row of a claim table matching every key."""
    rows = [r for r in table if all(r[k] == v for k, v in match.items())]
    assert len(rows) == 1, rows
    return rows[0]


# ---------------------------------------------------------------- paired_against


def test_paired_against_pairs_shared_seeds_only():
    random = [r for r in RANDOM if r["seed"] != 1]  # seeds 0, 2, 3
    rows = random + arm("linear", [0.75, 0.77, 0.80, 0.77], "vader")  # seeds 0 to 3
    out = claims.paired_against(rows)
    ref, lin = only(out, arm="random"), only(out, arm="linear")
    assert "verdict" not in ref and ref["seeds"] == 3 and lin["seeds"] == 4
    assert lin["paired_seeds"] == 3 and lin["diff_vs_random"] == pytest.approx((0.05 + 0.06 + 0.06) / 3)
    assert lin["verdict"] == verdicts.REPRODUCED


def test_paired_against_empty():
    assert claims.paired_against([]) == []


def test_an_arm_run_twice_for_a_seed_is_refused():
    with pytest.raises(ValueError, match="arm 'random' .* ran more than once for seed 0"):
        claims.paired_against(RANDOM + RANDOM[:1])


# ---------------------------------------------------------------- selective_claims


def test_selective_above_random_is_reproduced():
    rows = RANDOM + arm("step", [0.75, 0.76, 0.80, 0.75], "vader") + arm("none", [0.9] * 4)
    table = selective_claims(rows, PRIORS)
    assert [c["arm"] for c in table] == ["step"]  # only selective arms make the claim
    c = table[0]
    assert c["verdict"] == verdicts.REPRODUCED and c["seeds"] == 4 and c["learned"]
    assert c["effect"] == pytest.approx(0.0475) and c["low"] > 0
    assert "step" in c["claim"] and "vader" in c["claim"] and "random" in c["claim"]


def test_below_random_is_contradicted():
    rows = RANDOM + arm("linear", [0.65, 0.66, 0.70, 0.66], "vader")
    assert selective_claims(rows, PRIORS)[0]["verdict"] == verdicts.CONTRADICTED


def test_too_few_seeds_is_not_measured():
    # two seeds: the interval alone is "not resolved", and every control, over two seeds, has no
    # interval, so the claim is "not measured"
    rows = arm("random", [0.70, 0.72]) + arm("exponential", [0.80, 0.83], "vader")  # +0.10, +0.11
    c = selective_claims(rows, PRIORS)[0]
    assert c["seeds"] == 2 < verdicts.MIN_SEEDS and c["verdict"] == verdicts.NOT_MEASURED
    assert {x["status"] for x in c["controls"]} == {verdicts.UNMEASURED}


def test_spanning_zero_is_not_resolved_and_equivalent_with_a_margin():
    rows = RANDOM + arm("linear", [0.701, 0.719, 0.74, 0.71], "vader")  # diffs +.001 -.001 0 0
    assert selective_claims(rows, PRIORS)[0]["verdict"] == verdicts.NOT_RESOLVED
    c = selective_claims(rows, PRIORS, delta=0.004)[0]
    assert c["verdict"] == verdicts.EQUIVALENT and c["delta"] == 0.004
    # a margin narrower than the interval does not make it equivalent
    assert selective_claims(rows, PRIORS, delta=0.0005)[0]["verdict"] == verdicts.NOT_RESOLVED


def test_classifiers_at_the_majority_class_resolve_nothing():
    # selective above random at every seed, but neither beats the 0.7 majority class by the margin
    rows = arm("random", [0.700, 0.705, 0.700, 0.700]) + arm("step", [0.710, 0.716, 0.712, 0.711], "v")
    assert only(claims.paired_against(rows), arm="step")["verdict"] == verdicts.REPRODUCED
    c = selective_claims(rows, {"t": 0.7})[0]
    assert not c["learned"] and c["verdict"] == verdicts.NOT_RESOLVED
    assert c["at_majority"] == ["step", "random"]
    assert c["majority"] == {"step": (pytest.approx(0.71225), 0.7),
                             "random": (pytest.approx(0.70125), 0.7)}
    # one arm learned is not enough: random at its majority class leaves the comparison unjudged
    assert selective_claims(rows, {"t": 0.69})[0]["at_majority"] == ["random"]
    assert selective_claims(rows, {"t": 0.69})[0]["verdict"] == verdicts.NOT_RESOLVED
    # the same rows against a lower prior: learned, and the paired verdict stands
    assert selective_claims(rows, {"t": 0.6})[0]["verdict"] == verdicts.REPRODUCED
    # a task without a recorded prior stops, naming the claim and the arm
    with pytest.raises(verdicts.ControlError, match="step masking .* arm 'step' has no majority"):
        selective_claims(rows, {})


def test_the_compared_metric_is_also_the_one_judged_against_its_prior():
    f1_up = [0.60, 0.61, 0.62, 0.60]
    rows = (arm("random", [0.8] * 4, f1=[0.50, 0.52, 0.51, 0.50])
            + arm("step", [0.8] * 4, "v", f1=f1_up))
    c = selective_claims(rows, {"t": 0.45}, metric="f1")[0]  # a macro-F1 prior
    assert c["effect"] == pytest.approx(0.1) and c["verdict"] == verdicts.REPRODUCED
    assert c["metric"] == "f1" and c["prior"] == 0.45 and "macro-F1" in c["claim"]
    # accuracy 0.8 would clear a 0.7 prior, but the macro-F1s (0.50 to 0.62) do not
    assert selective_claims(rows, {"t": 0.7}, metric="f1")[0]["verdict"] == verdicts.NOT_RESOLVED


def test_each_task_is_judged_against_its_own_majority_class():
    # sentiment learned (0.80 over a 0.50 prior); hate speech at its prior (0.93 accuracy)
    sentiment = (arm("random", [0.80, 0.81, 0.80, 0.82], task="sst2")
                 + arm("step", [0.84, 0.85, 0.85, 0.86], "v", task="sst2"))
    hate = (arm("random", [0.93] * 4, task="hate", f1=[0.48] * 4)
            + arm("step", [0.935, 0.94, 0.94, 0.935], "v", task="hate", f1=[0.49, 0.50, 0.50, 0.49]))
    rows = sentiment + hate
    runs = pd.DataFrame([{"task": "sst2", "majority_accuracy": 0.5, "majority_f1": 0.33},
                         {"task": "hate", "majority_accuracy": 0.93, "majority_f1": 0.482}])
    priors = claims.task_priors(runs)
    assert priors == {"sst2": 0.5, "hate": 0.93}  # each task its own, never their mean
    learned = claims.learned_groups(rows, priors, ["random", "step"])
    assert learned == {("sst2", "few"): True, ("hate", "few"): False}
    table = selective_claims(rows, priors)
    assert only(table, task="sst2")["verdict"] == verdicts.REPRODUCED
    assert only(table, task="hate")["verdict"] == verdicts.NOT_RESOLVED
    # the hate speech claim on macro-F1, against the majority class's macro-F1 (0.482)
    metrics = {"hate": "f1"}
    priors = claims.task_priors(runs, "accuracy", metrics)
    assert priors == {"sst2": 0.5, "hate": 0.482}
    table = selective_claims(rows, priors, task_metrics=metrics)
    hate_claim, sst2_claim = only(table, task="hate"), only(table, task="sst2")
    assert hate_claim["metric"] == "f1" and sst2_claim["metric"] == "accuracy"
    assert not hate_claim["learned"] and hate_claim["verdict"] == verdicts.NOT_RESOLVED  # 0.50 < 0.502
    assert hate_claim["effect"] == pytest.approx(0.015)
    (card,) = [r for r in check_card(claims.scorecard(table)) if r["claim"].endswith("hate")]
    assert card["effect"].startswith("test macro-F1, step - random = 0.015")
    assert "step 0.495, random 0.480 (majority 0.482)" in card["effect"]
    assert "not judged: at the majority class (macro-F1, within 0.02): step, random" in card["effect"]
    assert card["majority"]["random"] == {"accuracy": 0.48, "majority": 0.482}


def test_bad_metrics_are_named():
    with pytest.raises(ValueError, match="metric must be one of"):
        claims.paired_against(RANDOM, metric="auc")
    with pytest.raises(ValueError, match="task_metrics"):
        selective_claims(RANDOM, PRIORS, task_metrics={"t": "auc"})


def test_no_reference_arm_gives_unpaired_not_measured():
    c = selective_claims(arm("step", [0.9, 0.91, 0.92], "v"), PRIORS)[0]
    assert c["seeds"] == 0 and math.isnan(c["effect"]) and c["verdict"] == verdicts.NOT_MEASURED


# ---------------------------------------------------------------- learned_groups


def test_learned_at_its_edge():
    prior = 0.5
    edge = prior + verdicts.LEARNED_MARGIN
    at_edge = arm("random", [edge] * 4, labels="few")  # four equal values: their mean is exact
    above = arm("random", [edge + 1e-9] * 4, labels="all")
    learned = claims.learned_groups(at_edge + above, {"t": prior}, ["random"])
    assert learned == {("t", "few"): False, ("t", "all"): True}


def test_learned_only_counts_the_compared_arms():
    rows = arm("random", [0.5] * 3) + arm("none", [0.9] * 3)
    assert claims.learned_groups(rows, PRIORS, ["random"]) == {("t", "few"): False}
    assert claims.learned_groups(rows, PRIORS, ["random", "none"]) == {("t", "few"): True}
    assert claims.learned_groups([], PRIORS, ["random"]) == {}


# ---------------------------------------------------------------- scratch_claims


def test_scratch_claims():
    assert claims.scratch_claims(RANDOM) == []  # no scratch arm: nothing to compare
    rows = arm("scratch", [0.60, 0.61, 0.62, 0.60]) + RANDOM + arm("none", [0.60, 0.60, 0.63, 0.61])
    floor = claims.scratch_claims(rows)
    assert {c["arm"] for c in floor} == {"random", "none"}
    assert only(floor, arm="random")["verdict"] == verdicts.REPRODUCED
    assert only(floor, arm="none")["verdict"] == verdicts.NOT_RESOLVED


# ---------------------------------------------------------------- conclusion


def claim(verdict, seeds=5, learned=True):
    return {"verdict": verdict, "seeds": seeds, "learned": learned}


def test_conclusion_of_nothing_is_never_reproduced():
    verdict, text = claims.conclusion([])
    assert verdict == verdicts.NOT_RESOLVED and text.startswith(verdicts.NOT_RESOLVED)


@pytest.mark.parametrize("verdicts, expected", [
    ([verdicts.REPRODUCED] * 3, verdicts.REPRODUCED),
    ([verdicts.REPRODUCED, verdicts.REPRODUCED, verdicts.CONTRADICTED], verdicts.CONTRADICTED),
    ([verdicts.REPRODUCED, verdicts.NOT_RESOLVED], verdicts.NOT_RESOLVED),
    ([verdicts.EQUIVALENT] * 2, verdicts.EQUIVALENT),
    ([verdicts.EQUIVALENT, verdicts.REPRODUCED], verdicts.NOT_RESOLVED),
])
def test_conclusion_combines_the_comparisons(verdicts, expected):
    verdict, text = claims.conclusion([claim(v) for v in verdicts])
    assert verdict == expected and text.startswith(f"{expected}: of {len(verdicts)} selective")
    assert "paired seeds" not in text and "majority class" not in text and "scratch" not in text


def test_conclusion_says_why_it_is_not_resolved():
    table = [claim(verdicts.NOT_RESOLVED, seeds=2), claim(verdicts.NOT_RESOLVED, learned=False),
             claim(verdicts.REPRODUCED)]
    floor = [claim(verdicts.NOT_RESOLVED), claim(verdicts.CONTRADICTED)]
    verdict, text = claims.conclusion(table, floor)
    assert verdict == verdicts.NOT_RESOLVED
    assert "1 reproduced, 2 not resolved" in text
    assert f"1 have fewer than {verdicts.MIN_SEEDS} paired seeds" in text
    assert "in 1, a compared arm does not beat its majority class by 0.02" in text
    assert "scratch" in text
    assert "scratch" not in claims.conclusion(table, [claim(verdicts.REPRODUCED)])[1]


def test_end_to_end_on_records():
    rows = (RANDOM + arm("scratch", [0.6] * 4) + arm("step", [0.75, 0.76, 0.80, 0.75], "vader")
            + arm("linear", [0.65, 0.66, 0.70, 0.66], "vader"))
    runs = pd.DataFrame([{"task": "t", "majority_accuracy": 0.5}] * 2)
    table = selective_claims(rows, claims.task_priors(runs))
    verdict, text = claims.conclusion(table, claims.scratch_claims(rows))
    assert verdict == verdicts.CONTRADICTED and "1 reproduced, 1 contradicted" in text
    assert {c["verdict"] for c in table} <= set(verdicts.VERDICTS)


def test_task_priors():
    runs = pd.DataFrame([{"task": "a", "majority_accuracy": 0.6}, {"task": "a", "majority_accuracy": 0.6},
                         {"task": "b", "majority_accuracy": 0.9}])
    assert claims.task_priors(runs) == {"a": pytest.approx(0.6), "b": pytest.approx(0.9)}
    assert claims.task_priors(pd.DataFrame()) == {}
    # records without a macro-F1 prior (older runs): no prior, so nothing counts as learned
    assert claims.task_priors(runs, "f1") == {}
    assert claims.task_priors(runs, "accuracy", {"b": "f1"}) == {"a": pytest.approx(0.6)}


def test_list_size_sweep():
    def sized(name, accuracies, size):
        label = "vader" if size == 0 else f"vader, {size} words"
        return [r | {"lexicon": "vader", "list_size": size} for r in arm(name, accuracies, label)]

    rows = (RANDOM + sized("exponential", [0.75, 0.76, 0.80, 0.75], 100)
            + sized("exponential", [0.70, 0.72, 0.74, 0.71], 0) + sized("step", [0.8] * 4, 100))
    sweep = claims.list_size_sweep(rows)
    assert [(r["arm"], r["list_size"]) for r in sweep] == [("exponential", 100), ("exponential", 0)]
    assert sweep[0]["diff_vs_random"] == pytest.approx(0.0475) and sweep[1]["diff_vs_random"] == 0
    assert claims.list_size_sweep(RANDOM + sized("step", [0.8] * 4, 100)) == []  # one size: no sweep


# ---------------------------------------------------------------- scorecard


def test_scorecard_one_row_per_comparison():
    rows = (RANDOM + arm("step", [0.75, 0.76, 0.80, 0.75], "vader")
            + arm("linear", [0.65, 0.66, 0.70, 0.66], "vader", labels="all")
            + arm("random", [0.70, 0.72, 0.74, 0.71], labels="all"))
    table = selective_claims(rows, PRIORS, delta=0.004)
    card = check_card(claims.scorecard(table))
    assert [r["claim"] for r in card] == ["step masking (vader) beats random: few labels, t",
                                          "linear masking (vader) beats random: all labels, t"]
    assert [r["verdict"] for r in card] == [c["verdict"] for c in table] == [verdicts.REPRODUCED, verdicts.CONTRADICTED]
    assert card[0]["effect"] == ("test accuracy, step - random = 0.048 [0.032, 0.063]; "
                                 "step 0.765, random 0.718 (majority 0.500)")
    assert card[0]["seeds"] == 4 and card[0]["delta"] == 0.004 and card[0]["unit"] == "seeds"
    assert card[0]["scale"] == verdicts.ACCURACY and card[0]["at_majority"] == []
    assert list(claims.scorecard_table(card).columns) == ["Claim", "Verdict", "Controls", "Effect [95% CI]", "Blocks",
                                   "Dose (ours / paper profile)", "Margin"]


def test_scorecard_says_why_a_comparison_is_not_judged():
    chance = arm("random", [0.700, 0.705, 0.700, 0.700]) + arm("step", [0.710, 0.716, 0.712, 0.711], "v")
    (row,) = check_card(claims.scorecard(selective_claims(chance, {"t": 0.7})))
    assert row["verdict"] == verdicts.NOT_RESOLVED and row["at_majority"] == ["step", "random"]
    assert row["effect"].endswith("step 0.712, random 0.701 (majority 0.700); not judged: at the "
                                  "majority class (accuracy, within 0.02): step, random")
    assert "paired seeds" not in row["effect"]  # four seeds: enough
    assert "not resolved: at the majority class: step, random" in claims.scorecard_table(
        [row])["Controls"][0]
    few_at_chance = arm("random", [0.700, 0.705]) + arm("step", [0.710, 0.716], "v")
    (row,) = check_card(claims.scorecard(selective_claims(few_at_chance, {"t": 0.7})))
    assert row["effect"].count("not judged") == 1 and row["verdict"] == verdicts.NOT_MEASURED
    assert row["effect"].endswith("step, random; 2 paired seeds, a verdict needs 3")
    few = arm("random", [0.70, 0.72]) + arm("exponential", [0.80, 0.83], "vader")
    (row,) = check_card(claims.scorecard(selective_claims(few, PRIORS)))
    assert "not judged: 2 paired seeds" in row["effect"] and row["delta"] is None
    one = arm("random", [0.70]) + arm("exponential", [0.80], "vader")
    (row,) = check_card(claims.scorecard(selective_claims(one, PRIORS)))
    assert "one seed: no interval" in row["effect"]
    (row,) = check_card(claims.scorecard([]))
    assert row["claim"] == claims.CLAIM and row["verdict"] == verdicts.NOT_MEASURED
    assert row["effect"].startswith("not measured")
    assert list(claims.scorecard_table([row]).columns) == ["Claim", "Verdict", "Controls", "Effect [95% CI]", "Blocks",
                                   "Dose (ours / paper profile)"]


# ---------------------------------------------------------------- positive controls

# exponential within 0.001 of random at every seed: equivalent within 0.004 when the controls pass
NULL = RANDOM + arm("exponential", [0.701, 0.719, 0.741, 0.71], "vader")
MOVED = arm("none", [0.60, 0.61, 0.62, 0.605])  # random - none about +0.11 at every seed


def named(row, part):
    """The one control of a claim whose name holds `part`."""
    (found,) = [c for c in row["controls"] if part in c["name"]]
    return found


def test_the_controls_are_intervals_over_seeds_from_known_values():
    (row,) = selective_claims(NULL + MOVED, PRIORS, delta=0.004)
    assert row["verdict"] == verdicts.EQUIVALENT
    ratio, drop, moved = (named(row, "list share"), named(row, "held-out masked-LM loss"),
                          named(row, "moves the score"))
    assert [c["kind"] for c in (ratio, drop, moved)] == [verdicts.TOOK, verdicts.TOOK, verdicts.EXISTS]
    assert {c["unit"] for c in row["controls"]} == {"seeds"}
    assert {c["n"] for c in row["controls"]} == {4}
    assert {c["source"] for c in row["controls"]} == {"principle"}
    # the ratio is 2 at every seed: an interval of zero width
    assert ratio["measured"] == ratio["low"] == ratio["high"] == pytest.approx(2.0)
    # the loss falls by 0.5 + 0.01 x seed (seeds 0 to 3): mean 0.515, judged on its low end
    assert drop["measured"] == pytest.approx(0.515) and drop["judged_on"] == drop["low"] > 0
    assert "at 10 steps" in drop["name"]
    # random - none: +0.10, +0.11, +0.12, +0.105
    assert moved["measured"] == pytest.approx(0.10875) and moved["judged_on"] == moved["low"] > 0


@pytest.mark.parametrize("ratio, expected", [(1.5, verdicts.EQUIVALENT), (1.49, verdicts.INSENSITIVE)])
def test_a_selective_arm_must_mask_list_words_more_often(ratio, expected):
    rows = NULL + MOVED
    (row,) = selective_claims(rows, PRIORS, delta=0.004, dose_rows=dose_rows_for(rows, ratio))
    assert row["verdict"] == expected
    assert named(row, "list share")["status"] == (verdicts.PASSED if ratio == 1.5 else verdicts.FAILED)


def test_continued_mlm_that_does_not_lower_the_heldout_loss_makes_it_insensitive():
    rows = NULL + MOVED
    (row,) = selective_claims(rows, PRIORS, delta=0.004, dose_rows=dose_rows_for(rows, drop=-0.2))
    assert row["verdict"] == verdicts.INSENSITIVE
    assert [c["name"] for c in verdicts.failed_controls(row["controls"])] == [
        named(row, "held-out masked-LM loss")["name"]]


def test_continued_mlm_that_moves_nothing_makes_equivalence_insensitive():
    rows = NULL + arm("none", [0.701, 0.719, 0.741, 0.709])
    (row,) = selective_claims(rows, PRIORS, delta=0.004)
    assert row["verdict"] == verdicts.INSENSITIVE
    note = verdicts.controls_note(row["verdict"], row["controls"])
    assert "continued MLM moves the score" in note and "over 4 seeds" in note
    (card,) = check_card(claims.scorecard([row]))
    assert card["verdict"] == verdicts.INSENSITIVE


def test_continued_mlm_that_lowers_the_score_moves_it_too():
    # random - none about -0.1 at every seed: the score moved (down), the control passes
    rows = NULL + arm("none", [0.80, 0.821, 0.84, 0.81])
    (row,) = selective_claims(rows, PRIORS, delta=0.004)
    moved = named(row, "moves the score")
    assert moved["status"] == verdicts.PASSED and moved["measured"] == pytest.approx(0.10025)
    assert row["verdict"] == verdicts.EQUIVALENT


def test_a_clear_interval_with_a_failed_control_is_insensitive_too():
    # selective well above random at every seed, but continued MLM moved nothing: no exception
    rows = (RANDOM + arm("step", [0.75, 0.76, 0.80, 0.75], "vader")
            + arm("none", [0.701, 0.719, 0.741, 0.709]))
    (row,) = selective_claims(rows, PRIORS)
    assert only(claims.paired_against(rows), arm="step")["verdict"] == verdicts.REPRODUCED
    assert row["verdict"] == verdicts.INSENSITIVE
    (card,) = check_card(claims.scorecard([row]))
    assert card["verdict"] == verdicts.INSENSITIVE


def test_without_dose_rows_c1s_ratio_stands_in_and_the_loss_is_not_measured():
    rows = NULL + MOVED
    (row,) = claims.selective_claims(rows, PRIORS, delta=0.004,
                                     composition=composition_for(rows, 1.2))
    ratio = named(row, "list share")
    # C1's ratio is the design's: the same for every seed, an interval of zero width over 4 seeds
    assert ratio["n"] == 4 and ratio["low"] == ratio["high"] == pytest.approx(1.2)
    assert named(row, "held-out masked-LM loss")["status"] == verdicts.UNMEASURED
    assert row["verdict"] == verdicts.INSENSITIVE  # the failed ratio comes first
    (row,) = claims.selective_claims(rows, PRIORS, delta=0.004, composition=composition_for(rows))
    assert row["verdict"] == verdicts.NOT_MEASURED
    (card,) = check_card(claims.scorecard([row]))
    assert "not measured: continued MLM lowers the held-out" in claims.scorecard_table(
        [card])["Controls"][0]


def test_a_missing_composition_names_the_field():
    rows = RANDOM + arm("exponential", [0.75, 0.76, 0.80, 0.75], "vader") + arm("none", [0.9] * 4)
    with pytest.raises(verdicts.ControlError, match="list_share"):
        claims.selective_claims(rows, PRIORS, composition=pd.DataFrame())


def test_the_margin_is_at_most_half_the_anchors_effect():
    assert "Train No Evil" in claims.delta_source(0.004)
    with pytest.raises(ValueError, match="delta=0.01 exceeds half"):
        claims.delta_source(0.01)


def test_a_task_text_without_list_words_fails_the_masking_control():
    rows = NULL + MOVED
    none_listed = dose_rows_for(rows, reference_share=0.0)
    (row,) = selective_claims(rows, PRIORS, delta=0.004, dose_rows=none_listed)
    assert row["verdict"] == verdicts.INSENSITIVE
    assert "no list word in the task's text" in verdicts.controls_note(row["verdict"], row["controls"])


def test_arms_text_sets_each_arm_beside_its_majority_class():
    assert claims.arms_text({"a": (0.81, 0.6), "b": (0.8, 0.6)}) == "a 0.810, b 0.800 (majority 0.600)"
    assert (claims.arms_text({"a": (0.81, 0.6), "b": (0.8, 0.5)})
            == "a 0.810 (majority 0.600), b 0.800 (majority 0.500)")
    assert claims.arms_text({}) == "no arm measured"


def test_the_mlm_dose_reads_the_groups_and_the_records_from_before_them():
    grouped = {"mlm": {"steps": 10000, "lr": 5.0e-5}, "text": {"max_length": 128}}  # a plan's overrides
    assert claims.mlm_tokens(grouped) == 10000 * 32 * 128  # batch_size: ContinuedMLM's default
    assert claims.mlm_tokens({"mlm": {"preset": "paper"}, "text": {"max_length": 128}}) == (
        10000 * 32 * 128)  # a plan that names the preset
    assert claims.mlm_tokens({}) == 60 * 32 * 40  # the smoke defaults
    flat = {"mlm_steps": 30, "mlm_batch_size": 32, "max_length": 128}  # a record before the groups
    assert claims.mlm_tokens(flat) == 30 * 32 * 128


def test_the_committed_cpu_records_give_rows_the_rules_allow():
    """C3's scorecard rows from the committed cpu records of C1, C2 and C4, read as the summary
    page reads them: every row passes the shared rule check and shows the majority class."""
    from scorecards import rule_problems

    from mlmlib.papers.selective_masking import dose_claims
    from mlmlib.runs import records as results

    scores, mlm = (results.load_records("cpu", n) for n in ("C1_task_scores", "C2_selective_mlm"))
    rows = results.explode_rows(mlm, "rows", keep=["run_id"]).to_dict("records")
    metrics = {"tweets-hate-speech": "f1"}
    composition = results.explode_rows(scores, "masked_composition", keep=["run_id", "task"])
    dosed_rows = dose_claims.testbed_rows(mlm, results.load_records("cpu", "C4_synthetic_selective"))
    claimed = claims.selective_claims(rows, claims.task_priors(mlm, "accuracy", metrics),
                                      task_metrics=metrics, composition=composition,
                                      dose_rows=dosed_rows["real"])
    dosed = [c for bed, part in dosed_rows.items() for c in dose_claims.dose_claims(part, bed)]
    card = check_card(claims.scorecard(claimed) + dose_claims.top_dose_card(dosed))
    assert [rule_problems(r) for r in card] == [[]] * len(card)
    assert all("(majority 0." in r["effect"] and r["majority"] for r in card)
    assert [r["unit"] for r in card] == ["seeds", "seeds", "languages"]


def test_the_dose_lists_the_settings_that_depart_from_the_paper():
    ours = [{"task": "amazon-food", "base": {"name": "minilm-l6"}, "finetune": {"lr": 5e-5},
             "mlm": {"steps": 100, "batch_size": 32}, "text": {"max_length": 128}}]
    paper = [{"task": "sst2", "base": {"name": "bert-base-uncased"}, "finetune": {"lr": 2e-5},
              "mlm": {"steps": 10000, "batch_size": 32}, "text": {"max_length": 128}}]
    text = claims.dose_text(ours, paper)
    assert text.startswith("409,600 / 40,960,000 tokens of continued MLM per arm")
    assert "departs from the paper: task amazon-food (paper: sst2)" in text
    assert "base.name minilm-l6 (paper: bert-base-uncased)" in text and "finetune.lr 5e-05" in text
    assert "departs" not in claims.dose_text(paper, paper)
