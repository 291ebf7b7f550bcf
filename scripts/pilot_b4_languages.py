"""Pilot of B4 at the generator's temperature 1, on languages the records never use.

    python scripts/pilot_b4_languages.py --language 200 --out pilot-200.json

Runs `synthetic_testbed.run_seed` for one language (a pilot language of
`synthetic_config.PILOT_LANGUAGES`) at the cpu plan's sizes, on `mix`, with balanced labelled
sets and a learning curve of fine-tuning sizes, and writes its rows. What it is for: the spread
over languages of the mechanism's paired difference (a corrected arm minus electra/none on the
discriminator's flagging of true replacements) and of electra/none - scratch at each fine-tuning
size, which size the plan's languages (`stats.seeds_for_half_width`) and choose the fine-tuning
size where pretraining helps. Read several with `--summarise pilot-*.json`. The pilot's numbers
go to the design history, not to a verdict.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd
import torch

from mlmlib import configs, stats
from mlmlib.papers.true_negatives import synthetic_testbed as testbed
from mlmlib.papers.true_negatives.synthetic_config import (
    PILOT_LANGUAGES,
    SyntheticFinetune,
    SyntheticSetup,
)

SETUP = {"steps": 8000, "log_every": 500, "generator_fraction": 0.25, "temperature": 1.0}
FINETUNE = {"train_size": 2000, "test_size": 1000, "max_steps": 300, "curve_sizes": [50, 100, 300, 1000]}
ARMS = ["electra/none", "electra/relabel"]


def run(language: int, out: str) -> None:
    """Pretrain the pilot arms on one pilot language and write the seed's tables."""
    if language not in PILOT_LANGUAGES:
        raise SystemExit(f"--language must be a pilot language {PILOT_LANGUAGES}, got {language}")
    torch.set_num_threads(1)
    setup = configs.build(SyntheticSetup, SETUP, "setup")
    ft = configs.build(SyntheticFinetune, FINETUNE, "finetune")
    result = testbed.run_seed(setup, ft, ARMS, ["mix"], seed=language)
    Path(out).write_text(json.dumps(result.metrics()))


def summarise(paths: list[str]) -> None:
    """Per-language paired differences and their interval over the pilot languages."""
    runs = [json.loads(Path(p).read_text()) for p in paths]
    probe = pd.DataFrame([r for run in runs for r in run["intrinsic"]])
    flag = probe.pivot_table(index="language_seed", columns="arm", values="acc_true_replaced")
    print("flagging of true replacements (probe):\n", flag.round(3))
    for arm in ARMS[1:]:
        diff = flag[arm] - flag["electra/none"]
        print(f"{arm} - electra/none: {stats.mean_ci(diff)}; sd {diff.std():.3f}")
    training = pd.DataFrame([r for run in runs for r in run["training"]])
    print(training.pivot_table(index="step", columns="arm",
                               values=["disc_acc_replaced", "fn_rate_replaced"]).round(3).iloc[::2])
    curve = pd.DataFrame([r for run in runs for r in run["curve"] + run["downstream"]
                          if "train_size" in r or r.setdefault("train_size", FINETUNE["train_size"])])
    for column in ("a_d1", "b_d1", "a_d2"):
        wide = curve.pivot_table(index=["train_size", "language_seed"], columns="arm", values=column)
        gain = (wide["electra/none"] - wide["scratch"]).groupby("train_size")
        print(f"{column}: electra/none - scratch by size:",
              {n: str(stats.mean_ci(g)) for n, g in gain})
        print(wide.groupby("train_size").mean().round(3))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--language", type=int)
    parser.add_argument("--out", default="")
    parser.add_argument("--summarise", nargs="+", default=[])
    args = parser.parse_args()
    if args.summarise:
        summarise(args.summarise)
    else:
        run(args.language, args.out)


if __name__ == "__main__":
    main()
