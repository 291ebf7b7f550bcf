"""Paper B where its mechanism acts: ELECTRA and MLM pretrained from scratch on paper A's synthetic
languages, where every synonym pair is known (a controlled analogue, not the paper's setting).

Each synonym set has two surface tokens, `a` in alphabet A and `a + n_sets` in alphabet B. In the
`mix` corpus they share contexts, so a generator that has learned the language samples the
synonym of the original about half the time it picks the right set: false negatives come from
the generator itself, and the exact table finds every one. In `shift` they never share contexts:
the built-in control where a generator has no reason to sample the synonym.

Token ids: [PAD] 0, [CLS] 1, [MASK] 2, then alphabet A (3 .. n+2) and alphabet B (n+3 .. 2n+2),
so that the masking's random tokens (ids from `num_special` on) are the alphabets. The language,
corpora and labelled sets come from the data layer (mlmlib.data.synthetic); pretraining is
paper B's arm machinery (arm_pretraining.pretrain_arm with its NegativesMonitor).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from mlmlib.data import synthetic as syn
from mlmlib.finetune import FinetuneConfig, evaluate, finetune
from mlmlib.masking import ELECTRA_SPLIT, mask_tokens
from mlmlib.models import ElectraPair, ModelSize, bert_classifier, electra_classifier
from mlmlib.objectives import ELECTRA_TEMPERATURE, MASK_RATE
from mlmlib.papers.true_negatives import negatives as neg
from mlmlib.papers.true_negatives.arm_config import ArmConfig, parse_arm
from mlmlib.papers.true_negatives.arm_pretraining import history_rows, pretrain_arm
from mlmlib.papers.true_negatives.config import Correction
from mlmlib.papers.true_negatives.lookup_tables import Tables
from mlmlib.papers.true_negatives.synthetic_config import (
    OWN_SEED,
    PILOT_LANGUAGES,
    SCORED_SETS,
    SPECIALS,
    TABLES,
    TESTBED,  # noqa: F401 - the pages name the testbed through this module
    SyntheticFinetune,
    SyntheticSetup,
)
from mlmlib.pretrain import PretrainConfig, masked_lm_logits, sample_logits
from mlmlib.speed import Speed

PAD, CLS, MASK = range(len(SPECIALS))
NUM_SPECIAL = len(SPECIALS)


# ---------------------------------------------------------------- vocabulary and tables


def vocabulary(n_sets: int) -> list[str]:
    """Token strings by id: the specials, then a0.. (alphabet A) and b0.. (alphabet B)."""
    return [*SPECIALS, *(f"a{i}" for i in range(n_sets)), *(f"b{i}" for i in range(n_sets))]


def encode(tokens: np.ndarray, labels: np.ndarray | None = None) -> dict[str, torch.Tensor]:
    """The language's tokens (ids 0 .. 2n-1) as model ids, with [CLS] in front (and labels)."""
    ids = torch.as_tensor(np.asarray(tokens), dtype=torch.long) + NUM_SPECIAL
    ids = torch.cat([torch.full((ids.shape[0], 1), CLS, dtype=torch.long), ids], dim=1)
    data = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if labels is not None:
        data["labels"] = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    return data


def exact_table(n_sets: int) -> neg.PairLookup:
    """Every synonym pair of the language, both ways: (a, a + n_sets) in model ids."""
    a = np.arange(n_sets) + NUM_SPECIAL
    return neg.PairLookup.from_pairs(a, a + n_sets, NUM_SPECIAL + 2 * n_sets, source="exact")


def imperfect_table(n_sets: int, missing_share: float, seed: int) -> neg.PairLookup:
    """The exact table with round(missing_share * n_sets) of its pairs missing (both ways), drawn
    with `seed`: the source claim's weaker table."""
    if not 0 <= missing_share < 1:
        raise ValueError(f"missing_share must be in [0, 1), got {missing_share!r}")
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.permutation(n_sets)[round(missing_share * n_sets):])
    a = keep + NUM_SPECIAL
    return neg.PairLookup.from_pairs(a, a + n_sets, NUM_SPECIAL + 2 * n_sets, source="imperfect")


