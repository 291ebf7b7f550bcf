"""Building stand-ins into a mirror: a recipe per hub resource, each written whole or not at all."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from mlmlib.atomic import remove_dead_temps, temp_name
from mlmlib.data.hub_resources import Resource
from mlmlib.offline.standins.hub_sets import GLUE_LABELS, glue, imdb, openwebtext, squad, tweets
from mlmlib.offline.standins.models import tiny_bert, tiny_fsmt
from mlmlib.offline.standins.parsed import multi_nli, sst_ptb
from mlmlib.offline.standins.vectors import word_vectors


def _dataset_recipe(make: Callable) -> Callable[[Resource, Path], None]:
    return lambda resource, partial: make().save_to_disk(str(partial))


RECIPES: dict[tuple[str, str, str | None], Callable[[Resource, Path], None]] = {
    **{("dataset", "nyu-mll/glue", task): _dataset_recipe(lambda task=task: glue(task)) for task in GLUE_LABELS},
    ("dataset", "stanfordnlp/imdb", None): _dataset_recipe(imdb),
    ("dataset", "tweets-hate-speech-detection/tweets_hate_speech_detection", None): _dataset_recipe(tweets),
    ("dataset", "Skylion007/openwebtext", None): _dataset_recipe(openwebtext),
    ("dataset", "stanfordnlp/sst", "ptb"): _dataset_recipe(sst_ptb),
    ("dataset", "nyu-mll/multi_nli", None): _dataset_recipe(multi_nli),
    ("dataset", "rajpurkar/squad", None): _dataset_recipe(squad),
    ("model", "bert-base-uncased", None): lambda resource, partial: tiny_bert(partial),
    **{("model", name, None): lambda resource, partial: tiny_fsmt(resource.name, partial)
       for name in ("facebook/wmt19-en-de", "facebook/wmt19-de-en")},
    **{("vectors", name, None): lambda resource, partial: word_vectors(resource.name, partial)
       for name in ("word2vec-google-news-300", "glove-wiki-gigaword-300")},
}


def _key(resource: Resource) -> tuple[str, str, str | None]:
    return resource.kind, resource.name, resource.config


def recipe_labels() -> list[str]:
    """The resources a stand-in can be built for, as labels ('dataset nyu-mll/glue/sst2', ...)."""
    return [Resource(kind, name, config).label for kind, name, config in RECIPES]


def build_standins(root: Path, resources: list[Resource]) -> list[str]:
    """Write a tiny stand-in, in the mirror layout under root, for each resource the mirror lacks.

    Every resource is checked for a recipe before anything is built (ValueError naming it and the
    recipes there are). Each is built under a temporary name beside its target and renamed when
    whole, as `mirror.fetch` does, so an interrupted build never leaves a copy that looks complete.
    Returns the labels of what was built.
    """
    root = Path(root)
    unknown = [r.label for r in resources if _key(r) not in RECIPES]
    if unknown:
        raise ValueError(f"no stand-in recipe for {', '.join(unknown)}; recipes: {', '.join(recipe_labels())}")
    built = []
    with _quiet():
        for resource in resources:
            if resource.present(root):
                continue
            _build(resource, root)
            built.append(resource.label)
    return built


@contextmanager
def _quiet():
    """No progress bars from datasets and transformers for copies of a few dozen rows; restored after."""
    import datasets
    from transformers.utils import logging as transformers_logging

    bars = (datasets.is_progress_bar_enabled(), transformers_logging.is_progress_bar_enabled())
    datasets.disable_progress_bars()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bars[0]:
            datasets.enable_progress_bars()
        if bars[1]:
            transformers_logging.enable_progress_bar()


def _build(resource: Resource, root: Path) -> None:
    target = resource.target(root)
    partial = temp_name(target, "partial")
    partial.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_temps(target, "partial")  # what a killed build left
    _remove(partial)
    try:
        RECIPES[_key(resource)](resource, partial)
    except BaseException:
        _remove(partial)
        raise
    if target.is_dir():
        shutil.rmtree(target)  # an incomplete copy (a model folder that lacked a part)
    partial.rename(target)


def _remove(path: Path) -> None:
    """Delete a file or a folder, if there is one."""
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
