"""Paper C's pages: C1's scored text, figures and tables, and C3's panels, tables and floors, on
small hand-made corpora and record rows."""

from __future__ import annotations

import math
from types import SimpleNamespace

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch

from mlmlib.papers.selective_masking import masking_figures, summary
from mlmlib.papers.selective_masking.config import WordList
from mlmlib.papers.selective_masking.experiment import SELECTIVE, TokenizedCorpus
from mlmlib.papers.selective_masking.lexicons import TaskScores
from mlmlib.papers.selective_masking.scored_text import ScoredText


@pytest.fixture(autouse=True)
def headless():
    """Figures drawn off screen (plt.show does nothing), and closed after each test."""
    matplotlib.use("Agg")
    yield
    plt.close("all")


def scored_text(list_words=("good", "bad")) -> ScoredText:
    """Four word types: good (3 tokens), bad (1), the (4), zzz (2, no vector)."""
    words = ["good", "bad", "the", "zzz"]
    word_type = torch.tensor([[0, 2, 0, 2, -1], [1, 2, 3, 0, 2], [3, -1, -1, -1, -1]])
    corpus = TokenizedCorpus(data={}, words=words, word_type=word_type,
                             token_counts=np.array([3, 1, 4, 2]))
    scores = TaskScores(words, np.array([1.0, 1.0, 0.3, 0.0], dtype=np.float32), missing=["zzz"])
    return ScoredText(texts=3, corpus=corpus, scores=scores, list_words=list(list_words))


# ---------------------------------------------------------------- C1: the scored text


def test_scored_text_knows_its_list_words_and_their_share_of_tokens():
    scored = scored_text()
    assert scored.in_list.tolist() == [True, True, False, False]
    assert scored.has_vector.tolist() == [True, True, True, False]
    assert scored.list_token_share == pytest.approx(4 / 10)
    assert scored.list_coverage() == ("list words are 2 of 4 word types and 40.0% of tokens; "
                                      "1 word types have no vector (score 0)")


def test_scored_text_summary_names_a_sample_and_its_seed():
    scored = scored_text()
    whole = scored.summary("amazon-food", WordList("vader"))
    assert whole == ("amazon-food: 3 training texts, 10 maskable tokens, 4 word types; "
                     "word list vader: 2 words with a vector")
    sample = scored.summary("amazon-food", WordList("vader", 2, seed=7))
    assert sample.endswith("word list vader, 2 words: 2 words with a vector "
                           "(a sample drawn with seed 7)")


def test_score_distributions_compare_list_words_with_scored_others_only():
    masking_figures.score_distributions(scored_text(), "vader")
    ax = plt.gcf().axes[0]
    assert ax.get_title() == "Task scores of the corpus' words (vader)"
    # two groups: list words (1.0, 1.0) and "the" (0.3); zzz has no vector and is left out
    dots = np.concatenate([c.get_offsets()[:, 0] for c in ax.collections if len(c.get_offsets())])
    assert sorted(dots.tolist()) == pytest.approx([0.3, 1.0, 1.0])


# ---------------------------------------------------------------- C1: masking and rates


def selective_maskings(word_probs: dict[str, list[float]]) -> dict:
    return {arm: SimpleNamespace(word_probs=np.array(p)) for arm, p in word_probs.items()}


def test_masking_curve_averages_each_arm_per_rounded_score():
    scores = TaskScores(["a", "b", "c"], np.array([0.101, 0.104, 0.5], dtype=np.float32))
    maskings = selective_maskings({arm: [0.1, 0.3, 0.9] for arm in SELECTIVE})
    curve = masking_figures.masking_curve(scores, maskings)
    assert len(curve) == 2 * len(SELECTIVE)
    row = curve[(curve["arm"] == SELECTIVE[0]) & (curve["task score"] == 0.1)]
    assert row["masking probability"].item() == pytest.approx(0.2)
    masking_figures.masking_curves(scores, maskings, target_rate=0.2)
    ax = plt.gcf().axes[0]
    assert any(list(line.get_ydata()) == [0.2, 0.2] for line in ax.lines)  # random's flat line


def test_rate_table_measures_each_gap_in_percentage_points():
    rows = [{"arm": "random", "expected_rate": 0.2, "realised_rate": 0.205, "realised_sd": 0.001,
             "tokens": 100, "scale": float("nan")},
            {"arm": "step", "expected_rate": 0.2, "realised_rate": 0.1975, "realised_sd": 0.002,
             "tokens": 100, "scale": 1.5}]
    rates = masking_figures.rate_table(rows, 0.2)
    assert rates["gap (points)"].tolist() == pytest.approx([0.5, -0.25])
    shown = masking_figures.rates_shown(rates)
    assert shown.index.tolist() == ["random", "step"]
    assert list(shown.columns) == ["expected rate", "realised rate",
                                   "realised rate (sd over draws)", "tokens per draw",
                                   "calibration constant c", "gap (points)"]
    masking_figures.rate_bars(rates, 0.2)
    assert plt.gcf().axes[0].get_legend().get_texts()[0].get_text() == "target 20%"


