"""Rehearse a plan offline before spending GPU time on it: `python -m mlmlib run --profile paper --rehearse`.

The rehearsal is the profile `<profile>-rehearsal`: the plan's every entry, through the same
notebooks and code paths, with the sizes of notebooks/plans/rehearse/<profile>.yaml (see
`plans.rehearsal_data`). Its hub data and models are tiny stand-ins in the hub's own formats
(mlmlib.offline.standins), built once into a mirror under .work/ and read through
MLMLIB_HUB_MIRROR, with the libraries' offline switches set: nothing goes to the network.
Its records go to book/runs/<profile>-rehearsal/, apart from the real ones. The command line
hands `prepare` to the runner (mlmlib.__main__), which calls it before a rehearsal runs.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from mlmlib.data.hub import MIRROR_ENV
from mlmlib.offline import standins
from mlmlib.offline.resources import needed
from mlmlib.paths import work_dir
from mlmlib.runs.plans import Plan

OFFLINE_SWITCHES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")


def mirror_folder() -> Path:
    """The stand-in mirror, one per version of the stand-in recipes (a changed recipe rebuilds)."""
    recipes = hashlib.sha256()
    for source in sorted(Path(standins.__file__).parent.glob("*.py")):
        recipes.update(source.name.encode() + b"\0" + source.read_bytes())
    return work_dir() / "rehearsal-mirror" / recipes.hexdigest()[:12]


def prepare(plan: Plan, log=print) -> Path:
    """Build the stand-ins the plan needs (those missing) and point every hub loader at them,
    offline, in this process and the kernels and jobs it starts. Returns the mirror folder."""
    root = mirror_folder()
    built = standins.build_standins(root, needed(plan))
    if built:
        log(f"rehearsal: built {len(built)} stand-in(s) of hub data and models in {root}")
    os.environ[MIRROR_ENV] = str(root)
    for name in OFFLINE_SWITCHES:
        os.environ[name] = "1"
    return root
