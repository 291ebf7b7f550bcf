"""The claim tables the book builder writes from the records (results first, never typed)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from mlmlib.runs.book import write_claim_tables


def _record(root: Path, profile: str, notebook: str, chapter: str, rows: list[dict]) -> None:
    folder = root / "book" / "runs" / profile / notebook
    folder.mkdir(parents=True, exist_ok=True)
    rec = {"notebook": notebook, "profile": profile, "chapter": chapter, "params": {},
           "metrics": {"scorecard": rows}, "run_id": f"{notebook}/run"}
    (folder / "run.json").write_text(json.dumps(rec))


def _row(claim: str, verdict: str, effect: str = "0.03 [0.01, 0.05]", controls=None, testbed="synthetic",
         dose="4,096 / 1,536,000 tokens") -> dict:
    passed = {"name": "synonyms close", "kind": "manipulation took", "measured": 0.7, "threshold": 0.1,
              "op": ">=", "field": "x", "passed": True}
    return {"claim": claim, "effect": effect, "seeds": 5, "delta": 0.02, "verdict": verdict, "estimate": 0.03,
            "low": 0.01, "high": 0.05, "direction": "greater", "controls": [passed] if controls is None else controls,
            "dose": dose, "testbed": testbed, "delta_source": "ours"}


def _table(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def test_tables_come_from_the_records_of_every_profile(tmp_path):
    _record(tmp_path, "smoke", "A4_synthetic_summary", "paper_a",
            [_row("WITH beats WITHOUT", "reproduced"), _row("shuffle | control", "not resolved")])
    _record(tmp_path, "cpu", "A4_synthetic_summary", "paper_a", [_row("WITH beats WITHOUT", "contradicted")])
    _record(tmp_path, "smoke", "C3_selective_summary", "paper_c",
            [_row("selective beats random, sst2", "reproduced", testbed="real text"),
             _row("selective beats random, imdb", "contradicted", testbed="real text")])
    out = write_claim_tables("smoke", tmp_path)
    a = (out / "claims_paper_a.md").read_text()
    assert 'class="verdict verdict-contradicted">contradicted' in a and "verdict-reproduced" in a
    assert "shuffle \\| control" in a  # a pipe in a claim does not break the table
    assert "(/book/runs/smoke/A4_synthetic_summary/run.ipynb)" in a  # the rendered profile links
    text = (out / "scorecard.md").read_text()
    card = _table(text)
    # first the verdicts counted per paper and profile, then the forest plot, then the tables
    counts = card[: card.index(next(line for line in card if line.startswith("| Claim")))]
    assert counts[0] == ("| Paper | Profile | reproduced | contradicted | equivalent within ±delta | "
                         "insensitive | not resolved | not measured |")
    assert "| [A](/book/paper_a.md) | smoke | 1 | 0 | 0 | 0 | 1 | 0 |" in counts
    assert "| [A](/book/paper_a.md) | cpu | 0 | 1 | 0 | 0 | 0 | 0 |" in counts
    assert "| [C](/book/paper_c.md) | smoke | 1 | 1 | 0 | 0 | 0 | 0 |" in counts
    assert text.index("| Paper | Profile") < text.index("![Forest plot") < text.index("| Claim")
    # a table per paper: one row per claim, one column per profile and testbed that paper ran on,
    # the dose once in the header
    assert text.index("**[Paper A](/book/paper_a.md)**") < text.index("**[Paper C](/book/paper_c.md)**")
    dose = "<br><small>dose: 4,096 / 1,536,000 tokens</small>"
    assert f"| Claim | smoke: synthetic{dose} | cpu: synthetic{dose} |" in card
    assert f"| Claim | smoke: real text{dose} |" in card
    (with_without,) = [line for line in card if "WITH beats WITHOUT" in line]
    cells = with_without.split(" | ")
    assert "verdict-reproduced" in cells[1] and "(/book/runs/smoke/A4_synthetic_summary/run.ipynb)" in cells[1]
    assert "verdict-contradicted" in cells[2] and "/book/runs/cpu" not in cells[2]  # not rendered: no link
    assert cells[1].endswith("<br><small>controls passed (1)</small>") and "dose" not in cells[1]
    assert sum("selective beats random" in line for line in card) == 2
    assert "No summary records yet" in (out / "claims_paper_b.md").read_text()


def test_the_scorecard_names_a_failed_control_and_writes_its_csv_and_forest_plot(tmp_path):
    failed = {"name": "the discriminator flags replacements", "kind": "manipulation took", "measured": 0.0,
              "threshold": 0.3, "op": ">=", "field": "x", "passed": False}
    _record(tmp_path, "cpu", "B3_true_negatives_summary", "paper_b",
            [_row("Better downstream score: electra/shield", "insensitive", controls=[failed])])
    _record(tmp_path, "cpu", "A4_synthetic_summary", "paper_a", [_row("WITH beats WITHOUT", "reproduced")])
    out = write_claim_tables("smoke", tmp_path, also=["cpu"])
    card = (out / "scorecard.md").read_text()
    assert "<small>failed: the discriminator flags replacements</small>" in card
    assert "{download}`claims.csv </book/_generated/claims.csv>`" in card
    assert "![Forest plot of the cpu profile's claims](/book/_generated/forest_cpu.png)" in card
    assert (out / "forest_cpu.png").stat().st_size > 1000
    assert "\n| [B](/book/paper_b.md) | cpu | 0 | 0 | 0 | 1 | 0 | 0 |" in card
    with (out / "claims.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert {r["verdict"] for r in rows} == {"insensitive", "reproduced"}
    (b,) = [r for r in rows if r["chapter"] == "paper_b"]
    assert b["controls_passed"] == "0" and "discriminator" in b["failed_controls"] and b["estimate"] == "0.03"


def test_a_profile_shown_beside_the_built_one_is_linked_and_others_are_left_out(tmp_path):
    _record(tmp_path, "smoke", "A4_synthetic_summary", "paper_a", [_row("WITH beats WITHOUT", "reproduced")])
    _record(tmp_path, "cpu", "A4_synthetic_summary", "paper_a", [_row("WITH beats WITHOUT", "reproduced")])
    _record(tmp_path, "paper-rehearsal", "A4_synthetic_summary", "paper_a",
            [_row("WITH beats WITHOUT", "contradicted")])
    card = (write_claim_tables("smoke", tmp_path, also=["cpu"]) / "scorecard.md").read_text()
    assert "(/book/runs/cpu/A4_synthetic_summary/run.ipynb)" in card
    assert "paper-rehearsal" not in card  # a rehearsal's numbers are no result
    rehearsal = (write_claim_tables("paper-rehearsal", tmp_path) / "scorecard.md").read_text()
    assert "(/book/runs/paper-rehearsal/" in rehearsal  # unless it is the book


def test_every_row_keeps_its_own_verdict_words(tmp_path):
    _record(tmp_path, "smoke", "A6_real_summary", "paper_a",
            [_row("r is low", "reproduced"), _row("r is low, excluded", "excluded: model at chance")])
    card = (write_claim_tables("smoke", tmp_path) / "scorecard.md").read_text()
    assert ">reproduced</span>" in card and ">excluded: model at chance</span>" in card


def test_missed_sanity_floors_are_named_under_the_tables_that_rest_on_them(tmp_path):
    _record(tmp_path, "cpu", "B3_true_negatives_summary", "paper_b", [_row("Better downstream score", "equivalent")])
    _record(tmp_path, "cpu", "C3_selective_summary", "paper_c", [_row("selective beats random", "reproduced")])
    checks = {"B3_true_negatives_summary": [
        {"check": "electra/none minus scratch: amazon-food, accuracy", "measured": -0.004, "floor": 0.05,
         "status": "MISSED"},
        {"check": "mlm/none minus scratch: amazon-food, accuracy", "measured": None, "floor": 0.05,
         "status": "not measured"},
        {"check": "electra/shield minus scratch: amazon-food, accuracy", "measured": 0.06, "floor": 0.05,
         "status": "met"}],
        "C3_selective_summary": [{"check": "few labels: amazon-food, random", "measured": 0.81,
                                  "floor": 0.8, "status": "met"}]}
    for notebook, rows in checks.items():
        path = tmp_path / "book" / "runs" / "cpu" / notebook / "run.json"
        rec = json.loads(path.read_text())
        rec["metrics"]["floors"] = rows
        path.write_text(json.dumps(rec))
    out = write_claim_tables("smoke", tmp_path, also=["cpu"])
    card = (out / "scorecard.md").read_text()
    assert "**Sanity floors missed.**" in card
    (line,) = [ln for ln in card.splitlines() if ln.startswith("- ")]
    assert line == ("- B3_true_negatives_summary ([cpu](/book/runs/cpu/B3_true_negatives_summary/run.ipynb)):"
                    " 2 of 3 checks missed, e.g. electra/none minus scratch: amazon-food, accuracy: -0.004"
                    " against 0.05.")
    assert "Sanity floors missed" in (out / "claims_paper_b.md").read_text()
    assert "Sanity floors missed" not in (out / "claims_paper_c.md").read_text()  # all met: no note


def test_a_cell_names_an_unmeasured_control_or_the_arm_at_its_majority_class(tmp_path):
    unmeasured = {"name": "pretraining helps", "kind": "effect exists", "measured": 0.1, "low": 0.1,
                  "high": 0.1, "n": 1, "unit": "seeds", "threshold": 0.0, "op": ">", "field": "x",
                  "status": "not measured", "passed": False}
    at_majority = {**_row("WITH beats WITHOUT", "not resolved"), "at_majority": ["WITHOUT", "scratch"]}
    _record(tmp_path, "cpu", "A4_synthetic_summary", "paper_a",
            [_row("one seed", "not measured", controls=[unmeasured]), at_majority,
             {**_row("costs", "reproduced"), "scale": "extra step time (fraction)", "dose": "other"}])
    out = write_claim_tables("cpu", tmp_path)
    card = (out / "scorecard.md").read_text()
    assert 'class="verdict verdict-not-measured">not measured' in card
    assert "<small>not measured: pretraining helps</small>" in card
    assert "<small>at the majority class: WITHOUT, scratch</small>" in card
    assert "dose: per claim, on the summary page" in card  # two doses in one column
    with (out / "claims.csv").open() as f:
        rows = {r["claim"]: r for r in csv.DictReader(f)}
    assert rows["WITH beats WITHOUT"]["at_majority"] == "WITHOUT, scratch"
    assert "pretraining helps" in rows["one seed"]["unmeasured_controls"]
    assert rows["costs"]["scale"] == "extra step time (fraction)"


def test_the_forest_plot_has_a_panel_per_paper_and_scale():
    from mlmlib.runs import scorecard

    rows = [{**_row("a", "reproduced"), "chapter": "paper_a"},
            {**_row("b", "reproduced"), "chapter": "paper_b", "scale": "extra step time (fraction)"},
            {**_row("c", "reproduced"), "chapter": "paper_b"}]
    assert list(scorecard.panels(rows)) == [("A", "accuracy difference"),
                                            ("B", "extra step time (fraction)"),
                                            ("B", "accuracy difference")]


def test_the_scorecard_counts_the_outcomes_of_the_verdict_vocabulary():
    from mlmlib import verdicts
    from mlmlib.runs import scorecard

    assert scorecard.OUTCOMES == verdicts.VERDICTS
