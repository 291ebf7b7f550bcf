"""The pretraining loop: exact losses, ELECTRA labels, hook weights, resume, errors."""

import copy

import pytest
import torch

from mlmlib.checkpoint import latest
from mlmlib.masking import mask_tokens
from mlmlib.models import ModelSize, bert_mlm, electra, electra_from_bert
from mlmlib.pretrain import HookOutput, Objective, PretrainConfig, masked_lm_logits, pretrain

V, MASK, NSPEC = 50, 4, 5
SIZE = ModelSize(vocab_size=V, hidden=32, layers=1, heads=2, max_len=32)


def make_data(n=64, length=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(NSPEC, V, (n, length), generator=g)
    ids[:, 0] = 2
    attention = torch.ones(n, length, dtype=torch.long)
    attention[: n // 4, length - 5:] = 0  # some right padding
    ids[attention == 0] = 0
    return {"input_ids": ids, "attention_mask": attention}


def cfg(**kw):
    base = {"steps": 6, "batch_size": 8, "log_every": 2, "lr": 1e-3, "warmup_frac": 0.0}
    return PretrainConfig(**(base | kw))


def fixed_batch(data, prob=0.3):
    ids, attention = data["input_ids"][:8], data["attention_mask"][:8]
    special = (attention == 0) | (ids < NSPEC)
    corrupted, masked = mask_tokens(ids, prob, generator=torch.Generator().manual_seed(0),
                                    mask_id=MASK, vocab_size=V, special_mask=special,
                                    num_special=NSPEC)
    return ids, attention, corrupted, masked


@pytest.mark.parametrize("kind", ["bert", "electra_generator"])
def test_masked_loss_equals_hf_loss(kind):
    data = make_data()
    model = bert_mlm(SIZE, seed=0) if kind == "bert" else electra(SIZE, seed=0).generator
    model.eval()
    ids, attention, corrupted, masked = fixed_batch(data)
    labels = ids.masked_fill(~masked, -100)
    hf = model(input_ids=corrupted, attention_mask=attention, labels=labels).loss
    ours = torch.nn.functional.cross_entropy(
        masked_lm_logits(model, corrupted, attention, masked), ids[masked])
    torch.testing.assert_close(ours, hf, rtol=1e-5, atol=1e-6)


def test_mlm_learns_and_logs():
    torch.manual_seed(0)
    data = make_data(n=64)
    data["input_ids"][:, 1:] = data["input_ids"][:, :1].clone() * 0 + 7  # one predictable token
    data["input_ids"][data["attention_mask"] == 0] = 0
    history = pretrain(bert_mlm(SIZE, seed=0), data, cfg(steps=30, log_every=10, lr=3e-3),
                       mask_id=MASK, num_special=NSPEC)
    assert [r["step"] for r in history] == [10, 20, 30]
    assert {"loss", "acc", "lr", "tokens_seen", "tokens_per_s", "wall_s"} <= history[-1].keys()
    assert history[-1]["acc"] > 0.9 and history[-1]["loss"] < history[0]["loss"]


def test_mlm_accuracy_is_the_same_with_a_hook():
    # with a hook the loop reuses the hook's predictions for the accuracy: same numbers
    data = make_data(n=64)
    runs = [pretrain(bert_mlm(SIZE, seed=0), data, cfg(steps=6, log_every=2, lr=3e-3), mask_id=MASK,
                     num_special=NSPEC, hook=hook) for hook in (None, lambda step: None)]
    assert [r["acc"] for r in runs[0]] == [r["acc"] for r in runs[1]]
    assert [r["loss"] for r in runs[0]] == [r["loss"] for r in runs[1]]


def test_electra_labels_are_exact_match():
    data = make_data()
    seen = []

    def hook(step):
        seen.append((step.input_ids, step.corrupted_ids, step.masked, step.samples, step.targets))
        return HookOutput(stats={"n": float(step.masked.sum())})

    history = pretrain(electra(SIZE, seed=0), data, cfg(objective="electra", steps=2),
                       mask_id=MASK, num_special=NSPEC, hook=hook)
    assert {"gen_acc", "disc_acc", "replaced_frac", "n"} <= history[-1].keys()
    assert len(seen) == 2  # the hook saw both steps
    for ids, disc_input, masked, samples, targets in seen:
        assert torch.equal(disc_input[~masked], ids[~masked])
        assert torch.equal(disc_input[masked], samples)
        assert torch.equal(targets, ids[masked])

    # Explicit exact-match labels through the hook give the very same run.
    def relabel(step):
        return HookOutput(disc_labels=(step.corrupted_ids != step.input_ids).float(),
                          disc_weights=torch.full(step.input_ids.shape, 2.0))

    again = pretrain(electra(SIZE, seed=0), data, cfg(objective="electra", steps=2),
                     mask_id=MASK, num_special=NSPEC, hook=relabel)
    assert again[-1]["loss"] == history[-1]["loss"]


def test_hook_samples_are_what_the_discriminator_sees():
    data = make_data()
    seen, originals = [], []

    def originals_back(step):  # every masked position gets its original token back
        originals.append(step.input_ids)
        assert not torch.equal(step.corrupted_ids, step.input_ids)  # the generator's samples
        return HookOutput(samples=step.targets)

    pair = electra(SIZE, seed=0)
    pair.discriminator.register_forward_hook(
        lambda module, args, kwargs, out: seen.append(kwargs["input_ids"]), with_kwargs=True)
    history = pretrain(pair, data, cfg(objective="electra", steps=2), mask_id=MASK,
                       num_special=NSPEC, hook=originals_back)
    plain = pretrain(electra(SIZE, seed=0), data, cfg(objective="electra", steps=2), mask_id=MASK,
                     num_special=NSPEC)
    assert history[-1]["replaced_frac"] == 0.0 and plain[-1]["replaced_frac"] > 0.5
    assert history[-1]["gen_loss"] == pytest.approx(plain[-1]["gen_loss"], rel=1e-3)  # its own loss stays
    assert len(seen) == len(originals) == 2
    assert all(torch.equal(disc, ids) for disc, ids in zip(seen, originals))
    with pytest.raises(ValueError, match="samples only applies to objective='electra'"):
        pretrain(bert_mlm(SIZE, seed=0), data, cfg(steps=1), mask_id=MASK, num_special=NSPEC,
                 hook=lambda step: HookOutput(samples=step.targets))
    with pytest.raises(ValueError, match=r"samples must have shape"):
        pretrain(electra(SIZE, seed=0), data, cfg(objective="electra", steps=1), mask_id=MASK,
                 num_special=NSPEC, hook=lambda step: HookOutput(samples=step.targets[:1]))


def test_a_frozen_generator_encoder_gets_no_gradient_and_the_same_loss():
    data = make_data()
    ids, attention, corrupted, masked = fixed_batch(data)
    losses = []
    for freeze in (False, True):
        pair = electra_from_bert(bert_mlm(SIZE, seed=0), seed=1, generator="copy")
        if freeze:
            pair.freeze_generator_encoder()
        pair.eval()  # no dropout: the two forward passes must agree
        loss, _ = Objective(pair, cfg(objective="electra"))(1, ids, attention, corrupted, masked,
                                                           torch.Generator().manual_seed(0))
        loss.backward()
        losses.append(loss.item())
    gen = pair.generator
    assert all(p.grad is None for p in gen.electra.encoder.parameters())
    assert gen.generator_predictions.dense.weight.grad is not None
    assert pair.discriminator.electra.encoder.layer[0].output.dense.weight.grad is not None
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)


def test_hook_zero_weight_gives_zero_gradient():
    data = make_data()
    model = bert_mlm(SIZE, seed=0)
    model.eval()
    ids, attention, corrupted, masked = fixed_batch(data)
    captured = {}

    def hook(step):
        step.logits.retain_grad()
        captured["logits"] = step.logits
        weights = torch.ones(step.targets.shape[0])
        weights[::2] = 0.0
        return HookOutput(mlm_weights=weights)

    objective = Objective(model, cfg(), hook)
    loss, _ = objective(1, ids, attention, corrupted, masked)
    loss.backward()
    grad = captured["logits"].grad
    assert (grad[::2] == 0).all() and (grad[1::2].abs().sum(1) > 0).all()
    # normalised by the kept weight: equals the plain mean over the kept positions
    kept = torch.nn.functional.cross_entropy(captured["logits"][1::2], ids[masked][1::2])
    torch.testing.assert_close(loss, kept)


def test_resume_after_kill_is_bit_identical(tmp_path):
    data = make_data()
    for objective, make in (("mlm", lambda: bert_mlm(SIZE, seed=0)),
                            ("electra", lambda: electra(SIZE, seed=0))):
        config = cfg(objective=objective, steps=10, checkpoint_every=4, log_every=3)
        model_a = make()
        full = pretrain(model_a, data, config, mask_id=MASK, num_special=NSPEC)

        def kill(step):
            if step.step == 7:
                raise KeyboardInterrupt("killed")

        ckdir = tmp_path / objective
        with pytest.raises(KeyboardInterrupt):
            pretrain(make(), data, config, mask_id=MASK, num_special=NSPEC, hook=kill,
                     checkpoint_dir=ckdir)
        model_b = make()
        resumed = pretrain(model_b, data, config, mask_id=MASK, num_special=NSPEC,
                           checkpoint_dir=ckdir)
        drop = ("tokens_per_s", "wall_s")
        assert [{k: v for k, v in r.items() if k not in drop} for r in resumed] == \
            [{k: v for k, v in r.items() if k not in drop} for r in full]
        assert model_a.state_dict().keys() == model_b.state_dict().keys()
        for (name, a), b in zip(model_a.state_dict().items(), model_b.state_dict().values()):
            assert torch.equal(a, b), name
        # a finished run resumes to its end without training again
        model_c = make()
        assert pretrain(model_c, data, config, mask_id=MASK, num_special=NSPEC,
                        checkpoint_dir=ckdir) == resumed
        assert torch.equal(model_c.get_input_embeddings().weight, model_a.get_input_embeddings().weight)


def _no_ts(history):
    return [{k: v for k, v in r.items() if k not in ("tokens_per_s", "wall_s")} for r in history]


@pytest.mark.parametrize("change", ["config", "data", "start", "identity"])
def test_mismatched_checkpoint_is_set_aside_and_training_starts_fresh(tmp_path, capsys, change):
    data = make_data()
    pretrain(bert_mlm(SIZE, seed=0), data, cfg(steps=2, checkpoint_every=2), mask_id=MASK,
             checkpoint_dir=tmp_path, identity={"arm": "a"})
    config, model, identity = cfg(steps=2, checkpoint_every=2), bert_mlm(SIZE, seed=0), {"arm": "a"}
    if change == "config":
        config = cfg(steps=2, checkpoint_every=2, lr=5e-3)
    elif change == "data":  # same shapes, other tokens
        data = {**data, "input_ids": data["input_ids"].roll(1, dims=0)}
    elif change == "start":
        model = bert_mlm(SIZE, seed=1)
    else:
        identity = {"arm": "b"}
    fresh = pretrain(copy.deepcopy(model), data, config, mask_id=MASK, identity=identity)
    capsys.readouterr()
    resumed = pretrain(model, data, config, mask_id=MASK, checkpoint_dir=tmp_path, identity=identity)
    assert _no_ts(resumed) == _no_ts(fresh)
    out = capsys.readouterr().out
    assert "set aside" in out and "training starts fresh" in out
    assert {"config": "config.lr", "data": "data_values", "start": "start",
            "identity": "identity"}[change] in out


def test_unreadable_checkpoint_is_set_aside_with_a_named_message(tmp_path, capsys):
    data = make_data()
    config = cfg(steps=2, checkpoint_every=2)
    full = pretrain(bert_mlm(SIZE, seed=0), data, config, mask_id=MASK, checkpoint_dir=tmp_path)
    (latest(tmp_path) / "trainer_state.pt").write_bytes(b"garbage")
    again = pretrain(bert_mlm(SIZE, seed=0), data, config, mask_id=MASK, checkpoint_dir=tmp_path)
    assert _no_ts(again) == _no_ts(full)
    out = capsys.readouterr().out
    assert "cannot be read" in out and "set aside" in out and "weights_only=False" not in out


def test_nan_loss_names_the_step():
    def poison(step):
        if step.step == 3:
            return HookOutput(extra_loss=torch.tensor(float("nan")))

    with pytest.raises(FloatingPointError, match="step 3"):
        pretrain(bert_mlm(SIZE, seed=0), make_data(), cfg(), mask_id=MASK, hook=poison)


def test_selective_and_whole_word_inputs():
    data = make_data()
    prob = torch.zeros(data["input_ids"].shape)
    prob[:, 3] = 1.0  # only position 3 may be masked
    seen = []
    data_sel = data | {"mask_prob": prob}
    pretrain(bert_mlm(SIZE, seed=0), data_sel, cfg(steps=2), mask_id=MASK,
             num_special=NSPEC, hook=lambda s: seen.append(s.masked.clone()))
    assert len(seen) == 2  # the hook saw both steps
    assert all(m[:, 3].all() and m.sum() == m.shape[0] for m in seen)
    word_ids = torch.arange(16).div(2, rounding_mode="floor").repeat(64, 1)
    word_ids[data["attention_mask"] == 0] = -1
    word_ids[:, 0] = -1
    seen.clear()
    pretrain(bert_mlm(SIZE, seed=0), data | {"word_ids": word_ids}, cfg(steps=2, whole_word=True,
             mask_rate=0.3), mask_id=MASK, num_special=NSPEC,
             hook=lambda s: seen.append(s.masked.clone()))
    assert len(seen) == 2
    assert all(torch.equal(m[:, 2::2], m[:, 3::2][:, : m[:, 2::2].shape[1]]) for m in seen)


@pytest.mark.parametrize("bad", [{"objective": "gan"}, {"mask_rate": 0.0}, {"mask_rate": 1.2},
                                 {"split": (0.9, 0.2, 0.0)}, {"steps": 0}, {"precision": "fp16"},
                                 {"precision": True}, {"compile": "yes"}])
def test_bad_config(bad):
    with pytest.raises((ValueError, TypeError)):
        cfg(**bad)


def test_bad_speed_switches_name_the_parameter_and_what_is_allowed(monkeypatch):
    import mlmlib.pretrain as pt

    with pytest.raises(ValueError, match="precision must be one of \\('auto', 'fp32', 'bf16'\\)"):
        cfg(precision="half")
    monkeypatch.setattr(pt, "compile_unavailable", lambda: "torch 9.9 has no torch.compile")
    with pytest.raises(ValueError, match="compile=True: torch 9.9 has no torch.compile; set compile to false"):
        cfg(compile=True)
    assert cfg(compile=False).compile is False  # nothing to check without compile
    monkeypatch.setattr(pt.torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    monkeypatch.setattr(pt.torch.cuda, "get_device_name", lambda *a, **k: "Tesla V100")
    with pytest.raises(ValueError, match="precision='bf16': Tesla V100 has no bf16; use 'fp32' or 'auto'"):
        pt.use_bf16("bf16", "cuda")
    assert pt.use_bf16("auto", "cuda") is False and pt.use_bf16("fp32", "cuda") is False
    assert pt.use_bf16("bf16", "cpu") is True and pt.use_bf16("auto", "cpu") is False


@pytest.mark.parametrize("precision, dtype", [("fp32", torch.float32), ("bf16", torch.bfloat16),
                                              ("auto", torch.float32), ("bf16", torch.bfloat16)])
def test_the_precision_takes_effect_in_training(precision, dtype):
    """bf16 autocasts the step (on a CPU too, where "auto" stays fp32); one process may switch
    between precisions (the second bf16 row comes after an fp32 one)."""
    seen = []
    history = pretrain(bert_mlm(SIZE, seed=0), make_data(), cfg(steps=2, precision=precision),
                       mask_id=MASK, num_special=NSPEC, hook=lambda s: seen.append(s.logits.dtype))
    assert set(seen) == {dtype} and history[-1]["loss"] > 0


def test_compile_is_passed_to_torch_compile(monkeypatch):
    calls = []

    def fake_compile(module, **kwargs):
        calls.append((type(module).__name__, kwargs))
        return module

    monkeypatch.setattr(torch, "compile", fake_compile)
    pretrain(bert_mlm(SIZE, seed=0), make_data(), cfg(steps=1, log_every=1), mask_id=MASK)
    assert calls == []
    pretrain(bert_mlm(SIZE, seed=0), make_data(), cfg(steps=1, log_every=1, compile=True), mask_id=MASK)
    assert calls == [("Objective", {"dynamic": True})]


def test_bad_inputs():
    data = make_data()
    with pytest.raises(ValueError, match="ElectraPair"):
        pretrain(bert_mlm(SIZE), data, cfg(objective="electra"), mask_id=MASK)
    with pytest.raises(ValueError, match="batch_size"):
        pretrain(bert_mlm(SIZE), data, cfg(batch_size=1000), mask_id=MASK)
    with pytest.raises(ValueError, match="word_ids"):
        pretrain(bert_mlm(SIZE), data, cfg(whole_word=True), mask_id=MASK)
    with pytest.raises(ValueError, match="mask_id"):
        pretrain(bert_mlm(SIZE), data, cfg(), mask_id=V)


def test_sampler_matches_softmax():
    from mlmlib.pretrain import sample_logits

    logits = torch.tensor([[0.0, 1.0, 2.0, -30.0]]).repeat(40000, 1)
    samples = sample_logits(logits, 1.0, torch.Generator().manual_seed(0))
    freq = torch.bincount(samples, minlength=4) / len(samples)
    torch.testing.assert_close(freq, torch.softmax(logits[0], 0), atol=0.01, rtol=0)
    hot = sample_logits(logits, 0.01, torch.Generator().manual_seed(0))
    assert (hot == 2).all()


def test_quiet_heartbeat_between_log_steps_prints_without_warnings(monkeypatch, capsys):
    import warnings

    import mlmlib.pretrain

    monkeypatch.setattr(mlmlib.pretrain, "PROGRESS_EVERY_S", 0.0)  # a heartbeat every step
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. float() of a loss that requires grad
        pretrain(bert_mlm(SIZE, seed=0), make_data(), cfg(steps=3, log_every=3),
                 mask_id=MASK, num_special=NSPEC, progress=False)
    assert "step 1/3 | loss" in capsys.readouterr().out
