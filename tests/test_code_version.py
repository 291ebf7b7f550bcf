"""A run's code version covers the modules its notebook runs (its imports, followed), the data
manifest when it uses data, and its cells; and the rule by which old records are re-keyed."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from mlmlib import code_digest
from mlmlib.paths import PACKAGE_DIR
from mlmlib.runs import runner
from mlmlib.runs.plans import is_summary
from mlmlib.runs.rekey import compare_notebook

ROOT = PACKAGE_DIR.parent
NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
# each paper's claims modules (paper A's are two: the synthetic and the real-text claims)
CLAIMS = {m for p in (ROOT / "mlmlib" / "papers").rglob("*claims.py")
          for m in [f"mlmlib.papers.{p.parent.name}.{p.stem}"]}
TRAINING = ("B1_true_negatives_pretrain", "C2_selective_mlm", "A2_synthetic_pretrain")


@pytest.fixture
def tree(tmp_path):
    """A copy of the library and the notebooks: edits land there, never in the checkout."""
    shutil.copytree(PACKAGE_DIR, tmp_path / "mlmlib", ignore=shutil.ignore_patterns("__pycache__", "*.xz"))
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks", ignore=shutil.ignore_patterns("plans"))
    return tmp_path


def _modules(root: Path, notebook: str) -> set[str]:
    return set(code_digest.notebook_modules(root / "notebooks" / f"{notebook}.ipynb", root / "mlmlib"))


def _versions(root: Path) -> dict[str, str]:
    return {nb: code_digest.notebook_version(root / "notebooks" / f"{nb}.ipynb", root / "mlmlib")
            for nb in NOTEBOOKS}


def _edit(path: Path) -> None:
    with open(path, "a") as f:
        f.write("\n# an edit\n")


def _own_imports(notebook: str) -> set[str]:
    """The mlmlib modules a notebook's cells name themselves (not through other modules)."""
    return code_digest.imported_names(code_digest.notebook_code(ROOT / "notebooks" / f"{notebook}.ipynb"))


def test_the_runner_uses_the_narrowed_version():
    nb = "B1_true_negatives_pretrain"
    assert runner.code_version(nb) == code_digest.notebook_version(ROOT / "notebooks" / f"{nb}.ipynb")


@pytest.mark.parametrize("notebook", TRAINING)
def test_training_closures_hold_no_claims_module_their_cells_do_not_import(notebook):
    modules = _modules(ROOT, notebook)
    # C2 picks the metric it plots from selective_masking.metrics, not from the claims
    assert modules & CLAIMS == set()
    assert not any(code_digest.is_orchestration(m) for m in modules)


def test_closures_follow_imports_into_the_papers_code():
    b1 = _modules(ROOT, "B1_true_negatives_pretrain")
    # imported by experiment at the top (negatives) and inside functions only (minilm, basemodel)
    assert {"mlmlib.papers.true_negatives.negatives", "mlmlib.minilm", "mlmlib.basemodel"} <= b1
    # stats is reached through experiment's own import (stats.class_prior), not through claims
    assert "mlmlib.stats" in b1 and "mlmlib.stats" not in _own_imports("B1_true_negatives_pretrain")


def test_an_edit_of_paper_b_claims_reruns_only_the_notebooks_that_import_them(tree):
    before = _versions(tree)
    _edit(tree / "mlmlib" / "papers" / "true_negatives" / "claims.py")
    after = _versions(tree)
    changed = {nb for nb in NOTEBOOKS if before[nb] != after[nb]}
    # B3 summarises with them; B1 and B2 draw with figures, which never imports them
    assert changed == {"B3_true_negatives_summary"}
    assert not (changed & set(TRAINING))


@pytest.mark.parametrize("claims", sorted(CLAIMS))
def test_a_claims_edit_reaches_exactly_the_notebooks_whose_closure_holds_it(tree, claims):
    before = _versions(tree)
    _edit(code_digest.module_file(claims, tree / "mlmlib"))
    after = _versions(tree)
    changed = {nb for nb in NOTEBOOKS if before[nb] != after[nb]}
    assert changed == {nb for nb in NOTEBOOKS if claims in _modules(tree, nb)}
    assert any(is_summary(nb) for nb in changed)
    # a training notebook is rerun only when its own cells import the claims module
    assert all(claims in _own_imports(nb) for nb in changed if not is_summary(nb))


