"""Paper A's synthetic experiment: controls, convergence check, early errors, parameter groups."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from mlmlib import configs
from mlmlib.data import synthetic as syn
from mlmlib.papers.distributional import config as groups
from mlmlib.papers.distributional import synthetic as dist
from mlmlib.runs.plans import notebook_parameters, notebooks_dir

TINY = {"language": "tiny", "corpus_size": 64, "corpus_length": 16, "hidden": 16, "layers": 1, "heads": 2,
        "max_len": 40, "steps": 5, "batch_size": 8}


def plain_sweep(**fields) -> dist.Sweep:
    """A sweep without B-D2 mixtures, unless the test asks for them (Sweep's defaults mix three arms)."""
    return dist.Sweep(**{"bd2_fractions": [0.0], "bd2_models": None, **fields})


def test_encode_adds_cls_and_keeps_tokens():
    tokens = np.array([[0, 5, 23], [1, 2, 3]])
    data = dist.encode(tokens, n_sets=12, labels=np.array([0, 1]))
    ids = dist.special_ids(12)
    assert data["input_ids"][:, 0].tolist() == [ids["cls"]] * 2
    assert data["input_ids"][:, 1:].tolist() == tokens.tolist()
    assert data["special_tokens_mask"][:, 0].tolist() == [1, 1] and data["special_tokens_mask"][:, 1:].sum() == 0
    assert dist.vocab_size(12) == 27 and len(set(ids.values())) == 3 and min(ids.values()) == 24
    with pytest.raises(ValueError, match="alphabets"):
        dist.encode(np.array([[24]]), n_sets=12)


def test_shuffled_weights_keep_values_and_change_order():
    g = torch.Generator().manual_seed(0)
    state = {"w": torch.randn(8, 5, generator=g), "b": torch.randn(7, generator=g),
             "ids": torch.arange(6)}
    out = dist.shuffle_weights(state, seed=1)
    for name in ("w", "b"):
        assert out[name].shape == state[name].shape
        assert torch.equal(out[name].flatten().sort().values, state[name].flatten().sort().values)
        assert not torch.equal(out[name], state[name])
    assert torch.equal(out["ids"], state["ids"])  # integer buffers are not weights
    assert torch.equal(dist.shuffle_weights(state, seed=1)["w"], out["w"])  # seeded


def test_shuffled_model_is_built_from_permuted_pretrained_weights(work):
    setup = dist.Setup(**TINY)
    folder = dist.pretrain_mlm(setup, "mix", progress=False)
    from mlmlib.models import load_state

    state = load_state(folder / "model")
    clf = dist.build_classifier("shuffled", setup, seed=3, pretrained={"mix": folder})
    w = clf.bert.encoder.layer[0].attention.self.query.weight.detach()
    ref = state["bert.encoder.layer.0.attention.self.query.weight"]
    assert torch.equal(w.flatten().sort().values, ref.flatten().sort().values)
    assert not torch.equal(w, ref)
    same = dist.build_classifier("with", setup, seed=3, pretrained={"mix": folder})
    assert torch.equal(same.bert.encoder.layer[0].attention.self.query.weight.detach(), ref)


def test_cbow_puts_synonyms_closer_in_mix():
    lang = syn.make_language(syn.LanguageConfig(n_sets=20, n_states=100, n_patterns=2,
                                                pattern_length=2, pattern_set_size=1, seed=0))
    tokens = syn.pretraining_corpus(lang, "mix", 400, 32, seed=1)
    vectors = dist.cbow_embeddings(tokens, 20, dim=16, window=2, epochs=10, seed=0)
    assert vectors.shape == (40, 16)
    sims = dist.synonym_similarity(vectors, 20)
    assert sims["synonyms"].mean() > sims["random pairs"].mean() + 0.3
    assert (sims["synonyms"] > sims["random pairs"]).mean() > 0.9


def test_cbow_rows_follow_token_ids_not_gensim_order():
    # token 7 is by far the most frequent, so gensim puts it first in its own matrix
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 7, size=(200, 12))
    tokens[:, ::2] = 7
    vectors = dist.cbow_embeddings(tokens, 4, dim=8, window=2, epochs=2, seed=0)
    from gensim.models import Word2Vec

    w2v = Word2Vec([[str(t) for t in row] for row in tokens], vector_size=8, window=2,
                   min_count=1, sg=0, epochs=2, seed=0, workers=1)
    assert w2v.wv.index_to_key[0] == "7"
    np.testing.assert_allclose(vectors[7], w2v.wv["7"], rtol=1e-5)
    np.testing.assert_allclose(vectors[0], w2v.wv["0"], rtol=1e-5)


