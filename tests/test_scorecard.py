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
    # a table per paper: one row per claim, one column per profile and testbed that paper ran on
    assert text.index("**[Paper A](/book/paper_a.md)**") < text.index("**[Paper C](/book/paper_c.md)**")
    assert card[0] == "| Claim | smoke: synthetic | cpu: synthetic |"
    assert "| Claim | smoke: real text |" in card
    (with_without,) = [line for line in card if "WITH beats WITHOUT" in line]
    cells = with_without.split(" | ")
    assert "verdict-reproduced" in cells[1] and "(/book/runs/smoke/A4_synthetic_summary/run.ipynb)" in cells[1]
    assert "verdict-contradicted" in cells[2] and "/book/runs/cpu" not in cells[2]  # not rendered: no link
    assert "controls passed (1)" in cells[1] and "dose: 4,096 / 1,536,000 tokens" in cells[1]
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
    assert "failed: the discriminator flags replacements: 0 (needs &gt;= 0.3)" in card
    assert "{download}`claims.csv </book/_generated/claims.csv>`" in card
    assert "![Forest plot of the cpu profile's claims](/book/_generated/forest_cpu.png)" in card
    assert (out / "forest_cpu.png").stat().st_size > 1000
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
