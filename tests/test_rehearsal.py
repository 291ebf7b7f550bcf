"""The paper plan rehearsed: its every entry at tiny size, offline, on stand-ins of its hub data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlmlib.paths import project_root
from mlmlib.runs import plans
from mlmlib.runs.plans import PlanError, load_plan

NETGUARD = Path(__file__).parent / "netguard"


@pytest.mark.parametrize("profile", ["paper", "cpu"])
def test_the_rehearsal_is_the_plan_with_numbers_shrunk(profile):
    paper, rehearsal = load_plan(profile), load_plan(f"{profile}-rehearsal")
    assert rehearsal.profile == f"{profile}-rehearsal"
    assert {r.notebook for r in rehearsal.runs} == {r.notebook for r in paper.runs}
    by_name = {(r.notebook, r.slug): r for r in paper.runs}
    for run in rehearsal.runs:
        planned = by_name[(run.notebook, run.slug)]  # every rehearsed run is a run of the plan
        assert run.grid_keys == planned.grid_keys
        for key, value in planned.params.items():
            if key == "profile":
                assert run.params[key] == rehearsal.profile  # summaries read the rehearsal's records
            elif isinstance(value, dict):  # a group: its names, kinds and flags unchanged
                assert _not_sizes(run.params[key]) == _not_sizes(value), (run.notebook, key)
            elif not _is_size(value):
                assert run.params[key] == value, (run.notebook, key)  # names, kinds, flags: unchanged
    for entry in {r.notebook for r in paper.runs}:  # every kind of grid value is kept
        # seeds (a run's seed, a language's seed) may be fewer; every other grid value stays
        for key in {k for r in paper.runs if r.notebook == entry for k in r.grid_keys
                    if not k.endswith("seed")}:
            assert _values(paper, entry, key) == _values(rehearsal, entry, key), (entry, key)


def _is_size(value) -> bool:
    """A number, or a list of numbers: what a rehearsal may shrink."""
    number = (int, float)
    return (isinstance(value, number) and not isinstance(value, bool)) or (
        isinstance(value, list) and all(isinstance(v, number) for v in value))


def _not_sizes(group: dict) -> dict:
    return {k: v for k, v in group.items() if not _is_size(v)}


def _values(plan, notebook: str, key: str) -> set:
    """The values a parameter takes over a notebook's runs (lists as tuples)."""
    return {tuple(v) if isinstance(v, list) else v
            for v in (r.params[key] for r in plan.runs if r.notebook == notebook)}


@pytest.fixture
def overlay(tmp_path, monkeypatch):
    """A project with the real notebooks and paper plan, and an overlay file to write."""
    root = project_root()
    (tmp_path / "notebooks" / "plans" / "rehearse").mkdir(parents=True)
    (tmp_path / "_config.yml").write_text("title: test\n")
    for nb in (root / "notebooks").glob("*.ipynb"):
        (tmp_path / "notebooks" / nb.name).symlink_to(nb)
    for plan in ("paper", "smoke"):  # paper extends smoke
        (tmp_path / "notebooks" / "plans" / f"{plan}.yaml").write_text(
            (root / "notebooks" / "plans" / f"{plan}.yaml").read_text())
    monkeypatch.setenv("MLMLIB_ROOT", str(tmp_path))
    plans.notebook_parameters.cache_clear()
    plans.notebook_groups.cache_clear()
    return tmp_path / "notebooks" / "plans" / "rehearse" / "paper.yaml"


@pytest.mark.parametrize("text, message", [
    ("notebooks: {B1_true_negatives_pretrain: {params: {corpus: {tokenizer: embedded-wordpiece-8k}}}}",
     "params.corpus.tokenizer = 'embedded-wordpiece-8k': a rehearsal changes sizes only"),
    ("notebooks: {B1_true_negatives_pretrain: {params: {finetune: {tasks: [sst2]}}}}",
     "changes sizes only"),
    ("notebooks: {B2_true_negatives_overhead: {params: {model: {preset: smoke}}}}",
     "params.model.preset = 'smoke': a rehearsal changes sizes only"),
    ("notebooks: {A3_synthetic_finetune: {params: {sweep: {bd2_curves: false}}}}",
     "params.sweep.bd2_curves = False: a rehearsal changes sizes only"),  # a flag inside a group
    ("notebooks: {B1_true_negatives_pretrain: {grid: {arms: [[electra/plain]]}}}",
     "a rehearsal runs a subset of the plan's values"),
    ("notebooks: {C2_selective_mlm: {grid: {seed: [11]}}}", "a rehearsal runs a subset"),
    ("notebooks: {C2_selective_mlm: {params: {mlm_stepz: 3}}}", "unknown parameter 'mlm_stepz'"),
    ("notebooks: {Z9_nothing: {params: {steps: 3}}}", "notebook 'Z9_nothing' is not in the plan"),
    ("notebooks: {C2_selective_mlm: {sizes: {}}}", "give a mapping with params, grid and/or timeout"),
    ("nb: {}", "expected a mapping with a 'notebooks' mapping"),
])
def test_an_overlay_that_changes_more_than_sizes_is_refused(overlay, text, message):
    overlay.write_text(text)
    with pytest.raises(PlanError, match=message.replace("[", r"\[").replace("(", r"\(")):
        load_plan("paper-rehearsal")