def test_cbow_vectors_in_the_model_have_the_target_std():
    setup = dist.Setup(**TINY)
    vectors = np.random.default_rng(0).normal(0.5, 3.0, size=(2 * setup.n_sets, setup.hidden)).astype(np.float32)
    for model, std in (("cbow", 0.03), ("cbow-frozen", 0.03), ("cbow", 0.1)):
        clf = dist.build_classifier(model, setup, seed=0, cbow_vectors=vectors, cbow_std=std)
        placed = clf.bert.embeddings.word_embeddings.weight[: 2 * setup.n_sets].detach().numpy()
        assert placed.std() == pytest.approx(std, rel=1e-3)
        np.testing.assert_allclose(placed, vectors * (std / vectors.std()), rtol=1e-4)  # one factor: same directions
    with pytest.raises(ValueError, match="cbow std must be a number > 0"):
        dist.CbowConfig(std=0.0)
    with pytest.raises(ValueError, match="cbow epochs must be an int >= 1"):
        dist.CbowConfig(epochs=0)
    with pytest.raises(ValueError, match="needs cbow_vectors of shape"):
        dist.build_classifier("cbow-frozen", setup, seed=0, cbow_vectors=vectors[:3])


def test_frozen_cbow_embeddings_do_not_change_during_finetuning():
    from mlmlib.finetune import FinetuneConfig, finetune

    setup = dist.Setup(**TINY)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(2 * setup.n_sets, setup.hidden)).astype(np.float32)
    data = dist.encode(rng.integers(0, 2 * setup.n_sets, size=(32, 16)), setup.n_sets, rng.integers(0, 2, 32))
    config = FinetuneConfig(max_steps=4, eval_every=4, batch_size=8, lr=1e-2, seed=0)
    changed = {}
    for model in dist.CBOW_MODELS:
        clf = dist.build_classifier(model, setup, seed=0, cbow_vectors=vectors)
        before = {k: v.clone() for k, v in clf.state_dict().items()}
        finetune(clf, data, data, config, progress=False)
        after = clf.state_dict()
        changed[model] = {k for k in before if not torch.equal(before[k], after[k].cpu())}
    embeddings = {k for k in before if k.startswith("bert.embeddings.") and "position_ids" not in k
                  and "token_type_ids" not in k}
    assert not changed["cbow-frozen"] & embeddings  # words, positions, token types, LayerNorm
    assert "bert.embeddings.word_embeddings.weight" in changed["cbow"]
    assert "bert.encoder.layer.0.attention.self.query.weight" in changed["cbow-frozen"]  # the rest trains


def test_mixture_curves_expand_to_every_train_size():
    base = {"models": ["scratch", "with", "cbow"], "train_sizes": [400, 800, 1600],
            "bd2_fractions": [0.0, 0.1, 0.5], "bd2_models": ["scratch", "with"]}
    clean = {(0.0, n, m) for n in (400, 800, 1600) for m in ("scratch", "with", "cbow")}
    curves = dist.Sweep(**base, bd2_curves=True).planned_runs()
    assert set(curves) == clean | {(f, n, m) for f in (0.1, 0.5) for n in (400, 800, 1600) for m in ("scratch", "with")}
    assert len(curves) == 9 + 12
    largest = dist.Sweep(**base, bd2_curves=False).planned_runs()
    assert set(largest) == clean | {(f, 1600, m) for f in (0.1, 0.5) for m in ("scratch", "with")}
    every_model = dist.Sweep(**{**base, "bd2_models": None}, bd2_curves=True).planned_runs()
    assert len(every_model) == 3 * 9
    with pytest.raises(ValueError, match="bd2_curves must be true"):
        plain_sweep(bd2_curves="all")


def test_convergence_check_raises_clear_message():
    history = [{"step": 10, "loss": 4.0}, {"step": 20, "loss": 3.1}]
    with pytest.raises(dist.NotConvergedError, match=r"'mix' has not converged.*3\.100.*loss_threshold=2\.0"):
        dist.check_converged(history, 2.0, "mix")
    assert dist.check_converged(history, 3.5, "mix") == pytest.approx(3.1)
    with pytest.raises(dist.NotConvergedError):
        dist.check_converged([{"loss": float("nan")}], 2.0, "shift")


