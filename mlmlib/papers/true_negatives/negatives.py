"""False negatives in MLM / ELECTRA pretraining (paper B): detection, hard correction, soft regularization.

A *false negative* is a masked position whose generator sample (ELECTRA) or prediction (MLM)
differs from the original token but is a synonym of it: training still calls it wrong.

Pieces:
- `PairLookup`: a sorted int64 set of (id_a, id_b) token pairs, looked up with
  `torch.searchsorted` (O(N log P), no Python loop at step time). Built from a synonym table
  or from nearest neighbours in word-vector space (`lookup_tables`).
- `false_negatives`, `false_negative_stats`: the indicator and its rates.
- Hard correction (HC): "shield" (weight 0 at false negatives) and "relabel" (count them as
  correct). Soft regularization (SR): "sr-word", "sr-sentence", "sr-smooth".
- `METHODS`: the registry, method name -> its kind (HC or SR) and the function applying it.
- `make_hook(...)`: the per-step hook for the training loop, returning a `NegativesOutput`.

The paper body was not readable offline; every formula marked "reconstructed" is our design
and switchable by a parameter (see the paper notes).

Convention: per-masked-position tensors (N,) are in the order of boolean indexing `x[masked]`
(row-major over (B, L); the training loop gathers them at the step's `positions` without a host
sync, masking.at_masked); `to_positions` scatters them back to (B, L).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from mlmlib.papers.true_negatives.config import Correction

APPLY_TO = ("both", "disc", "mlm")


# --------------------------------------------------------------------------- lookup tables


@dataclass
class PairLookup:
    """A set of (id_a, id_b) token pairs stored as sorted keys a * vocab_size + b."""

    keys: torch.Tensor  # sorted, unique, int64
    vocab_size: int
    source: str = "table"

    def __len__(self) -> int:
        return int(self.keys.numel())

    def to(self, device: torch.device | str) -> PairLookup:
        """Return a copy whose keys live on `device`."""
        return PairLookup(self.keys.to(device), self.vocab_size, self.source)

    def contains(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Elementwise: is (a_i, b_i) a pair? Ids outside [0, vocab_size) are never pairs."""
        a, b = a.long(), b.long()
        if self.keys.numel() == 0:
            return torch.zeros(a.shape, dtype=torch.bool, device=a.device)
        keys = self.keys if self.keys.device == a.device else self.keys.to(a.device)
        v = self.vocab_size
        valid = (a >= 0) & (a < v) & (b >= 0) & (b < v)
        query = torch.where(valid, a * v + b, torch.zeros_like(a))
        pos = torch.searchsorted(keys, query).clamp_(max=keys.numel() - 1)
        return valid & (keys[pos] == query)

    def pairs(self) -> torch.Tensor:
        """All pairs as an (P, 2) int64 tensor."""
        return torch.stack([self.keys // self.vocab_size, self.keys % self.vocab_size], dim=1)

    def sample_partners(self, a: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """One partner of each a_i drawn uniformly (seeded by `generator`); -1 where a_i has none.

        Vectorised: the keys of a_i's pairs are one sorted run [a_i * V, (a_i + 1) * V)."""
        a = a.long()
        out = torch.full_like(a, -1)
        if self.keys.numel() == 0 or a.numel() == 0:
            return out
        keys = self.keys if self.keys.device == a.device else self.keys.to(a.device)
        valid = (a >= 0) & (a < self.vocab_size)
        start = torch.where(valid, a, torch.zeros_like(a)) * self.vocab_size
        lo = torch.searchsorted(keys, start)
        count = torch.searchsorted(keys, start + self.vocab_size) - lo
        u = torch.rand(a.shape, generator=generator, device=a.device)
        pick = (lo + (u * count).long().clamp_(max=(count - 1).clamp_(min=0))).clamp_(max=keys.numel() - 1)
        has = valid & (count > 0)
        return torch.where(has, keys[pick] % self.vocab_size, out)

    def partners(self, token_id: int) -> list[int]:
        """Ids paired with `token_id` (for inspection, not for the training step)."""
        bounds = torch.tensor([token_id, token_id + 1], device=self.keys.device) * self.vocab_size
        lo, hi = torch.searchsorted(self.keys, bounds).tolist()
        return (self.keys[lo:hi] % self.vocab_size).tolist()

    @classmethod
    def from_pairs(
        cls, a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray, vocab_size: int,
        *, symmetric: bool = True, source: str = "table",
    ) -> PairLookup:
        """Build from two equal-length id arrays; `symmetric` adds (b, a) for every (a, b)."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        if a.shape != b.shape:
            raise ValueError(f"a and b must have the same length, got {a.shape} and {b.shape}")
        if symmetric:
            a, b = np.concatenate([a, b]), np.concatenate([b, a])
        keep = a != b  # a token is never its own false negative
        keys = np.unique(a[keep] * vocab_size + b[keep])
        return cls(torch.from_numpy(keys), int(vocab_size), source)


# --------------------------------------------------------------------------- detection


def false_negatives(targets: torch.Tensor, samples: torch.Tensor, table: PairLookup) -> torch.Tensor:
    """fn_i = samples_i != targets_i and (targets_i, samples_i) is a pair of `table`; bool (N,)."""
    return (samples != targets) & table.contains(targets, samples)


def false_negative_stats(
    targets: torch.Tensor, samples: torch.Tensor, table: PairLookup | None = None,
    fn: torch.Tensor | None = None,
) -> dict[str, float]:
    """Counts and rates: n_masked, n_replaced, n_fn, fn_rate_replaced, fn_rate_masked.

    Pass `fn` if already computed (then `table` is not needed). Rates are 0 when their
    denominator is 0. Returns Python floats (one device sync per call).
    """
    if fn is None:
        if table is None:
            raise ValueError("false_negative_stats needs table (a PairLookup) or fn (a bool tensor)")
        fn = false_negatives(targets, samples, table)
    n_masked = int(targets.numel())
    n_replaced = int((samples != targets).sum())
    n_fn = int(fn.sum())
    return {
        "n_masked": float(n_masked),
        "n_replaced": float(n_replaced),
        "n_fn": float(n_fn),
        "fn_rate_replaced": n_fn / n_replaced if n_replaced else 0.0,
        "fn_rate_masked": n_fn / n_masked if n_masked else 0.0,
    }


def to_positions(values: torch.Tensor, masked: torch.Tensor, fill: float | bool = 0) -> torch.Tensor:
    """Scatter per-masked-position values (N,) back to (B, L), `fill` elsewhere: `out[masked] =
    values`, written as a masked scatter, which needs no index list (no host read per step)."""
    out = torch.full(masked.shape, fill, dtype=values.dtype, device=values.device)
    return out.masked_scatter(masked.to(out.device), values)


# --------------------------------------------------------------------------- hard correction


def shield_mlm_weights(fn: torch.Tensor) -> torch.Tensor:
    """MLM / generator weights (N,): 0 at false negatives, 1 elsewhere (drop them from the CE)."""
    return (~fn).float()


def shield_disc_weights(fn: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """Discriminator weights (B, L): 0 at false-negative positions, 1 elsewhere."""
    return (~to_positions(fn, masked, False)).float()


def relabel_disc_labels(
    input_ids: torch.Tensor, corrupted_ids: torch.Tensor, masked: torch.Tensor, fn: torch.Tensor
) -> torch.Tensor:
    """ELECTRA labels (B, L) as floats, 1 = replaced, with false negatives labelled original (0)."""
    return ((corrupted_ids != input_ids) & ~to_positions(fn, masked, False)).float()


def relabel_mlm_correction(
    logits: torch.Tensor, targets: torch.Tensor, samples: torch.Tensor, fn: torch.Tensor
) -> torch.Tensor:
    """Loss term that turns the MLM CE at false negatives into -log(p_y + p_s): both count as correct.

    Added to the unweighted mean CE over the N masked positions it gives exactly
    (1/N) [sum_{not fn} -log p_y + sum_{fn} -log(p_y + p_s)]. Reconstructed: "relabel" for MLM.
    """
    # two logits per row, gathered at every position and kept at the false negatives: no
    # branch on fn and no index list, so nothing is read back from the device
    ly = logits.gather(1, targets.unsqueeze(1)).squeeze(1).float()
    # (a sample of -1, a piece that whole-word detection leaves out, is never a false negative)
    ls = logits.gather(1, samples.clamp(min=0).unsqueeze(1)).squeeze(1).float()
    # (-log(p_y + p_s)) - (-log p_y): the change from the plain CE at each fn position;
    # the log-partition cancels, so no softmax over the vocabulary is needed
    change = torch.where(fn.bool(), ly - torch.logaddexp(ly, ls), torch.zeros_like(ly))
    return change.sum() / max(logits.shape[0], 1)  # 0 with no masked position (not 0 / 0)


# --------------------------------------------------------------------------- soft regularization


def expected_embeddings(logits: torch.Tensor, embeddings: torch.Tensor) -> torch.Tensor:
    """e_i = softmax(logits_i) @ E: the prediction's expected input embedding, (N, E)."""
    return logits.float().softmax(dim=-1) @ embeddings.float()


def sr_word_loss(
    logits: torch.Tensor, targets: torch.Tensor, embeddings: torch.Tensor, *,
    embed_grad: bool = False, expected: torch.Tensor | None = None,
) -> torch.Tensor:
    """Word-level SR: mean_i (1 - cos(e_i, E[y_i])). `embed_grad=False` detaches E (reconstructed).

    `expected`: precomputed `expected_embeddings(logits, E)` (the costly part), if at hand.
    """
    if logits.shape[0] == 0:
        return logits.sum() * 0.0
    emb = embeddings if embed_grad else embeddings.detach()
    e = expected_embeddings(logits, emb) if expected is None else expected
    return (1.0 - F.cosine_similarity(e, emb[targets].float(), dim=-1)).mean()


def smoothed_targets(
    targets: torch.Tensor, embeddings: torch.Tensor, *, eps: float = Correction.eps,
    tau: float = Correction.tau,
) -> torch.Tensor:
    """q = (1 - eps) onehot(y) + eps softmax(cos(E, E_y) / tau), (N, V); no gradient."""
    with torch.no_grad():
        e = embeddings.float()
        # rsqrt of the squared norm: several times faster than F.normalize on a CPU
        en = e * e.pow(2).sum(dim=-1, keepdim=True).clamp_min(1e-24).rsqrt()
        sim = en[targets] @ en.T
        q = eps * (sim / tau).softmax(dim=-1)
        q[torch.arange(len(targets), device=q.device), targets] += 1.0 - eps
    return q


def sr_smooth_loss(
    logits: torch.Tensor, targets: torch.Tensor, embeddings: torch.Tensor,
    *, eps: float = Correction.eps, tau: float = Correction.tau,
) -> torch.Tensor:
    """Smoothed-target SR: mean CE(logits, q) - mean CE(logits, y).

    Added to the plain MLM CE (weight 1) it replaces the one-hot target by q exactly.
    Reconstructed: the paper's "smoothing cross-entropy by embedding-layer similarities".
    """
    if logits.shape[0] == 0:
        return logits.sum() * 0.0
    if eps == 0.0:
        return logits.sum() * 0.0
    # CE(q) - CE(y) = eps * (l_y - sum_v w_v l_v) with w = softmax(cos(E, E_y) / tau): the
    # log-partition cancels, so we skip the log-softmax over the vocabulary
    w = smoothed_targets(targets, embeddings, eps=1.0, tau=tau)
    lf = logits.float()
    ly = lf.gather(1, targets.unsqueeze(1)).squeeze(1)
    return eps * (ly - (w * lf).sum(dim=-1)).mean()


def sr_sentence_loss(
    logits: torch.Tensor, input_ids: torch.Tensor, masked: torch.Tensor, embeddings: torch.Tensor,
    *, attention_mask: torch.Tensor | None = None, embed_grad: bool = False,
    expected: torch.Tensor | None = None,
) -> torch.Tensor:
    """Sentence-level SR: mean over sentences with a mask of 1 - cos(mean E[x], mean E[x with e_i filled in])."""
    emb = embeddings if embed_grad else embeddings.detach()
    keep = torch.ones_like(masked) if attention_mask is None else attention_mask.bool()
    has_mask = (masked & keep).any(dim=1)
    orig = emb[input_ids].float() * keep.unsqueeze(-1)
    e = expected_embeddings(logits, emb) if expected is None else expected
    # under bf16 autocast the expected embeddings come out of their matmul in bf16; scattered
    # into the masked positions without an index list (no read back from the device)
    pred = orig.masked_scatter(masked.unsqueeze(-1).expand_as(orig), e.to(orig.dtype))
    pred = pred * keep.unsqueeze(-1)  # a masked position outside the attention counts as none
    # the sum is the mean up to a positive factor per sentence; the cosine does not see it
    cos = F.cosine_similarity(orig.sum(dim=1), pred.sum(dim=1), dim=-1)
    # the mean over sentences with a mask (0 with none: the graph and device kept)
    return ((1.0 - cos) * has_mask).sum() / has_mask.sum().clamp_min(1)


# --------------------------------------------------------------------------- the methods


@dataclass
class NegativesOutput:
    """What the hook hands the training loop; field names mirror pretrain's HookOutput."""

    mlm_weights: torch.Tensor | None = None  # (N,) float, 1 = keep
    disc_labels: torch.Tensor | None = None  # (B, L) float, 1 = replaced
    disc_weights: torch.Tensor | None = None  # (B, L) float, 0 = shielded
    extra_loss: torch.Tensor | None = None  # scalar, added to the loss with weight 1
    stats: dict[str, float | torch.Tensor] = field(default_factory=dict)


@dataclass
class Correcting:
    """One training step as a method sees it: the step (see `NegativesHook`), its false negatives
    `fn` (N,), the hook's settings, the output a method writes its labels and weights into, and
    the expected embeddings where a method of the arm reads them (computed once per step)."""

    hook: NegativesHook
    step: Any
    fn: torch.Tensor | None
    out: NegativesOutput
    expected: torch.Tensor | None = None

    @property
    def on_mlm(self) -> bool:
        """HC acts on the MLM / generator loss."""
        return self.hook.apply_to in ("both", "mlm")

    @property
    def on_disc(self) -> bool:
        """HC acts on the discriminator's loss."""
        return self.hook.apply_to in ("both", "disc")


def apply_shield(c: Correcting) -> None:
    """HC "shield": weight 0 at false negatives in the losses it acts on."""
    if c.on_mlm:
        c.out.mlm_weights = shield_mlm_weights(c.fn)
    if c.on_disc:
        c.out.disc_weights = shield_disc_weights(c.fn, c.step.masked)


def apply_relabel(c: Correcting) -> torch.Tensor | None:
    """HC "relabel": false negatives count as correct (the MLM's extra loss term, unweighted, and
    the discriminator's label "original")."""
    step, term = c.step, None
    if c.on_mlm:
        term = relabel_mlm_correction(step.logits, step.targets, step.samples, c.fn)
    if c.on_disc:
        c.out.disc_labels = relabel_disc_labels(step.input_ids, step.corrupted_ids, step.masked, c.fn)
    return term


def apply_sr_word(c: Correcting) -> torch.Tensor:
    """SR "sr-word": `sr_word_loss`."""
    return sr_word_loss(c.step.logits, c.step.targets, c.step.embeddings,
                        embed_grad=c.hook.embed_grad, expected=c.expected)


def apply_sr_sentence(c: Correcting) -> torch.Tensor:
    """SR "sr-sentence": `sr_sentence_loss`."""
    step = c.step
    return sr_sentence_loss(step.logits, step.input_ids, step.masked, step.embeddings,
                            attention_mask=getattr(step, "attention_mask", None),
                            embed_grad=c.hook.embed_grad, expected=c.expected)


def apply_sr_smooth(c: Correcting) -> torch.Tensor:
    """SR "sr-smooth": `sr_smooth_loss` with the hook's eps and tau."""
    return sr_smooth_loss(c.step.logits, c.step.targets, c.step.embeddings, eps=c.hook.eps,
                          tau=c.hook.tau)


HC, SR = "hc", "sr"  # a method's kind: the paper's hard correction or soft regularization


@dataclass(frozen=True)
class Method:
    """A correction method: its kind and the function applying it to a step (`Correcting`).

    HC changes the labels or weights at false negatives (at most one HC method per arm) and may
    return an extra loss term, added as it is; SR returns a loss, added with weight lam and
    logged as `<name>_loss`; `expected`: the method reads the step's expected embeddings.
    """

    kind: str
    apply: Callable[[Correcting], torch.Tensor | None]
    expected: bool = False


# The registry: a new method is its function above and one line here. parse_method, the hook,
# ArmConfig, the claims (its kind: which cost claim) and the tests read it.
METHODS: dict[str, Method] = {
    "shield": Method(HC, apply_shield),
    "relabel": Method(HC, apply_relabel),
    "sr-word": Method(SR, apply_sr_word, expected=True),
    "sr-sentence": Method(SR, apply_sr_sentence, expected=True),
    "sr-smooth": Method(SR, apply_sr_smooth),
}
NONE = "none"  # an arm without correction: its hook only detects and counts false negatives


def method_kinds(method: str) -> set[str]:
    """The kinds of the registered methods in `method` ('shield+sr-word'); a name outside the
    registry ('none', B2's 'plain') has none."""
    return {METHODS[p].kind for p in str(method).split("+") if p in METHODS}


def parse_method(method: str) -> tuple[str | None, tuple[str, ...]]:
    """Split 'shield+sr-word' into (HC method or None, SR methods), as METHODS declares them."""
    parts = [p.strip() for p in str(method).split("+")]
    hc_names = [name for name, m in METHODS.items() if m.kind == HC]
    if any(p not in METHODS and p != NONE for p in parts):
        raise ValueError(f"method must be one of {[NONE, *METHODS]} or a '+'-joined "
                         f"combination (at most one of {hc_names}), got {method!r}")
    if NONE in parts:
        if len(parts) > 1:
            raise ValueError(f"method {NONE!r} cannot be combined, got {method!r}")
        return None, ()
    hc = [p for p in parts if METHODS[p].kind == HC]
    if len(hc) > 1:
        raise ValueError(f"method may hold at most one of {hc_names}, got {method!r}")
    sr = tuple(dict.fromkeys(p for p in parts if METHODS[p].kind == SR))
    return (hc[0] if hc else None), sr


# --------------------------------------------------------------------------- the hook


def device_fn_stats(targets: torch.Tensor, samples: torch.Tensor, fn: torch.Tensor) -> dict:
    """`false_negative_stats` as 0-d float tensors on the device (no host sync)."""
    n_masked = torch.tensor(float(targets.numel()), device=targets.device)
    n_replaced = (samples != targets).sum().float()
    n_fn = fn.sum().float()
    return {"n_masked": n_masked, "n_replaced": n_replaced, "n_fn": n_fn,
            "fn_rate_replaced": n_fn / n_replaced.clamp_min(1),  # 0 where nothing was replaced
            "fn_rate_masked": n_fn / n_masked.clamp_min(1)}


@dataclass
class NegativesHook:
    """Per-step hook: detect false negatives, apply the method's HC and SR (METHODS), return a
    `NegativesOutput`.

    The step is read by attribute: input_ids (B, L), masked (B, L) bool, targets (N,),
    logits (N, V), samples (N,), embeddings (V, E), corrupted_ids (B, L), and optionally
    attention_mask (B, L). `device_stats`: the statistics stay 0-d tensors on the step's device,
    which the training loop sums over a log window and reads once there (Python floats are a
    host sync per statistic per step, which stalls a GPU every step).
    """

    method: str = NONE
    table: PairLookup | None = None
    lam: float = Correction.lam
    eps: float = Correction.eps
    tau: float = Correction.tau
    apply_to: str = "both"
    embed_grad: bool = False
    device_stats: bool = False

    def __post_init__(self) -> None:
        self.hc, self.sr = parse_method(self.method)
        if not (isinstance(self.lam, (int, float)) and self.lam >= 0):
            raise ValueError(f"lam must be a number >= 0, got {self.lam!r}")
        if not 0.0 <= self.eps <= 1.0:
            raise ValueError(f"eps must be in [0, 1], got {self.eps}")
        if not self.tau > 0:
            raise ValueError(f"tau must be > 0, got {self.tau}")
        if self.apply_to not in APPLY_TO:
            raise ValueError(f"apply_to must be one of {APPLY_TO}, got {self.apply_to!r}")
        if self.hc is not None and self.table is None:
            raise ValueError(f"method {self.method!r} needs table (a PairLookup)")

    def __call__(self, step: Any) -> NegativesOutput:
        """Run on one training step: detection, then HC, then SR in the method's order."""
        out = NegativesOutput()
        targets, samples = step.targets, step.samples
        fn = None
        if self.table is not None:
            if self.table.keys.device != targets.device:
                self.table = self.table.to(targets.device)  # once; cached afterwards
            fn = false_negatives(targets, samples, self.table)
            out.stats.update(device_fn_stats(targets, samples, fn) if self.device_stats
                             else false_negative_stats(targets, samples, fn=fn))
        self.last_fn = fn  # for a caller that logs more about them (monitor.NegativesMonitor)
        at = Correcting(self, step, fn, out)
        extra: list[torch.Tensor] = []
        if self.hc is not None and (term := METHODS[self.hc].apply(at)) is not None:
            extra.append(term)
        if any(METHODS[name].expected for name in self.sr):  # shared by those that read it
            emb = step.embeddings if self.embed_grad else step.embeddings.detach()
            at.expected = expected_embeddings(step.logits, emb)
        for name in self.sr:
            loss = METHODS[name].apply(at)
            logged = loss.detach().float() if self.device_stats else float(loss.detach())
            out.stats[name.replace("-", "_") + "_loss"] = logged
            extra.append(self.lam * loss)
        if extra:
            out.extra_loss = torch.stack(extra).sum()
        return out


def make_hook(
    method: str = NONE,
    table: PairLookup | None = None,
    *,
    lam: float = Correction.lam,
    eps: float = Correction.eps,
    tau: float = Correction.tau,
    apply_to: str = "both",
    embed_grad: bool = False,
    device_stats: bool = False,
) -> Callable[[Any], NegativesOutput]:
    """A training-step hook for `method` ('none', a name of METHODS, or e.g. 'shield+sr-word')."""
    return NegativesHook(method, table, lam=lam, eps=eps, tau=tau, apply_to=apply_to,
                         embed_grad=embed_grad, device_stats=device_stats)


# --------------------------------------------------------------------------- evaluation


def disc_accuracy_by_kind(
    disc_logits: torch.Tensor, labels: torch.Tensor, fn_mask: torch.Tensor,
    masked: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
) -> dict[str, float]:
    """Discriminator accuracy on original, truly replaced and false-negative positions.

    `labels` (B, L): 1 = replaced (ELECTRA's labels, before any relabelling). `fn_mask` is
    (B, L), or (N,) together with `masked`. A prediction is "replaced" when the logit > 0.
    acc_false_negative is measured against ELECTRA's label "replaced"; 1 minus it is how often
    the discriminator calls a synonym original. NaN where a kind has no positions.
    """
    if fn_mask.dim() == 1:
        if masked is None:
            raise ValueError("fn_mask of shape (N,) needs masked (B, L)")
        fn_mask = to_positions(fn_mask.bool(), masked, False)
    fn_mask = fn_mask.bool()
    valid = torch.ones_like(fn_mask) if attention_mask is None else attention_mask.bool()
    pred = disc_logits.detach() > 0
    lab = labels > 0.5
    kinds = {
        "original": valid & ~lab & ~fn_mask,
        "replaced": valid & lab & ~fn_mask,
        "false_negative": valid & fn_mask,
    }
    out: dict[str, float] = {}
    for name, where in kinds.items():
        n = int(where.sum())
        correct = (pred == (lab | fn_mask))[where].sum() if n else 0
        out[f"acc_{name}"] = float(correct) / n if n else float("nan")
        out[f"n_{name}"] = float(n)
    return out
