"""Sweep plans: for each notebook of a profile, a parameter grid that expands to runs.

A notebook parameter is either a plain literal (`seed = 0`), checked against the template's
default, or a parameter group (`setup = {}`), a mapping of overrides of the dataclass that the
parameters cell's metadata names (mlmlib.configs): its keys and value types are checked against
that dataclass's fields, and records carry the group resolved to every field.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from mlmlib import configs
from mlmlib.paths import project_root
from mlmlib.runs.plan_files import PlanError, compose, read_yaml

ENTRY_KEYS = {"notebook", "chapter", "title", "timeout", "grid", "params", "needs", "alone", "gpu_hours",
              "gpu_mfu", "gpu_loop", "device", "disk_gb", "resources"}
# what a SLURM job of an entry asks for, beyond the plan-wide options (mlmlib.runs.executors)
RESOURCES = {"cpus": int, "mem_gb": float, "time_min": float}
DEVICES = ("cpu", "gpu")  # what an entry's `device:` may say
RESERVED = {"run_dir"}  # set by the runner, never by a plan
DEFAULT_TIMEOUT = 1800
# a SLURM job's code snapshot (mlmlib.runs.snapshot): its notebooks, plans and package are read
# there, its records and checkpoints written in the project (MLMLIB_ROOT)
CODE_ENV = "MLMLIB_CODE"


@dataclass
class Run:
    """One grid point: a notebook and the full set of parameters it gets."""

    notebook: str
    params: dict[str, Any]
    grid_keys: tuple[str, ...]
    chapter: str
    title: str
    timeout: int
    needs: tuple[str, ...] = ()  # notebooks whose runs must have finished first (their artifacts)
    alone: bool = False  # it measures time: the local executor runs nothing beside it
    gpu_hours: float | None = None  # the plan's estimate for this run (mlmlib.runs.budget)
    # the MFU that estimate assumed for its training, and the timed loop (scripts/gpu_check.py's
    # timing name) that stands for that training: a measured MFU replaces the assumed one
    gpu_mfu: float | None = None
    gpu_loop: str | None = None
    # `device: gpu`: it trains on a GPU, so it refuses to start where CUDA is absent and a SLURM
    # job asks for one GPU; `cpu`: it needs none and a SLURM job asks for none; None (left out):
    # cpu for the check, and SLURM's GPUs are what --gpus-per-run says
    device: str | None = None
    # the disk space (GB) one run writes at its peak, checkpoints and cached artifacts: a run
    # refuses to start on a work folder with less free (mlmlib.runs.disk); None: not checked
    disk_gb: float | None = None
    # `resources: {cpus, mem_gb, time_min}`: a SLURM job of the entry asks for these in place of
    # the plan-wide --cpus-per-run, --mem-gb and --time-min (B0 tokenizes on many cores, a
    # summary needs one); {} takes the plan-wide ones
    resources: dict[str, float] = field(default_factory=dict)

    @property
    def slug(self) -> str:
        """A readable, file-safe name from the grid values (e.g. 'method-mix_seed-1')."""
        if not self.grid_keys:
            return "run"
        parts = [f"{k}-{_short(self.params[k])}" for k in self.grid_keys]
        return "_".join(parts)

    @property
    def label(self) -> str:
        """Grid values as a short caption, for the table of contents."""
        return ", ".join(f"{k}={_short(self.params[k])}" for k in self.grid_keys) or "run"

    def key(self, code_version: str) -> str:
        """Hash of notebook, parameters and code version: a record with it can be skipped."""
        blob = json.dumps([self.notebook, self.params, code_version], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass
class Plan:
    """A profile's plan: its runs in order, and where it came from."""

    profile: str
    path: Path
    description: str
    runs: list[Run] = field(default_factory=list)
    slurm: dict[str, Any] = field(default_factory=dict)  # resources per run on a SLURM cluster
    only: tuple[str, ...] = ()  # the notebooks it was cut down to (--only); () is the whole plan

    def prerequisites(self, i: int) -> list[int]:
        """The runs that run i waits for when runs execute side by side.

        A run waits for the runs of the notebooks its entry `needs` (fine-tuning needs the
        pretrained models; a summary, the records it reads). A summary (a notebook with a
        `profile` parameter) without `needs` reads every record above it and waits for them all.
        """
        run = self.runs[i]
        if is_summary(run.notebook) and not run.needs:
            return list(range(i))
        return [j for j in range(i) if self.runs[j].notebook in run.needs]


