"""The hub resources that the data layer's parameters select: tasks, corpora, vectors, and the
hub models and tokenizers a base model or tokenizer parameter names.

A paper declares its own in `mlmlib.papers.<paper>.resources`; the mirror and the rehearsal
read every declaration (mlmlib.offline.resources).
"""

from __future__ import annotations

from mlmlib.base_config import EMBEDDED, MINILM, BaseModelConfig
from mlmlib.data.corpora import HUB_CORPORA
from mlmlib.data.hub_resources import Resource, RunParameters
from mlmlib.data.tasks import HUB_TASKS
from mlmlib.data.vectors import ALIASES, GENSIM_VECTORS


def is_hub_model(name) -> bool:
    """A base model or tokenizer name the hub serves (the embedded and shipped ones need nothing)."""
    return isinstance(name, str) and not name.startswith(EMBEDDED) and name != MINILM


def hub_resources(p: RunParameters) -> list[Resource]:
    """The hub data, models and vectors a run's parameters name."""
    found = []
    for task in p.named("task", "tasks"):
        if task in HUB_TASKS:
            found.append(Resource("dataset", HUB_TASKS[task].path, HUB_TASKS[task].config, why=f"task {task}"))
    for corpus in p.named("corpus"):
        if corpus in HUB_CORPORA:
            source = HUB_CORPORA[corpus]
            found.append(Resource("dataset", source.path, source.config, why=f"corpus {corpus}",
                                  revision=source.revision))
    for name in [*p.named("base_model"), *p.fields_of(BaseModelConfig, "name")]:
        if is_hub_model(name):
            found.append(Resource("model", name, parts=(("model", "BertForMaskedLM"),), why="base model"))
    for name in p.named("base_tokenizer", "tokenizer"):
        if is_hub_model(name):
            found.append(Resource("model", name, parts=(("tokenizer", "AutoTokenizer"),), why="tokenizer"))
    arms = [arm.partition("@")[2] for arm in p.named("arms") if isinstance(arm, str)]
    for source in [*p.named("vectors", "source"), *arms]:
        name = ALIASES.get(source, source)
        if name in GENSIM_VECTORS:
            found.append(Resource("vectors", name, why=f"vectors {source}"))
    return found
