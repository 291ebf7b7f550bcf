"""B2: the corrections' step time against plain training, the arms taking turns step by step
in one training loop, and the overhead table with its intervals over repetitions."""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from mlmlib.models import ModelSize
from mlmlib.papers.true_negatives.arm_config import ArmConfig
from mlmlib.papers.true_negatives.arm_pretraining import build_model, for_objective
from mlmlib.papers.true_negatives.lookup_tables import Tables
from mlmlib.papers.true_negatives.monitor import NegativesMonitor
from mlmlib.pretrain import MaskedStep, PretrainConfig, pretrain


class RoundRobinTimer:
    """Step hook for timing: hands each training step to one arm's hook and times the step.

    The schedule lists one arm name per step. A step's time runs from this hook's call in that
    step to its call in the next one: the rest of the step (losses, backward pass, optimizer)
    and the next batch with its generator forward pass, which every arm pays alike. None in
    `hooks` is a step whose hook does nothing (the training loop then runs as without a hook;
    for MLM it still takes the argmax over the vocabulary at masked positions, a hook's input).
    """

    def __init__(self, hooks: dict[str, Callable[[Any], Any] | None], schedule: Sequence[str]) -> None:
        unknown = sorted(set(schedule) - set(hooks))
        if unknown:
            raise ValueError(f"schedule names arms without a hook entry: {unknown}; arms: {list(hooks)}")
        self.hooks = hooks
        self.schedule = list(schedule)
        self.times: list[tuple[int, str, float]] = []  # (step, arm, seconds), in step order
        self._last: tuple[int, str, float] | None = None

    def __call__(self, step: MaskedStep):
        """Close the previous step's time, then run this step's arm."""
        if step.step > len(self.schedule):
            raise ValueError(f"step {step.step} is past the schedule's {len(self.schedule)} steps")
        if step.input_ids.is_cuda:  # the loop does not wait for the GPU: the clock must
            torch.cuda.synchronize(step.input_ids.device)
        now = time.perf_counter()
        if self._last is not None:
            last_step, name, start = self._last
            self.times.append((last_step, name, now - start))
        name = self.schedule[step.step - 1]
        self._last = (step.step, name, now)
        hook = self.hooks[name]
        return None if hook is None else hook(step)


def timing_schedule(arms: Sequence[str], reps: int, steps: int, warmup: int, seed: int) -> list[tuple[int, str]]:
    """(repetition, arm) per training step: `warmup` untimed steps (repetition -1, the first arm),
    then per repetition every arm for `steps` consecutive steps, in an order shuffled per
    repetition (seeded), and one closing step (repetition -1) that ends the last timed step."""
    if reps < 1 or steps < 1 or warmup < 0:
        raise ValueError(f"reps and steps must be >= 1 and warmup >= 0, got {reps}, {steps}, {warmup}")
    rng = np.random.default_rng(seed)
    plan = [(-1, arms[0])] * warmup
    for rep in range(reps):
        plan += [(rep, arms[i]) for i in rng.permutation(len(arms)) for _ in range(steps)]
    return plan + [(-1, arms[0])]


def measure_step_overhead(
    arms: dict[str, ArmConfig | None], tables: Tables, vocab: Sequence[str], data: dict,
    size: ModelSize, config: PretrainConfig, *, mask_id: int, num_special: int,
    generator_fraction: float = 0.25, reps: int = 3, warmup: int = 2,
) -> list[dict]:
    """Median step time of each arm (None: a step without correction), per repetition.

    The arms share one model and one training loop, and take turns step by step: each
    repetition runs every arm for `config.steps` consecutive steps, in a shuffled order, so
    the slow drifts of a shared machine (measured: 10-20% between runs a minute apart) hit
    every arm of a repetition alike, and the paired overhead per repetition cancels them.
    Why not one run per arm: that paired runs seconds apart, and their medians moved by more
    than the 5% the cost claim is about. The shared weights see every arm's corrections;
    a step's cost does not depend on them.
    """
    if reps < 1 or config.steps < 1 or warmup < 0:
        raise ValueError(f"reps and config.steps must be >= 1 and warmup >= 0, got {reps}, "
                         f"{config.steps}, {warmup}")
    objectives = {arm.objective for arm in arms.values() if arm is not None}
    if len(objectives) > 1:
        raise ValueError(f"arms of one objective are timed together, got {sorted(objectives)}")
    objective = objectives.pop() if objectives else config.objective
    names = list(arms)
    plan = timing_schedule(names, reps, config.steps, warmup, config.seed)
    model = build_model(objective, size, generator_fraction, config.seed)
    monitors = {name: NegativesMonitor(arm, tables.correction, vocab, top_pairs=0).attach(model)
                for name, arm in arms.items() if arm is not None}
    timer = RoundRobinTimer({name: monitors.get(name) for name in names}, [name for _, name in plan])
    cfg = for_objective(config, objective, steps=len(plan), log_every=len(plan))
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            pretrain(model, data, cfg, mask_id=mask_id, num_special=num_special, hook=timer,
                     progress=False)
    finally:
        for monitor in monitors.values():
            monitor.detach()
    per_rep: dict[tuple[int, str], list[float]] = {}
    for step, name, seconds in timer.times:
        rep = plan[step - 1][0]
        if rep >= 0:
            per_rep.setdefault((rep, name), []).append(seconds)
    return [{"arm": name, "rep": rep, "step_ms": 1000.0 * float(np.median(walls))}
            for (rep, name), walls in sorted(per_rep.items())]


