"""End to end: the test plan through papermill, then a strict `jupyter-book build`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mlmlib.plans import load_plan

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_test_profile_runs_and_book_renders_with_figures(tmp_path):
    run = subprocess.run([sys.executable, "-m", "mlmlib", "run", "--profile", "test", "--force"],
                         cwd=ROOT, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    build = subprocess.run([sys.executable, "-m", "mlmlib", "book", "--profile", "test",
                            "--output", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, check=False)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    html = tmp_path / "_build" / "html"
    assert (html / "index.html").exists()
    for run_ in load_plan("test").runs:
        page = html / "book" / "runs" / "test" / run_.notebook / f"{run_.slug}.html"
        assert page.exists(), f"missing page {page}"
    a1 = (html / "book" / "runs" / "test" / "A1_synthetic_data" / "seed-0.html").read_text()
    assert a1.count("<img") >= 2 and "reproduced" in a1
    chapter = (html / "book" / "paper_a.html").read_text()
    assert "A1_synthetic_data/seed-0.html" in chapter  # the run is linked from its chapter
