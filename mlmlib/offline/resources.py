"""The registry of hub resources: every `resources` module that declares some, and what a plan needs.

The data layer declares its own (mlmlib.data.resources) and each paper may have a
`mlmlib.papers.<paper>.resources`; each has `hub_resources(RunParameters) -> [Resource]`.
A new paper's declarations are found by that name, so this module names no paper.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from types import ModuleType

from mlmlib.data.hub_resources import Resource, RunParameters, merged
from mlmlib.runs.plans import Plan, full_params, notebook_groups, notebooks_dir

DATA_DECLARATIONS = "mlmlib.data.resources"


def declaring_modules() -> list[ModuleType]:
    """The data layer's declarations, then each paper's that has a `resources` module."""
    import mlmlib.papers

    names = [DATA_DECLARATIONS]
    for paper in sorted(m.name for m in pkgutil.iter_modules(mlmlib.papers.__path__) if m.ispkg):
        name = f"mlmlib.papers.{paper}.resources"
        if importlib.util.find_spec(name) is not None:
            names.append(name)
    return [importlib.import_module(name) for name in names]


def needed(plan: Plan) -> list[Resource]:
    """The hub resources the plan's runs download, each once, in plan order."""
    modules = declaring_modules()
    found = []
    for run in plan.runs:
        groups = notebook_groups(str(notebooks_dir() / f"{run.notebook}.ipynb"))
        parameters = RunParameters(full_params(run.notebook, run.params), groups)
        for module in modules:
            found += module.hub_resources(parameters)
    return merged(found)