def check_table(table: neg.PairLookup, n_sets: int, name: str = "table") -> None:
    """The table must be one of this vocabulary: its size, and pairs of alphabet tokens only."""
    vocab = NUM_SPECIAL + 2 * n_sets
    if table.vocab_size != vocab:
        raise ValueError(f"{name}: built for a vocabulary of {table.vocab_size} ids, the corpus has "
                         f"{vocab} (n_sets={n_sets}); build it with n_sets={n_sets}")
    pairs = table.pairs()
    if len(pairs) and (pairs.min() < NUM_SPECIAL or pairs.max() >= vocab):
        raise ValueError(f"{name}: pairs special tokens or ids outside the alphabets "
                         f"[{NUM_SPECIAL}, {vocab}); it does not cover this corpus's vocabulary")


def pairs_in_corpus(data: dict, table: neg.PairLookup) -> int:
    """How many pairs of `table` have both tokens in the corpus (what a correction can act on)."""
    present = torch.zeros(table.vocab_size, dtype=torch.bool)
    present[data["input_ids"].unique()] = True
    pairs = table.pairs()
    return int((present[pairs[:, 0]] & present[pairs[:, 1]]).sum()) // 2 if len(pairs) else 0


# ---------------------------------------------------------------- arms


@dataclass(frozen=True)
class SyntheticArm:
    """One arm: 'objective/method[@table]' (table: 'exact', the default, or 'imperfect')."""

    name: str
    config: ArmConfig
    table: str = "exact"

    @property
    def corrects(self) -> bool:
        """Whether the arm acts on false negatives (any method but 'none')."""
        return self.config.method != "none"


def parse_arms(arms: Sequence[str], correction: Correction | None = None) -> list[SyntheticArm]:
    """The page's `arms` as SyntheticArms; an error naming the parameter on anything else."""
    correction = correction or Correction()
    if isinstance(arms, str) or not len(arms):
        raise ValueError(f"parameter arms must be a non-empty list, got {arms!r}")
    out = []
    for spec in arms:
        head, _, table = str(spec).partition("@")
        table = table or "exact"
        try:
            config = parse_arm(head, correction)
        except ValueError as err:
            raise ValueError(f"parameter arms: {spec!r} is not an arm of this testbed ({err}); "
                             "arms look like 'electra/shield', 'mlm/none' or "
                             "'electra/shield@imperfect'") from err
        if table not in TABLES:
            raise ValueError(f"parameter arms: {spec!r} names the table {table!r}; tables: {TABLES}")
        if table != "exact" and config.method == "none":
            raise ValueError(f"parameter arms: {spec!r} names a table but corrects nothing")
        out.append(SyntheticArm(head if table == "exact" else spec, config, table))
    names = [a.name for a in out]
    if len(set(names)) != len(names):
        raise ValueError(f"parameter arms lists an arm twice: {list(arms)!r}")
    return out


def arms_by_corpus(arms: Sequence[SyntheticArm], corpora: Sequence[str],
                   corpus_arms: dict | None) -> dict[str, list[SyntheticArm]]:
    """The arms each corpus pretrains: those `corpus_arms` names for it (a subset of the page's
    `arms`), or every arm for a corpus it does not name."""
    corpus_arms = corpus_arms or {}
    if not isinstance(corpus_arms, dict):
        raise ValueError(f"parameter corpus_arms must be a mapping corpus -> arms, got {corpus_arms!r}")
    by_name = {a.name: a for a in arms}
    out = {}
    for corpus in corpora:
        names = corpus_arms.get(corpus, list(by_name))
        unknown = [n for n in names if n not in by_name]
        if isinstance(names, str) or not len(names) or unknown:
            raise ValueError(f"parameter corpus_arms[{corpus!r}] must be a non-empty list of the page's arms "
                             f"{list(by_name)}, got {names!r}")
        out[corpus] = [by_name[n] for n in names]
    extra = sorted(set(corpus_arms) - set(corpora))
    if extra:
        raise ValueError(f"parameter corpus_arms names corpora {extra} that are not in corpora {list(corpora)}")
    return out


