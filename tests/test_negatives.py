"""Tests for false-negative detection, hard correction, soft regularization, the registry of
correction methods and the hook that applies them (paper B)."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mlmlib.papers.true_negatives import claims
from mlmlib.papers.true_negatives import negatives as neg
from mlmlib.papers.true_negatives.arm_config import ArmConfig
from mlmlib.papers.true_negatives.lookup_tables import neighbour_lookup, synonym_lookup

VOCAB = ["[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]", "good", "great", "fine", "bad",
         "##ness", "car", "auto", "happy", "glad", "red"]
ID = {t: i for i, t in enumerate(VOCAB)}
V = len(VOCAB)
# one-directional on purpose ("great" -> "good" comes from symmetric=True); a continuation
# piece and a special token in the table must never be paired
TABLE = {"good": {"great", "fine", "##ness", "[MASK]", "goodness"}, "car": {"auto", "automobile"},
         "happy": {"Glad"}}


def ids(*toks):
    return torch.tensor([ID[t] for t in toks])


@pytest.fixture
def lookup():
    return synonym_lookup(TABLE, VOCAB)


def test_false_negative_cases(lookup):
    targets = ids("good", "good", "good", "good", "car", "great", "good", "happy")
    samples = ids("great", "good", "##ness", "[MASK]", "auto", "good", "bad", "glad")
    fn = neg.false_negatives(targets, samples, lookup)
    #            synonym identical continuation special synonym symmetric unrelated lowercased
    assert fn.tolist() == [True, False, False, False, True, True, False, True]


def test_lookup_ignores_out_of_range_and_mapping_vocab():
    lk = synonym_lookup(TABLE, ID)  # a token -> id mapping works like a list
    assert lk.contains(torch.tensor([ID["good"], V + 3, -1]),
                       torch.tensor([ID["fine"], ID["good"], ID["good"]])).tolist() == [True, False, False]
    assert sorted(lk.partners(ID["good"])) == [ID["great"], ID["fine"]]


def test_sample_partners_draws_each_partner_and_only_partners(lookup):
    targets = ids("good", "car", "red", "bad").repeat(500)
    first = lookup.sample_partners(targets, torch.Generator().manual_seed(0))
    again = lookup.sample_partners(targets, torch.Generator().manual_seed(0))
    assert torch.equal(first, again)  # seeded
    drawn = {t: set() for t in ("good", "car", "red", "bad")}
    for t, p in zip(targets.tolist(), first.tolist()):
        drawn[VOCAB[t]].add(p)
    assert drawn["good"] == {ID["great"], ID["fine"]} and drawn["car"] == {ID["auto"]}
    assert drawn["red"] == {-1} and drawn["bad"] == {-1}  # no partner: -1
    good = first[targets == ID["good"]]
    assert 0.4 < (good == ID["great"]).float().mean() < 0.6  # uniform over the partners
    assert lookup.sample_partners(torch.tensor([V + 2, -1]), torch.Generator()).tolist() == [-1, -1]
    empty = neg.PairLookup(torch.zeros(0, dtype=torch.long), V)
    assert empty.sample_partners(ids("good"), torch.Generator()).tolist() == [-1]


def test_object_table_with_synonyms_method():
    class Table:
        def synonyms(self, word, pos=None):
            return {"red": {"good"}}.get(word, set())

    lk = synonym_lookup(Table(), VOCAB, symmetric=False)
    assert lk.pairs().tolist() == [[ID["red"], ID["good"]]]


def test_stats(lookup):
    targets = ids("good", "good", "car", "bad")
    samples = ids("great", "good", "red", "bad")
    st = neg.false_negative_stats(targets, samples, lookup)
    assert st["n_masked"] == 4 and st["n_replaced"] == 2 and st["n_fn"] == 1
    assert st["fn_rate_replaced"] == pytest.approx(0.5)
    assert st["fn_rate_masked"] == pytest.approx(0.25)


def make_step(seed=0, b=3, length=6, hidden=5, emb=4):
    """A small MaskedStep-like object, logits from a tiny linear model, with known false negatives."""
    g = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(5, V, (b, length), generator=g)
    masked = torch.zeros(b, length, dtype=torch.bool)
    masked[:, 1] = masked[:, 3] = True
    masked[0, 4] = True
    n = int(masked.sum())
    input_ids[masked] = ids("good", "car", "good", "happy", "red", "bad", "good")[:n]
    samples = ids("great", "auto", "good", "glad", "bad", "red", "fine")[:n]
    corrupted = input_ids.clone()
    corrupted[masked] = samples
    feats = torch.randn(n, hidden, generator=g, requires_grad=True)
    head = torch.nn.Linear(hidden, V)
    embeddings = torch.randn(V, emb, generator=g, requires_grad=True)
    return SimpleNamespace(input_ids=input_ids, masked=masked, targets=input_ids[masked],
                           logits=head(feats), samples=samples, embeddings=embeddings,
                           corrupted_ids=corrupted, feats=feats)


def test_shield_zero_grad_mlm(lookup):
    step = make_step()
    out = neg.make_hook("shield", lookup)(step)
    fn = neg.false_negatives(step.targets, step.samples, lookup)
    assert fn.tolist() == [True, True, False, True, False, False, True]
    ce = F.cross_entropy(step.logits, step.targets, reduction="none")
    (out.mlm_weights * ce).sum().backward()
    grad_norm = step.feats.grad.norm(dim=1)
    assert (grad_norm[fn] == 0).all() and (grad_norm[~fn] > 0).all()
    assert out.stats["n_fn"] == 4


def test_shield_zero_grad_disc(lookup):
    step = make_step()
    out = neg.make_hook("shield", lookup, apply_to="disc")(step)
    assert out.mlm_weights is None
    g = torch.Generator().manual_seed(1)
    x = torch.randn(*step.masked.shape, 4, generator=g, requires_grad=True)
    disc = torch.nn.Linear(4, 1)
    labels = (step.corrupted_ids != step.input_ids).float()
    loss = F.binary_cross_entropy_with_logits(disc(x).squeeze(-1), labels, reduction="none")
    (out.disc_weights * loss).sum().backward()
    fn_pos = neg.to_positions(neg.false_negatives(step.targets, step.samples, lookup), step.masked, False)
    grad_norm = x.grad.norm(dim=-1)
    assert (grad_norm[fn_pos] == 0).all() and (grad_norm[~fn_pos] > 0).all()


def test_relabel_changes_exactly_fn_labels(lookup):
    step = make_step()
    out = neg.make_hook("relabel", lookup)(step)
    plain = (step.corrupted_ids != step.input_ids).float()
    fn_pos = neg.to_positions(neg.false_negatives(step.targets, step.samples, lookup), step.masked, False)
    changed = out.disc_labels != plain
    assert torch.equal(changed, fn_pos)
    assert (out.disc_labels[fn_pos] == 0).all()


def test_relabel_mlm_counts_synonym_as_correct(lookup):
    step = make_step()
    fn = neg.false_negatives(step.targets, step.samples, lookup)
    corr = neg.relabel_mlm_correction(step.logits, step.targets, step.samples, fn)
    total = F.cross_entropy(step.logits, step.targets) + corr
    p = step.logits.softmax(-1)
    r = torch.arange(len(fn))
    per = torch.where(fn, -(p[r, step.targets] + p[r, step.samples]).log(), -p[r, step.targets].log())
    assert total.item() == pytest.approx(per.mean().item(), rel=1e-5)
    assert corr.item() < 0  # a synonym now counts as correct: the loss can only drop


def peaked_logits(targets, scale=1e4):
    return F.one_hot(targets, V).float() * scale


def test_sr_zero_when_prediction_is_original():
    step = make_step()
    e = step.embeddings
    logits = peaked_logits(step.targets)
    assert neg.sr_word_loss(logits, step.targets, e).item() == pytest.approx(0.0, abs=1e-6)
    assert neg.sr_sentence_loss(logits, step.input_ids, step.masked, e).item() == pytest.approx(0.0, abs=1e-6)
    assert neg.sr_smooth_loss(logits, step.targets, e, eps=0.0).item() == pytest.approx(0.0, abs=1e-6)
    # and positive when the prediction is spread out
    assert neg.sr_word_loss(step.logits, step.targets, e).item() > 1e-3
    assert neg.sr_sentence_loss(step.logits, step.input_ids, step.masked, e).item() > 1e-4
    assert neg.sr_smooth_loss(step.logits, step.targets, e, eps=0.3).item() != 0.0


def test_sr_smooth_is_ce_against_smoothed_targets():
    step = make_step()
    q = neg.smoothed_targets(step.targets, step.embeddings, eps=0.2, tau=0.5)
    assert torch.allclose(q.sum(-1), torch.ones(len(q)))
    total = F.cross_entropy(step.logits, step.targets) + neg.sr_smooth_loss(
        step.logits, step.targets, step.embeddings, eps=0.2, tau=0.5)
    assert total.item() == pytest.approx(F.cross_entropy(step.logits, q).item(), rel=1e-5)


def test_sr_hook_grad_flows_to_logits_not_embeddings(lookup):
    step = make_step()
    out = neg.make_hook("sr-word+sr-sentence", lookup, lam=0.5)(step)
    out.extra_loss.backward()
    assert step.feats.grad.abs().sum() > 0
    assert step.embeddings.grad is None  # embed_grad=False detaches E
    assert {"sr_word_loss", "sr_sentence_loss", "fn_rate_replaced"} <= set(out.stats)
    expected = 0.5 * (out.stats["sr_word_loss"] + out.stats["sr_sentence_loss"])
    assert out.extra_loss.item() == pytest.approx(expected, rel=1e-5)
    step2 = make_step()
    neg.make_hook("sr-word", lookup, embed_grad=True)(step2).extra_loss.backward()
    assert step2.embeddings.grad.abs().sum() > 0


def test_none_hook_only_reports(lookup):
    out = neg.make_hook("none", lookup)(make_step())
    assert out.mlm_weights is None and out.disc_labels is None and out.extra_loss is None
    assert out.stats["n_fn"] == 4


@pytest.mark.parametrize("kwargs, match", [
    ({"method": "shield", "lam": -0.1}, "lam"),
    ({"method": "magic"}, r"method must be one of \['none', 'shield', 'relabel', 'sr-word'"),
    ({"method": "shield+relabel"}, "at most one"),
    ({"method": "none+sr-word"}, "cannot be combined"),
    ({"method": "shield", "apply_to": "gen"}, "apply_to"),
])
def test_bad_arguments(lookup, kwargs, match):
    with pytest.raises(ValueError, match=match):
        neg.make_hook(table=lookup, **kwargs)


def test_hc_needs_table():
    with pytest.raises(ValueError, match="table"):
        neg.make_hook("relabel")


def test_neighbour_lookup_toy_embedding():
    words = ["good", "great", "car", "auto", "bad", "##ness", "[CLS]"]
    vecs = np.array([[1, 0, 0], [0.95, 0.1, 0], [0, 1, 0], [0.05, 0.97, 0], [0, 0, 1],
                     [1, 0, 0], [1, 0.01, 0]], dtype=np.float32)
    lk = neighbour_lookup((words, vecs), VOCAB, top_k=1, threshold=0.9)
    pairs = {tuple(p) for p in lk.pairs().tolist()}
    assert pairs == {(ID["good"], ID["great"]), (ID["great"], ID["good"]),
                     (ID["car"], ID["auto"]), (ID["auto"], ID["car"])}
    # "bad" has a nearest neighbour, but below the threshold; with no threshold it gets one
    lk2 = neighbour_lookup((words, vecs), VOCAB, top_k=1, threshold=None, symmetric=False)
    assert len(lk2.partners(ID["bad"])) == 1
    assert lk2.contains(ids("good"), ids("##ness")).item() is False
    with pytest.raises(ValueError, match="top_k"):
        neighbour_lookup((words, vecs), VOCAB, top_k=None, threshold=None)


def test_neighbour_lookup_threshold_only_matches_bruteforce():
    rng = np.random.default_rng(0)
    words = VOCAB[5:]
    vecs = rng.normal(size=(len(words), 3)).astype(np.float32)
    lk = neighbour_lookup((words, vecs), VOCAB, top_k=None, threshold=0.5, block=3)
    n = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    sim = n @ n.T
    want = {(ID[words[i]], ID[words[j]]) for i in range(len(words)) for j in range(len(words))
            if i != j and sim[i, j] >= 0.5 and not words[i].startswith("##")
            and not words[j].startswith("##")}
    assert {tuple(p) for p in lk.pairs().tolist()} == want


def test_disc_accuracy_by_kind():
    labels = torch.tensor([[0, 1, 1, 1, 0]]).float()
    fn = torch.tensor([[False, False, True, True, False]])
    logits = torch.tensor([[-1.0, 2.0, -3.0, 1.0, 0.5]])  # pred: orig, repl, orig, repl, repl
    acc = neg.disc_accuracy_by_kind(logits, labels, fn, attention_mask=torch.tensor([[1, 1, 1, 1, 0]]))
    assert acc["acc_original"] == 1.0 and acc["n_original"] == 1
    assert acc["acc_replaced"] == 1.0
    assert acc["acc_false_negative"] == 0.5 and acc["n_false_negative"] == 2


# --------------------------------------------------------------------------- the registry


def _combinations() -> list[str]:
    """Every registered method alone, and every HC method with every SR method."""
    hc = [name for name, m in neg.METHODS.items() if m.kind == neg.HC]
    sr = [name for name, m in neg.METHODS.items() if m.kind == neg.SR]
    return [*neg.METHODS, *(f"{h}+{s}" for h in hc for s in sr)]


def test_every_registered_method_is_read_where_methods_are_named():
    """parse_method, the kinds, an arm and its cost claim all follow the registry."""
    checked = []
    for name, method in neg.METHODS.items():
        assert method.kind in (neg.HC, neg.SR) and callable(method.apply), name
        assert neg.parse_method(name) == ((name, ()) if method.kind == neg.HC else (None, (name,)))
        assert neg.method_kinds(name) == {method.kind}
        assert ArmConfig("electra", name).method == name
        claim = claims.HC_CLAIM if method.kind == neg.HC else claims.SR_CLAIM
        assert claims.target_claim(f"electra/{name}@wordnet") == claim, name
        checked.append(name)
    assert checked == list(neg.METHODS) and len(checked) >= 5
    assert neg.parse_method("none") == (None, ()) and neg.method_kinds("plain") == set()


def test_the_hook_applies_each_method_as_its_kind_says(lookup):
    """HC changes labels or weights (or adds a loss term) at false negatives; SR adds lam times
    the loss it logs."""
    ran = []
    for name, method in neg.METHODS.items():
        for apply_to in ("mlm", "disc"):
            out = neg.make_hook(name, lookup, lam=0.5, apply_to=apply_to)(make_step())
            if method.kind == neg.HC:
                changed = [f for f in ("mlm_weights", "disc_labels", "disc_weights", "extra_loss")
                           if getattr(out, f) is not None]
                assert changed, (name, apply_to)
            else:
                logged = out.stats[name.replace("-", "_") + "_loss"]
                assert out.extra_loss.item() == pytest.approx(0.5 * logged, rel=1e-5), name
            ran.append((name, apply_to))
    assert len(ran) == 2 * len(neg.METHODS)


@pytest.mark.parametrize("apply_to", ["disc", "mlm", "both"])
def test_statistics_on_the_device_change_nothing_else(lookup, apply_to):
    """The hook with device_stats (as training runs it) gives exactly the output of the hook
    without, its statistics as 0-d tensors of the same values."""
    ran = []
    for method in _combinations():
        step = make_step()
        a = neg.make_hook(method, lookup, apply_to=apply_to)(step)
        b = neg.make_hook(method, lookup, apply_to=apply_to, device_stats=True)(step)
        for name in ("mlm_weights", "disc_labels", "disc_weights", "extra_loss"):
            x, y = getattr(a, name), getattr(b, name)
            assert (x is None and y is None) or torch.equal(x, y), (method, name)
        assert a.stats and a.stats.keys() == b.stats.keys(), method
        for key, value in a.stats.items():
            assert isinstance(value, float) and b.stats[key].dim() == 0, (method, key)
            assert float(b.stats[key]) == pytest.approx(value), (method, key)
        ran.append(method)
    assert ran == _combinations() and set(neg.METHODS) < set(ran)
