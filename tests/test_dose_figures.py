"""C3's lead figure on hand-made dose rows: paired differences by dose, their intervals, the axes."""

from __future__ import annotations

import math

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer
from scipy import stats as sps

from mlmlib.papers.selective_masking.dose_figures import (
    by_construction,
    dose_response_figure,
    dose_table,
    paired_by_dose,
    selective_arms,
    selectivity,
    selectivity_figure,
)


@pytest.fixture(autouse=True)
def headless():
    """Figures drawn off screen, and closed after each test."""
    matplotlib.use("Agg")
    yield
    plt.close("all")


# Per language: the base's accuracy (dose 0, both arms) and each arm's gain after 100 steps.
BASE = [0.60, 0.62, 0.64, 0.66]
RANDOM_GAIN = [0.01, 0.02, 0.03, 0.06]
SELECTIVE_GAIN = [0.02, 0.02, 0.05, 0.07]  # exponential - random: 0.01, 0.00, 0.02, 0.01


def rows(blocks=4):
    """C4-like dose rows (no task column): two arms at doses 0 and 100 over `blocks` languages."""
    out = []
    for lang in range(blocks):
        for arm, gain, share in (("random", RANDOM_GAIN, 0.15), ("exponential", SELECTIVE_GAIN, 0.6)):
            for dose in (0, 100):
                out.append({"arm": arm, "dose": dose, "seed": lang, "word_list": "exact task list",
                            "accuracy": BASE[lang] + (gain[lang] if dose else 0.0),
                            "list_share": share + 0.01 * lang, "heldout_loss": 2.0})
    return out


def interval(values):
    x = np.asarray(values)
    half = sps.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return x.mean(), x.mean() - half, x.mean() + half


def row(table, dose, difference):
    return table[(table["dose"] == dose) & (table["difference"] == difference)].iloc[0]


def test_paired_by_dose_gives_the_known_means_and_intervals():
    table = paired_by_dose(rows(), "synthetic")
    adaptation = row(table, 100, "random - none")
    selective = row(table, 100, "exponential - random")
    for got, gains in ((adaptation, RANDOM_GAIN),
                       (selective, np.subtract(SELECTIVE_GAIN, RANDOM_GAIN))):
        mean, low, high = interval(gains)
        assert got["n"] == 4
        assert got[["mean", "low", "high"]].tolist() == pytest.approx([mean, low, high])
    assert adaptation["mean"] == pytest.approx(0.03) and selective["mean"] == pytest.approx(0.01)
    assert adaptation["list_share_random"] == pytest.approx(0.165)
    assert adaptation["list_share_exponential"] == pytest.approx(0.615)
    assert (table["unit"] == "languages").all() and (table["score"] == "accuracy").all()


def test_dose_zero_differences_are_zero_by_construction_and_left_out_of_the_table():
    table = paired_by_dose(rows(), "synthetic")
    zero = table[table["dose"] == 0]
    assert len(zero) == 2 and by_construction(table).sum() == 2
    assert (zero[["mean", "low", "high"]] == 0).all().all()
    shown = dose_table(table)
    assert list(shown.index.get_level_values("dose (steps)")) == [100, 100]
    assert list(shown["n"]) == [4, 4]


def test_blocks_missing_on_one_side_are_not_paired():
    dropped = [r for r in rows() if not (r["arm"] == "exponential" and r["seed"] == 3)]
    table = paired_by_dose(dropped, "synthetic")
    assert row(table, 100, "exponential - random")["n"] == 3
    assert row(table, 100, "random - none")["n"] == 4


def test_one_block_gives_n_one_and_a_nan_free_mean():
    table = paired_by_dose(rows(blocks=1), "synthetic")
    got = row(table, 100, "random - none")
    assert got["n"] == 1 and got["mean"] == pytest.approx(0.01)
    assert not table[["mean", "low", "high", "n"]].isna().any().any()


def test_real_text_uses_the_none_arm_where_random_has_no_dose_zero():
    """C2-like rows: the probe's score, the base as an explicit `none` arm with word list '-'."""
    real = [{"task": "t", "arm": "none", "dose": 0, "seed": s, "word_list": "-",
             "probe_accuracy": 0.7, "list_share": None} for s in (20, 21, 22)]
    real += [{"task": "t", "arm": arm, "dose": 30, "seed": s, "word_list": "vader",
              "probe_accuracy": 0.7 + gain + 0.01 * (s - 20), "list_share": 0.1}
             for s in (20, 21, 22) for arm, gain in (("random", 0.02), ("exponential", 0.03))]
    table = paired_by_dose(real, "real")
    assert row(table, 30, "random - none")["mean"] == pytest.approx(0.03)
    assert row(table, 30, "exponential - random")["mean"] == pytest.approx(0.01)
    assert set(table["unit"]) == {"seeds"} and set(table["n"]) == {3}


def test_no_rows_give_an_empty_table():
    assert paired_by_dose([], "synthetic").empty
    with pytest.raises(ValueError):
        paired_by_dose(rows(), "neither")


def test_the_figure_draws_one_error_bar_series_per_difference_and_a_list_share_per_arm():
    table = paired_by_dose(rows(), "synthetic")
    left, right = dose_response_figure(table, "analogue")
    bars = [c for c in left.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 2
    assert sorted(t.get_text() for t in left.get_legend().get_texts()) == \
        ["exponential - random", "random - none"]
    assert any(line.get_ydata()[0] == 0 for line in left.get_lines()
               if len(line.get_ydata()) == 2 and line.get_ydata()[0] == line.get_ydata()[1])
    assert left.get_xscale() == "symlog"
    assert sorted(line.get_label() for line in right.get_lines()) == ["exponential", "random"]


def test_the_figure_draws_on_given_axes():
    fig, axes = plt.subplots(1, 2)
    got = dose_response_figure(paired_by_dose(rows(blocks=1), "synthetic"), "one language",
                               ax=axes)
    assert got[0] is axes[0] and len(fig.axes) == 2


def test_selectivity_as_a_dose_pairs_each_exponential_arm_with_random_at_the_top_dose():
    weaker = [dict(r, arm="exponential-b1", list_share=0.3, accuracy=r["accuracy"] - 0.005)
              for r in rows() if r["arm"] == "exponential"]
    dose_rows = rows() + weaker
    assert selective_arms(dose_rows) == ["exponential-b1", "exponential"]
    table = selectivity(dose_rows).set_index("arm")
    assert list(table.index) == ["random", "exponential-b1", "exponential"]
    assert (table["dose"] == 100).all() and (table["n"] == 4).all()
    assert table.loc["random", ["mean", "low", "high"]].tolist() == [0.0, 0.0, 0.0]
    assert table.loc["exponential", "mean"] == pytest.approx(0.01)
    assert table.loc["exponential-b1", "mean"] == pytest.approx(0.005)
    assert table.loc["exponential-b1", "list_share"] == pytest.approx(0.3)
    assert table.loc["random", "list_share"] == pytest.approx(0.165)  # 0.15 + 0.01 * mean(lang)
    ax = selectivity_figure(table.reset_index(), "accuracy")
    assert len([c for c in ax.containers if isinstance(c, ErrorbarContainer)]) == 3
    assert selectivity(rows()).shape[0] == 2 and selectivity([]).empty