def arms_of_run(arms: Sequence[str], extra_arms: Sequence[str], extra_seeds: Sequence[int],
                seed: int) -> list[str]:
    """The arms a run pretrains: `arms` on every run, and `extra_arms` too on the runs whose seed
    is in `extra_seeds` (the arms that carry no claim of their own run on fewer languages)."""
    for name, value in (("extra_arms", extra_arms), ("extra_seeds", extra_seeds)):
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise ValueError(f"parameter {name} must be a list, got {value!r}")
    if any(isinstance(s, bool) or not isinstance(s, int) for s in extra_seeds):
        raise ValueError(f"parameter extra_seeds must list int seeds, got {list(extra_seeds)!r}")
    if bool(extra_arms) != bool(extra_seeds):
        raise ValueError("parameters extra_arms and extra_seeds go together: give both or neither, "
                         f"got extra_arms={list(extra_arms)!r}, extra_seeds={list(extra_seeds)!r}")
    twice = sorted(set(arms) & set(extra_arms))
    if twice:
        raise ValueError(f"parameter extra_arms repeats arms of parameter arms: {twice}")
    return [*arms, *extra_arms] if seed in extra_seeds else list(arms)


def check_corpora(corpora: Sequence[str]) -> list[str]:
    """The page's `corpora`: a non-empty list from the data layer's corpora, each once."""
    if isinstance(corpora, str) or not len(corpora) or len(set(corpora)) != len(corpora):
        raise ValueError(f"parameter corpora must be a non-empty list without repeats, got {corpora!r}")
    bad = [c for c in corpora if c not in syn.CORPORA]
    if bad:
        raise ValueError(f"parameter corpora: unknown {bad}; corpora: {syn.CORPORA}")
    return list(corpora)


def language_of(seed: int, language_seed: int, recording: bool = False) -> int:
    """The language a run draws: `language_seed`, or the page's own `seed` for OWN_SEED (-1).
    A recorded run (`recording`) may not draw a language of the pilot (PILOT_LANGUAGES)."""
    if language_seed == OWN_SEED:
        language, name = seed, "seed"
    elif isinstance(language_seed, bool) or not isinstance(language_seed, int) or language_seed < 0:
        raise ValueError(f"parameter language_seed must be an int >= 0 or {OWN_SEED} (the page's "
                         f"seed), got {language_seed!r}")
    else:
        language, name = language_seed, "language_seed"
    if recording:
        syn.check_not_pilot(language, PILOT_LANGUAGES, name)
    return language


# ---------------------------------------------------------------- measurements


def model_size(setup: SyntheticSetup, finetune_length: int) -> ModelSize:
    """The discriminator's (and the MLM's) shape; positions for [CLS] plus the longer sequence."""
    return ModelSize(vocab_size=setup.vocab_size, hidden=setup.hidden, layers=setup.layers,
                     heads=setup.heads, max_len=max(setup.corpus_length, finetune_length) + 1,
                     dropout=setup.dropout, embedding_size=setup.embedding_size, pad_id=PAD)


def pretrain_config(setup: SyntheticSetup, seed: int, speed: Speed = Speed()) -> PretrainConfig:
    """ELECTRA's recipe at the setup's size, in the `speed` group's precision and compile
    (pretrain_arm switches the split for the MLM arms)."""
    return PretrainConfig(objective="electra", steps=setup.steps, batch_size=setup.batch_size,
                          lr=setup.lr, warmup_frac=setup.warmup_frac, temperature=setup.temperature,
                          disc_weight=setup.disc_weight, log_every=setup.log_every, seed=seed,
                          precision=speed.precision, compile=speed.compile)