def chain_times(plan: Plan, last: list[float | None]) -> list[float]:
    """For each run, its expected seconds plus the longest chain of runs that wait on it.

    Started in this order (critical path first), the runs a batch must do one after another
    begin early: in smoke, A2's one minute gates A3's nine, and ordering by a run's own time
    left A2 behind C2's seeds and A3 alone on one core at the end. A run never timed counts
    as its timeout: an upper bound whose ratio to the real time differs between notebooks, so
    a first batch (no records yet) is ordered roughly, later ones by measured times.
    """
    own = [t if t is not None else float(run.timeout) for t, run in zip(last, plan.runs)]
    waiting: list[list[int]] = [[] for _ in plan.runs]
    for j in range(len(plan.runs)):
        for i in plan.prerequisites(j):
            waiting[i].append(j)
    chain = [0.0] * len(plan.runs)
    for i in reversed(range(len(plan.runs))):  # a run waits only on runs above it
        chain[i] = own[i] + max((chain[j] for j in waiting[i]), default=0.0)
    return chain


def code_root() -> Path:
    """The folder whose `notebooks/` (templates, plans) and `mlmlib/` a run executes: the code
    snapshot a SLURM job was submitted with (MLMLIB_CODE), else the project."""
    code = os.environ.get(CODE_ENV)
    return Path(code) if code else project_root()


def code_package() -> Path | None:
    """The snapshot's mlmlib package when there is one (MLMLIB_CODE), else None (the imported
    one)."""
    return code_root() / "mlmlib" if os.environ.get(CODE_ENV) else None


def plans_dir() -> Path:
    """Return the folder holding the plan files."""
    return code_root() / "notebooks" / "plans"


def is_summary(notebook: str) -> bool:
    """A summary notebook reads other runs' records: it has a `profile` parameter."""
    return "profile" in notebook_parameters(str(notebooks_dir() / f"{notebook}.ipynb"))


def notebooks_dir() -> Path:
    """Return the folder holding the notebook templates (a job's code snapshot's: code_root)."""
    return code_root() / "notebooks"


def available_profiles() -> list[str]:
    """List the profiles that have a plan file."""
    return sorted(p.stem for p in plans_dir().glob("*.yaml"))


NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def check_name(what: str, name: Any) -> str:
    """A profile or notebook name is a plain file name: no '/', no '..', nothing hidden."""
    if not isinstance(name, str) or not NAME.match(name) or ".." in name:
        raise PlanError(f"{what} {name!r}: use letters, digits, '_', '-' and '.' only "
                        "(no '/' or '..': it names a file in the project)")
    return name


def load_plan(profile: str, only: list[str] | None = None) -> Plan:
    """Read, validate and expand a profile's plan; raise PlanError before anything runs.

    `<profile>-rehearsal` is the profile's plan with the sizes of its rehearsal overlay
    (see `rehearsal_data`): its own records, the same notebooks, kinds and hub names.
    """
    check_name("profile", profile)
    base = rehearsed_profile(profile)
    path = plans_dir() / f"{base or profile}.yaml"
    if not path.exists():
        raise PlanError(f"unknown profile {profile!r}: no {path}; available: {available_profiles()}")
    data = compose(path)
    if base:
        data = rehearsal_data(data, profile)
    if not isinstance(data.get("slurm") or {}, dict):
        raise PlanError(f"{path}: 'slurm' must be a mapping (partition, time_min, cpus_per_run, ...)")
    plan = Plan(profile=profile, path=path, description=str(data.get("description", "")),
                slurm=dict(data.get("slurm") or {}), only=tuple(only or ()))
    names = [e.get("notebook") for e in data["notebooks"] if isinstance(e, dict)]
    for name in only or []:
        if name not in names:
            raise PlanError(f"--only {name!r}: not in {path.name}; notebooks there: {names}")
    for i, entry in enumerate(data["notebooks"]):
        where = f"{path}: notebooks[{i}]"
        if not isinstance(entry, dict):
            raise PlanError(f"{where}: expected a mapping, got {type(entry).__name__}")
        if only and entry.get("notebook") not in only:
            continue
        plan.runs.extend(_expand(entry, where, profile))
    for i, entry in enumerate(data["notebooks"]):  # needs: notebooks of entries above this one
        needs, above = entry.get("needs", []), names[:i]
        if not isinstance(needs, list) or any(n not in above for n in needs):
            raise PlanError(f"{path}: notebooks[{i}] ({entry.get('notebook')}): needs = {needs!r}: "
                            f"give a list of notebooks of entries above it; above it: {above}")
    seen: dict[str, dict] = {}
    for run in plan.runs:  # two entries of one notebook must not write the same record
        name = f"{run.notebook}/{run.slug}"
        if name in seen and seen[name] != run.params:
            raise PlanError(f"{path}: two runs of {run.notebook} are both named {run.slug!r}; "
                            "put the parameter that tells them apart in their grid")
        seen[name] = run.params
    return plan