def test_sweep_rejects_bad_input_before_training(work):
    setup = dist.Setup(**TINY)
    with pytest.raises(ValueError, match="models must be .*'scratch'"):
        dist.run_sweep(setup, plain_sweep(models=["scratch", "bert"]), seed=0)
    with pytest.raises(ValueError, match="test_sets must be .*'A-D1'"):
        dist.run_sweep(setup, plain_sweep(models=["scratch"], test_sets=["C-D3"]), seed=0)
    with pytest.raises(ValueError, match="train_sizes must lie within pool_size"):
        dist.run_sweep(setup, plain_sweep(models=["scratch"], train_sizes=[100, 2000], pool_size=1600), seed=0)
    with pytest.raises(ValueError, match="bd2_fractions"):
        dist.run_sweep(setup, plain_sweep(models=["scratch"], bd2_fractions=[1.5]), seed=0)
    with pytest.raises(ValueError, match="max_len"):
        dist.run_sweep(setup, plain_sweep(models=["scratch"], length=64), seed=0)
    with pytest.raises(ValueError, match="training size"):
        dist.training_set(syn.make_language(setup.language_config()), 10, 8, 11, 0.0, seed=0)
    # a pretrained arm whose checkpoint was never built: a clear error, nothing trains
    with pytest.raises(FileNotFoundError, match="no MLM pretrained on 'mix'.*A2_synthetic_pretrain"):
        dist.run_sweep(setup, plain_sweep(models=["scratch", "with"], length=16), seed=0)
    assert not list(work.rglob("model.safetensors"))


def test_pretraining_seed_is_the_page_seed_or_a_given_one():
    assert dist.pretraining_seed(dist.OWN_SEED, 7) == 7
    assert dist.pretraining_seed(3, 7) == 3 and dist.pretraining_seed(0, 7) == 0
    with pytest.raises(ValueError, match="pretrain_seed=-2"):
        dist.pretraining_seed(-2, 7)


def test_sweep_refuses_unconverged_pretrained_model(work):
    setup = dist.Setup(**TINY)
    dist.pretrain_mlm(setup, "shift", progress=False)  # 5 steps: far from converged
    strict = dataclasses.replace(setup, loss_threshold=0.5)  # the same model: the threshold only judges it
    assert strict.key("shift") == setup.key("shift")
    with pytest.raises(dist.NotConvergedError, match="'shift' has not converged"):
        dist.prepare(strict, plain_sweep(models=["without"], length=16))


def test_tiny_sweep_rows(work):
    setup = dist.Setup(**TINY, loss_threshold=100.0)
    dist.pretrain_mlm(setup, "mix", progress=False)
    sweep = plain_sweep(models=["scratch", "with", "cbow-frozen"], train_sizes=[16, 32],
                        bd2_fractions=[0.0, 0.5], bd2_curves=True, pool_size=32, valid_size=16, test_size=32,
                        length=16, max_steps=3, eval_every=3, batch_size=8)
    rows = dist.run_sweep(setup, sweep, seed=0, cbow=dist.CbowConfig(epochs=1), log=None)
    assert len(rows) == 3 * 2 * 2 * 4
    assert {(r["bd2_fraction"], r["train_size"], r["model"]) for r in rows} == set(sweep.planned_runs())
    # max_steps 3 with one validation every 3 steps: patience (3) cannot end a run first
    assert all(r["hit_cap"] and r["steps"] == 3 for r in rows)
    assert {r["language_seed"] for r in rows} == {0}
    assert {r["test_set"] for r in rows} == set(syn.TEST_SETS)
    assert all(0 <= r["accuracy"] <= 1 and 0.5 <= r["prior"] <= 1 for r in rows)
    assert {r["train_size"] for r in rows} == {16, 32}