def test_a_profile_without_rehearsal_sizes_says_which_have_them(overlay):
    overlay.write_text("notebooks: {}")
    with pytest.raises(PlanError, match=r"'smoke' has no rehearsal sizes .*can be rehearsed: \['paper'\]"):
        load_plan("smoke-rehearsal")


def _rehearse_offline(profile: str, tmp_path: Path, timeout: int) -> dict[str, dict]:
    """`run --profile <profile> --rehearse`: every run of the plan finishes, and no process of it
    (runner, jobs, kernels) reached the network: each armed the guard, none was refused.
    Returns the records by notebook/slug."""
    guard_log = tmp_path / "netguard.log"
    env = {**os.environ, "MLMLIB_WORK": str(tmp_path / "work"), "MLMLIB_NETGUARD_LOG": str(guard_log),
           "PYTHONPATH": os.pathsep.join([str(NETGUARD), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    env.pop("MLMLIB_HUB_MIRROR", None)
    done = subprocess.run([sys.executable, "-m", "mlmlib", "run", "--profile", profile, "--rehearse", "--force",
                           "--executor", "local", "--max-parallel", "2"],
                          cwd=project_root(), env=env, capture_output=True, text=True, timeout=timeout, check=False)
    out = done.stdout + done.stderr
    plan = load_plan(f"{profile}-rehearsal")
    assert done.returncode == 0, out[-6000:]
    assert f"{len(plan.runs)} ran, 0 skipped, 0 failed" in out, out[-3000:]
    records = {}
    for run in plan.runs:
        record = json.loads((project_root() / "book" / "runs" / plan.profile / run.notebook
                             / f"{run.slug}.json").read_text())
        assert record["profile"] == plan.profile
        records[f"{run.notebook}/{run.slug}"] = record
    lines = guard_log.read_text().splitlines()
    armed = [ln for ln in lines if ln.startswith("armed")]
    refused = [ln for ln in lines if ln.startswith("refused")]
    assert not refused, refused
    assert len(armed) >= len(plan.runs), "each run's kernel loads the guard"
    return records


@pytest.mark.slow
@pytest.mark.rehearsal
def test_the_whole_paper_plan_rehearses_offline(tmp_path):
    _rehearse_offline("paper", tmp_path, timeout=1500)


@pytest.mark.slow
@pytest.mark.rehearsal
def test_the_whole_cpu_plan_rehearses_offline(tmp_path):
    """Every entry of the cpu plan at tiny size, the MiniLM base of A5, C1 and C2 and an A3 seed
    that fine-tunes a pretraining seed other than 0 included (no other test runs them: an A5 that
    looked the shipped base up on the hub once reached the cpu batch)."""
    records = _rehearse_offline("cpu", tmp_path, timeout=1200)
    assert records["base_model/run"]["params"]["base"]["name"] == "minilm-l6"
    a3 = [r for name, r in records.items() if name.startswith("A3_synthetic_finetune/")]
    # each A3 run loads the models of its own pretraining seed (pretrain_seed -1), a seed other
    # than 0, in each of the plan's languages
    assert sorted((r["metrics"]["language_seed"], r["seed"], r["metrics"]["pretrain_seed"]) for r in a3) \
        == [(1, 15, 15), (2, 15, 15)]
    # the dose pilot ran on its pilot languages, at each of its doses
    a7 = [r for name, r in records.items() if name.startswith("A7_dose_pilot/")]
    assert sorted(r["metrics"]["language_seed"] for r in a7) == [300, 301]
    assert all({row["dose"] for row in r["metrics"]["rows"]} == {1, 2} for r in a7)