REHEARSAL = "-rehearsal"


def rehearsal_overlay_path(profile: str) -> Path:
    """The file of sizes that shrink a profile's plan for its rehearsal."""
    return plans_dir() / "rehearse" / f"{profile}.yaml"


def rehearsed_profile(profile: str) -> str | None:
    """'paper' for 'paper-rehearsal' (when paper has a rehearsal overlay), else None."""
    if not profile.endswith(REHEARSAL) or (plans_dir() / f"{profile}.yaml").exists():
        return None
    base = profile[: -len(REHEARSAL)]
    if not rehearsal_overlay_path(base).exists():
        have = sorted(p.stem for p in rehearsal_overlay_path(base).parent.glob("*.yaml"))
        raise PlanError(f"profile {profile!r}: {base!r} has no rehearsal sizes "
                        f"({rehearsal_overlay_path(base)}); profiles that can be rehearsed: {have}")
    return base


def rehearsal_data(data: dict, profile: str) -> dict:
    """The plan's entries with the overlay's sizes: a rehearsal of the same code paths.

    The overlay (notebooks/plans/rehearse/<profile>.yaml) maps a notebook to `params` that
    replace numbers only (steps, widths, layers, example counts, lists of ratios), to `grid`
    values that must be a subset of the plan's (fewer seeds, never another arm), and to a
    `timeout`. Text, flags and lists of names (hub models, tokenizers, tasks, arms, metrics)
    cannot be overridden: what the rehearsal runs is what the plan runs, at a smaller size.
    Summaries read the rehearsal's own records.
    """
    path = rehearsal_overlay_path(profile[: -len(REHEARSAL)])
    overlay = read_yaml(path)
    if not isinstance(overlay, dict) or not isinstance(overlay.get("notebooks"), dict):
        raise PlanError(f"{path}: expected a mapping with a 'notebooks' mapping (notebook -> sizes)")
    if set(overlay) - {"notebooks", "shared"}:
        raise PlanError(f"{path}: unknown key(s) {sorted(set(overlay) - {'notebooks', 'shared'})}; "
                        "allowed: notebooks, shared (YAML anchors)")
    in_plan = {e.get("notebook") for e in data["notebooks"] if isinstance(e, dict)}
    for name, sizes in overlay["notebooks"].items():
        if name not in in_plan:
            raise PlanError(f"{path}: notebook {name!r} is not in the plan; its notebooks: {sorted(in_plan)}")
        if not isinstance(sizes, dict) or set(sizes) - {"params", "grid", "timeout"}:
            raise PlanError(f"{path}: {name}: give a mapping with params, grid and/or timeout")
    entries = []
    for entry in data["notebooks"]:
        entry = dict(entry)
        name = entry.get("notebook")
        sizes = overlay["notebooks"].get(name, {})
        where = f"{path}: {name}"
        params = dict(entry.get("params") or {})
        nb_path = str(notebooks_dir() / f"{name}.ipynb")
        declared, groups = notebook_parameters(nb_path), notebook_groups(nb_path)
        for key, value in (sizes.get("params") or {}).items():
            if key not in declared:
                raise PlanError(f"{where}: unknown parameter {key!r}; the notebook has: {sorted(declared)}")
            planned = params.get(key, declared[key])
            if key in groups:
                params[key] = _group_sizes(where, key, value, planned, groups[key])
            else:
                _check_size(where, key, value, planned)
                params[key] = value
        grid = dict(entry.get("grid") or {})
        for key, values in (sizes.get("grid") or {}).items():
            if key in grid:  # an entry without this grid key keeps its parameter as it is
                if not isinstance(values, list) or not values:
                    raise PlanError(f"{where}: grid.{key} must be a non-empty list")
                kept = [v for v in grid[key] if v in values]
                if len(kept) != len(values):
                    raise PlanError(f"{where}: grid.{key} = {values!r}: a rehearsal runs a subset "
                                    f"of the plan's values {grid[key]!r}")
                grid[key] = kept
        if "profile" in params:
            params["profile"] = profile
        entry["params"], entry["grid"] = params, grid
        if "timeout" in sizes:
            entry["timeout"] = sizes["timeout"]
        entry.pop("device", None)  # a rehearsal runs anywhere, CPU included: no CUDA check
        entry.pop("disk_gb", None)  # and writes tiny checkpoints: no paper-size disk check
        entries.append(entry)
    return {**data, "description": f"rehearsal of {data.get('description', '')}".strip(),
            "notebooks": entries}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _group_sizes(where: str, key: str, value: Any, planned: Any, group: type) -> dict:
    """The plan's overrides of a group with the rehearsal's numbers in it (sizes only, as flat)."""
    if not isinstance(value, dict):
        raise PlanError(f"{where}: params.{key} = {value!r}: {key} is a group ({group.__name__}); "
                        "give a mapping of its fields to sizes")
    planned = planned if isinstance(planned, dict) else {}  # a wrong plan value: _expand names it
    resolved = configs.resolve(group, planned)
    for field_name, number in value.items():
        if field_name not in resolved:
            raise PlanError(f"{where}: params.{key}: unknown field {field_name!r} of {group.__name__}; "
                            f"its fields: {sorted(resolved)}")
        _check_size(where, f"{key}.{field_name}", number, resolved[field_name])
    return {**planned, **value}