def test_edits_outside_every_closure_change_no_version(tree):
    before = _versions(tree)
    reached = set().union(*(_modules(tree, nb) for nb in NOTEBOOKS))
    package = tree / "mlmlib"
    outside = [p for p in package.rglob("*.py") if _module(p, package) not in reached]
    assert {"runs/runner.py", "__main__.py", "code_digest.py"} <= {p.relative_to(package).as_posix()
                                                                   for p in outside}
    for path in outside:
        _edit(path)
    (package / "new_module.py").write_text("x = 1\n")
    assert _versions(tree) == before


def _module(path: Path, package: Path) -> str:
    parts = ("mlmlib", *path.relative_to(package).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _notebook(path: Path, code: str) -> Path:
    cells = [{"cell_type": "markdown", "source": ["# a page"]}, {"cell_type": "code", "source": [code]}]
    path.write_text(json.dumps({"cells": cells}))
    return path


@pytest.fixture
def toy(tmp_path):
    """A small package: a lazy import, a relative one, a subpackage, data and orchestration."""
    package = tmp_path / "mlmlib"
    _write(package, {
        "__init__.py": "", "unused.py": "x = 2\n",
        "a.py": "def f():\n    from mlmlib import b  # only inside a function\n    return b\n",
        "b.py": "from .sub import c\n", "sub/__init__.py": "", "sub/c.py": "import mlmlib.runs.x\n",
        "runs/__init__.py": "", "runs/x.py": "", "code_digest.py": "",
        "data/__init__.py": "from mlmlib.data.load import rows\n", "data/load.py": "rows = 1\n",
        "data/embedded/MANIFEST.json": "{}\n",
    })
    return package


def test_an_import_inside_a_function_is_followed(toy):
    nb = _notebook(toy.parent / "nb.ipynb", "%matplotlib inline\nfrom mlmlib import a\n")
    assert set(code_digest.notebook_modules(nb, toy)) == {"mlmlib", "mlmlib.a", "mlmlib.b", "mlmlib.sub",
                                                          "mlmlib.sub.c"}
    first = code_digest.notebook_version(nb, toy)
    _edit(toy / "sub" / "c.py")  # reached through a.f's lazy import, then b's relative import
    second = code_digest.notebook_version(nb, toy)
    assert second != first
    for name in ("unused.py", "runs/x.py", "code_digest.py", "data/embedded/MANIFEST.json"):
        _edit(toy / name)
    assert code_digest.notebook_version(nb, toy) == second


def test_the_data_manifest_counts_for_notebooks_that_use_data(toy):
    uses = _notebook(toy.parent / "uses.ipynb", "from mlmlib.data import rows\n")
    other = _notebook(toy.parent / "other.ipynb", "import mlmlib.a\n")
    assert toy / "data" / "embedded" / "MANIFEST.json" in code_digest.notebook_files(uses, toy)
    before = (code_digest.notebook_version(uses, toy), code_digest.notebook_version(other, toy))
    _edit(toy / "data" / "embedded" / "MANIFEST.json")
    after = (code_digest.notebook_version(uses, toy), code_digest.notebook_version(other, toy))
    assert after[0] != before[0] and after[1] == before[1]


def test_a_notebook_edit_changes_its_version(toy):
    nb = _notebook(toy.parent / "nb.ipynb", "import mlmlib.a\n")
    before = code_digest.notebook_version(nb, toy)
    _notebook(nb, "import mlmlib.a\nprint(1)\n")
    assert code_digest.notebook_version(nb, toy) != before


def _rekey_script(monkeypatch):
    """The script as a module (scripts/ is not a package); registered, as dataclasses need."""
    spec = importlib.util.spec_from_file_location("rekey_records", ROOT / "scripts" / "rekey_records.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "rekey_records", module)
    spec.loader.exec_module(module)
    return module


def test_a_record_is_rekeyed_only_when_current_at_base_with_the_same_code(monkeypatch):
    rk = _rekey_script(monkeypatch)
    good = {"summary": False, "complete": True, "stored_key": "old", "current_key": "new",
            "base_key": "old", "same_params": True, "base_version": "v", "version": "v"}
    assert rk.decide(rk.Facts(**good))[0] == rk.REKEY
    for change, verdict in [({"stored_key": "older"}, rk.RERUN),  # not current at base
                            ({"base_key": None}, rk.RERUN),  # not in the base plan
                            ({"base_version": "w"}, rk.RERUN),  # the code it runs changed
                            ({"base_version": None}, rk.RERUN),  # no such notebook at base
                            ({"same_params": False}, rk.RERUN),
                            ({"complete": False}, rk.RERUN),
                            ({"summary": True}, rk.SUMMARY),  # cheap: always rerun
                            ({"stored_key": "new", "base_key": "other"}, rk.CURRENT)]:
        assert rk.decide(rk.Facts(**{**good, **change}))[0] == verdict, change


def test_a_record_whose_reached_code_is_unchanged_is_rekeyed_with_a_rule_saying_what_was_compared(monkeypatch):
    rk = _rekey_script(monkeypatch)
    compared = ("(2 definitions and 0 statements run at import, source text compared, moved definitions "
                "followed: verdict stats.py -> verdicts.py); edits elsewhere in stats.py are not reached")
    good = {"summary": False, "complete": True, "stored_key": "old", "current_key": "new",
            "base_key": "old", "same_params": True, "base_version": "v", "version": "w",
            "unreached": compared}
    f = rk.Facts(**good)
    assert rk.decide(f)[0] == rk.REKEY
    assert compared in rk.rule(f, "52beca6" + "0" * 33)
    assert "unchanged at base 52beca6: its cells, the data manifest" in rk.rule(f, "52beca6" + "0" * 33)
    assert rk.rule(rk.Facts(**{**good, "version": "v", "unreached": None}), "52beca6") == rk.RULE


# ---------------------------------------------------------------- the same code, definition by definition
STATS = '''"""Statistics."""

from __future__ import annotations

import random


def mean(values):
    return sum(values) / len(values)


def verdict(x):
    return "yes" if x > 0 else "no"


LEVEL = 0.95
'''
VERDICT = 'def verdict(x):\n    return "yes" if x > 0 else "no"\n\n\n'
TRAIN = "from mlmlib import stats\n\n\ndef fit(values):\n    return stats.mean(values)\n"
CELLS = "from mlmlib import train\nprint(train.fit([1, 2]))\n"
FUTURE = "from __future__ import annotations\n\n\n"


def _compare(tmp_path: Path, stats: str, train: str = TRAIN, cells: str = CELLS, base_stats: str = STATS,
             base_cells: str | None = None, files: dict[str, str] | None = None):
    """A base tree and a tree here whose stats.py differ (`files`: more modules here); compare a notebook."""
    for side, text, code, more in (("base", base_stats, base_cells or cells, {}), ("here", stats, cells, files)):
        _write(tmp_path / side / "mlmlib", {"__init__.py": "", "stats.py": text, "train.py": train, **(more or {})})
        _notebook(tmp_path / side / "nb.ipynb", code)
    base, here = tmp_path / "base", tmp_path / "here"
    return compare_notebook(base / "nb.ipynb", base / "mlmlib", here / "nb.ipynb", here / "mlmlib")


def test_deleting_an_unreferenced_function_is_accepted(tmp_path):
    code = _compare(tmp_path, STATS.replace(VERDICT, ""))
    assert code.accepted, code.explain()
    assert [(r.name, r.base, r.here) for r in code.reached] == [("fit", "train.py", "train.py"),
                                                                ("mean", "stats.py", "stats.py")]
    assert code.summary() == ("(2 definitions and 0 statements run at import, source text compared); "
                              "edits elsewhere in stats.py are not reached by its code")


@pytest.mark.parametrize("train, cells, path", [
    # another module of the closure: as an attribute of the module, through each way of naming it
    (TRAIN.replace("stats.mean(values)", "stats.verdict(stats.mean(values))"), CELLS, "stats.verdict"),
    ("import mlmlib.stats as st\n\n\ndef fit(values):\n    return st.verdict(st.mean(values))\n", CELLS,
     "st.verdict"),
    ("import mlmlib.stats\n\n\ndef fit(values):\n    return mlmlib.stats.verdict(1)\n", CELLS,
     "mlmlib.stats.verdict"),
    # ... imported from the module by name
    ("from mlmlib.stats import mean, verdict\n\n\ndef fit(values):\n    return verdict(mean(values))\n",
     CELLS, "verdict"),
    ("from .stats import verdict\n\n\ndef fit(values):\n    return verdict(1)\n", CELLS, "verdict"),
    # the notebook's cells; and the module used as a value (then all its names are reached)
    (TRAIN, "from mlmlib import stats, train\nprint(stats.verdict(train.fit([1])))\n", "stats.verdict"),
    (TRAIN, "from mlmlib import stats, train\nprint(stats, train.fit([1]))\n", "stats.verdict"),
])
def test_deleting_a_referenced_function_is_refused(tmp_path, train, cells, path):
    code = _compare(tmp_path, STATS.replace(VERDICT, ""), train=train, cells=cells)
    assert not code.accepted
    assert f"{path}: defined in stats.py, line 12 at the base, not defined here" in code.explain()


def test_deleting_a_function_only_unreached_code_calls_is_accepted(tmp_path):
    # judge still calls the deleted verdict, but nothing the notebook runs calls judge (module-level
    # rule: refused; definition by definition: judge never runs, so the notebook runs the same code)
    base = STATS + "\n\ndef judge(x):\n    return verdict(x)\n"
    code = _compare(tmp_path, base.replace(VERDICT, ""), base_stats=base)
    assert code.accepted, code.explain()
    reached = _compare(tmp_path / "reached", base.replace(VERDICT, ""), base_stats=base,
                       cells="from mlmlib import stats\nprint(stats.judge(1))\n")
    assert "stats.judge > verdict: defined in stats.py, line 12 at the base, not defined here" in reached.explain()


def test_a_changed_kept_function_is_refused(tmp_path):
    changed = STATS.replace("sum(values) / len(values)", "sum(values) / max(len(values), 1)")
    code = _compare(tmp_path, changed)
    assert not code.accepted
    assert ("train.fit > stats.mean: changed: its source text differs (defined in stats.py, line 8 at "
            "the base, defined in stats.py, line 8 here)") in code.explain()


def test_an_added_function_is_accepted(tmp_path):
    median = "def median(values):\n    return sorted(values)[len(values) // 2]\n"
    code = _compare(tmp_path, STATS + "\n\n" + median)
    assert code.accepted, code.explain()
    assert code.differing == ["stats.py"]


@pytest.mark.parametrize("added, problem", [
    # a reached name bound twice: both statements count, and the base has one
    ("def mean(values):\n    return 0.0\n",
     ("stats.mean: changed: its source text differs (defined in stats.py, line 8 at the base, "
      "defined in stats.py, lines 8, 19 here)")),
    # a builtin the reached code calls, shadowed
    ("def len(values):\n    return 1\n", "stats.mean > len: the builtin at the base, defined in stats.py, line 19 here"),
])
def test_an_added_definition_that_shadows_a_reached_name_is_refused(tmp_path, added, problem):
    code = _compare(tmp_path, STATS + "\n\n" + added)
    assert not code.accepted
    assert problem in code.explain()


@pytest.mark.parametrize("added", ["random = 4\n",  # a name nothing reached reads (the module's kept import)
                                   "def values():\n    return []\n"])  # only a parameter of mean: a local
def test_an_added_definition_shadowing_no_reached_name_is_accepted(tmp_path, added):
    # module-level rule: refused (a name the kept code binds or uses); reached code reads neither
    code = _compare(tmp_path, STATS + "\n\n" + added)
    assert code.accepted, code.explain()


@pytest.mark.parametrize("added", ["print(1)\n", "CACHE = dict()\n", "random.seed(0)\n",
                                   "@register\ndef median(values):\n    return values[0]\n"])
def test_added_code_that_runs_at_import_is_refused(tmp_path, added):
    code = _compare(tmp_path, STATS + "\n" + added)
    assert not code.accepted
    assert f"code run at import changed in stats.py: nothing at the base, {added.splitlines()[0]!r} here" in code.explain()


def test_a_changed_docstring_is_accepted(tmp_path):
    code = _compare(tmp_path, STATS.replace('"""Statistics."""', '"""Statistics: means and verdicts."""'))
    assert code.accepted, code.explain()
    assert code.differing == ["stats.py"]


def test_a_changed_docstring_that_reached_code_reads_is_refused(tmp_path):
    reads = STATS + "\n\ndef about():\n    return __doc__\n"
    code = _compare(tmp_path, reads.replace('"""Statistics."""', '"""Means."""'), base_stats=reads,
                    cells="from mlmlib import stats\nprint(stats.about())\n")
    assert "stats.about > __doc__: the __doc__ of mlmlib.stats at the base" in code.explain()


def test_changed_cells_are_refused_whatever_the_modules(tmp_path):
    code = _compare(tmp_path, STATS, cells=CELLS + "print(2)\n", base_cells=CELLS)
    assert not code.accepted and code.reached == []
    assert "its cells changed" in code.explain()


# each case: the base's stats.py, the edited one, what the cells run
JUDGE = STATS + "\n\ndef judge(x):\n    return verdict(x)\n"
INTERVAL = STATS + "\n\ndef interval(x):\n    return x * LEVEL\n"
EDITS = {"verdict": ('return "yes" if x > 0 else "no"', 'return "yes" if x >= 0 else "no"'),
         "LEVEL": ("LEVEL = 0.95", "LEVEL = 0.99")}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_changed_definition_nothing_reaches_is_accepted(tmp_path, edit):
    code = _compare(tmp_path, INTERVAL.replace(*EDITS[edit]), base_stats=INTERVAL)
    assert code.accepted, code.explain()


@pytest.mark.parametrize("base, edit, cells, path", [
    (STATS, "verdict", "from mlmlib import stats\nprint(stats.verdict(1))\n", "stats.verdict"),  # by the cells
    (JUDGE, "verdict", "from mlmlib.stats import judge\nprint(judge(1))\n", "judge > verdict"),  # a call in its module
    (INTERVAL, "LEVEL", "from mlmlib import stats\nprint(stats.interval(1))\n", "stats.interval > LEVEL"),  # a constant
    (STATS, "LEVEL", "import mlmlib.stats as st\nprint(st.LEVEL)\n", "st.LEVEL"),
])
def test_a_changed_definition_the_notebook_reaches_is_refused(tmp_path, base, edit, cells, path):
    assert _compare(tmp_path / "same", base, base_stats=base, cells=cells).accepted  # the edit alone refuses
    code = _compare(tmp_path, base.replace(*EDITS[edit]), base_stats=base, cells=cells)
    assert not code.accepted
    assert f"{path}: changed: its source text differs (defined in stats.py" in code.explain()


def test_a_definition_reached_through_an_import_chain_is_compared(tmp_path):
    # the cells reach train.fit; fit reaches stats.mean through train's import of stats
    changed = STATS.replace("return sum(values) / len(values)", "return sum(values) / len(values) / 2")
    assert _compare(tmp_path / "same", STATS).accepted
    code = _compare(tmp_path, changed)
    assert "train.fit > stats.mean: changed" in code.explain()


MOVED = STATS.replace(VERDICT, "").replace("import random\n", "import random\n\nfrom mlmlib.verdicts import verdict\n")
VERDICTS = FUTURE + "THRESHOLD = 0\n\n\ndef verdict(x):\n    return \"yes\" if x > THRESHOLD else \"no\"\n"
STATS_THRESHOLD = STATS.replace("x > 0", "x > THRESHOLD").replace("LEVEL = 0.95", "LEVEL = 0.95\nTHRESHOLD = 0")
VERDICT_CELLS = "from mlmlib import stats\nprint(stats.verdict(1))\n"


def test_a_definition_moved_with_the_same_text_is_followed_to_its_new_module(tmp_path):
    code = _compare(tmp_path, MOVED, base_stats=STATS_THRESHOLD, cells=VERDICT_CELLS,
                    files={"verdicts.py": VERDICTS})
    assert code.accepted, code.explain()
    assert code.moved() == ["verdict stats.py -> verdicts.py", "THRESHOLD stats.py -> verdicts.py"]
    assert code.differing == ["stats.py", "verdicts.py (new)"]
    assert "moved definitions followed: verdict stats.py -> verdicts.py" in code.summary()


@pytest.mark.parametrize("verdicts, problem", [
    (VERDICTS.replace("else \"no\"", "else \"maybe\""),
     ("stats.verdict: changed: its source text differs (defined in stats.py, line 12 at the base, "
      "defined in verdicts.py, line 7 here)")),
    (VERDICTS.replace("THRESHOLD = 0", "THRESHOLD = 1"), "stats.verdict > THRESHOLD: changed"),  # what it reads
    (VERDICTS.replace(FUTURE, ""), "stats.verdict: changed: its module's __future__ imports differs"),
])
def test_a_definition_moved_with_other_code_is_refused(tmp_path, verdicts, problem):
    code = _compare(tmp_path, MOVED, base_stats=STATS_THRESHOLD, cells=VERDICT_CELLS,
                    files={"verdicts.py": verdicts})
    assert not code.accepted
    assert problem in code.explain()


def test_changed_code_run_at_import_is_refused_even_where_nothing_reaches_it(tmp_path):
    seeded = STATS + "random.seed(0)\n"
    same = _compare(tmp_path / "same", seeded, base_stats=seeded)
    assert same.accepted and same.at_import == 1
    code = _compare(tmp_path, STATS + "random.seed(1)\n", base_stats=seeded)
    assert not code.accepted
    assert "code run at import changed in stats.py: 'random.seed(0)' at the base, 'random.seed(1)' here" in code.explain()


def test_what_code_run_at_import_reaches_is_compared(tmp_path):
    cached = STATS + "\n\ndef make():\n    return {}\n\n\nCACHE = make()\n"
    assert _compare(tmp_path / "same", cached, base_stats=cached).accepted
    code = _compare(tmp_path, cached.replace("return {}", "return {1: 2}"), base_stats=cached)
    assert "stats.py at import (CACHE = make()) > make: changed" in code.explain()


@pytest.mark.parametrize("extra, accepted", [("X = 1\n", True), ("print('imported')\n", False)])
def test_a_module_imported_here_only_may_run_nothing_at_import(tmp_path, extra, accepted):
    # train imports a new module: its definitions are not reached, its code at import runs
    train = TRAIN.replace("from mlmlib import stats", "from mlmlib import extra, stats")
    for side in ("base", "here"):
        _write(tmp_path / side / "mlmlib", {"__init__.py": "", "stats.py": STATS, "train.py": TRAIN})
        _notebook(tmp_path / side / "nb.ipynb", CELLS)
    _write(tmp_path / "here" / "mlmlib", {"train.py": train, "extra.py": extra})
    base, here = tmp_path / "base", tmp_path / "here"
    code = compare_notebook(base / "nb.ipynb", base / "mlmlib", here / "nb.ipynb", here / "mlmlib")
    assert code.accepted is accepted, code.explain()
    assert accepted or "code run at import changed in extra.py: nothing at the base" in code.explain()


@pytest.mark.parametrize("stats, cells, problem", [
    (STATS, "from mlmlib import stats\nprint(getattr(stats, 'mean'))\n",
     "stats: the module mlmlib.stats is read by getattr or vars"),
    (STATS + "\n\ndef pick(name):\n    return globals()[name]\n", "from mlmlib import stats\nprint(stats.pick('mean'))\n",
     "stats.pick: looks names up in a namespace"),
    (STATS + "\n\ndef load():\n    import importlib\n\n    return importlib.import_module('mlmlib.stats')\n",
     "from mlmlib import stats\nprint(stats.load())\n", "stats.load: imports a module named at run time"),
])
def test_dynamic_use_of_a_module_is_refused(tmp_path, stats, cells, problem):
    code = _compare(tmp_path, stats, base_stats=stats, cells=cells, files={"new.py": ""})
    assert not code.accepted
    assert problem in code.explain()
    # the same definitions, never reached: accepted
    assert _compare(tmp_path / "unreached", stats, base_stats=stats, files={"new.py": ""}).accepted


def test_a_second_rekey_keeps_the_chain_back_to_the_code_that_ran(monkeypatch, tmp_path):
    rk = _rekey_script(monkeypatch)
    record = tmp_path / "seed-0.json"
    record.write_text(json.dumps({"key": "k0", "code_version": "v0", "metrics": {}}))
    rk.rekey(record, "k1", "v1", "a" * 40, "first")
    rk.rekey(record, "k2", "v2", "b" * 40, "second")
    data = json.loads(record.read_text())
    assert (data["key"], data["code_version"]) == ("k2", "v2")
    assert data["rekeyed"]["from_key"] == "k1" and data["rekeyed"]["rule"] == "second"
    assert data["rekeyed"]["earlier"] == {"from_key": "k0", "from_code_version": "v0", "base": "a" * 40,
                                          "rule": "first"}
