"""End to end: the test plan through papermill, then a strict `jupyter-book build`.

Assertions read the records (what the notebooks measured), and check that the rendered pages
show those values: no assertion here can pass on a page's source code alone.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from html import escape
from pathlib import Path

import pytest
from browser import check_book, find_chromium
from scorecards import check_card

from mlmlib import verdicts
from mlmlib.runs.plans import load_plan
from mlmlib.runs.records import load_records
from mlmlib.runs.scorecard import verdict_class

ROOT = Path(__file__).resolve().parents[1]
SUMMARIES = ("A4_synthetic_summary", "A6_real_summary", "B3_true_negatives_summary",
             "C3_selective_summary")


@pytest.mark.slow
def test_test_profile_runs_and_book_renders_with_figures(tmp_path):
    # Records of run ids an older test plan had (a clean clone has none) would be read by the
    # summaries and fail the run-id check below: every run is forced anyway, so start empty.
    shutil.rmtree(ROOT / "book" / "runs" / "test", ignore_errors=True)
    # as `make book` runs a profile: two runs side by side (the serial batch: test_runner.py)
    run = subprocess.run([sys.executable, "-m", "mlmlib", "run", "--profile", "test", "--force",
                          "--executor", "local", "--max-parallel", "2"],
                         cwd=ROOT, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    plan = load_plan("test")
    records = load_records("test", root=ROOT)
    assert sorted(records["run_id"]) == sorted(f"{r.notebook}/{r.slug}" for r in plan.runs)
    assert records["code_version"].str.len().eq(16).all()
    # the run report reads its own profile only (the committed cpu records sit beside these)
    report = records.set_index("notebook").loc["runs_report"]
    assert report["runs"] == len(records) - 1 and list(report["wall_time_s_by_profile"]) == ["test"]

    # the measured values: well-formed, from the vocabulary, and consistent with their inputs
    a1 = records.set_index("notebook").loc["A1_synthetic_data"]
    assert a1["property_present_in_mix"] in verdicts.VERDICTS
    assert a1["labels_invariant_under_swap"] is True
    mix = {r["pairs"]: r for r in a1["similarity"] if r["corpus"] == "mix"}
    assert mix["synonyms"]["mean cosine"] > mix["random pairs"]["mean cosine"]
    for notebook in SUMMARIES:
        summary = records.set_index("notebook").loc[notebook]
        found = [c["verdict"] for c in summary["claims"]]
        assert found, f"{notebook}: no claim rows"
        assert set(found) <= set(verdicts.VERDICTS) | {"excluded: model at chance"}, notebook
        # the rule sweep on the test plan's tiny records: every claim module's rows keep the rules
        check_card(summary["scorecard"])
    a4 = records.set_index("notebook").loc["A4_synthetic_summary"]
    # two fine-tuning seeds in the test plan: below the minimum, so no control has an interval
    # and no claim is measured
    assert {c["verdict"] for c in a4["claims"]} == {verdicts.NOT_MEASURED}

    build = subprocess.run([sys.executable, "-m", "mlmlib", "book", "--profile", "test",
                            "--output", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, check=False)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    html = tmp_path / "_build" / "html"
    assert (html / "index.html").exists()
    for run_ in plan.runs:
        page = html / "book" / "runs" / "test" / run_.notebook / f"{run_.slug}.html"
        assert page.exists(), f"missing page {page}"
    a1_page = (html / "book" / "runs" / "test" / "A1_synthetic_data" / "seed-0.html").read_text()
    assert a1_page.count("<img") >= 2
    syn = mix["synonyms"]  # the page prints the interval its record holds
    assert f"{syn['mean cosine']:.3f} [{syn['95% CI low']:.3f}, {syn['95% CI high']:.3f}]" in a1_page
    assert f"-&gt; {a1['property_present_in_mix']}" in a1_page
    chapter = (html / "book" / "paper_a.html").read_text()
    assert "A1_synthetic_data/seed-0.html" in chapter  # the run is linked from its chapter
    # results first: the chapter's claim table, generated from the A4 record, is on the page, one
    # row per claim with its verdict; the effect's full text is on the summary page it links
    first_claim = a4["scorecard"][0]
    assert escape(first_claim["claim"], quote=False) in chapter, first_claim["claim"]
    assert f'{verdict_class(first_claim["verdict"])}">' in chapter
    summary_page = (html / "book" / "runs" / "test" / "A4_synthetic_summary" / "run.html").read_text()
    assert escape(first_claim["effect"], quote=False) in summary_page, first_claim["effect"]

    # every page in a real browser: loads, no broken image or link, no traceback or warning
    # in an output, no absolute local path; screenshots kept for a person to look at
    if find_chromium() is None:
        pytest.skip("no Chromium (Debian package chromium): the browser check did not run")
    shots = ROOT / "book" / "_build" / "screenshots-test"
    problems = check_book(html, screenshots=shots)
    assert not problems, "\n".join(problems)