def test_composition_is_shown_against_random_where_random_ran():
    composition = [{"arm": "random", "list_share": 0.1}, {"arm": "step", "list_share": 0.25}]
    shown = masking_figures.composition_shown(composition)
    assert shown.loc["step", "times random"] == 2.5
    assert shown.loc["step", "list words among masked tokens"] == 0.25
    assert "times random" not in masking_figures.composition_shown(composition[1:])


def test_examples_and_overhead_tables_name_their_columns():
    examples = masking_figures.examples_shown(
        [{"word": "great", "score": 1.0, "count": 7, "random": 0.2, "step": 0.41234}])
    assert examples.loc["great"].to_dict() == {"task score": 1.0, "tokens in the corpus": 7,
                                               "random": 0.2, "step": 0.412}
    bench = {"step_ms": {"random": 10.0, "step": 10.5}, "mask_ms": {"random": 1.0, "step": 1.2},
             "step_ratio": {"random": 1.0, "step": 1.05}, "overhead": {"random": 0.0, "step": 0.02}}
    overhead = masking_figures.overhead_shown(bench)
    assert overhead.index.name == "arm" and overhead.index.tolist() == ["random", "step"]
    assert overhead.loc["step", "extra masking time / random step"] == 0.02
    assert list(overhead.columns) == list(masking_figures.OVERHEAD_COLUMNS.values())


# ---------------------------------------------------------------- C3: record rows


def arm(name, scores, word_list="-", labels="few", task="t"):
    """C2 record rows of one arm, one per seed."""
    return [{"task": task, "arm": name, "word_list": word_list, "labels": labels, "seed": seed,
             "accuracy": s, "f1": s - 0.1} for seed, s in enumerate(scores)]


ROWS = (arm("scratch", [0.60, 0.61, 0.62]) + arm("none", [0.70, 0.71, 0.72])
        + arm("random", [0.80, 0.81, 0.82]) + arm("exponential", [0.84, 0.86, 0.85], "vader"))


def test_floor_checks_judge_each_pretrained_arm_and_its_gain_over_scratch():
    checks = summary.floor_checks(ROWS, "accuracy", {}, {"t": 0.8}, "few", scratch_margin=0.15)
    by_name = {c["check"]: c for c in checks}
    assert by_name["test accuracy: t, few, none"]["status"] == "MISSED"
    assert by_name["test accuracy: t, few, exponential / vader"]["status"] == "met"
    assert by_name["none minus scratch: t, few"]["measured"] == pytest.approx(0.10)
    assert by_name["none minus scratch: t, few"]["status"] == "MISSED"
    assert by_name["random minus scratch: t, few"]["status"] == "met"
    assert len(checks) == 3 + 3  # three pretrained arms, each against both floors
    # the gain over scratch is on the task's claim metric: here macro-F1, 0.1 below accuracy
    f1 = summary.floor_checks(ROWS, "accuracy", {"t": "f1"}, {}, "few", scratch_margin=0.15)
    assert [c["measured"] for c in f1] == pytest.approx([0.10, 0.20, 0.24])
    assert summary.floor_checks([], "accuracy", {}, {"t": 0.8}, "few", 0.05) == []


def test_paired_table_and_its_shown_form():
    paired = summary.paired_table(ROWS, "random", "accuracy", None, {})
    assert set(paired["arm"]) == {"scratch", "none", "random", "exponential"}
    shown = summary.paired_shown(paired, "random")
    assert shown.index.names == ["task", "arm", "word list", "labels"]
    assert {"test score [95% CI]", "minus random [95% CI]", "paired seeds"} <= set(shown.columns)
    assert shown.loc[("t", "random", "-", "few"), "minus random [95% CI]"] == ""
    assert summary.paired_table([], "random", "accuracy", None, {}).empty


def test_only_the_compared_arms_count_as_learned():
    priors = {"t": 0.82}  # beaten by more than verdicts.LEARNED_MARGIN (0.02): above 0.84
    learned = summary.classifiers_learned(ROWS, priors, "random", "accuracy", {})
    assert learned == {("t", "few"): True}  # exponential's mean 0.85
    # none is not compared with random: its 0.95 does not count, random's 0.81 does not beat it
    others = arm("none", [0.95, 0.95, 0.95]) + arm("random", [0.80, 0.81, 0.82])
    assert summary.classifiers_learned(others, priors, "random", "accuracy", {}) == {
        ("t", "few"): False}
    lines = summary.learned_lines({("t", "few"): True, ("t", "all"): False}, priors, "accuracy", {})
    assert lines[0] == "t, few labels: some compared arm beats its majority class (0.820 accuracy)"
    assert lines[1].startswith("t, all labels: NO compared arm beats its majority class (0.820")
    assert "not recorded macro-F1" in summary.learned_lines({("u", "few"): False}, {}, "f1", {})[0]
    assert summary.learned_rows(learned) == [{"task": "t", "labels": "few", "learned": True}]


