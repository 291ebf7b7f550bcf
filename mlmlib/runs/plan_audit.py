"""Where the plans write each setting: values that only restate a default, and settings written
in many places (each a place a change must reach).

A setting is a plain parameter of one notebook (`A5_real_finetune_perturb.lr`) or a field of a
parameter group (`Setup.steps`, however many notebooks take the group). Its places are its
default (the parameters cell or the dataclass field) and each plan file that writes it in
`params` or `grid` (a file's several entries or YAML anchors count once: one edit there; an
extending plan's inherited entries are not writes; the rehearsal overlays are not counted).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from mlmlib import configs
from mlmlib.runs import plans
from mlmlib.runs.plan_files import compose, entries_by_file


def _template(notebook: str) -> tuple[dict, dict[str, type]]:
    path = str(plans.notebooks_dir() / f"{notebook}.ipynb")
    return plans.notebook_parameters(path), plans.notebook_groups(path)


def restated_defaults(profile: str) -> list[str]:
    """Every value `profile`'s plan writes (its extends chain composed) equal to the default it
    overrides: a template's default, a group field's default, or (for a summary) the plan's own
    profile, which a summary reads without being told. Grid values name runs: not checked."""
    found = []
    path = plans.plans_dir() / f"{profile}.yaml"
    for entry in compose(path)["notebooks"]:
        notebook = entry["notebook"]
        declared, groups = _template(notebook)
        for name, value in (entry.get("params") or {}).items():
            if name == "profile":
                if value == profile:
                    found.append(f"{notebook}: profile = {value!r} (the plan's own)")
            elif name in groups:  # the plan's mapping replaces the page's: the dataclass's
                defaults = configs.resolve(groups[name], {})
                resolved = configs.resolve(groups[name], value)
                found += [f"{notebook}: {name}.{k} = {resolved[k]!r} (its default)"
                          for k in value if k in defaults and resolved[k] == defaults[k]]
            elif value == declared.get(name):
                found.append(f"{notebook}: {name} = {value!r} (its default)")
    return sorted(set(found))


def places(folder: Path | None = None) -> dict[str, list[str]]:
    """{setting: its places}: the default's, then each plan file that writes it."""
    folder = folder or plans.plans_dir()
    out: dict[str, list[str]] = defaultdict(list)
    for nb_path in sorted(plans.notebooks_dir().glob("*.ipynb")):
        declared, groups = _template(nb_path.stem)
        for name in declared:
            if name in groups:
                for field_name in configs.fields(groups[name]):
                    key = f"{groups[name].__name__}.{field_name}"
                    if not out[key]:
                        out[key].append(f"default: {groups[name].__module__}")
            elif name not in plans.RESERVED:
                out[f"{nb_path.stem}.{name}"].append(f"default: {nb_path.name}")
    for file, entries in entries_by_file(folder).items():
        for entry in entries:
            notebook = entry["notebook"]
            _, groups = _template(notebook)
            written = {**(entry.get("params") or {}), **(entry.get("grid") or {})}
            for name, value in written.items():
                if name in groups and isinstance(value, dict):
                    keys = [f"{groups[name].__name__}.{k}" for k in value]
                else:
                    keys = [f"{notebook}.{name}"]
                for key in keys:
                    if f"{file}" not in out[key]:  # a file writes a setting once (or by anchor)
                        out[key].append(f"{file}")
    return dict(out)


def written_in_many(at_least: int = 3, folder: Path | None = None) -> dict[str, list[str]]:
    """The settings with `at_least` places or more."""
    return {k: v for k, v in places(folder).items() if len(v) >= at_least}
