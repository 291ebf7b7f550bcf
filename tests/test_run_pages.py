"""Run pages show the parameters their run used; the sidebar lists one entry per plan entry.

The check reads a page as a reader sees it: the parameter cells that are not removed or folded,
their assignments evaluated, compared with the run's record (its `params` hold every value the
run used, the template's defaults included).
"""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path

import nbformat
import pytest
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from mlmlib.runs import book, plans
from mlmlib.runs.pages import retidy, tidy_page

ROOT = Path(__file__).resolve().parents[1]
PARAMETER_TAGS = {"parameters", "injected-parameters"}
HIDDEN = {"remove-cell", "remove-input", "hide-input", "hide-cell"}


def _committed_records() -> list[Path]:
    """The records under book/runs/*/ that git tracks (local profiles' runs are not pages of it)."""
    listed = subprocess.run(["git", "ls-files", "--", "book/runs/*/*/*.json"], cwd=ROOT,
                            capture_output=True, text=True, check=False).stdout.split()
    return [ROOT / p for p in listed if not Path(p).parent.name.startswith("_")]


def visible_assignments(nb: dict) -> list[tuple[str, object]]:
    """(name, value) of every assignment in a parameter cell that the rendered page shows."""
    out = []
    for cell in nb["cells"]:
        tags = set(cell.get("metadata", {}).get("tags", []))
        if cell["cell_type"] != "code" or not tags & PARAMETER_TAGS or tags & HIDDEN:
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        for node in ast.parse(source).body:
            assert isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name), \
                f"a visible parameter cell holds more than `name = literal`: {ast.unparse(node)}"
            out.append((node.targets[0].id, ast.literal_eval(node.value)))
    return out


def page_problems(nb: dict, params: dict) -> list[str]:
    """What a reader of the page would get wrong about the run's parameters ([] when nothing)."""
    shown = visible_assignments(nb)
    problems = [f"{name} = {value!r} shown, the run used {params[name]!r}" if name in params
                else f"{name} = {value!r} shown, no parameter of the run's record"
                for name, value in shown if params.get(name, object()) != value]
    names = {name for name, _ in shown}
    problems += [f"{name} (= {params[name]!r}) not shown" for name in params if name not in names]
    return problems