def _check_size(where: str, key: str, value: Any, planned: Any) -> None:
    """A rehearsal may change a number (or a list of numbers) where the plan has one, nothing else."""
    numbers = _is_number(value) or (isinstance(value, list) and all(_is_number(v) for v in value))
    was = _is_number(planned) or planned is None or (
        isinstance(planned, list) and all(_is_number(v) for v in planned))
    if not (numbers and was):
        raise PlanError(f"{where}: params.{key} = {value!r}: a rehearsal changes sizes only (numbers "
                        f"or lists of numbers), and the plan has {planned!r} there")


def _expand(entry: dict, where: str, profile: str) -> list[Run]:
    """Validate one plan entry against its notebook's parameters and expand its grid; a summary
    (a notebook with a `profile` parameter) reads `profile`'s records unless the entry says."""
    unknown = set(entry) - ENTRY_KEYS
    if unknown:
        raise PlanError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(ENTRY_KEYS)}")
    name = entry.get("notebook")
    if isinstance(name, str):
        check_name(f"{where}: notebook", name)
    nb_path = notebooks_dir() / f"{name}.ipynb"
    if not isinstance(name, str) or not nb_path.exists():
        known = sorted(p.stem for p in notebooks_dir().glob("*.ipynb"))
        raise PlanError(f"{where}: unknown notebook {name!r}; notebooks: {known}")
    where = f"{where} ({name})"
    grid = entry.get("grid") or {}
    fixed = entry.get("params") or {}
    for key, value in (("grid", grid), ("params", fixed)):
        if not isinstance(value, dict):
            raise PlanError(f"{where}: '{key}' must be a mapping of parameter names to values")
    declared, groups = notebook_parameters(str(nb_path)), notebook_groups(str(nb_path))
    for key, value in [*grid.items(), *fixed.items()]:
        if key in RESERVED:
            raise PlanError(f"{where}: '{key}' is set by the runner; remove it from the plan")
        if key not in declared:
            raise PlanError(f"{where}: unknown parameter {key!r}; the notebook has: {sorted(declared)}")
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise PlanError(f"{where}: grid.{key} must be a non-empty list of values")
        for v in values:
            _check_value(where, f"grid.{key}", v, declared[key], groups.get(key))
    for key, value in fixed.items():
        _check_value(where, f"params.{key}", value, declared[key], groups.get(key))
    if not isinstance(entry.get("alone", False), bool):
        raise PlanError(f"{where}: alone must be true or false, got {entry['alone']!r}")
    timeout = entry.get("timeout", DEFAULT_TIMEOUT)
    if not isinstance(timeout, int) or timeout <= 0:
        raise PlanError(f"{where}: timeout must be a positive number of seconds, got {timeout!r}")
    gpu_hours = entry.get("gpu_hours")
    if gpu_hours is not None and (not _is_number(gpu_hours) or not 0 < gpu_hours < float("inf")):
        raise PlanError(f"{where}: gpu_hours must be a positive number (the estimated GPU-hours of "
                        f"each run of the entry), got {gpu_hours!r}")
    disk_gb = entry.get("disk_gb")
    if disk_gb is not None and (not _is_number(disk_gb) or not 0 < disk_gb < float("inf")):
        raise PlanError(f"{where}: disk_gb must be a positive number (the GB one run of the entry "
                        f"writes at its peak), got {disk_gb!r}")
    gpu_mfu, gpu_loop = entry.get("gpu_mfu"), entry.get("gpu_loop")
    if (gpu_mfu is None) != (gpu_loop is None) or (gpu_mfu is not None and gpu_hours is None):
        raise PlanError(f"{where}: gpu_mfu and gpu_loop go together, beside gpu_hours (the MFU the "
                        "estimate assumed and the timed loop that stands for its training)")
    if gpu_mfu is not None and (not _is_number(gpu_mfu) or not 0 < gpu_mfu <= 1
                                or not isinstance(gpu_loop, str)):
        raise PlanError(f"{where}: gpu_mfu must be in (0, 1] and gpu_loop a timing's name, got "
                        f"{gpu_mfu!r} and {gpu_loop!r}")
    resources = entry.get("resources") or {}
    if not isinstance(resources, dict) or set(resources) - set(RESOURCES) or any(
            not _is_number(v) or v <= 0 or (RESOURCES[k] is int and not isinstance(v, int))
            for k, v in resources.items()):
        raise PlanError(f"{where}: resources = {resources!r}: give a mapping of {sorted(RESOURCES)} "
                        "to positive numbers (cpus a whole number)")
    device = entry.get("device")
    if device is not None and device not in DEVICES:
        raise PlanError(f"{where}: device must be one of {list(DEVICES)} (gpu: it trains on a GPU and "
                        f"refuses to start without CUDA; cpu: it needs none), got {device!r}")
    if "profile" in declared and "profile" not in grid:
        fixed = {**fixed, "profile": fixed.get("profile", profile)}
    runs = []
    for values in itertools.product(*grid.values()):
        params = {**fixed, **dict(zip(grid, values))}
        runs.append(Run(
            notebook=name, params=params, grid_keys=tuple(grid), timeout=timeout,
            chapter=str(entry.get("chapter", "")), title=str(entry.get("title", name)),
            needs=tuple(entry.get("needs", [])), alone=entry.get("alone", False),
            gpu_hours=None if gpu_hours is None else float(gpu_hours), device=device,
            gpu_mfu=None if gpu_mfu is None else float(gpu_mfu), gpu_loop=gpu_loop,
            resources={k: RESOURCES[k](v) for k, v in resources.items()},
            disk_gb=None if disk_gb is None else float(disk_gb),
        ))
    return runs


