"""The synthetic language's named presets: defined once in the generator, chosen by name in the
parameter groups, the pages and the plans, single sizes overridable, the numbers in records."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys

import pytest

from mlmlib import configs
from mlmlib.data import synthetic as syn
from mlmlib.papers.distributional.config import Setup
from mlmlib.papers.selective_masking.config import SyntheticSelective
from mlmlib.papers.true_negatives.synthetic_config import SyntheticSetup
from mlmlib.runs.plans import PlanError, full_params, load_plan, notebook_parameters, notebooks_dir

GROUPS = (Setup, SyntheticSetup, SyntheticSelective)
A_PAGES = ("A1_synthetic_data", "A2_synthetic_pretrain", "A3_synthetic_finetune", "A7_dose_pilot")


@pytest.mark.parametrize("name", list(syn.LANGUAGES))
def test_every_preset_builds_a_language_with_both_classes(name):
    sizes = syn.LANGUAGES[name]
    lang = syn.make_language(sizes.config(seed=1))
    assert lang.config == syn.LanguageConfig(**dataclasses.asdict(sizes), seed=1)
    assert lang.patterns.shape == (sizes.n_patterns, sizes.pattern_length, sizes.pattern_set_size)
    for chain in lang.chains.values():
        assert sorted(set(chain.emit.tolist())) == list(range(sizes.n_sets))  # every set emitted
    # the shortest labelled sequences a plan gives it (B4's tiny and small runs: 12, 32)
    length = {"tiny": 12, "small": 32, "smoke": 32, "paper": 100}[name]
    tokens, labels = syn.balanced_labelled_set(lang, "A-D1", 40, length, seed=2)  # both classes
    assert tokens.max() < sizes.n_sets and labels.mean() == 0.5


def test_the_paper_preset_is_the_authors_constants():
    paper = syn.LanguageConfig()  # its defaults: the authors' released generator
    assert dataclasses.asdict(syn.LANGUAGES["paper"]) == {k: getattr(paper, k) for k in syn.SIZE_FIELDS}
    assert (paper.n_sets, paper.n_states, paper.n_patterns, paper.pattern_length,
            paper.pattern_set_size) == (1000, 5000, 5, 3, 12)


def test_an_unknown_preset_is_refused_with_the_parameter_and_the_names():
    names = re.escape(str(list(syn.LANGUAGES)))
    with pytest.raises(ValueError, match=f"language = 'huge' is not a synthetic language; the presets: {names}"):
        syn.language_sizes("huge")
    for group, parameter in zip(GROUPS, ("setup", "setup", "synthetic")):
        with pytest.raises(ValueError, match=rf"^{parameter}: language = 'huge' is not a synthetic"):
            configs.build(group, {"language": "huge"}, parameter)


@pytest.mark.parametrize("overrides, message", [
    ({"n_sets": 1}, "n_sets must be an int >= 1|n_sets must be >= 2"),
    ({"n_states": 10}, r"n_states \(10\) must be >= n_sets \(12\)"),
    ({"pattern_set_size": 7}, "pattern_length \\* pattern_set_size must be <= n_sets"),
    ({"n_patterns": 0}, "n_patterns must be an int >= 1, got 0"),
    ({"n_sets": 2.5}, "n_sets must be an int >= 1, got 2.5"),
    ({"n_set": 20}, r"\['n_set'\] are not sizes of a language"),
])
def test_a_bad_size_is_refused_naming_it(overrides, message):
    with pytest.raises(ValueError, match=message):
        syn.language_sizes("tiny", **overrides)


def test_a_size_given_replaces_the_presets_and_none_keeps_it():
    sizes = syn.language_sizes("smoke", n_sets=30, n_states=None)
    assert dataclasses.asdict(sizes) == {**dataclasses.asdict(syn.LANGUAGES["smoke"]), "n_sets": 30}
    for group in GROUPS:
        built = group(language="paper", n_states=6000)
        assert (built.language, built.n_sets, built.n_states) == ("paper", 1000, 6000)
        with pytest.raises(ValueError, match="n_states"):
            group(language="tiny", n_states=5)


def test_groups_define_no_sizes_of_their_own():
    """The presets are the only source of a language's sizes: a group's sizes default to None."""
    assert len(GROUPS) == 3
    for group in GROUPS:
        defaults = configs.resolve(group, {})
        fields = {f.name: f.default for f in dataclasses.fields(group)}
        assert all(fields[k] is None for k in syn.SIZE_FIELDS), group.__name__
        assert defaults["language"] in syn.LANGUAGES
        assert {k: defaults[k] for k in syn.SIZE_FIELDS} == dataclasses.asdict(
            syn.LANGUAGES[defaults["language"]])


def test_a_resolved_group_states_the_preset_and_its_numbers():
    """What records hold (configs.resolve): the preset's name and the sizes it stood for."""
    for group in GROUPS:
        resolved = configs.resolve(group, {"language": "paper", "n_sets": 2000})
        assert resolved["language"] == "paper"
        assert {k: resolved[k] for k in syn.SIZE_FIELDS} == {
            **dataclasses.asdict(syn.LANGUAGES["paper"]), "n_sets": 2000}
        built = dataclasses.asdict(configs.build(group, {"language": "paper", "n_sets": 2000}, "g"))
        assert {k: built[k] for k in ("language", *syn.SIZE_FIELDS)} == {
            k: resolved[k] for k in ("language", *syn.SIZE_FIELDS)}
    # a record from before the presets (sizes, no name) keeps its numbers
    old = configs.resolve(Setup, dataclasses.asdict(syn.LANGUAGES["tiny"]))
    assert {k: old[k] for k in syn.SIZE_FIELDS} == dataclasses.asdict(syn.LANGUAGES["tiny"])


