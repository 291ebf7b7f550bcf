"""Plan files: reading one, a plan that extends another, and the values a plan only restates.

A plan may start from another profile's plan and state only what differs:

    extends: smoke
    omit: [data_overview]            # the base's entries this plan does not run
    notebooks:
      - notebook: A2_synthetic_pretrain
        timeout: 1200                # replaces the base entry's key
        params: {setup: {steps: 3000}}   # merged into the base entry's params by parameter name
        grid: {language_seed: [1, 2]}    # replaces the base entry's grid as a whole

Each entry of an extending plan is the base's entry of the same notebook with the entry's keys
laid over it (so chapter, title, needs and a default timeout are written once, in the base);
several entries of one notebook each start from the base's; a group's overrides are replaced as a
whole. The entries keep the base's order.
An entry that writes a value equal to the one it replaces is refused: a plan states differences.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

PLAN_KEYS = {"description", "notebooks", "slurm", "extends", "omit"}


class PlanError(ValueError):
    """A plan file that cannot be run: names the file, the key and what is allowed."""


def read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise PlanError(f"{path}: not valid YAML: {exc}") from exc


def compose(path: Path, _seen: tuple[Path, ...] = ()) -> dict:
    """The plan at `path` with its `extends` chain resolved: description, notebooks, slurm."""
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("notebooks"), list):
        raise PlanError(f"{path}: expected a mapping with a 'notebooks' list")
    unknown = set(data) - PLAN_KEYS
    if unknown:
        raise PlanError(f"{path}: unknown key(s) {sorted(unknown)}; allowed: {sorted(PLAN_KEYS)}")
    if "extends" not in data:
        if "omit" in data:
            raise PlanError(f"{path}: 'omit' names entries of an extended plan; add 'extends'")
        return data
    base_name = data["extends"]
    base_path = path.parent / f"{base_name}.yaml"
    if not isinstance(base_name, str) or "/" in base_name or not base_path.exists():
        have = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise PlanError(f"{path}: extends = {base_name!r}: name a plan of this folder; {have}")
    if base_path in (*_seen, path):
        chain = " -> ".join(p.stem for p in (*_seen, path, base_path))
        raise PlanError(f"{path}: extends makes a loop ({chain})")
    base = compose(base_path, (*_seen, path))
    entries = _extended_entries(path, base["notebooks"], data)
    slurm = {**(base.get("slurm") or {}), **(data.get("slurm") or {})}
    out = {"description": data.get("description", base.get("description", "")),
           "notebooks": entries}
    return {**out, "slurm": slurm} if slurm else out


def _extended_entries(path: Path, base: list, data: dict) -> list[dict]:
    """The base's entries, each overlaid by this plan's entries of its notebook (or omitted)."""
    by_name: dict[str, dict] = {}
    for entry in base:
        name = entry.get("notebook") if isinstance(entry, dict) else None
        if name in by_name:
            raise PlanError(f"{path}: its base has two entries of {name!r}; a plan that "
                                "others extend has one entry per notebook")
        by_name[name] = entry
    omit = data.get("omit", [])
    if not isinstance(omit, list) or any(n not in by_name for n in omit):
        raise PlanError(f"{path}: omit = {omit!r}: give a list of the base's notebooks: "
                            f"{list(by_name)}")
    overlays: dict[str, list[dict]] = {}
    for i, entry in enumerate(data["notebooks"]):
        name = entry.get("notebook") if isinstance(entry, dict) else None
        if name not in by_name or name in omit:
            raise PlanError(f"{path}: notebooks[{i}]: {name!r} is not an entry of the base "
                                f"it extends (or is omitted); the base's: {list(by_name)}")
        overlays.setdefault(name, []).append(entry)
    out = []
    for name, entry in by_name.items():
        if name in omit:
            continue
        for overlay in overlays.get(name, [None]):
            out.append(entry if overlay is None else _overlay(path, entry, overlay))
    return out


def _overlay(path: Path, base: dict, entry: dict) -> dict:
    """`base` with `entry`'s keys laid over it; params merged by name; restated values refused."""
    where = f"{path}: {entry['notebook']}"
    out = dict(base)
    for key, value in entry.items():
        if key == "params":
            if not isinstance(value, dict):
                raise PlanError(f"{where}: 'params' must be a mapping of parameter names")
            params = dict(base.get("params") or {})
            for name, new in value.items():
                if name in params and params[name] == new:
                    raise PlanError(f"{where}: params.{name} = {new!r} restates the base "
                                        "plan's value; a plan states differences only")
                params[name] = new
            out["params"] = params
        elif key != "notebook" and key in base and base[key] == value:
            raise PlanError(f"{where}: {key} = {value!r} restates the base plan's value; "
                                "a plan states differences only")
        else:
            out[key] = value
    return out


def entries_by_file(folder: Path) -> dict[str, list[dict]]:
    """{plan file name: the entries it writes itself} for the plans in `folder` (not composed)."""
    out = {}
    for path in sorted(folder.glob("*.yaml")):
        data = read_yaml(path)
        if isinstance(data, dict) and isinstance(data.get("notebooks"), list):
            out[path.name] = [e for e in data["notebooks"] if isinstance(e, dict)]
    return out