def test_score_panels_draw_one_panel_per_task_and_regime_above_the_majority():
    rows = pd.DataFrame(ROWS + arm("random", [0.5, 0.6, 0.7], labels="all", task="u"))
    fig = summary.score_panels(rows, {"t": 0.75}, "accuracy", {"u": "f1"})
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[:1] == ["t, few labels"] and "u, all labels" in titles
    t_panel = fig.axes[0]
    assert t_panel.get_ylim() == pytest.approx((0.60 - 0.02, 0.86 + 0.03))
    assert fig.axes[titles.index("u, all labels")].get_ylabel() == "test macro-F1"


def test_the_rate_gap_is_the_largest_over_arms_tasks_and_lists(capsys):
    rates = pd.DataFrame({"run_id": ["C1/a", "C1/a", "C1/b"], "arm": ["random", "step", "step"],
                          "word_list": ["vader", "vader", "bing"],
                          "realised_rate": [0.201, 0.196, 0.2025]})
    scores_runs = pd.DataFrame({"run_id": ["C1/a", "C1/b"], "task": ["t", "t"],
                                "target_rate": [0.2, 0.2], "word_list": ["vader", "bing"],
                                "overhead": [{"overhead": {"random": 0.0, "step": 0.01234}},
                                             {"overhead": {"random": 0.0, "step": 0.03}}]})
    assert summary.largest_rate_gap(rates, 0.2) == pytest.approx(0.4)
    assert summary.largest_overheads(scores_runs) == {"vader": 0.0123, "bing": 0.03}
    assert summary.show_rates(rates, scores_runs) == pytest.approx(0.4)
    out = capsys.readouterr().out
    assert "target 20%; largest gap over arms and word lists: 0.400 percentage points" in out
    assert math.isnan(summary.show_rates(rates.iloc[:0], scores_runs.iloc[:0]))
    assert "no records of C1_task_scores" in capsys.readouterr().out


def test_the_sweep_names_the_whole_list():
    def sized(name, scores, size):
        label = "vader" if size == 0 else f"vader, {size} words"
        return [r | {"lexicon": "vader", "list_size": size} for r in arm(name, scores, label)]

    rows = (arm("random", [0.70, 0.72, 0.74, 0.71]) + sized("exponential", [0.75, 0.76, 0.8, 0.75], 100)
            + sized("exponential", [0.70, 0.72, 0.74, 0.71], 0))
    sweep = summary.list_size_sweep(rows, "random", "accuracy", {})
    assert sweep["words"].tolist() == [100, "whole list"]
    assert summary.list_size_sweep(rows[:4], "random", "accuracy", {}).empty


def test_empty_tables_say_why(capsys):
    summary.show_sweep(pd.DataFrame(), "random")
    summary.show_against_scratch([])
    out = capsys.readouterr().out
    assert "the sweep over word_list_size is a paper-profile run" in out
    assert "no scratch arm in these runs" in out
    assert summary.claims_detail([], "random", None) is None


def test_claims_detail_reads_what_each_interval_can_detect():
    claimed = [{"claim": "c", "task": "t", "arm": "exponential", "word_list": "vader",
                "labels": "few", "effect": 0.01, "low": -0.02, "high": 0.04, "seeds": 5,
                "delta": 0.005, "learned": True, "verdict": "not resolved"}]
    detail = summary.claims_detail(claimed, "random", 0.005)
    row = detail.loc[("t", "exponential", "vader", "few")]
    assert row["detectable (80% power)"] > 0.03  # wider than the interval's half-width
    assert row["seeds for ±0.005"] > 5
    assert "minus random [95% CI]" in detail.columns and "claim" not in detail.columns
    assert "seeds for ±0.005" not in summary.claims_detail(claimed, "random", None).columns


def test_the_measured_line_names_the_margin_and_wraps():
    text = summary.measured_text("not resolved: " + "word " * 30, 0.01)
    assert text.startswith("Measured: not resolved:") and text.endswith("(delta = 0.01)")
    assert max(len(line) for line in text.splitlines()) <= 88
    assert summary.measured_text("reproduced", None) == "Measured: reproduced"
    assert summary.majority_rows({"t": 0.6}, "accuracy", {"t": "f1"}) == [
        {"task": "t", "metric": "f1", "prior": 0.6}]
