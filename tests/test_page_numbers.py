"""Measured numbers on the chapter pages come from records (mlmlib.runs.page_numbers)."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest
import yaml

from mlmlib import code_digest
from mlmlib.runs import page_numbers as pn

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "book").glob("*.md"))


def test_the_pages_are_found():
    names = {p.name for p in PAGES}
    assert {"intro.md", "paper_a.md", "paper_b.md", "paper_c.md", "design_history.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_number_on_a_page_is_rendered_or_declared(page):
    assert pn.page_problems(page.read_text()) == []


def test_the_design_history_says_its_numbers_are_historical():
    text = (ROOT / "book" / "design_history.md").read_text()
    assert pn.front_matter(text).get("numbers") == pn.HISTORICAL
    first_paragraph = pn.prose(text).strip().split("\n\n")[1]  # after the title
    assert "historical" in first_paragraph
    exempt = [p.name for p in PAGES if pn.front_matter(p.read_text()).get("numbers")]
    assert exempt == ["design_history.md"]


def test_every_substitution_on_a_page_is_a_registered_quantity():
    used = {name for page in PAGES for name in pn.substitutions(page.read_text())}
    assert used - set(pn.QUANTITIES) == set()
    assert set(pn.QUANTITIES) - used == set(), "registered but on no page"


def test_every_quantity_renders_from_the_committed_cpu_records():
    values = pn.render_all(ROOT)
    assert set(values) == set(pn.QUANTITIES)
    missing = {k: v for k, v in values.items() if v.startswith("not measured")}
    if missing:
        warnings.warn(f"not measured in the committed records: {missing}", stacklevel=1)
    for name, value in values.items():
        q = pn.QUANTITIES[name]
        assert q.description and q.field and q.notebook, name
        assert value.startswith("not measured") or any(c.isdigit() for c in value), (name, value)
        assert "nan" not in value.lower(), (name, value)


def test_known_values_of_the_committed_records():
    values = pn.render_all(ROOT)
    # B1's uncorrected discriminator flags replaced tokens at each of its three checkpoints
    flags = values["b1_disc_replaced"].split(" at steps ")[0].split(" / ")
    assert len(flags) == 3 and min(float(f) for f in flags) >= 0.3, values["b1_disc_replaced"]
    # B4: eight languages at temperature 1; false negatives on `mix` and almost none where
    # synonyms never share a context; the uncorrected discriminator leaves them unflagged
    assert values["b4_runs"] == "8"
    assert float(values["b4_fn_mix"].split()[0]) >= 0.2, values["b4_fn_mix"]
    assert float(values["b4_fn_shift"].split()[0]) < 0.01, values["b4_fn_shift"]
    assert float(values["b4_flag_fn"].split()[0]) < 0.05, values["b4_flag_fn"]
    assert "`electra/relabel` " in values["b4_arm_languages"]
    assert values["c2_majority"] == "0.658"


def test_without_records_every_quantity_says_not_measured(tmp_path):
    values = pn.render_all(tmp_path)
    assert set(values.values()) == {"not measured (no cpu records)"}


def test_records_without_the_field_say_not_measured():
    records = pd.DataFrame([{"notebook": "B1_true_negatives_pretrain", "metrics_moved": 1}])
    q = pn.QUANTITIES["b1_disc_replaced"]
    assert pn.render(q, records) == f"not measured (no cpu records of {q.field})"


def test_a_typed_measured_number_fails_the_check():
    page = "# A page\n\nThe discriminator flags about 55% of them, at 0.809 accuracy.\n"
    problems = pn.page_problems(page)
    assert [p.split(": ")[1].split()[0] for p in problems] == ["55%", "0.809"]
    assert problems[0].startswith("line 3:")


def test_what_counts_as_a_number():
    text = ("Decimals 0.81, .5, 3.25 and 5e-5; percentages 55% and 0.5 %; a margin ±0.01 and ±2. "
            "Integers 21 and 4,000 are not; nor names: v1.1, GloVe 6B 50d, all-MiniLM-L6-v2, 88fc5bb. "
            "A sign is not part of it: -0.004; a range 0.01-0.05.")
    assert [n for _, n in pn.numbers(text)] == [
        "0.81", ".5", "3.25", "5e-5", "55%", "0.5%", "±0.01", "±2", "0.004", "0.01", "0.05"]


def test_what_is_not_prose():
    text = ("---\nliterals:\n  \"0.9\": parameter, x\n---\n\n# T\n\n"
            "```python\nx = 0.5\n```\n\n"
            "```{include} _generated/claims_0.1.md\n```\n\n"
            ":::{note}\n:class: 0.7\nnothing here\n:::\n\n"
            "Code `lr = 0.1`, a role {cite}`a0.2`, math $x = 0.3$ and $$y = 0.4$$, a value "
            "{{ b1_scratch }}, a link [the page](https://example.org/0.6) and "
            "<https://example.org/0.8>.\n<!-- 0.11 -->\n\n[ref]: https://example.org/0.12\n")
    assert pn.numbers(text) == []


def test_declarations_are_checked():
    page = ("---\nliterals:\n  \"0.01\": parameter, B3's margin\n  \"80.4\": paper\n"
            "  \"0.5\": guess, a number\n  0.3: parameter, unquoted\n---\n\n"
            "A margin of ±0.01, a score of 80.4.\n")
    problems = pn.page_problems(page)
    assert any("'80.4': declare it" in p for p in problems)
    assert any("'0.5': declare it" in p for p in problems)
    assert any("quote it" in p for p in problems)
    assert any("'0.5' is declared but not used" in p for p in problems)
    assert not any("±0.01" in p for p in problems)  # "0.01" covers "±0.01"


def test_a_historical_page_is_exempt():
    page = "---\nnumbers: historical\n---\n\n# History\n\nIt flagged 55% of them.\n"
    assert pn.page_problems(page) == []


def test_the_generated_config_carries_every_quantity(tmp_path):
    out = pn.write_book_config(ROOT, tmp_path / "_config.yml")
    config = yaml.safe_load(out.read_text())
    original = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["title"] == original["title"]
    assert config["bibtex_bibfiles"] == original["bibtex_bibfiles"]
    parse = config["parse"]
    assert parse["myst_enable_extensions"].count("substitution") == 1
    assert set(original["parse"]["myst_enable_extensions"]) <= set(parse["myst_enable_extensions"])
    assert set(parse["myst_substitutions"]) == set(pn.QUANTITIES)


# What the runs package may not name: a paper's arms, test sets, corpora or record fields. The
# papers declare the numbers their pages quote in their own packages (page_quantities.py).
PAPER_WORDS = re.compile(r"electra/|mlm/|\b[AB]-D[12]\b|\bshield\b|\brelabel\b|\bsr-word\b|"
                         r"\bexponential\b|fn_rate|acc_true_replaced|synonym_cosine|\bLAST_WINDOWS\b")


def test_the_runs_package_names_no_papers_arm_test_set_or_field():
    found = []
    for path in sorted((ROOT / "mlmlib" / "runs").rglob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if PAPER_WORDS.search(line):
                found.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not found, "the runs package names paper-specific things:\n" + "\n".join(found)


def test_every_paper_declares_its_page_numbers_torch_free():
    loaded = pn.load_declarations()
    assert sorted(m.split(".")[2] for m in loaded) == code_digest.papers()
    code = ("import sys; from mlmlib.runs import page_numbers; "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", "loading the page numbers imports " + out.stdout
    papers_of = {q.name: q.notebook for q in pn.QUANTITIES.values()}
    assert papers_of["b4_fn_mix"] == "B4_synthetic_true_negatives"  # a paper's declaration loaded




def test_the_analogues_top_dose_verdict_and_controls_render_from_c3():
    def control(name, status):
        return {"name": name, "status": status}

    claims = [{"testbed": "real", "dose": 100, "verdict": "reproduced", "seeds": 3, "controls": []},
              {"testbed": "synthetic", "dose": 30, "verdict": "insensitive", "seeds": 12,
               "controls": [control("moves", "failed")]},
              {"testbed": "synthetic", "dose": 3000, "verdict": "not resolved", "seeds": 12,
               "controls": [control("list share", "passed"), control("loss", "passed"),
                            control("moves", "passed")]}]
    records = pd.DataFrame([{"notebook": "C3_selective_summary", "dose_claims": claims}])
    verdict, controls = (pn.render(pn.QUANTITIES[n], records)
                         for n in ("c4_top_verdict", "c4_top_controls"))
    assert verdict == "not resolved at 3,000 steps over 12 languages"
    assert controls == "all 3 controls passed"
    claims[2]["controls"][2]["status"] = "failed"
    assert pn.render(pn.QUANTITIES["c4_top_controls"], records) == (
        "1 of 3 controls not passed: moves (failed)")


def test_the_mechanism_verdicts_render_from_b3_with_the_controls_they_failed():
    def row(arm, verdict, statuses):
        return {"claim": f"A correction restores the flagging of true replacements: {arm} (mix)",
                "verdict": verdict, "estimate": 0.2, "low": 0.1, "high": 0.3, "seeds": 8,
                "controls": [{"name": f"c{i}: what", "status": s} for i, s in enumerate(statuses)]}

    card = [row("electra/relabel", "reproduced", ["passed", "passed"]),
            row("electra/shield", "insensitive", ["passed", "failed"]),
            {**row("electra/shield", "reproduced", []), "claim": "Better downstream score: x"}]
    records = pd.DataFrame([{"notebook": "B3_true_negatives_summary", "scorecard": card}])
    assert pn.render(pn.QUANTITIES["b4_mechanism_verdicts"], records) == (
        "`electra/relabel` reproduced, 0.200 [0.100, 0.300] over 8 languages (all 2 controls "
        "passed); `electra/shield` insensitive, 0.200 [0.100, 0.300] over 8 languages (failed: c1)")


def test_b1_seeds_say_how_many_and_which():
    def seeds(values):
        records = pd.DataFrame({"notebook": "B1_true_negatives_pretrain", "seed": values})
        return pn.render(pn.QUANTITIES["b1_seeds"], records)

    assert seeds([17, 15, 16]) == "3 seeds, 15-17"
    assert seeds([15, 18]) == "2 seeds, 15, 18"