def test_bd2_models_run_only_at_the_largest_size(work):
    setup = dist.Setup(**TINY, loss_threshold=100.0)
    dist.pretrain_mlm(setup, "mix", progress=False)
    sweep = dist.Sweep(models=["scratch", "with", "cbow"], train_sizes=[16, 32], bd2_fractions=[0.0, 0.5],
                       bd2_models=["scratch", "with"], pool_size=32, valid_size=16, test_size=32,
                       length=16, max_steps=3, eval_every=3, batch_size=8)
    rows = dist.run_sweep(setup, sweep, seed=0, cbow=dist.CbowConfig(epochs=1), log=None)
    mixed = [r for r in rows if r["bd2_fraction"] == 0.5]
    assert {(r["model"], r["train_size"]) for r in mixed} == {("scratch", 32), ("with", 32)}
    assert len(rows) == (3 * 2 + 2) * 4
    with pytest.raises(ValueError, match="bd2_models must be .*from models"):
        dist.run_sweep(setup, plain_sweep(models=["scratch"], bd2_models=["with"]), seed=0)


@pytest.mark.parametrize("sizes, pool, message", [
    ([100, 50, 400], 1600, "train_sizes must be strictly increasing"),
    ([100, 100], 1600, "train_sizes must be strictly increasing"),
    ([100, 3200], 1600, r"train_sizes must lie within pool_size \(1600\).*largest is 3200"),
    ([1, 10], 1600, "train_sizes must start at 2"),
    ([], 1600, "train_sizes must be a non-empty list of ints"),
])
def test_train_sizes_checked_before_anything_trains(sizes, pool, message):
    with pytest.raises(ValueError, match=message):
        dist.Sweep(train_sizes=sizes, pool_size=pool)
    with pytest.raises(ValueError, match="train_sizes must be a non-empty list of ints"):
        dist.Sweep(train_sizes=(25.5, 100))
    with pytest.raises(ValueError, match=r"sweep.train_sizes = \[25.5, 100\]"):  # a plan's value: its type
        configs.build(groups.Sweep, {"train_sizes": [25.5, 100]}, "sweep")
    # through the page's group, the error names the parameter
    with pytest.raises(ValueError, match=f"sweep: {message}"):
        configs.build(groups.Sweep, {"train_sizes": sizes, "pool_size": pool}, "sweep")


def test_sweep_stops_on_patience_and_flags_the_cap():
    sweep = dist.Sweep(max_steps=500, eval_every=25, patience=4)
    assert not dist.hit_cap(300, sweep) and dist.hit_cap(500, sweep)
    with pytest.raises(ValueError, match="patience must be an int >= 1"):
        dist.Sweep(patience=0)


@pytest.mark.parametrize("curve, patience, stop, best, warmup", [
    ([0.5, 0.6, 0.7, 0.7, 0.69, 0.71, 0.70, 0.70, 0.70, 0.70], 3, 9, 6, 0),  # a tie is no improvement
    ([0.5, 0.6, 0.7, 0.7, 0.69, 0.71, 0.70, 0.70, 0.70, 0.70], 5, 10, 6, 0),  # never 5 in a row: the cap
    ([0.55, 0.55, 0.55, 0.8, 0.8, 0.8], 2, 3, 1, 0),  # a late riser stopped early: why patience is not 1 or 2
    # warm-up of 3 steps: the flat start does not count, the late riser is found (stopped before the cap)
    ([0.55, 0.55, 0.55, 0.8, 0.8, 0.8, 0.8], 2, 6, 4, 3),
])
def test_patience_stops_on_a_hand_made_validation_curve(curve, patience, stop, best, warmup):
    """finetune's early stopping (what run_sweep uses) on a scripted validation curve: it stops after
    `patience` validations without a new best, counted after warm-up, and restores the best weights."""
    from mlmlib.finetune import FinetuneConfig, train_loop

    model = torch.nn.Linear(1, 1)
    scores = iter(curve)
    weights = []

    def validate():
        weights.append(float(model.weight.detach()))
        return {"accuracy": next(scores)}

    config = FinetuneConfig(max_steps=len(curve), eval_every=1, patience=patience, lr=0.1, warmup_frac=0.0,
                            warmup_steps=warmup or None)
    result = train_loop(model, 8, config, lambda idx, device: model(torch.ones(len(idx), 1)).sum(), validate,
                        "accuracy", progress=False)
    assert result.steps == stop and result.best_step == best and len(result.history) == stop
    assert float(model.weight.detach()) == pytest.approx(weights[best - 1])  # the best weights restored