@torch.no_grad()
def probe_discriminator(pair: ElectraPair, data: dict, table: neg.PairLookup, *, seed: int,
                        temperature: float = ELECTRA_TEMPERATURE, mask_rate: float = MASK_RATE) -> dict:
    """The pretrained pair on held-out sequences, masked as in training: the discriminator's
    P(replaced) on false negatives and on true replacements, the AUC that separates them, its
    accuracy on each (against ELECTRA's label 'replaced'), and the generator's rates."""
    pair.eval()
    ids, attention = data["input_ids"], data["attention_mask"]
    gen = torch.Generator().manual_seed(seed)
    corrupted, masked = mask_tokens(ids, mask_rate, generator=gen, mask_id=MASK,
                                    vocab_size=table.vocab_size, special_mask=ids < NUM_SPECIAL,
                                    split=ELECTRA_SPLIT, num_special=NUM_SPECIAL)
    logits = masked_lm_logits(pair.generator, corrupted, attention, masked)
    samples = sample_logits(logits, temperature, gen)
    targets = ids[masked]
    disc_input = ids.masked_scatter(masked, samples)
    p = torch.sigmoid(pair.discriminator(input_ids=disc_input, attention_mask=attention).logits)[masked]
    return probe_measures(p, targets, samples, neg.false_negatives(targets, samples, table))


def probe_measures(p: torch.Tensor, targets: torch.Tensor, samples: torch.Tensor,
                   fn: torch.Tensor) -> dict:
    """The probe's measures from the discriminator's P(replaced) `p` at the masked positions, the
    originals, the generator's samples and the false-negative indicator (all (N,)). A position
    is flagged when p > 0.5; a true replacement is a sample that is neither the original nor a
    false negative. NaN where a kind has no position."""
    from sklearn.metrics import roc_auc_score

    true = (samples != targets) & ~fn
    nan = float("nan")
    both = bool(fn.any()) and bool(true.any())
    return {
        "auc_true_vs_fn": float(roc_auc_score(torch.cat([torch.ones(int(true.sum())), torch.zeros(int(fn.sum()))]),
                                              torch.cat([p[true], p[fn]]))) if both else nan,
        "p_replaced_true": float(p[true].mean()) if true.any() else nan,
        "p_replaced_fn": float(p[fn].mean()) if fn.any() else nan,
        "p_replaced_original": float(p[samples == targets].mean()) if (samples == targets).any() else nan,
        "acc_true_replaced": float((p[true] > 0.5).float().mean()) if true.any() else nan,
        "acc_false_negative": float((p[fn] > 0.5).float().mean()) if fn.any() else nan,
        "probe_fn_rate_replaced": float(fn.sum() / (samples != targets).sum().clamp_min(1)),
        "generator_set_acc": float(((samples == targets) | fn).float().mean()),
        "probe_false_negatives": int(fn.sum()), "probe_true_replaced": int(true.sum()),
    }


def synonym_cosine(model: torch.nn.Module, n_sets: int, seed: int) -> dict:
    """Mean cosine of the input embeddings of synonym pairs (a, a + n_sets), and of as many random
    pairs of different sets (the reference)."""
    emb = torch.nn.functional.normalize(model.get_input_embeddings().weight.detach().float(), dim=1)
    a = torch.arange(n_sets) + NUM_SPECIAL
    gen = torch.Generator().manual_seed(seed)
    other = (torch.arange(n_sets) + torch.randint(1, n_sets, (n_sets,), generator=gen)) % n_sets
    other = other + NUM_SPECIAL + n_sets * torch.randint(0, 2, (n_sets,), generator=gen)
    return {"synonym_cosine": float((emb[a] * emb[a + n_sets]).sum(1).mean()),
            "random_cosine": float((emb[a] * emb[other]).sum(1).mean())}