def _parameters_cell(nb_path: str):
    import nbformat

    nb = nbformat.read(nb_path, as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise PlanError(f"{nb_path}: expected exactly one cell tagged 'parameters', found {len(cells)}")
    return cells[0]


@cache
def notebook_parameters(nb_path: str) -> dict[str, Any]:
    """Return the parameters cell of a notebook as {name: default value}."""
    import ast

    params = {}
    for node in ast.parse(_parameters_cell(nb_path).source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            raise PlanError(f"{nb_path}: the parameters cell must hold plain 'name = literal' lines")
        try:
            params[node.targets[0].id] = ast.literal_eval(node.value)
        except ValueError as exc:
            raise PlanError(
                f"{nb_path}: parameter {node.targets[0].id!r} is not a plain literal"
            ) from exc
    return params


@cache
def notebook_groups(nb_path: str) -> dict[str, type]:
    """The notebook's parameter groups, {parameter: its dataclass}, from the parameters cell's
    metadata (configs.METADATA_KEY); {} for a notebook of plain parameters only."""
    declared = _parameters_cell(nb_path).get("metadata", {}).get(configs.METADATA_KEY, {})
    defaults = notebook_parameters(nb_path)
    if not isinstance(declared, dict):
        raise PlanError(f"{nb_path}: metadata {configs.METADATA_KEY} must map a parameter to "
                        "'package.module:ClassName'")
    groups = {}
    for name, path in declared.items():
        if not isinstance(defaults.get(name), dict):
            raise PlanError(f"{nb_path}: {configs.METADATA_KEY} names {name!r}, which is not a "
                            "parameter of the form `name = {...}` (a group's overrides)")
        try:
            groups[name] = configs.load_class(str(path))
        except (ImportError, ValueError) as exc:
            raise PlanError(f"{nb_path}: parameter {name!r}: {exc}") from exc
    return groups


def full_params(notebook: str, params: dict[str, Any]) -> dict[str, Any]:
    """Every parameter a run of `notebook` gets: the template's defaults overridden by `params`,
    each group resolved to every field (what records and summaries read)."""
    nb_path = str(notebooks_dir() / f"{notebook}.ipynb")
    values = {**notebook_parameters(nb_path), **params}
    for name, group in notebook_groups(nb_path).items():
        values[name] = configs.resolve(group, values[name])
    return values


def _check_value(where: str, key: str, value: Any, default: Any, group: type | None) -> None:
    """A group's value: known fields of the right types that its dataclass accepts; a plain
    parameter's: the type of the notebook's default."""
    if group is None:
        _check_type(where, key, value, default)
        return
    try:
        configs.build(group, value, f"{where}: {key}")
    except (TypeError, ValueError) as exc:
        raise PlanError(str(exc)) from None


def _check_type(where: str, key: str, value: Any, default: Any) -> None:
    """Reject a value whose type does not match the notebook's default (ints may stand for floats).

    null only where the default is None; inside lists, each element is checked against the
    default list's elements (when the default has any).
    """
    if default is None:
        return
    if value is None:
        raise PlanError(f"{where}: {key} = null, but the notebook's default is "
                        f"{default!r}: give a {type(default).__name__}")
    if not _same_type(value, default):
        raise PlanError(
            f"{where}: {key} = {value!r} is a {type(value).__name__}; "
            f"the notebook's default is a {type(default).__name__} ({default!r})"
        )
    if isinstance(default, list) and default:
        kinds = {type(d) for d in default}
        for i, item in enumerate(value):
            if not any(_same_type(item, d) for d in default):
                raise PlanError(f"{where}: {key}[{i}] = {item!r} is a {type(item).__name__}; the "
                                f"notebook's default holds {'/'.join(sorted(k.__name__ for k in kinds))}"
                                f" ({default!r})")


def _same_type(value: Any, default: Any) -> bool:
    """True when value may stand where default stands (an int for a float, not a bool for an int)."""
    expected = type(default)
    if expected is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, expected)


def _short(value: Any) -> str:
    """A compact, file-safe rendering of a grid value."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    text = "".join(ch if ch.isalnum() or ch in ".-" else "." for ch in str(text))
    return text[:40]


def planned_params(profile: str, notebook: str) -> list[dict[str, Any]]:
    """Every parameter of each run of `notebook` in `profile`'s plan (`full_params`: what a
    summary compares its own dose with); [] if none."""
    if profile not in available_profiles():
        return []
    return [full_params(notebook, run.params) for run in load_plan(profile).runs if run.notebook == notebook]
