"""Fill a hub mirror with what a profile's runs download, so they can run where there is no network.

`python -m mlmlib mirror --profile paper --to DIR` downloads each hub dataset, model, tokenizer
and vector set the plan's runs need (through mlmlib's own loaders, online) and saves it in the
layout mlmlib.data.hub reads when MLMLIB_HUB_MIRROR=DIR; `--list` only says what DIR has.
What a run needs is read from its parameters (the plan's, over the notebook's defaults).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from mlmlib.atomic import temp_name
from mlmlib.data import hub
from mlmlib.runs.plans import Plan, notebook_parameters, notebooks_dir

PHRASE_LEVELS = ("long-phrase", "short-phrase")  # A5's perturbations that parse and back-translate


@dataclass(frozen=True)
class Resource:
    """One thing to mirror: a hub dataset (path, config), a model folder (name, parts) or a vector set."""

    kind: str  # "dataset", "model" or "vectors"
    name: str  # hub path, hub model name or gensim name
    config: str | None = None  # a dataset's config
    parts: tuple[tuple[str, str], ...] = ()  # a model folder's parts: ("model"|"tokenizer", transformers class)
    why: str = ""  # what asks for it, for the listing

    def target(self, root: Path) -> Path:
        """Its file or folder in a mirror at root."""
        if self.kind == "dataset":
            return hub.mirror_dataset_dir(root, self.name, self.config)
        if self.kind == "model":
            return hub.mirror_model_dir(root, self.name)
        return hub.mirror_vectors_file(root, self.name)

    def present(self, root: Path) -> bool:
        """True if the mirror at root holds it whole (a model folder: every part asked for)."""
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


def _is_hub_model(name) -> bool:
    """A base_model / tokenizer value the hub serves (the embedded and shipped ones need nothing)."""
    return isinstance(name, str) and not name.startswith("embedded") and name != "minilm-l6"


def needed(plan: Plan) -> list[Resource]:
    """The hub resources the plan's runs download, each once, in plan order."""
    from mlmlib.data.corpora import HUB_CORPORA
    from mlmlib.data.tasks import HUB_TASKS
    from mlmlib.data.vectors import ALIASES, GENSIM_VECTORS
    from mlmlib.papers.distributional.perturb import PARSED_TESTS, BackTranslator
    from mlmlib.qa import QA_TASKS, SQUAD_CONFIG, SQUAD_PATH

    found: dict[tuple, Resource] = {}
    models: dict[str, dict[str, str]] = {}  # name -> {part: class}, merged over runs

    def add(resource: Resource) -> None:
        found.setdefault((resource.kind, resource.name, resource.config), resource)

    def add_model(name: str, part: str, cls: str, why: str) -> None:
        add(Resource("model", name, why=why))
        models.setdefault(name, {})[part] = cls

    for run in plan.runs:
        p = {**notebook_parameters(str(notebooks_dir() / f"{run.notebook}.ipynb")), **run.params}
        for task in [p.get("task"), *p.get("tasks", [])]:
            if task in HUB_TASKS:
                add(Resource("dataset", HUB_TASKS[task].path, HUB_TASKS[task].config, why=f"task {task}"))
            if task in QA_TASKS:
                add(Resource("dataset", SQUAD_PATH, SQUAD_CONFIG, why=f"task {task}"))
        if p.get("corpus") in HUB_CORPORA:
            path, config, _ = HUB_CORPORA[p["corpus"]]
            add(Resource("dataset", path, config, why=f"corpus {p['corpus']}"))
        if _is_hub_model(p.get("base_model")):
            add_model(p["base_model"], "model", "BertForMaskedLM", "base_model")
        for key in ("base_tokenizer", "tokenizer"):
            if _is_hub_model(p.get(key)):
                add_model(p[key], "tokenizer", "AutoTokenizer", key)
        sources = [p.get("vectors"), p.get("source"), *(a.partition("@")[2] for a in p.get("arms", []))]
        for source in sources:
            name = ALIASES.get(source, source)
            if name in GENSIM_VECTORS:
                add(Resource("vectors", name, why=f"vectors {source}"))
        if run.notebook == "A5_real_finetune_perturb" and set(PHRASE_LEVELS) & set(p.get("perturbations", [])):
            if p.get("task") in PARSED_TESTS:
                path, config, _ = PARSED_TESTS[p["task"]]
                add(Resource("dataset", path, config, why=f"parsed test inputs of {p['task']}"))
            for name in (BackTranslator.forward, BackTranslator.backward):
                add_model(name, "model", "FSMTForConditionalGeneration", "translation model")
                add_model(name, "tokenizer", "FSMTTokenizer", "translation model")
    return [Resource(r.kind, r.name, r.config, tuple(sorted(models.get(r.name, {}).items())), r.why)
            if r.kind == "model" else r for r in found.values()]


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
        data = hub.download_hub_dataset(resource.label, alternative, resource.name, resource.config)
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
