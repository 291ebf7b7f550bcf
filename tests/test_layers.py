"""The architecture, read from the imports: core and data never import a paper, the runs or the
offline package, no paper imports another, the runs package imports no training code and no
science (not even to name a hub resource), no module imports itself through others (no
cycles), and no module outgrows a reader (MAX_MODULE_LINES). Plus the code versions that follow
from it (each notebook's own imports: tests/test_code_version.py)."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from mlmlib import code_digest
from mlmlib.paths import PACKAGE_DIR
from mlmlib.runs import runner

# What the runs package may import from the library: orchestration helpers, the verdict rules,
# sanity floors, the page-number registry, figure and table helpers (to show them in the book:
# the scorecard's forest plots; plots imports no torch) and the parameter groups' checks
# (configs; the group dataclasses it loads by name are torch-free), nothing that trains and
# nothing of the hub. The papers' page-number declarations are found by folder, not imported.
RUNS_MAY_IMPORT = ("mlmlib.runs", "mlmlib.atomic", "mlmlib.paths", "mlmlib.code_digest",
                   "mlmlib.stats", "mlmlib.verdicts", "mlmlib.floors", "mlmlib.plots",
                   "mlmlib.configs", "mlmlib.tables", "mlmlib.page_quantities")
# The offline package (mirror, rehearsal stand-ins) sits above the papers; only the entry
# point (mlmlib.__main__) and nothing below it imports it.
OFFLINE = "mlmlib.offline"
MAX_MODULE_LINES = 600  # a module longer than this holds more than one concept: split it


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
                if imp != "mlmlib" and not imp.startswith(RUNS_MAY_IMPORT):  # "mlmlib": its __init__
                    errors.append(f"{name} (runs) imports {imp}: the runner never imports training code")
            elif name.startswith(OFFLINE):
                continue  # above the papers: it may import any of them, and the runs package
            elif imp.startswith(OFFLINE):
                errors.append(f"{name} imports {imp}: only the entry point uses the offline package")
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
    bad.write_text("from mlmlib.papers.true_negatives import negatives\nimport mlmlib.runs.runner\n"
                   "def later():\n    from mlmlib.offline import mirror\n")
    runner_probe = PACKAGE_DIR / "runs" / "_layer_probe.py"
    runner_probe.write_text("def later():\n    from mlmlib.data import hub\n")
    try:
        errors = _layer_errors()
    finally:
        bad.unlink()
        runner_probe.unlink()
    assert any("imports mlmlib.papers.true_negatives" in e for e in errors)
    assert any("imports the runs package" in e for e in errors)
    assert any("imports mlmlib.offline.mirror: only the entry point" in e for e in errors)
    assert any("mlmlib.runs._layer_probe (runs) imports mlmlib.data.hub" in e for e in errors)


def _import_graph() -> dict[str, set[str]]:
    """{module: the mlmlib modules it imports}, a `from package import name` counted as the
    submodule when `name` is one, and a submodule's import of its own package left out (Python
    has run the package's __init__ first anyway; a package re-exporting its parts is no cycle)."""
    modules = {_module(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for imp in _imports(path):
            if imp in modules:
                targets.add(imp)
            elif imp.rpartition(".")[0] in modules:  # `from module import name`: that module
                targets.add(imp.rpartition(".")[0])
        graph[name] = {t for t in targets if t != name and not name.startswith(t + ".")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle, as the sorted modules of one strongly connected component (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles():
    """A cycle (imports inside functions count: they only hide it until the call) means two
    modules are one concept, or a shared piece belongs in a third."""
    assert _cycles(_import_graph()) == []


def test_the_cycle_check_sees_a_cycle_through_an_import_inside_a_function():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    probe, other = PACKAGE_DIR / "_cycle_probe.py", PACKAGE_DIR / "_cycle_probe_b.py"
    probe.write_text("def later():\n    from mlmlib import _cycle_probe_b\n")
    other.write_text("import mlmlib._cycle_probe\n")
    try:
        assert ["mlmlib._cycle_probe", "mlmlib._cycle_probe_b"] in _cycles(_import_graph())
    finally:
        probe.unlink()
        other.unlink()


def test_no_module_is_longer_than_a_reader_holds():
    long = {_module(path): n for path in sorted(PACKAGE_DIR.rglob("*.py"))
            if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}, f"split these along their concepts (at most {MAX_MODULE_LINES} lines)"


def test_every_paper_notebook_names_its_paper():
    expect = {"A": ["distributional"], "B": ["true_negatives"], "C": ["selective_masking"]}
    notebooks = sorted((PACKAGE_DIR.parent / "notebooks").glob("*.ipynb"))
    assert {nb.stem[0] for nb in notebooks if nb.stem[1].isdigit()} == set(expect), notebooks
    for nb in notebooks:
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
    assert changed == sorted(nb for nb in before if nb.startswith("C"))  # paper C's pages only
    assert "C1_task_scores" in changed and len(changed) >= 3
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
