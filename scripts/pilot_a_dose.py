"""Pilot of paper A's pretraining dose, on languages the records never use.

    python scripts/pilot_a_dose.py --language 300 --doses 1 3 9 --out pilot-a-300.json
    python scripts/pilot_a_dose.py --summarise pilot-a-*.json

For one pilot language (`config.PILOT_LANGUAGES`), pretrains WITH (`mix`) at each dose (a
multiple of the smoke setup's MLM steps, with the corpus scaled alike so that every dose sees its
sequences the same number of times) and fine-tunes WITH, shuffled WITH and scratch (which starts
from the pretraining init, the same at every dose: fine-tuned once) at the sweep's training sizes,
with balanced labelled sets. What it is for: the smallest dose at which WITH beats the stronger
baseline (scratch or shuffled) on A-D1 at the small sizes and on A-D2, and the spread over
languages that sizes the records. Its numbers go to the design history, not to a verdict.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from mlmlib import configs, stats
from mlmlib.papers.distributional import synthetic as dist
from mlmlib.papers.distributional.config import PILOT_LANGUAGES, Setup, Sweep
from mlmlib.papers.distributional.synthetic_measures import small_sizes_accuracy

DOSES = (1, 3, 9)  # 9x fits paper A's 1.5 h of the cpu profile at 6 languages; 16x does not
SEED = 15          # one pretraining and fine-tuning seed per language: languages are the blocks
SWEEP = {"bd2_fractions": [0.0], "bd2_models": None, "test_sets": ["A-D1", "B-D1", "A-D2"]}


def dosed(dose: int, language: int, setup: dict) -> Setup:
    """The setup (Setup's defaults overridden by `setup`) with `dose` times its MLM steps and corpus."""
    base = configs.build(Setup, setup, "setup")
    # every dose is fine-tuned, converged or not: the pilot records whether it was (`converged`)
    return configs.build(Setup, {**setup, "steps": base.steps * dose, "corpus_size": base.corpus_size * dose,
                                 "loss_threshold": 1e9}, "setup").with_seeds(language, SEED)


def run(language: int, out: str, setup: dict | None = None, sweep: dict | None = None,
        doses=DOSES) -> None:
    """Pretrain WITH at every dose on one pilot language, fine-tune, write the rows. `setup` and
    `sweep`: overrides of the smoke sizes (a test runs it tiny)."""
    if language not in PILOT_LANGUAGES:
        raise SystemExit(f"--language must be a pilot language {PILOT_LANGUAGES}, got {language}")
    torch.set_num_threads(1)
    rows, pretraining = [], []
    for i, dose in enumerate(doses):
        setup_at = dosed(dose, language, setup or {})
        start = time.perf_counter()
        folder = dist.pretrain_mlm(setup_at, "mix", progress=False)
        history = dist.load_history(folder)
        threshold = configs.build(Setup, setup or {}, "setup").loss_threshold
        pretraining.append({"dose": dose, "language_seed": language, "final_loss": history[-1]["loss"],
                            "converged": history[-1]["loss"] < threshold,
                            "wall_s": time.perf_counter() - start,
                            "tokens_seen": history[-1]["tokens_seen"]})
        models = ["scratch", "with", "shuffled"] if i == 0 else ["with", "shuffled"]
        swept = configs.build(Sweep, {**SWEEP, **(sweep or {}), "models": models}, "sweep")
        for row in dist.run_sweep(setup_at, swept, seed=SEED, build_missing=True, log=None):
            rows.append({**row, "dose": dose})
    Path(out).write_text(json.dumps({"rows": rows, "pretraining": pretraining}))


def summarise(paths: list[str]) -> None:
    """Per dose: WITH minus each baseline over the pilot languages, on the controls' measures."""
    runs = [json.loads(Path(p).read_text()) for p in paths]
    print(pd.DataFrame([r for run in runs for r in run["pretraining"]])
          .groupby("dose")[["final_loss", "converged", "wall_s", "tokens_seen"]].mean().round(3))
    rows = pd.DataFrame([r for run in runs for r in run["rows"]])
    scratch = rows[rows.model == "scratch"].drop(columns="dose")
    for dose in sorted(rows.dose.unique()):
        at = rows[(rows.dose == dose) & (rows.model != "scratch")]
        frame = pd.concat([at, scratch.assign(dose=dose)])
        wide = frame.pivot_table(index=["test_set", "train_size", "language_seed"], columns="model",
                                 values="accuracy")
        print(f"\n== dose {dose}x: accuracy by size (mean over languages)")
        print(wide.groupby(["test_set", "train_size"]).mean().round(3))
        small = wide.loc["A-D1"].groupby("language_seed").apply(
            lambda g: pd.Series({m: small_sizes_accuracy(g.index.get_level_values("train_size"), g[m])
                                 for m in g.columns}))
        largest = wide.xs(max(wide.index.get_level_values("train_size")), level="train_size")
        for what, table in (("A-D1 small sizes", small), ("A-D2 largest size", largest.loc["A-D2"]),
                            ("B-D1 largest size", largest.loc["B-D1"])):
            for base in ("scratch", "shuffled"):
                diff = table["with"] - table[base]
                print(f"{what}: WITH - {base} = {stats.mean_ci(diff)}; sd {np.std(diff, ddof=1):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--language", type=int, help=f"one of the pilot languages {PILOT_LANGUAGES}")
    parser.add_argument("--doses", type=int, nargs="+", default=list(DOSES),
                        help="multiples of the smoke MLM steps and corpus, increasing")
    parser.add_argument("--out", default="", help="write the rows and pretraining runs as JSON here")
    parser.add_argument("--summarise", nargs="+", default=[], metavar="JSON",
                        help="print the paired differences over the pilot files given")
    args = parser.parse_args()
    if args.summarise:
        return summarise(args.summarise)
    if sorted(set(args.doses)) != args.doses or args.doses[0] < 1:
        raise SystemExit(f"--doses must be increasing multiples >= 1, got {args.doses}")
    return run(args.language, args.out, doses=tuple(args.doses))


if __name__ == "__main__":
    main()