def overhead_table(rows: list[dict], reference: str) -> list[dict]:
    """Per arm: median step time and the overhead ratio vs `reference`, paired by repetition."""
    import pandas as pd

    from mlmlib.stats import mean_ci

    frame = pd.DataFrame(rows).pivot(index="rep", columns="arm", values="step_ms")
    if reference not in frame:
        raise ValueError(f"reference arm {reference!r} was not measured; arms: {list(frame)}")
    out = []
    for arm in frame:
        ratio = frame[arm] / frame[reference] - 1.0
        ci = mean_ci(ratio.to_numpy())
        out.append({"arm": arm, "step_ms": float(frame[arm].median()),
                    "overhead": float(frame[arm].median() / frame[reference].median() - 1.0),
                    "overhead_mean": ci.mean, "overhead_low": ci.low, "overhead_high": ci.high,
                    "reps": ci.n})
    return out


def overhead_by_objective(arms: dict[str, ArmConfig | None], tables: Tables, vocab: Sequence[str],
                          data: dict, size: ModelSize, config: PretrainConfig, *, model: str,
                          **timing) -> list[dict]:
    """B2's table: each objective's arms timed together (`measure_step_overhead`, `timing` its
    keywords) against the objective's plain step, or its first arm where none is plain."""
    rows = []
    for objective in ("electra", "mlm"):
        group = {a: c for a, c in arms.items() if a.split("/")[0] == objective}
        if not group:
            continue
        timed = measure_step_overhead(group, tables, vocab, data, size,
                                      for_objective(config, objective), **timing)
        ref = f"{objective}/plain" if f"{objective}/plain" in group else next(iter(group))
        rows += [{"objective": objective, "reference": ref, "model": model, **r}
                 for r in overhead_table(timed, ref)]
    return rows


# B1's arms in the paper plan, by method (shield@word2vec-google-news-300 costs as shield does)
CORRECTION_ARMS = ("electra/plain", "electra/none", "electra/shield", "electra/relabel",
                   "electra/sr-word", "electra/sr-sentence", "mlm/plain", "mlm/none", "mlm/shield")
# Pairs of the random lookup table: the cpu profile's GloVe table holds about 19,000; a lookup
# is a sorted search, so its cost grows with the log of this
RANDOM_TABLE_PAIRS = 20000


def overhead_on_random_tokens(arms: Sequence[str], size: ModelSize, config: PretrainConfig,
                              seq: int, *, reps: int, warmup: int = 2,
                              generator_fraction: float = 0.25) -> list[dict]:
    """`overhead_by_objective` for a GPU check before any data is there: random rows of `seq`
    tokens and a random lookup table of RANDOM_TABLE_PAIRS pairs, every token a whole word.
    A step's cost does not depend on which tokens are synonyms, only on the table's size."""
    from mlmlib.bench import MASK, NUM_SPECIAL, make_data
    from mlmlib.papers.true_negatives.arm_config import parse_arm
    from mlmlib.papers.true_negatives.negatives import PairLookup

    vocab = size.vocab_size
    a, b = np.random.default_rng(0).integers(NUM_SPECIAL, vocab, (2, RANDOM_TABLE_PAIRS))
    tables = Tables(PairLookup.from_pairs(a, b, vocab, source="random"), heldout=None,
                    source="random")
    parsed = {arm: None if arm.endswith("/plain") else parse_arm(arm) for arm in arms}
    data = make_data(vocab, seq, 4 * config.batch_size)
    return overhead_by_objective(parsed, tables, [f"w{i}" for i in range(vocab)], data, size,
                                 config, model=f"hidden {size.hidden}", mask_id=MASK,
                                 num_special=NUM_SPECIAL, generator_fraction=generator_fraction,
                                 reps=reps, warmup=warmup)