def labelled_sets(lang: syn.Language, ft: SyntheticFinetune, seed: int) -> dict[str, dict]:
    """A-D1 train and validation, and every scored test set, encoded (seeded by `seed`); each
    half of each class when `ft.balanced` (syn.balanced_labelled_set)."""
    base = 10_000 * (seed + 1)
    draw = syn.balanced_labelled_set if ft.balanced else syn.labelled_set
    sets = {}
    for i, (name, source, n) in enumerate([("train", "A-D1", ft.train_size), ("validation", "A-D1", ft.valid_size),
                                           *((s, s, ft.test_size) for s in SCORED_SETS)]):
        try:
            tokens, labels = draw(lang, source, n, ft.length, seed=base + i)
        except ValueError as err:
            raise ValueError(f"parameter finetune ({name} set, {n} examples): {err}") from err
        sets[name] = encode(tokens, labels)
    return sets


def finetune_scores(model: torch.nn.Module | None, size: ModelSize, sets: dict, ft: SyntheticFinetune,
                    seed: int) -> dict:
    """Fine-tune a classifier on A-D1 from the pretrained discriminator (ELECTRA), encoder (MLM)
    or nothing (None: scratch); accuracy on every scored set and the drop A-D1 -> B-D1."""
    if model is None or isinstance(model, ElectraPair):
        clf = electra_classifier(size, 2, from_encoder=model, seed=seed)
    else:
        clf = bert_classifier(dataclasses.replace(size, embedding_size=None), 2, from_encoder=model, seed=seed)
    config = FinetuneConfig(max_steps=ft.max_steps, batch_size=ft.batch_size, lr=ft.lr,
                            eval_every=ft.eval_every, patience=ft.patience, seed=seed)
    with contextlib.redirect_stdout(io.StringIO()):
        result = finetune(clf, sets["train"], sets["validation"], config, progress=False)
    row = {key(s): evaluate(clf, sets[s])["accuracy"] for s in SCORED_SETS}
    return {**row, "robustness_drop": row["a_d1"] - row["b_d1"], "val_accuracy": result.best_metric,
            "finetune_s": result.wall_s}


def key(test_set: str) -> str:
    """A scored set's record column: 'A-D1' -> 'a_d1'."""
    return test_set.lower().replace("-", "_")


# ---------------------------------------------------------------- one seed


@dataclass
class SeedRun:
    """What B4 records of one (language, pretraining seed): every table of rows."""

    training: list[dict]
    downstream: list[dict]
    intrinsic: list[dict]
    arms: list[dict]
    info: dict
    curve: list[dict] = dataclasses.field(default_factory=list)  # per train size (curve_sizes)

    def metrics(self) -> dict:
        """The record's metrics (JSON-able)."""
        return dataclasses.asdict(self)


def prepare(setup: SyntheticSetup, arms: Sequence[str], corpora: Sequence[str], language_seed: int,
            seed: int, correction: Correction | None = None, corpus_arms: dict | None = None) -> tuple:
    """Everything checked and built before any training: arms (per corpus), corpora, language,
    tables, data."""
    corpora = check_corpora(corpora)
    arm_list = arms_by_corpus(parse_arms(arms, correction), corpora, corpus_arms)
    lang = syn.make_language(syn.LanguageConfig(
        n_sets=setup.n_sets, n_states=setup.n_states, n_patterns=setup.n_patterns,
        pattern_length=setup.pattern_length, pattern_set_size=setup.pattern_set_size, seed=language_seed))
    tables = {"exact": exact_table(setup.n_sets),
              "imperfect": imperfect_table(setup.n_sets, setup.missing_share, seed=language_seed)}
    for name, table in tables.items():
        check_table(table, setup.n_sets, f"{name} table")
    data, probes = {}, {}
    for i, corpus in enumerate(corpora):
        data[corpus] = encode(syn.pretraining_corpus(lang, corpus, setup.corpus_size, setup.corpus_length,
                                                     seed=seed * 100 + 1 + i))
        probes[corpus] = encode(syn.pretraining_corpus(lang, corpus, setup.probe_size, setup.corpus_length,
                                                       seed=seed * 100 + 50 + i))
        if any(a.corrects for a in arm_list[corpus]) and not pairs_in_corpus(data[corpus], tables["exact"]):
            raise ValueError(f"parameter corpora: {corpus!r} holds no synonym pair for a correction "
                             "to act on (both tokens of a pair never occur)")
    return arm_list, corpora, lang, tables, data, probes


