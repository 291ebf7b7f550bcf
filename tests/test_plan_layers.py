"""Plans that extend another plan, summaries that read their own profile, and the audit of
values a plan only restates."""

from __future__ import annotations

import pytest
import toy_project

from mlmlib.runs import plan_audit, plans
from mlmlib.runs.plan_files import PlanError, compose

BASE = """description: the base
notebooks:
  - notebook: toy
    chapter: c
    title: "Toy"
    timeout: 100
    grid: {x: [1, 2]}
  - notebook: other
    title: "Other"
"""


def _write(folder, name, text):
    (folder / f"{name}.yaml").write_text(text)
    return folder / f"{name}.yaml"


def test_an_extending_plan_states_only_what_differs(tmp_path):
    _write(tmp_path, "base", BASE)
    child = _write(tmp_path, "child", "extends: base\nomit: [other]\nnotebooks:\n"
                   "  - notebook: toy\n    timeout: 50\n    params: {y: 3}\n"
                   "  - notebook: toy\n    grid: {x: [9]}\n")
    data = compose(child)
    assert data["description"] == "the base"
    first, second = data["notebooks"]
    assert first == {"notebook": "toy", "chapter": "c", "title": "Toy", "timeout": 50,
                     "grid": {"x": [1, 2]}, "params": {"y": 3}}
    assert second == {"notebook": "toy", "chapter": "c", "title": "Toy", "timeout": 100,
                      "grid": {"x": [9]}}
    plain = _write(tmp_path, "plain", "extends: base\nnotebooks: []\n")
    assert [e["notebook"] for e in compose(plain)["notebooks"]] == ["toy", "other"]


def test_a_chain_of_plans_composes_in_order(tmp_path):
    _write(tmp_path, "base", BASE)
    _write(tmp_path, "mid", "extends: base\nnotebooks:\n  - notebook: toy\n    params: {y: 1, z: 2}\n")
    top = _write(tmp_path, "top", "extends: mid\nnotebooks:\n  - notebook: toy\n    params: {y: 5}\n")
    assert compose(top)["notebooks"][0]["params"] == {"y": 5, "z": 2}


@pytest.mark.parametrize("text, message", [
    ("extends: base\nnotebooks:\n  - notebook: toy\n    timeout: 100\n", "timeout = 100 restates"),
    ("extends: base\nnotebooks:\n  - notebook: toy\n    grid: {x: [1, 2]}\n", "grid = .* restates"),
    ("extends: nowhere\nnotebooks: []\n", "extends = 'nowhere'"),
    ("extends: base\nnotebooks:\n  - notebook: new\n", "'new' is not an entry of the base"),
    ("extends: base\nomit: [gone]\nnotebooks: []\n", "omit = \\['gone'\\]"),
    ("extends: base\nomit: [other]\nnotebooks:\n  - notebook: other\n", "or is omitted"),
    ("omit: [toy]\nnotebooks: []\n", "add 'extends'"),
    ("extends: base\nchapters: []\nnotebooks: []\n", "unknown key\\(s\\) \\['chapters'\\]"),
])
def test_bad_extending_plans_are_refused_naming_the_key(tmp_path, text, message):
    _write(tmp_path, "base", BASE)
    with pytest.raises(PlanError, match=message):
        compose(_write(tmp_path, "child", text))


def test_restated_params_and_loops_are_refused(tmp_path):
    _write(tmp_path, "base", BASE.replace('    title: "Toy"\n', '    title: "Toy"\n    params: {y: 1}\n'))
    with pytest.raises(PlanError, match="params.y = 1 restates"):
        compose(_write(tmp_path, "child", "extends: base\nnotebooks:\n  - notebook: toy\n    params: {y: 1}\n"))
    _write(tmp_path, "a", "extends: b\nnotebooks: []\n")
    with pytest.raises(PlanError, match="loop \\(b -> a -> b\\)"):
        compose(_write(tmp_path, "b", "extends: a\nnotebooks: []\n"))


def test_an_extended_plan_has_one_entry_per_notebook(tmp_path):
    _write(tmp_path, "base", BASE + "  - notebook: toy\n    grid: {x: [3]}\n")
    with pytest.raises(PlanError, match="two entries of 'toy'"):
        compose(_write(tmp_path, "child", "extends: base\nnotebooks: []\n"))


def test_a_summary_reads_the_profile_it_runs_in(tmp_path, monkeypatch):
    root = toy_project.make(tmp_path, monkeypatch, "notebooks:\n  - notebook: toy\n")
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell('profile = "p"\nrun_dir = ""',
                                           metadata={"tags": ["parameters"]})])
    nbformat.write(nb, root / "notebooks" / "summary.ipynb")
    (root / "notebooks" / "plans" / "q.yaml").write_text(
        "notebooks:\n  - notebook: summary\n  - notebook: summary\n    grid: {profile: [p]}\n")
    own, other = plans.load_plan("q").runs
    assert own.params == {"profile": "q"} and other.params == {"profile": "p"}  # a grid says
    (root / "notebooks" / "plans" / "r.yaml").write_text(
        "notebooks:\n  - notebook: summary\n    params: {profile: r}\n  - notebook: toy\n    params: {x: 0}\n")
    assert plan_audit.restated_defaults("r") == ["summary: profile = 'r' (the plan's own)",
                                                 "toy: x = 0 (its default)"]


def test_the_project_plans_restate_no_default():
    """A plan value equal to the default it overrides hides which settings a profile changes."""
    profiles = plans.available_profiles()
    assert {"test", "smoke", "cpu", "paper"} <= set(profiles)
    found = {p: plan_audit.restated_defaults(p) for p in profiles}
    assert not any(found.values()), found


# Settings written in three places or more (a default and two plan files): 159 before plans
# could extend one another, 116 with `extends`, 56 with the groups' profile presets (tiny, cpu,
# paper), 42 with presets for A1's samples, A5's setup, B2's timing, the base model and paper B's
# corpus, 40 with paper C's task text and the benchmark's shape. Of the 40, 16 are a preset's
# name per profile and most others grid keys (which runs a profile makes). The bound only moves
# down.
MANY_PLACES_AT_MOST = 40


def test_settings_written_in_many_places_only_get_fewer():
    many = plan_audit.written_in_many(3)
    assert len(plan_audit.places()) > 250  # it read every template and group
    assert len(many) <= MANY_PLACES_AT_MOST, sorted(many)
