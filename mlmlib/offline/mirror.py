"""Fill a hub mirror with what a profile's runs download, so they can run where there is no network.

`python -m mlmlib mirror --profile paper --to DIR` downloads each hub dataset, model, tokenizer
and vector set the plan's runs need (through mlmlib's own loaders, online) and saves it in the
layout mlmlib.data.hub reads when MLMLIB_HUB_MIRROR=DIR; `--list` only says what DIR has.
What a run needs is what the data layer and the papers declare (mlmlib.offline.resources).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from mlmlib.atomic import temp_name
from mlmlib.data import hub
from mlmlib.data.hub_resources import Resource
from mlmlib.offline.resources import needed
from mlmlib.runs.plans import Plan, PlanError, load_plan


def main(argv: list[str]) -> int:
    """`python -m mlmlib mirror --profile P --to DIR [--list]`; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m mlmlib mirror",
                                     description="fill a folder with the hub data and models a profile needs")
    parser.add_argument("--profile", default="paper", help="plan name in notebooks/plans/ (default: paper)")
    parser.add_argument("--to", required=True, metavar="DIR", help="the mirror folder (MLMLIB_HUB_MIRROR)")
    parser.add_argument("--list", action="store_true", help="only list what is needed and what DIR has")
    args = parser.parse_args(argv)
    try:
        plan = load_plan(args.profile)
    except PlanError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return mirror(plan, Path(args.to).expanduser(), list_only=args.list)


def mirror(plan: Plan, root: Path, list_only: bool = False) -> int:
    """List the plan's hub resources and whether the mirror at root has them; without list_only, fetch
    the missing ones. One line per resource, then what could not be fetched. Returns the exit code."""
    resources = needed(plan)
    print(f"profile {plan.profile}: {len(resources)} hub resources, mirror {root}")
    failed = []
    for resource in resources:
        if resource.present(root):
            state = "have"
        elif list_only:
            state = "missing"
        else:
            try:
                fetch(resource, root)
                state = "saved"
            except Exception as err:  # noqa: BLE001 - offline, a server error: noted, the fill goes on
                failed.append(f"{resource.label}: {type(err).__name__}: {err}")
                state = "FAILED"
        print(f"  {state:8} {resource.label}  [{resource.why}]", flush=True)
    if failed:
        print(f"\n{len(failed)} could not be fetched (run the command again where the network is):")
        for line in failed:
            print(f"  {line}")
    return 1 if failed else 0


def fetch(resource: Resource, root: Path) -> None:
    """Download one resource from the hub (or gensim's server) and save it in the mirror at root.

    It is written under a temporary name (with host and pid, as every temporary of the project)
    and renamed when whole, so an interrupted fill never leaves a copy that looks complete.
    """
    target = resource.target(root)
    partial = temp_name(target, "partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    alternative = "nothing (the mirror command needs the network)"
    if resource.kind == "dataset":
        data = hub.download_hub_dataset(resource.label, alternative, resource.name, resource.config,
                                        revision=resource.revision)
        data.save_to_disk(str(partial))
    elif resource.kind == "model":
        import transformers

        for _, cls in resource.parts:
            loader = getattr(transformers, cls).from_pretrained
            hub.download_hub_pretrained(resource.label, alternative, loader, resource.name).save_pretrained(partial)
    else:
        from mlmlib.data.vectors import download_gensim

        partial.mkdir()
        download_gensim(resource.name).save(str(partial / target.name))  # large arrays: beside it, as .npy
        for file in sorted(partial.iterdir(), key=lambda f: f.name == target.name):  # the .kv last: it marks
            file.replace(target.parent / file.name)                                  # the copy whole
        partial.rmdir()
        return
    shutil.rmtree(target, ignore_errors=True)  # an incomplete copy (a model folder that lacked a part)
    partial.rename(target)