@pytest.mark.parametrize("record", _committed_records(), ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_run_page_shows_the_parameters_of_its_record(record):
    page = record.with_suffix(".ipynb")
    params = json.loads(record.read_text())["params"]
    problems = page_problems(json.loads(page.read_text()), params)
    assert not problems, f"{page.relative_to(ROOT)}: " + "; ".join(problems[:5]) + \
        " (python scripts/tidy_pages.py re-tidies the pages from their records)"


DEFAULTS = 'seed = 0\nmlm_steps = 60  # paper: thousands\nname = "base"\nlists = ["a"]\nrun_dir = ""'
RECORD = {"seed": 20, "mlm_steps": 30, "name": "base", "lists": ["a"]}  # as _full_params writes it


def _executed(path: Path) -> Path:
    """A notebook as papermill leaves it: the defaults cell, then the injected values."""
    injected = {"seed": 20, "mlm_steps": 30, "run_dir": "../.work/p/toy/seed-20/0123"}
    nb = new_notebook(cells=[
        new_markdown_cell("# Toy"),
        new_code_cell(DEFAULTS, metadata={"tags": ["parameters"]}),
        new_code_cell("# Parameters\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in injected.items()),
                      metadata={"tags": ["injected-parameters"]}),
        new_code_cell("print(seed, mlm_steps)")])
    nb.metadata["papermill"] = {"parameters": injected, "input_path": "/home/someone/toy.ipynb",
                                "output_path": "/home/someone/out/seed-20.ipynb"}
    nbformat.write(nb, path)
    return path


def _old_tidy(path: Path) -> None:
    """How pages were tidied before: the injected cell folded, the defaults cell left visible."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if "injected-parameters" in cell.metadata.get("tags", []):
            cell.metadata["tags"].append("hide-input")
    nbformat.write(nb, path)


def test_the_check_fails_on_a_page_that_shows_the_template_defaults(tmp_path):
    page = _executed(tmp_path / "seed-20.ipynb")
    _old_tidy(page)
    problems = page_problems(json.loads(page.read_text()), RECORD)
    assert "seed = 0 shown, the run used 20" in problems
    assert "mlm_steps = 60 shown, the run used 30" in problems
    assert "run_dir = '' shown, no parameter of the run's record" in problems


@pytest.mark.parametrize("from_record", [True, False], ids=["record-params", "read-from-notebook"])
def test_a_tidied_page_shows_every_parameter_of_the_run_in_the_templates_order(tmp_path, from_record):
    page = _executed(tmp_path / "seed-20.ipynb")
    tidy_page(page, RECORD if from_record else None)
    nb = json.loads(page.read_text())
    assert page_problems(nb, RECORD) == []
    assert [name for name, _ in visible_assignments(nb)] == ["seed", "mlm_steps", "name", "lists"]
    shown = next(c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", []))
    assert "".join(shown["source"]).startswith("# Parameters of this run")
    assert "mlm_steps = 30  # plan" in "".join(shown["source"])  # the plan's values are marked
    assert nb["metadata"]["papermill"]["input_path"] == "toy.ipynb"  # no local path on the page


def test_a_tidied_page_still_runs_top_to_bottom_to_the_runs_values(tmp_path):
    page = _executed(tmp_path / "seed-20.ipynb")
    tidy_page(page, RECORD)
    nb = nbformat.read(page, as_version=4)
    defaults = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    assert defaults.source == DEFAULTS and "remove-cell" in defaults.metadata.tags  # kept, not shown
    namespace: dict = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and set(cell.metadata.get("tags", [])) & PARAMETER_TAGS:
            exec(cell.source, namespace)  # noqa: S102 - the test's own notebook
    assert {k: namespace[k] for k in RECORD} == RECORD
    before = page.read_bytes()
    tidy_page(page, RECORD)
    assert page.read_bytes() == before  # tidying a tidied page changes nothing


def _record(root: Path, profile: str, notebook: str, slug: str, title: str, label: str,
            chapter: str, seed: int | None = None) -> Path:
    """A record and its executed notebook (defaults visible, as the old rule left them)."""
    folder = root / "book" / "runs" / profile / notebook
    folder.mkdir(parents=True, exist_ok=True)
    page = _executed(folder / f"{slug}.ipynb")
    _old_tidy(page)
    rec = {"notebook": notebook, "profile": profile, "title": title, "label": label,
           "chapter": chapter, "seed": seed, "params": RECORD, "metrics": {}, "wall_time_s": 95.0,
           "finished_at": "2026-12-04T17:54:54+00:00", "code_version": "642c970e8707dccc"}
    (folder / f"{slug}.json").write_text(json.dumps(rec))
    return folder / f"{slug}.json"


def test_retidy_rewrites_the_pages_from_their_records_and_leaves_the_records(tmp_path):
    rec = _record(tmp_path, "p", "toy", "seed-20", "Toy", "seed=20", "paper_c", 20)
    before = rec.read_bytes()
    assert page_problems(json.loads(rec.with_suffix(".ipynb").read_text()), RECORD)
    assert retidy("p", tmp_path) == [rec.with_suffix(".ipynb")]
    assert page_problems(json.loads(rec.with_suffix(".ipynb").read_text()), RECORD) == []
    assert rec.read_bytes() == before
    assert sorted(p.name for p in rec.parent.iterdir()) == ["seed-20.ipynb", "seed-20.json"]


@pytest.fixture
def book_project(tmp_path, monkeypatch):
    """A project root with two chapters, a plan of two entries and their records."""
    (tmp_path / "_toc.yml").write_text(yaml.safe_dump({"format": "jb-book", "root": "book/intro",
        "parts": [{"caption": "Papers", "chapters": [{"file": "book/paper_c"}]},
                  {"caption": "More", "chapters": [{"file": "book/about_runs"}]}]}))
    (tmp_path / "notebooks" / "plans").mkdir(parents=True)
    for profile in ("p", "q"):
        (tmp_path / "notebooks" / "plans" / f"{profile}.yaml").write_text(
            "notebooks:\n  - notebook: C2\n    title: 'C2: selective'\n"
            "  - notebook: C1\n    title: 'C1: scores'\n")
    monkeypatch.setenv("MLMLIB_ROOT", str(tmp_path))
    plans.notebook_parameters.cache_clear()
    for seed in (10, 2, 1):
        _record(tmp_path, "p", "C2", f"seed-{seed}", "C2: selective", f"seed={seed}", "paper_c", seed)
    _record(tmp_path, "p", "C1", "run", "C1: scores", "run", "paper_c")
    return tmp_path


def test_sidebar_has_one_entry_per_plan_entry_and_an_index_page_of_its_runs(book_project):
    root = book_project
    toc = yaml.safe_load(book.generated_toc("p").read_text())
    sections = toc["parts"][0]["chapters"][0]["sections"]
    assert [s["title"] for s in sections] == ["C2: selective: 3 runs", "C1: scores"]  # plan order
    c2, c1 = sections
    assert c2["file"] == "book/runs/p/C2/index" and "sections" not in c1
    assert c1["file"] == "book/runs/p/C1/run"
    # the runs' own pages below the index page, in the grid's order
    assert [s["file"] for s in c2["sections"]] == [f"book/runs/p/C2/seed-{s}" for s in (1, 2, 10)]
    assert [s["title"] for s in c2["sections"]] == ["seed=1", "seed=2", "seed=10"]
    index = (root / "book" / "runs" / "p" / "C2" / "index.md").read_text()
    assert index.startswith("# C2: selective: 3 runs\n")
    assert "| [seed=2](seed-2.ipynb) | 2 | 1.6 min | 2026-12-04T17:54:54+00:00 | `642c970e8707dccc` |" \
        in index
    assert not (root / "book" / "runs" / "p" / "C1" / "index.md").exists()  # one run: its page


def test_an_other_profiles_entry_names_its_profile_and_stale_index_pages_go(book_project):
    root = book_project
    for seed in (1, 2):
        _record(root, "q", "C2", f"seed-{seed}", "C2: selective", f"seed={seed}", "paper_c", seed)
    stale = root / "book" / "runs" / "q" / "C1" / "index.md"
    _record(root, "q", "C1", "run", "C1: scores", "run", "paper_c")
    stale.write_text("# from an earlier build\n")
    toc = yaml.safe_load(book.generated_toc("p", also=["q"]).read_text())
    titles = [s["title"] for s in toc["parts"][0]["chapters"][0]["sections"]]
    assert titles[2:] == ["C2: selective [q profile]: 2 runs", "C1: scores [q profile]"]
    assert not stale.exists()


def test_generated_index_pages_are_ignored_by_git():
    path = "book/runs/cpu/C2_selective_mlm/index.md"
    ignored = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT, check=False)
    assert ignored.returncode == 0, f"{path} is generated at build time: .gitignore it"


def test_plan_entries_sharing_a_notebook_get_an_index_page_each(book_project):
    root = book_project
    for seed in (1, 2):
        _record(root, "p", "C2", f"size-9_seed-{seed}", "C2: size sweep", f"size=9, seed={seed}",
                "paper_c", seed)
    toc = yaml.safe_load(book.generated_toc("p").read_text())
    files = [s["file"] for s in toc["parts"][0]["chapters"][0]["sections"]]
    assert {"book/runs/p/C2/index_c2_selective", "book/runs/p/C2/index_c2_size_sweep"} <= set(files)
    assert (root / "book" / "runs" / "p" / "C2" / "index_c2_size_sweep.md").exists()


def test_a_fresh_run_page_shows_the_parameters_its_record_holds(tmp_path, monkeypatch):
    from mlmlib.runs import runner

    (tmp_path / "notebooks" / "plans").mkdir(parents=True)
    (tmp_path / "_config.yml").write_text("title: test\n")
    nb = new_notebook(cells=[
        new_code_cell('x = 1\nlabel = "a"\nitems = [1, 2]\nrun_dir = ""', metadata={"tags": ["parameters"]}),
        new_code_cell("from mlmlib.runs import records\nrecords.save_metrics(run_dir, {'x': x})")])
    nb.metadata["kernelspec"] = {"name": "mlmlib", "display_name": "mlmlib", "language": "python"}
    nbformat.write(nb, tmp_path / "notebooks" / "toy.ipynb")
    (tmp_path / "notebooks" / "plans" / "p.yaml").write_text(
        "notebooks:\n  - notebook: toy\n    grid: {x: [7]}\n    params: {items: [3]}\n")
    monkeypatch.setenv("MLMLIB_ROOT", str(tmp_path))
    plans.notebook_parameters.cache_clear()
    report = runner.run_plan(plans.load_plan("p"), log=lambda *_: None)
    assert report.ok, report.failed
    record = tmp_path / "book" / "runs" / "p" / "toy" / "x-7.json"
    params = json.loads(record.read_text())["params"]
    assert params == {"x": 7, "label": "a", "items": [3]}
    assert page_problems(json.loads(record.with_suffix(".ipynb").read_text()), params) == []