def run_seed(setup: SyntheticSetup, ft: SyntheticFinetune, arms: Sequence[str], corpora: Sequence[str],
             seed: int, language_seed: int = OWN_SEED, correction: Correction | None = None,
             log: Callable[[str], Any] | None = print, corpus_arms: dict | None = None,
             speed: Speed = Speed()) -> SeedRun:
    """One language and pretraining seed: every arm (`corpus_arms`: the arms of each corpus)
    pretrained from scratch on every corpus (in `speed`'s precision), probed, fine-tuned on A-D1
    and scored; then the same encoder fine-tuned from scratch, once."""
    language_seed = language_of(seed, language_seed)
    arm_list, corpora, lang, tables, data, probes = prepare(setup, arms, corpora, language_seed, seed,
                                                            correction, corpus_arms)
    size = model_size(setup, ft.length)
    sets = labelled_sets(lang, ft, language_seed)
    curve_sets = {n: {**sets, "train": labelled_sets(lang, dataclasses.replace(ft, train_size=n),
                                                     language_seed)["train"]} for n in ft.curve_sizes}
    vocab = vocabulary(setup.n_sets)
    common = {"pretrain_seed": seed, "language_seed": language_seed}
    training, downstream, intrinsic, arm_rows, curve = [], [], [], [], []
    for corpus in corpora:
        for arm in arm_list[corpus]:
            start = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                result = pretrain_arm(arm.config, Tables(tables[arm.table], None, arm.table), vocab,
                                      data[corpus], size, pretrain_config(setup, seed, speed), mask_id=MASK,
                                      num_special=NUM_SPECIAL, generator_fraction=setup.generator_fraction)
            who = {"arm": arm.name, "objective": arm.config.objective, "method": arm.config.method,
                   "table": arm.table, "corpus": corpus, **common}
            training += [{**r, **who} for r in history_rows(result, seed)]
            arm_rows.append({**who, "step_ms": result.step_ms, "pretrain_s": time.perf_counter() - start})
            probe = {}
            if isinstance(result.model, ElectraPair):
                probe = probe_discriminator(result.model, probes[corpus], tables["exact"], seed=seed,
                                            temperature=setup.temperature)
            intrinsic.append({**who, **probe, **synonym_cosine(result.model, setup.n_sets, seed)})
            downstream.append({**who, **finetune_scores(result.model, size, sets, ft, seed)})
            curve += [{**who, "train_size": n, **finetune_scores(result.model, size, s, ft, seed)}
                      for n, s in curve_sets.items()]
            if log:
                last = result.history[-1]
                log(f"{corpus} {arm.name}: {result.step_ms:.0f} ms/step, false negatives "
                    f"{last.get('fn_rate_replaced', 0):.3f} of replaced, A-D1 "
                    f"{downstream[-1]['a_d1']:.3f}, B-D1 {downstream[-1]['b_d1']:.3f}")
    scratch = {"arm": "scratch", "objective": "scratch", "method": "none", "table": "", "corpus": "",
               **common}
    downstream.append({**scratch, **finetune_scores(None, size, sets, ft, seed)})
    curve += [{**scratch, "train_size": n, **finetune_scores(None, size, s, ft, seed)}
              for n, s in curve_sets.items()]
    info = {"vocab_size": setup.vocab_size, "exact_pairs": len(tables["exact"]) // 2,
            "imperfect_pairs": len(tables["imperfect"]) // 2,
            "tokens_per_arm": setup.steps * setup.batch_size * (setup.corpus_length + 1), **common}
    return SeedRun(training, downstream, intrinsic, arm_rows, info, curve)
