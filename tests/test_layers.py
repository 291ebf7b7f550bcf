"""The architecture, read from the imports: core and data never import a paper or the runs
package, no paper imports another, and the runs package imports no training code. Plus the
code versions that follow from it (each notebook's own imports: tests/test_code_version.py)."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from mlmlib import code_digest
from mlmlib.paths import PACKAGE_DIR
from mlmlib.runs import runner

# What the runs package may import from the library: orchestration helpers and the verdict
# rules, sanity floors and figure helpers (to show them in the book: the scorecard's forest
# plots; plots imports no torch), nothing that trains.
RUNS_MAY_IMPORT = ("mlmlib.runs", "mlmlib.atomic", "mlmlib.paths", "mlmlib.code_digest",
                   "mlmlib.stats", "mlmlib.verdicts", "mlmlib.floors", "mlmlib.plots")
# The mirror command fetches what a plan needs from the hub, so it imports the loaders (and the
# names of A5's hub resources); the command line imports it for that command only.
# The rehearsal builds stand-ins of those resources (from the data package's bundle and the
# shipped MiniLM tokenizer) and points the loaders at them; the command line imports it only
# for `run --rehearse`.
FETCHERS = {"mlmlib.runs.mirror": ("mlmlib.data", "mlmlib.papers.distributional.perturb", "mlmlib.qa"),
            "mlmlib.runs.standins": ("mlmlib.data", "mlmlib.minilm"),
            "mlmlib.runs.rehearsal": ("mlmlib.data.hub",)}


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every mlmlib module a file imports, at any depth (lazy imports inside functions too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return {m for m in found if m == "mlmlib" or m.startswith("mlmlib.")}


def _layer_errors() -> list[str]:
    errors = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        name = _module(path)
        if name == "mlmlib.__main__":
            continue  # the entry point dispatches to the runs CLI or the benchmark
        own = code_digest.paper_of(name)
        for imp in sorted(_imports(path)):
            other = code_digest.paper_of(imp)
            if name.startswith("mlmlib.runs"):
                if not imp.startswith(RUNS_MAY_IMPORT + FETCHERS.get(name, ())):
                    errors.append(f"{name} (runs) imports {imp}: the runner never imports training code")
            elif own is None and (other or imp.startswith("mlmlib.runs")):
                errors.append(f"{name} (core/data) imports {imp}")
            elif own is not None and other is not None and other != own:
                errors.append(f"{name} (paper {own}) imports {imp} (paper {other})")
            elif own is not None and imp.startswith("mlmlib.runs"):
                errors.append(f"{name} (paper {own}) imports the runs package: {imp}")
    return errors


def test_layers_hold():
    assert _layer_errors() == []


def test_layer_check_catches_a_paper_importing_another(tmp_path, monkeypatch):
    bad = PACKAGE_DIR / "papers" / "selective_masking" / "_layer_probe.py"
    bad.write_text("from mlmlib.papers.true_negatives import negatives\nimport mlmlib.runs.runner\n")
    try:
        errors = _layer_errors()
    finally:
        bad.unlink()
    assert any("imports mlmlib.papers.true_negatives" in e for e in errors)
    assert any("imports the runs package" in e for e in errors)


def test_every_paper_notebook_names_its_paper():
    expect = {"A": ["distributional"], "B": ["true_negatives"], "C": ["selective_masking"]}
    for nb in sorted((PACKAGE_DIR.parent / "notebooks").glob("*.ipynb")):
        want = expect.get(nb.stem[0]) if nb.stem[1].isdigit() else []
        if nb.stem == "A1_synthetic_data":
            want = []  # A1 describes the languages: data package only
        assert runner.notebook_papers(nb.stem) == want, nb.stem


@pytest.fixture
def library_copy(tmp_path, monkeypatch):
    """A copy of the library's sources that the digests read instead of the real ones."""
    copy = tmp_path / "mlmlib"
    shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__", "*.xz"))
    monkeypatch.setattr(code_digest, "PACKAGE_DIR", copy)
    monkeypatch.setattr(code_digest, "PAPERS_DIR", copy / "papers")
    monkeypatch.setattr(code_digest, "NOT_CODE", (copy / "runs", copy / "papers", copy / "__main__.py"))
    return copy


def _versions() -> dict[str, str]:
    notebooks = sorted(p.stem for p in (PACKAGE_DIR.parent / "notebooks").glob("*.ipynb"))
    return {nb: runner.code_version(nb) for nb in notebooks}


def test_an_edit_in_one_paper_changes_only_its_runs(library_copy):
    before = _versions()
    with open(library_copy / "papers" / "selective_masking" / "selective.py", "a") as f:
        f.write("\n# an edit\n")
    after = _versions()
    changed = sorted(nb for nb in before if before[nb] != after[nb])
    assert changed == ["C1_task_scores", "C2_selective_mlm", "C3_selective_summary"]
    with open(library_copy / "runs" / "runner.py", "a") as f:  # orchestration: reruns nothing
        f.write("\n# an edit\n")
    assert _versions() == after
    with open(library_copy / "stats.py", "a") as f:  # the core: reruns the notebooks that reach it
        f.write("\n# an edit\n")
    again = _versions()
    reach = {nb for nb in after if "mlmlib.stats" in code_digest.notebook_modules(
        PACKAGE_DIR.parent / "notebooks" / f"{nb}.ipynb")}
    assert {nb for nb in after if again[nb] != after[nb]} == reach
    assert "B1_true_negatives_pretrain" in reach and "runs_report" not in reach


def test_cached_models_are_keyed_by_their_papers_code(library_copy, tmp_path, monkeypatch):
    from mlmlib import cache

    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path / "work"))
    b = "mlmlib.papers.true_negatives.experiment"
    c = "mlmlib.papers.selective_masking.experiment"
    before = {m: cache.artifact_dir("model", {"x": 1}, code_of=m) for m in (b, c, "mlmlib.basemodel")}
    with open(library_copy / "papers" / "selective_masking" / "experiment.py", "a") as f:
        f.write("\n# an edit\n")
    after = {m: cache.artifact_dir("model", {"x": 1}, code_of=m) for m in before}
    assert after[b] == before[b] and after["mlmlib.basemodel"] == before["mlmlib.basemodel"]
    assert after[c] != before[c]
    with open(library_copy / "pretrain.py", "a") as f:  # the training loop: every model retrains
        f.write("\n# an edit\n")
    assert all(cache.artifact_dir("model", {"x": 1}, code_of=m) != after[m] for m in after)
