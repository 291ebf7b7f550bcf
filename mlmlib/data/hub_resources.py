"""What a run downloads from the hub, in words the data layer and each paper declare it with.

A `Resource` is one hub dataset, model folder or vector set, with its place in a mirror
(mlmlib.data.hub's layout). `RunParameters` is a run's every parameter, its groups resolved to
their fields, read by the names that select a resource: the data layer (mlmlib.data.resources)
and each paper (`mlmlib.papers.<paper>.resources`) declare, in a function of these, which of
their parameters name hub resources. The mirror and the rehearsal (mlmlib.offline) read those
declarations; nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Resource:
    """One thing to mirror: a hub dataset (path, config), a model folder (name, parts) or a vector set."""

    kind: str  # "dataset", "model" or "vectors"
    name: str  # hub path, hub model name or gensim name
    config: str | None = None  # a dataset's config
    parts: tuple[tuple[str, str], ...] = ()  # a model folder's parts: ("model"|"tokenizer", transformers class)
    why: str = ""  # what asks for it, for the listing
    revision: str | None = None  # a dataset's branch or commit to download (None: the default)

    def target(self, root: Path) -> Path:
        """Its file or folder in a mirror at root."""
        from mlmlib.data import hub

        if self.kind == "dataset":
            return hub.mirror_dataset_dir(root, self.name, self.config)
        if self.kind == "model":
            return hub.mirror_model_dir(root, self.name)
        return hub.mirror_vectors_file(root, self.name)

    def present(self, root: Path) -> bool:
        """True if the mirror at root holds it whole (a model folder: every part asked for)."""
        from mlmlib.data import hub

        where = self.target(root)
        if self.kind == "dataset":
            return (where / "dataset_dict.json").is_file()
        if self.kind == "model":
            return all((where / hub.MIRROR_MARKERS[part]).is_file() for part, _ in self.parts)
        return where.is_file()

    @property
    def label(self) -> str:
        """'dataset nyu-mll/glue/sst2', 'model bert-base-uncased (BertForMaskedLM, AutoTokenizer)', ..."""
        name = f"{self.name}/{self.config}" if self.config else self.name
        parts = f" ({', '.join(cls for _, cls in self.parts)})" if self.parts else ""
        return f"{self.kind} {name}{parts}"


class RunParameters:
    """A run's parameters as the resource declarations read them: by name, wherever they live.

    A name is a plain parameter (`task = "sst2"`) or a field of any group (`base = {...}`'s
    `tokenizer`): moving a parameter into a group does not hide the resource it selects.
    A field whose name says nothing alone (the base group's `name`) is read by its group's class.
    """

    def __init__(self, values: dict[str, Any], groups: dict[str, type]):
        self.values = values  # every parameter, each group resolved to a dict of every field
        self.groups = groups  # {group parameter: its dataclass}

    def named(self, *names: str) -> list:
        """The values of the plain parameters and group fields of these names, lists flattened."""
        found = []
        for name in names:
            if name not in self.groups:
                found.append(self.values.get(name))
            found += [self.values[group].get(name) for group in self.groups]
        return _flat(found)

    def fields_of(self, group: type, name: str) -> list:
        """Field `name` of every group of class `group` the run has."""
        return _flat([self.values[p].get(name) for p, cls in self.groups.items() if cls is group])


def _flat(values: list) -> list:
    out = []
    for value in values:
        out += value if isinstance(value, list) else [] if value is None else [value]
    return out


def merged(resources: Iterable[Resource]) -> list[Resource]:
    """Each resource once, in order of first mention; a model folder with every part any run asked for."""
    found: dict[tuple, Resource] = {}
    parts: dict[str, dict[str, str]] = {}
    for resource in resources:
        found.setdefault((resource.kind, resource.name, resource.config), resource)
        if resource.kind == "model":
            parts.setdefault(resource.name, {}).update(resource.parts)
    return [Resource(r.kind, r.name, r.config, tuple(sorted(parts[r.name].items())), r.why)
            if r.kind == "model" else r for r in found.values()]