def test_a_preset_and_its_numbers_make_the_same_model():
    by_name = Setup(language="tiny")
    by_numbers = Setup(**dataclasses.asdict(syn.LANGUAGES["tiny"]))
    assert by_name.key("mix") == by_numbers.key("mix") and "language" not in by_name.key("mix")


def test_group_modules_import_neither_torch_nor_numpy():
    """The plan loader reads the groups: the presets are imported only when a group is built."""
    modules = ", ".join(g.__module__ for g in GROUPS)
    code = (f"import sys, {modules}; "
            "print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a1_shows_the_language_a2_pretrains_on_by_default():
    a1 = full_params("A1_synthetic_data", {})
    a2 = full_params("A2_synthetic_pretrain", {})["setup"]
    assert a1["language"] == a2["language"]
    assert all(a1[k] is None for k in syn.SIZE_FIELDS)  # the preset's sizes
    assert syn.language_sizes(a1["language"]) == syn.language_sizes(a2["language"])


def test_a1_refuses_an_unknown_preset_before_generating_anything():
    cells = [c for c in _cells("A1_synthetic_data") if c["cell_type"] == "code"]
    params = notebook_parameters(str(notebooks_dir() / "A1_synthetic_data.ipynb"))
    assert "language_sizes(language" in "".join(cells[2]["source"])  # its first computing cell
    with pytest.raises(ValueError, match="language = 'papr'"):
        syn.language_sizes("papr", **{k: params[k] for k in syn.SIZE_FIELDS})


@pytest.mark.parametrize("profile", ["cpu-rehearsal", "paper-rehearsal"])
def test_rehearsals_run_the_tiny_language(profile):
    """A rehearsal changes numbers only, so it gives the tiny preset's sizes, not its name."""
    tiny = dataclasses.asdict(syn.LANGUAGES["tiny"])
    checked = 0
    for run in load_plan(profile).runs:
        params = full_params(run.notebook, run.params)
        if run.notebook in A_PAGES[1:] or run.notebook == "B4_synthetic_true_negatives":
            assert {k: params["setup"][k] for k in tiny} == tiny, run.notebook
        elif run.notebook == "A1_synthetic_data":
            given = {k: params[k] for k in syn.SIZE_FIELDS}
            assert dataclasses.asdict(syn.language_sizes(params["language"], **given)) == tiny
        else:
            continue
        checked += 1
    assert checked


@pytest.mark.parametrize("profile", ["test", "smoke", "cpu", "paper"])
def test_plans_name_known_presets(profile):
    """A plan's A1 gives its language by name too (a plain parameter the loader cannot check)."""
    a1 = [r for r in load_plan(profile).runs if r.notebook == "A1_synthetic_data"]
    assert a1, profile
    for run in a1:
        assert full_params(run.notebook, run.params)["language"] in syn.LANGUAGES


def test_a_plan_naming_an_unknown_preset_stops_at_load(tmp_path, monkeypatch):
    from mlmlib.runs import plans

    (tmp_path / "notebooks" / "plans").mkdir(parents=True)
    (tmp_path / "_config.yml").write_text("title: test\n")
    (tmp_path / "notebooks" / "A2_synthetic_pretrain.ipynb").symlink_to(
        notebooks_dir() / "A2_synthetic_pretrain.ipynb")
    (tmp_path / "notebooks" / "plans" / "p.yaml").write_text(
        "notebooks:\n  - notebook: A2_synthetic_pretrain\n    params: {setup: {language: papr}}\n")
    monkeypatch.setenv("MLMLIB_ROOT", str(tmp_path))
    plans.notebook_parameters.cache_clear()
    plans.notebook_groups.cache_clear()
    try:
        with pytest.raises(PlanError, match=r"params.setup: language = 'papr' is not a synthetic "
                                            r"language; the presets: \['tiny'"):
            load_plan("p")
    finally:
        plans.notebook_parameters.cache_clear()
        plans.notebook_groups.cache_clear()


def _cells(notebook: str) -> list[dict]:
    return json.loads((notebooks_dir() / f"{notebook}.ipynb").read_text())["cells"]



def test_a1_draws_its_samples_by_preset_from_a_numpy_free_group():
    """A1's corpora and labelled sets: the plans name a preset; a field given replaces its value."""
    from mlmlib.synthetic_samples import SAMPLE_PRESETS, Samples

    assert list(SAMPLE_PRESETS) == ["smoke", "tiny", "paper"]
    smoke = configs.resolve(Samples, {"preset": "smoke"})
    assert full_params("A1_synthetic_data", {})["samples"] == smoke
    paper = configs.build(Samples, {"preset": "paper", "test_size": 10}, "samples")
    assert (paper.corpus_size, paper.corpus_length, paper.test_size, paper.test_length) == (
        20000, 256, 10, 100)
    with pytest.raises(ValueError, match=r"^samples: preset must be one of \['smoke', 'tiny', 'pa"):
        configs.build(Samples, {"preset": "huge"}, "samples")
    with pytest.raises(ValueError, match="samples: test_length must be an int >= 1, got 0"):
        configs.build(Samples, {"test_length": 0}, "samples")
    code = ("import sys, mlmlib.synthetic_samples; "
            "print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    for profile, preset in (("test", "tiny"), ("paper", "paper")):
        a1 = [r for r in load_plan(profile).runs if r.notebook == "A1_synthetic_data"]
        assert [r.params["samples"] for r in a1] == [{"preset": preset}], profile
