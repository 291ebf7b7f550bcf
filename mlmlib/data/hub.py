"""Hub access that fails at once, with one clear message, when there is no network.

The embedded bundle needs no network. Hub datasets, tokenizers and vectors do: before any
download we check the offline switches (HF_HUB_OFFLINE, HF_DATASETS_OFFLINE,
TRANSFORMERS_OFFLINE) and, if none is set, whether the hub's host answers within a couple
of seconds (one HEAD request, once per process). Without this check a plain
`datasets.load_dataset` retries for minutes.

A mirror replaces the network: with MLMLIB_HUB_MIRROR naming a folder, every hub loader of
mlmlib reads local copies in the hub's own formats from it and never goes online (no probe
either), so runs work on an air-gapped cluster and the paper plan can be rehearsed offline.
Its layout (`python -m mlmlib mirror --profile paper --to DIR` fills it):

    <mirror>/datasets/<hub path>/<config or "default">/   a DatasetDict.save_to_disk folder
    <mirror>/models/<hub name>/                           a save_pretrained folder (model and/or tokenizer)
    <mirror>/vectors/<gensim name>.kv                     a gensim KeyedVectors.save file

e.g. datasets/nyu-mll/glue/sst2/, models/bert-base-uncased/, vectors/glove-wiki-gigaword-300.kv.
A resource missing from the mirror raises HubUnavailableError at once, naming the folder looked in.

Downloads run one at a time per resource across processes (`download_lock`, a file lock in the
work folder, as the cache's builders hold): fifty jobs of a sweep starting together fetch a
resource once, and the others read the finished copy instead of racing its partial files.
"""

from __future__ import annotations

import os
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HUB_HOST = "huggingface.co"
CONNECT_TIMEOUT_S = 3.0
_TRUE = {"1", "ON", "YES", "TRUE"}
_reachable: dict[str, bool] = {}
MIRROR_ENV = "MLMLIB_HUB_MIRROR"
# The file that shows a part was saved in a mirror's model folder. It is checked before loading:
# transformers builds an empty tokenizer, without a word of warning, from a folder that has none.
MIRROR_MARKERS = {"model": "config.json", "tokenizer": "tokenizer_config.json"}


class HubUnavailableError(RuntimeError):
    """Raised when a hub dataset, model or vector set is asked for and cannot be downloaded."""


def offline_by_env() -> bool:
    """True if an offline switch of Hugging Face's libraries is set in the environment."""
    names = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
    return any(os.environ.get(n, "").upper() in _TRUE for n in names)


def library_offline(library: str = "datasets") -> bool:
    """True if the library itself runs offline: `datasets` or "hub" (huggingface_hub, used by
    transformers). Both read the switches once, at import, and HF_DATASETS_OFFLINE reaches only
    `datasets`."""
    if library == "datasets":
        import datasets

        return bool(datasets.config.HF_HUB_OFFLINE)
    if library == "hub":
        import huggingface_hub

        return bool(huggingface_hub.constants.HF_HUB_OFFLINE)
    raise ValueError(f"library={library!r} is unknown; allowed: datasets, hub")


def host_reachable(host: str = HUB_HOST, timeout: float = CONNECT_TIMEOUT_S) -> bool:
    """True if https://host answers an HTTP HEAD within the timeout (proxies from the environment apply)."""
    if host not in _reachable:
        result = [False]

        def attempt() -> None:
            try:
                urllib.request.urlopen(urllib.request.Request(f"https://{host}", method="HEAD"), timeout=timeout)
                result[0] = True
            except urllib.error.HTTPError:
                result[0] = True  # the server answered, even if with an error status
            except (OSError, ValueError):
                pass

        # A thread bounds the whole probe, DNS lookup included, which socket timeouts do not cover.
        worker = threading.Thread(target=attempt, daemon=True)
        worker.start()
        worker.join(timeout + 0.5)
        _reachable[host] = result[0]
    return _reachable[host]


def offline_message(what: str, alternative: str, reason: str, source: str = "the Hugging Face hub") -> str:
    """The one message every downloading loader raises when it cannot download."""
    hint = ""
    if source == "the Hugging Face hub":
        hint = " With a cached copy, set HF_HUB_OFFLINE=1 before starting Python to load from the cache."
    return (
        f"{what} is downloaded from {source} and needs the network, but {reason}. "
        f"The smoke profile uses the embedded {alternative} instead, which works offline.{hint}"
    )


@contextmanager
def download_lock(kind: str, name: str) -> Iterator[None]:
    """Hold the lock of one downloaded resource (`kind` 'dataset', 'model' or 'vectors')."""
    from mlmlib.atomic import file_lock
    from mlmlib.paths import work_dir

    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{kind}-{name}")
    with file_lock(work_dir() / "download-locks" / f"{safe}.lock"):
        yield


def require_hub(what: str, alternative: str, library: str = "datasets") -> str:
    """Return "online", or "cache" when an offline switch is set and the library will look only in
    its cache; raise HubUnavailableError at once when neither can work."""
    if offline_by_env():
        if library_offline(library):
            return "cache"
        # The switch was set after the library was imported (or it does not read this one),
        # so the library would still go online and retry: refuse here instead.
        raise HubUnavailableError(offline_message(what, alternative, "an offline switch (HF_*_OFFLINE) is set"))
    if not host_reachable():
        raise HubUnavailableError(
            offline_message(what, alternative, f"{HUB_HOST} cannot be reached from this machine")
        )
    return "online"


