"""Pilot of C4 with the domain shift, on languages the committed records never use.

    python scripts/pilot_c4_shift.py --seeds 100 101 102 --doses 0 30 100 300 1000 3000

Runs `synthetic_task.run_seed` (the base pretrained on one chain, the task from the other) at the
cpu plan's sizes with a longer dose chain, and prints per seed and dose: the held-out MLM loss on
the task domain, each arm's few-label accuracy and random - none. What it is for: where random -
none (the adaptation's benefit) stops rising, and the seed-to-seed spread of the paired
differences that sizes the plan's languages (`verdicts.seeds_for_half_width`). The seeds given
must not be ones a plan's records use; the pilot's numbers go to the design history, not to a
verdict.
"""

from __future__ import annotations

import argparse
import json
import time

import pandas as pd
import torch

from mlmlib import configs
from mlmlib.papers.selective_masking import synthetic_task
from mlmlib.papers.selective_masking.config import SyntheticSelective


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", required=True)
    parser.add_argument("--doses", type=int, nargs="+", default=[0, 30, 100, 300, 1000, 3000])
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="another SyntheticSelective field, e.g. --set beta=6.0")
    parser.add_argument("--out", default="", help="write the rows as JSON here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    overrides = {"doses": args.doses}
    for item in args.set:
        field, _, value = item.partition("=")
        overrides[field] = json.loads(value) if value[:1] in "0123456789-[{\"tf" else value
    config = configs.build(SyntheticSelective, overrides, "synthetic")
    rows = []
    for seed in args.seeds:
        start = time.perf_counter()
        result = synthetic_task.run_seed(config, seed)
        wall = time.perf_counter() - start
        for r in result["dose_rows"]:
            rows.append({"seed": seed, "arm": r["arm"], "dose": r["dose"], "accuracy": r["accuracy"],
                         "heldout_loss": r["heldout_loss"], "probe": r.get("probe_accuracy"),
                         "list_share": r["list_share"], "majority": result["majority_accuracy"],
                         "wall_s": wall})
        print(f"seed {seed}: {wall:.0f} s, base loss {result['base_loss']:.3f}", flush=True)
    frame = pd.DataFrame(rows)
    none = frame[frame.dose == 0].groupby("seed").accuracy.first()
    frame["minus_none"] = frame.accuracy - frame.seed.map(none)
    print(frame.pivot_table(index="dose", columns="arm",
                            values=["heldout_loss", "accuracy", "minus_none"]).round(4))
    print(frame.pivot_table(index=["seed", "dose"], columns="arm", values="minus_none").round(4))
    if args.out:
        frame.to_json(args.out, orient="records", indent=1)


if __name__ == "__main__":
    main()
