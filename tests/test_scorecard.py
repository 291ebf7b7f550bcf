"""The claim tables the book builder writes from the records (results first, never typed)."""

from __future__ import annotations

import json
from pathlib import Path

from mlmlib.runs.book import write_claim_tables


def _record(root: Path, profile: str, notebook: str, chapter: str, rows: list[dict]) -> None:
    folder = root / "book" / "runs" / profile / notebook
    folder.mkdir(parents=True, exist_ok=True)
    rec = {"notebook": notebook, "profile": profile, "chapter": chapter, "params": {},
           "metrics": {"scorecard": rows}, "run_id": f"{notebook}/run"}
    (folder / "run.json").write_text(json.dumps(rec))


def _row(claim: str, verdict: str, effect: str = "0.03 [0.01, 0.05]") -> dict:
    return {"claim": claim, "effect": effect, "seeds": 5, "delta": None, "verdict": verdict}


def test_tables_come_from_the_records_of_every_profile(tmp_path):
    _record(tmp_path, "smoke", "A4_synthetic_summary", "paper_a",
            [_row("WITH beats WITHOUT", "reproduced"), _row("shuffle | control", "not resolved")])
    _record(tmp_path, "cpu", "A4_synthetic_summary", "paper_a", [_row("WITH beats WITHOUT", "contradicted")])
    _record(tmp_path, "smoke", "C3_selective_summary", "paper_c",
            [_row("selective beats random, sst2", "reproduced"),
             _row("selective beats random, imdb", "contradicted")])
    out = write_claim_tables("smoke", tmp_path)
    a = (out / "claims_paper_a.md").read_text()
    assert "0.03 [0.01, 0.05]" in a and "**contradicted**" in a and "**reproduced**" in a
    assert "shuffle \\| control" in a  # a pipe in a claim does not break the table
    assert "[smoke](/book/runs/smoke/A4_synthetic_summary/run.ipynb)" in a  # the rendered profile links
    assert "| cpu |" in a  # another profile's rows are shown, not linked
    card = (out / "scorecard.md").read_text().splitlines()
    assert card[0] == "| Paper | Claim | Profile | Verdict | Seeds | ±delta | Effect [95% CI] |"
    # one line per claim and profile, the lines of one claim together, smoke before cpu
    with_without = [line for line in card if "WITH beats WITHOUT" in line]
    assert len(with_without) == 2 and card.index(with_without[1]) == card.index(with_without[0]) + 1
    assert "[smoke](/book/runs/smoke/A4_synthetic_summary/run.ipynb)" in with_without[0]
    assert "**reproduced**" in with_without[0] and "0.03 [0.01, 0.05]" in with_without[0]
    assert "| cpu |" in with_without[1] and "**contradicted**" in with_without[1]
    assert sum("selective beats random" in line for line in card) == 2
    assert "No summary records yet" in (out / "claims_paper_b.md").read_text()


def test_a_profile_shown_beside_the_built_one_is_linked_and_others_are_left_out(tmp_path):
    _record(tmp_path, "smoke", "A4_synthetic_summary", "paper_a", [_row("WITH beats WITHOUT", "reproduced")])
    _record(tmp_path, "cpu", "A4_synthetic_summary", "paper_a", [_row("WITH beats WITHOUT", "reproduced")])
    _record(tmp_path, "paper-rehearsal", "A4_synthetic_summary", "paper_a",
            [_row("WITH beats WITHOUT", "contradicted")])
    card = (write_claim_tables("smoke", tmp_path, also=["cpu"]) / "scorecard.md").read_text()
    assert "[cpu](/book/runs/cpu/A4_synthetic_summary/run.ipynb)" in card
    assert "paper-rehearsal" not in card  # a rehearsal's numbers are no result
    rehearsal = (write_claim_tables("paper-rehearsal", tmp_path) / "scorecard.md").read_text()
    assert "[paper-rehearsal](/book/runs/paper-rehearsal/" in rehearsal  # unless it is the book


def test_every_row_keeps_its_own_verdict_words(tmp_path):
    _record(tmp_path, "smoke", "A6_real_summary", "paper_a",
            [_row("r is low", "reproduced"), _row("r is low", "excluded: model at chance")])
    card = (write_claim_tables("smoke", tmp_path) / "scorecard.md").read_text()
    assert "**reproduced**" in card and "**excluded: model at chance**" in card


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