def mirror_root() -> Path | None:
    """The mirror folder MLMLIB_HUB_MIRROR names, or None when it is not set (then the network is used)."""
    value = os.environ.get(MIRROR_ENV, "").strip()
    return Path(value).expanduser() if value else None


def _under(root: Path, kind: str, *parts: str) -> Path:
    """root/kind/parts, refusing names that would leave the mirror (absolute, or with '..')."""
    for part in parts:
        if not part or Path(part).is_absolute() or ".." in Path(part).parts:
            raise ValueError(f"{part!r} is not a hub name that can sit in a mirror folder")
    return root.joinpath(kind, *parts)


def mirror_dataset_dir(root: Path, path: str, config: str | None) -> Path:
    """Where a hub dataset (path, config) sits in the mirror."""
    return _under(root, "datasets", path, config or "default")


def mirror_model_dir(root: Path, name: str) -> Path:
    """Where a hub model or tokenizer sits in the mirror."""
    return _under(root, "models", name)


def mirror_vectors_file(root: Path, name: str) -> Path:
    """Where a gensim vector set sits in the mirror."""
    return _under(root, "vectors", f"{name}.kv")


def not_in_mirror(what: str, where: Path, detail: str = "") -> HubUnavailableError:
    """The error for a resource the mirror lacks: names it and the folder looked in."""
    root = mirror_root()
    hint = f" (the mirror folder {root} does not exist)" if root and not root.is_dir() else ""
    return HubUnavailableError(
        f"{what} is not in the hub mirror ({MIRROR_ENV}): looked in {where}{hint}{detail}. "
        f"Fill the mirror on a machine with the network: python -m mlmlib mirror --profile <profile> --to <mirror>"
    )


def load_hub_dataset(what: str, alternative: str, path: str, config: str | None = None,
                     revision: str | None = None, **kwargs):
    """`datasets.load_dataset`, from the mirror when one is set, else after the offline check.

    `revision` (a branch or commit of the dataset) picks what is downloaded; a mirror holds the
    copy that was downloaded at it, so it is not asked again there."""
    root = mirror_root()
    if root is not None:
        return _mirrored_dataset(what, mirror_dataset_dir(root, path, config), **kwargs)
    return download_hub_dataset(what, alternative, path, config, revision=revision, **kwargs)


def _mirrored_dataset(what: str, folder: Path, split: str | None = None, streaming: bool = False, **kwargs):
    """A DatasetDict.save_to_disk folder, or one of its splits, as `load_dataset` would return it."""
    import datasets

    if kwargs:
        raise ValueError(f"{what}: {sorted(kwargs)} cannot be applied to a mirror copy; allowed: split, streaming")
    if not (folder / "dataset_dict.json").is_file():
        detail = "; the folder holds no DatasetDict (no dataset_dict.json)" if folder.is_dir() else ""
        raise not_in_mirror(what, folder, detail)
    data = datasets.load_from_disk(str(folder))
    if split is not None:
        if split not in data:
            raise not_in_mirror(f"{what} (split {split!r})", folder, f"; its splits: {', '.join(data)}")
        data = data[split]
    if streaming:  # callers written for the hub's streaming mode get what they expect
        return (data.to_iterable_dataset() if split is not None else
                datasets.IterableDatasetDict({k: v.to_iterable_dataset() for k, v in data.items()}))
    return data


def download_hub_dataset(what: str, alternative: str, path: str, config: str | None = None,
                         revision: str | None = None, **kwargs):
    """Call `datasets.load_dataset` after the offline check; a cache miss offline raises our message."""
    mode = require_hub(what, alternative)
    import datasets

    if revision is not None:
        kwargs["revision"] = revision
    try:
        with download_lock("dataset", f"{path}-{config}"):
            return datasets.load_dataset(path, config, **kwargs)
    except (ConnectionError, FileNotFoundError, OSError, ValueError) as err:
        if mode == "cache":
            raise HubUnavailableError(
                offline_message(what, alternative, "offline mode is set and no cached copy was found")
            ) from err
        raise


def load_hub_pretrained(what: str, alternative: str, loader, name: str, **kwargs):
    """A transformers `from_pretrained` loader, on the mirror's folder when one is set, else on the hub
    after the offline check."""
    root = mirror_root()
    if root is None:
        return download_hub_pretrained(what, alternative, loader, name, **kwargs)
    folder = mirror_model_dir(root, name)
    if not folder.is_dir():
        raise not_in_mirror(what, folder)
    part = "tokenizer" if "Tokenizer" in getattr(getattr(loader, "__self__", None), "__name__", "") else "model"
    if not (folder / MIRROR_MARKERS[part]).is_file():
        raise not_in_mirror(what, folder, f": it has no {MIRROR_MARKERS[part]}, the {part} was not saved there")
    try:
        return loader(str(folder), local_files_only=True, **kwargs)
    except OSError as err:  # the folder lacks the part asked for, e.g. a model folder without a tokenizer
        raise not_in_mirror(what, folder, f": {err}") from err


def download_hub_pretrained(what: str, alternative: str, loader, name: str, **kwargs):
    """Call a transformers `from_pretrained` loader after the offline check, with the same message."""
    mode = require_hub(what, alternative, library="hub")
    try:
        with download_lock("model", name):
            return loader(name, **kwargs)
    except OSError as err:
        if mode == "cache":
            raise HubUnavailableError(
                offline_message(what, alternative, "offline mode is set and no cached copy was found")
            ) from err
        raise
