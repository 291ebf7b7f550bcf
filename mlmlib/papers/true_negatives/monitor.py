"""The training-step hook of one arm: whole-word false negatives, HC/SR, and what it logs.

`NegativesMonitor` restricts false negatives to whole-word tokens, hands the output of the
arm's `negatives.NegativesHook` to the training loop, and logs the discriminator's accuracy on
original / replaced / false-negative positions and the share of its training loss taken at
false-negative positions; `Injection` is the CPU-scale stand-in that puts
synonyms into ELECTRA's generator samples. Every statistic stays on the device until a log step
reads it (the hook's `device_stats`): a training step makes no host sync of its own.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from mlmlib.masking import at_masked
from mlmlib.models import ElectraPair
from mlmlib.papers.true_negatives import negatives as neg
from mlmlib.papers.true_negatives.arm_config import ArmConfig
from mlmlib.pretrain import HookOutput, MaskedStep


@dataclass
class Injection:
    """Synonyms put into ELECTRA's generator samples: a CPU-scale stand-in, not the paper's method.

    At a masked whole word whose original has a partner in `table`, the generator's sample is
    replaced, with probability `rate`, by one of those partners drawn uniformly. Why: no
    generator that runs here samples synonyms often enough for the corrections to act (a fresh
    one 0.15% of replaced tokens, MiniLM's fitted head none from WordNet's table; paper_b.md),
    so the stand-in makes the paper's premise, generator samples that include true synonyms,
    hold at a known rate. `table`: WordNet's pairs that the correction may use, never the
    held-out ones that the robustness test swaps in.
    """

    table: neg.PairLookup
    rate: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"synonym_rate must be in [0, 1], got {self.rate!r}")


def disc_counts(disc_logits: torch.Tensor, labels: torch.Tensor, fn_pos: torch.Tensor,
                attention_mask: torch.Tensor | None) -> torch.Tensor:
    """[correct, n] for original, replaced and false-negative positions: (6,) on the device,
    the counts behind negatives.disc_accuracy_by_kind (same kinds, same rule)."""
    fn_pos = fn_pos.bool()
    valid = torch.ones_like(fn_pos) if attention_mask is None else attention_mask.bool()
    pred, lab = disc_logits.detach() > 0, labels > 0.5
    right = pred == (lab | fn_pos)
    counts = []
    for where in (valid & ~lab & ~fn_pos, valid & lab & ~fn_pos, valid & fn_pos):
        counts += [(right & where).sum(), where.sum()]
    return torch.stack(counts).double()


def disc_loss_at_fn(disc_logits: torch.Tensor, trained_labels: torch.Tensor,
                    trained_weights: torch.Tensor | None, fn_pos: torch.Tensor,
                    attention_mask: torch.Tensor | None) -> torch.Tensor:
    """[loss at false negatives, loss everywhere]: (2,) on the device, the discriminator's
    per-token BCE summed with the labels and weights its arm trains on (a correction's relabelled
    or shielded false negatives included), so their ratio is the share of the training loss that
    false-negative positions carry: what a hard correction acts on."""
    valid = torch.ones_like(fn_pos, dtype=torch.bool) if attention_mask is None else attention_mask.bool()
    bce = F.binary_cross_entropy_with_logits(disc_logits.detach().float(), trained_labels.float(),
                                             reduction="none")
    weights = valid.float() if trained_weights is None else valid.float() * trained_weights.float()
    loss = bce * weights
    return torch.stack([(loss * fn_pos.bool()).sum(), loss.sum()]).double()


class NegativesMonitor:
    """Training-step hook of one arm: whole-word false negatives, HC/SR, and accuracy by kind.

    The discriminator is watched with a forward hook: the step hook runs before the
    discriminator, so its accuracy on original / replaced / false-negative positions, and its
    loss at false negatives against its whole loss, are taken from the discriminator's output of
    the same step and summed per log window. With an
    `injection`, synonyms replace some generator samples first (seeded by `seed`); the
    discriminator, the detection and the statistics then see the injected samples.
    """

    def __init__(self, arm: ArmConfig, table: neg.PairLookup, vocab: Sequence[str], *,
                 log_every: int = 10, top_pairs: int = 20, injection: Injection | None = None,
                 seed: int = 0) -> None:
        self.arm = arm
        self.table = table
        self.injection = injection
        self.seed = seed
        self._inject_rng: torch.Generator | None = None
        self._inject_state: torch.Tensor | None = None  # restored state, applied at first use
        self.inner = neg.make_hook(arm.method, table, lam=arm.lam, eps=arm.eps, tau=arm.tau,
                                   apply_to=arm.target, device_stats=True)
        # Vectorised whole-word test: one bool per vocabulary entry.
        self.continuation = torch.tensor([t.startswith("##") for t in vocab], dtype=torch.bool)
        self.log_every = log_every
        self.top_pairs = top_pairs
        # window end step -> [correct, n] x 3 kinds, then [loss at false negatives, loss]: a
        # device tensor until it is read
        self.windows: dict[int, torch.Tensor] = {}
        self.pairs: Counter = Counter()  # (original id, sample id) of false negatives, on log steps
        self._pending: tuple | None = None
        self._handle = None

    def whole_word_positions(self, step: MaskedStep) -> torch.Tensor:
        """(B, L) bool: the token is a whole word (not '##', not followed by a '##' piece)."""
        cont = self.continuation.to(step.input_ids.device)
        here = cont[step.input_ids]
        after = torch.zeros_like(here)
        after[:, :-1] = cont[step.input_ids[:, 1:]] | cont[step.corrupted_ids[:, 1:]]
        return ~here & ~after

    def inject(self, step: MaskedStep) -> tuple[MaskedStep, torch.Tensor]:
        """The step with synonyms injected into its samples, and where they were put, (N,)."""
        if self._inject_rng is None or self._inject_rng.device != step.targets.device:
            self._inject_rng = torch.Generator(device=step.targets.device).manual_seed(self.seed + 7)
            if self._inject_state is not None:
                self._inject_rng.set_state(self._inject_state)
        whole = at_masked(self.whole_word_positions(step), step.masked, step.positions)
        partner = self.injection.table.sample_partners(step.targets, self._inject_rng)
        draw = torch.rand(step.targets.shape, generator=self._inject_rng, device=step.targets.device)
        put = whole & (partner >= 0) & (draw < self.injection.rate)
        samples = torch.where(put, partner, step.samples)
        corrupted = step.input_ids.masked_scatter(step.masked, samples.to(step.input_ids.dtype))
        return dataclasses.replace(step, samples=samples, corrupted_ids=corrupted), put

    def __call__(self, step: MaskedStep) -> HookOutput:
        """Inject synonyms (if set), detect whole-word false negatives, apply the arm's method,
        log its statistics."""
        injected = None
        if self.injection is not None:
            step, put = self.inject(step)
            injected = step.samples
        samples = step.samples
        if self.arm.whole_words:
            ok = at_masked(self.whole_word_positions(step), step.masked, step.positions)
            # -1 is never a pair in a PairLookup and still counts as "replaced" where the sample
            # differs from the original, so the rates keep their denominators
            samples = torch.where(ok | (samples == step.targets), samples, torch.full_like(samples, -1))
            step = dataclasses.replace(step, samples=samples)
        out = self.inner(step)
        fn = self.inner.last_fn  # the inner hook's detection, on the same table and samples
        if step.step % self.log_every == 0 and self.top_pairs:  # the window's one host read
            rows = torch.stack([step.targets, samples, fn.long()], 1).tolist()  # kept on the host
            self.pairs.update((a, b) for a, b, is_fn in rows if is_fn)
        if self._handle is not None:  # only a discriminator reads these
            replaced = step.corrupted_ids != step.input_ids
            trained = replaced if out.disc_labels is None else out.disc_labels
            self._pending = (step.step, replaced, neg.to_positions(fn, step.masked, False),
                             step.attention_mask, trained, out.disc_weights)
        # The training loop accepts only its own HookOutput class: same fields, copied over.
        fields = {f.name: getattr(out, f.name, None) for f in dataclasses.fields(HookOutput)}
        if injected is not None:
            fields["samples"] = injected
            frac = put.float().mean() if put.numel() else torch.zeros((), device=put.device)
            fields["stats"] = {**fields["stats"], "injected_frac": frac}
        return HookOutput(**fields)

    def _on_discriminator(self, module, args, output) -> None:
        if self._pending is None or not module.training:
            return
        step, labels, fn_pos, attention, trained, weights = self._pending
        self._pending = None
        counts = torch.cat([disc_counts(output.logits, labels.float(), fn_pos, attention),
                            disc_loss_at_fn(output.logits, trained, weights, fn_pos, attention)])
        end = -(-step // self.log_every) * self.log_every
        prev = self.windows.get(end)
        self.windows[end] = counts if prev is None else prev.to(counts.device) + counts

    def window_sums(self) -> dict[int, np.ndarray]:
        """The discriminator's counts per window as host arrays (read when asked for: at the end
        of training and at a training checkpoint, never per step)."""
        if not self.windows:
            return {}
        ends = sorted(self.windows)
        sums = torch.stack([self.windows[e].double() for e in ends]).cpu().numpy()  # one read
        return dict(zip(ends, sums))

    def attach(self, model: torch.nn.Module) -> NegativesMonitor:
        """Watch the discriminator of an ElectraPair (MLM models have none)."""
        if isinstance(model, ElectraPair):
            self._handle = model.discriminator.register_forward_hook(self._on_discriminator)
        return self

    def detach(self) -> None:
        """Stop watching the discriminator."""
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def merge(self, history: list[dict]) -> list[dict]:
        """Add disc_acc_{original,replaced,false_negative} (None where a kind had no position) and
        disc_loss_share_false_negative (None where the window's loss is 0)."""
        windows = self.window_sums()
        for row in history:
            # the loop logs at multiples of log_every and at the last step (a partial window)
            sums = windows.get(-(-row["step"] // self.log_every) * self.log_every)
            if sums is None:
                continue
            for i, kind in enumerate(("original", "replaced", "false_negative")):
                correct, n = sums[2 * i], sums[2 * i + 1]
                row[f"disc_acc_{kind}"] = float(correct / n) if n else None
                row[f"disc_n_{kind}"] = float(n)
            if len(sums) > 6:  # a checkpoint saved before the loss share was logged has none
                row["disc_loss_share_false_negative"] = float(sums[6] / sums[7]) if sums[7] else None
        return history

    def identity(self) -> dict:
        """Everything that decides what this hook does: a checkpoint of another arm is not resumed."""
        from mlmlib.checkpoint import tensors_digest

        identity = {"arm": dataclasses.asdict(self.arm), "log_every": self.log_every,
                    "top_pairs": self.top_pairs,
                    "table": f"{self.table.source}:{self.table.vocab_size}:{tensors_digest([self.table.keys])}",
                    "vocab": tensors_digest([self.continuation])}
        if self.injection is not None:  # the key of a run without injection stays as it was
            identity["injection"] = {"rate": self.injection.rate, "seed": self.seed,
                                     "table": tensors_digest([self.injection.table.keys])}
        return identity

    def state_dict(self) -> dict:
        """The statistics gathered so far (JSON-able): saved in each training checkpoint, so a
        resumed or already finished run records the same statistics as an uninterrupted one."""
        state = {"windows": [[end, sums.tolist()] for end, sums in sorted(self.window_sums().items())],
                 "pairs": [[a, b, c] for (a, b), c in self.pairs.items()]}
        if self._inject_rng is not None:  # the injection's draws go on where they stopped
            state["inject_rng"] = self._inject_rng.get_state().tolist()
        return state

    def load_state_dict(self, state: dict) -> None:
        """Restore the statistics of state_dict()."""
        self.windows = {int(end): torch.tensor(sums, dtype=torch.float64) for end, sums in state["windows"]}
        self.pairs = Counter({(int(a), int(b)): int(c) for a, b, c in state["pairs"]})
        if state.get("inject_rng") is not None:
            self._inject_state = torch.tensor(state["inject_rng"], dtype=torch.uint8)
            self._inject_rng = None

    def top_false_negatives(self, vocab: Sequence[str]) -> list[dict]:
        """The most frequent (original, sample) false-negative pairs seen on log steps."""
        return [{"original": vocab[a], "sample": vocab[b], "count": c}
                for (a, b), c in self.pairs.most_common(self.top_pairs)]