def test_training_set_mixes_bd2_and_is_nested():
    lang = syn.make_language(syn.LanguageConfig(n_sets=12, n_states=60, n_patterns=2, pattern_length=2,
                                                pattern_set_size=1))
    small, _ = dist.training_set(lang, 40, 10, 20, 0.5, seed=0)
    big, _ = dist.training_set(lang, 40, 10, 40, 0.5, seed=0)
    assert (small[:10] < 12).all() and (small[10:] >= 12).all()  # 10 A-D1, then 10 B-D2
    assert np.array_equal(small[:10], big[:10])


# ---------------------------------------------------------------- parameter groups

NOTEBOOK_GROUPS = {
    "A2_synthetic_pretrain": {"setup": "mlmlib.papers.distributional.config:Setup"},
    "A3_synthetic_finetune": {"setup": "mlmlib.papers.distributional.config:Setup",
                              "sweep": "mlmlib.papers.distributional.config:Sweep",
                              "cbow": "mlmlib.papers.distributional.config:CbowConfig"},
    "A5_real_finetune_perturb": {"base": "mlmlib.base_config:BaseModelConfig",
                                 "setup": "mlmlib.papers.distributional.real_text_config:"
                                          "RealTextSetup"},
}


@pytest.mark.parametrize("notebook", sorted(NOTEBOOK_GROUPS))
def test_notebooks_take_each_group_as_one_dict_of_overrides(notebook):
    """One source per group: the page declares the dataclass and defaults to {} (its smoke
    values); no flat parameter repeats a field of a group it takes."""
    path = notebooks_dir() / f"{notebook}.ipynb"
    cell = next(c for c in json.loads(path.read_text())["cells"]
                if "parameters" in c["metadata"].get("tags", []))
    assert cell["metadata"][configs.METADATA_KEY] == NOTEBOOK_GROUPS[notebook]
    params = notebook_parameters(str(path))
    for name, cls in NOTEBOOK_GROUPS[notebook].items():
        assert params[name] == {}, f"{notebook}: {name} = {params[name]!r}, expected {{}}"
        if notebook != "A5_real_finetune_perturb":  # A5's seed is the fine-tuning's, not the base's
            repeated = set(params) & set(configs.fields(configs.load_class(cls)))
            assert not repeated, f"{notebook}: flat parameters {sorted(repeated)} repeat {cls}'s fields"


def test_group_module_imports_no_torch():
    """The plan loader reads the groups: their module must not pull in torch (or numpy)."""
    code = ("import sys, mlmlib.papers.distributional.config, "
            "mlmlib.papers.distributional.real_text_config; "
            "print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a5_setup_presets_hold_the_plans_settings_and_take_a_field_on_top():
    from mlmlib.papers.distributional.real_text_config import REAL_TEXT_PRESETS, RealTextSetup

    assert list(REAL_TEXT_PRESETS) == ["smoke", "tiny", "cpu", "paper", "paper-mnli"]
    empty = {f.name for f in dataclasses.fields(RealTextSetup) if f.default is None}
    assert set(REAL_TEXT_PRESETS["smoke"]) == empty
    for name, values in REAL_TEXT_PRESETS.items():  # each sets them all; records hold the numbers
        assert set(values) == empty, name
        built = configs.build(RealTextSetup, {"preset": name}, "setup")
        assert configs.resolve(RealTextSetup, {"preset": name}) == dataclasses.asdict(built)
    assert configs.resolve(RealTextSetup, {}) == configs.resolve(RealTextSetup, {"preset": "smoke"})
    paper = configs.build(RealTextSetup, {"preset": "paper", "epochs": 1}, "setup")
    assert (paper.epochs, paper.lr, paper.selection_split, paper.test_size) == (
        1, 5e-5, "train-holdout", 5000)
    mnli = configs.resolve(RealTextSetup, {"preset": "paper-mnli"})
    paper_sst2 = configs.resolve(RealTextSetup, {"preset": "paper"})
    differ = {k for k, v in mnli.items() if v != paper_sst2[k]}
    assert differ == {"preset", "selection_holdout", "templates", "verbalizers"}
    assert list(mnli["verbalizers"]) == [mnli["templates"][-1]]  # the pair task's prompt
    paper.checkpoints.append(0.9)  # a built group's lists are its own, not the preset's
    assert REAL_TEXT_PRESETS["paper"]["checkpoints"][-1] == 1.0
    with pytest.raises(ValueError, match=r"^setup: preset must be one of \['smoke', 'tiny', 'cpu'"):
        configs.build(RealTextSetup, {"preset": "huge"}, "setup")
    with pytest.raises(ValueError, match="setup: test_size must be an int >= 1, got 0"):
        configs.build(RealTextSetup, {"test_size": 0}, "setup")


@pytest.mark.parametrize("profile, presets", [("test", ["tiny"]), ("cpu", ["cpu"]),
                                              ("paper", ["paper", "paper-mnli"])])
def test_the_plans_name_a5s_setup_by_preset(profile, presets):
    from mlmlib.runs.plans import load_plan

    runs = [r for r in load_plan(profile).runs if r.notebook == "A5_real_finetune_perturb"]
    assert [r.params["setup"] for r in runs] == [{"preset": p} for p in presets]


def test_group_constants_are_the_generators():
    assert groups.TEST_SETS == syn.TEST_SETS
    assert set(groups.MODELS) == set(dist.MODEL_LABELS)


def test_setup_key_holds_every_field_but_the_threshold_and_compile_and_the_seed_is_the_pages():
    setup = configs.build(dist.Setup, {"steps": 7, "lr": 1}, "setup")
    key = setup.key("mix")
    # the language and the setup by their values, not by their presets' names
    fields = set(configs.fields(dist.Setup))
    assert set(key) == ({"corpus", "pretrain_seed", "language_seed"}
                        | fields - {"loss_threshold", "compile", "language", "preset"})
    assert key["n_sets"] == syn.LANGUAGES["smoke"].n_sets
    assert (key["steps"], key["lr"], key["pretrain_seed"], key["language_seed"]) == (7, 1, 0, 0)
    seeded = setup.with_pretrain_seed(4)
    assert seeded.key("mix") == {**key, "pretrain_seed": 4} and setup.pretrain_seed == 0
    other = seeded.with_seeds(2, 4)
    assert other.key("mix") == {**key, "pretrain_seed": 4, "language_seed": 2}
    assert other.language_config().seed == 2 and other.with_pretrain_seed(5).language_seed == 2
    for name in ("pretrain_seed", "language_seed"):  # set by the page's grid parameters
        with pytest.raises(ValueError, match=f"unknown field '{name}'"):
            configs.build(dist.Setup, {name: 3}, "setup")
    with pytest.raises(ValueError, match="pretraining seed must be an int >= 0"):
        setup.with_pretrain_seed(-1)
    with pytest.raises(ValueError, match="language_seed must be an int >= 0"):
        setup.with_seeds(-1, 0)
    with pytest.raises(ValueError, match="setup: corpus_length \\+ 1"):
        configs.build(dist.Setup, {"corpus_length": 64}, "setup")


PRESET_GROUPS = ((groups.Setup, groups.SETUP_PRESETS, "setup"),
                 (groups.Sweep, groups.SWEEP_PRESETS, "sweep"))


@pytest.mark.parametrize("cls, presets, parameter", PRESET_GROUPS)
def test_each_preset_builds_and_resolves_to_its_numbers(cls, presets, parameter):
    """A preset fills every field left None, a field given replaces its value, and records (the
    group resolved) carry the numbers the built group holds."""
    assert list(presets) == ["smoke", "tiny", "paper"]
    # the fields a preset sets (a language's sizes come from the language it names)
    empty = {f.name for f in dataclasses.fields(cls) if f.default is None} - set(syn.SIZE_FIELDS)
    for name, values in presets.items():
        assert set(values) == empty, name  # each preset gives them all
        built = configs.build(cls, {"preset": name}, parameter)
        resolved = configs.resolve(cls, {"preset": name})
        assert {k: getattr(built, k) for k in values} == values
        assert resolved == configs.resolve(cls, {k: getattr(built, k) for k in resolved})
        assert all(v is not None for k, v in resolved.items() if k != "bd2_models"), name
        field, value = ("steps", 3) if cls is groups.Setup else ("max_steps", 3)
        changed = configs.build(cls, {"preset": name, field: value}, parameter)
        assert getattr(changed, field) == value
        assert configs.resolve(cls, {"preset": name, field: value}) == {**resolved, field: value}
    # the defaults are the smoke preset, the one a page and the smoke plan run
    assert configs.resolve(cls, {}) == configs.resolve(cls, {"preset": "smoke"})


def test_the_setup_presets_name_their_languages_and_keep_the_cache_key():
    tiny = configs.build(groups.Setup, {"preset": "tiny"}, "setup")
    paper = configs.build(groups.Setup, {"preset": "paper", "n_sets": 2000}, "setup")
    assert (tiny.language, tiny.n_sets, tiny.steps) == ("tiny", syn.LANGUAGES["tiny"].n_sets, 6)
    assert (paper.language, paper.n_sets, paper.n_states) == ("paper", 2000, 5000)
    assert paper.hidden == 768
    # the preset's name is not part of the model: the same numbers make the same cache key
    by_numbers = groups.Setup(**groups.SETUP_PRESETS["tiny"])
    assert by_numbers.preset == "smoke" and by_numbers.key("mix") == tiny.key("mix")
    assert configs.build(groups.Sweep, {"preset": "paper"}, "sweep").train_sizes == tuple(
        range(10000, 100001, 10000))


def test_an_unknown_preset_is_refused_naming_the_parameter_and_the_presets(tmp_path, monkeypatch):
    from mlmlib.runs import plans

    for cls, _, parameter in PRESET_GROUPS:
        with pytest.raises(ValueError, match=rf"^{parameter}: preset must be one of "
                                             r"\['smoke', 'tiny', 'paper'\], got 'papr'"):
            configs.build(cls, {"preset": "papr"}, parameter)
        assert configs.resolve(cls, {"preset": "papr"})["preset"] == "papr"  # build names it
    # a plan naming one stops when it is loaded, before anything runs
    (tmp_path / "notebooks" / "plans").mkdir(parents=True)
    (tmp_path / "_config.yml").write_text("title: test\n")
    (tmp_path / "notebooks" / "A3_synthetic_finetune.ipynb").symlink_to(
        notebooks_dir() / "A3_synthetic_finetune.ipynb")
    (tmp_path / "notebooks" / "plans" / "p.yaml").write_text(
        "notebooks:\n  - notebook: A3_synthetic_finetune\n    params: {sweep: {preset: huge}}\n")
    monkeypatch.setenv("MLMLIB_ROOT", str(tmp_path))
    plans.notebook_parameters.cache_clear()
    plans.notebook_groups.cache_clear()
    try:
        with pytest.raises(plans.PlanError, match=r"sweep: preset must be one of \['smoke', "
                                                  r"'tiny', 'paper'\], got 'huge'"):
            plans.load_plan("p")
    finally:
        plans.notebook_parameters.cache_clear()
        plans.notebook_groups.cache_clear()


@pytest.mark.parametrize("profile, preset", [("test", "tiny"), ("paper", "paper")])
def test_the_plans_choose_the_groups_by_preset(profile, preset):
    from mlmlib.runs.plans import full_params, load_plan

    runs = [r for r in load_plan(profile).runs
            if r.notebook in ("A2_synthetic_pretrain", "A3_synthetic_finetune", "A7_dose_pilot")]
    assert runs
    for run in runs:
        params = full_params(run.notebook, run.params)
        assert run.params["setup"] == {"preset": preset}  # one name, no field restated
        assert params["setup"] == configs.resolve(groups.Setup, {"preset": preset})
        if "sweep" in run.params:
            assert run.params["sweep"]["preset"] == preset


def test_sweep_defaults_are_the_smoke_mixtures_and_reject_unknown_arms():
    arms = ["scratch", "with", "without", "shuffled"]
    sweep = configs.build(dist.Sweep, {"models": arms}, "sweep")
    assert sweep.bd2_fractions == (0.0, 0.1, 0.5) and sweep.bd2_models == tuple(arms)
    assert len(sweep.planned_runs()) == 4 * 4 + 2 * 4  # the mixtures at the largest size only
    with pytest.raises(ValueError, match="sweep: bd2_models must be None or a non-empty list from models"):
        configs.build(dist.Sweep, {"models": ["scratch"]}, "sweep")


def test_a_page_run_by_hand_pretrains_the_missing_models(work):
    setup = dist.Setup(**TINY, loss_threshold=100.0)
    sweep = plain_sweep(models=["scratch", "with", "without"], length=16)
    with pytest.raises(FileNotFoundError, match="no MLM pretrained on 'mix'"):
        dist.prepare(setup, sweep)
    said = []
    found = dist.prepare(setup, sweep, build_missing=True, log=said.append)
    assert set(found) == {"mix", "shift"} and all((f / "history.json").exists() for f in found.values())
    assert len(said) == 2 and "pretraining it" in said[0]
    assert dist.prepare(setup, sweep) == found  # cached: the plain lookup finds them now
