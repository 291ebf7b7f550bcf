"""Hub access that fails at once, with one clear message, when there is no network.

The embedded bundle needs no network. Hub datasets, tokenizers and vectors do: before any
download we check the offline switches (HF_HUB_OFFLINE, HF_DATASETS_OFFLINE,
TRANSFORMERS_OFFLINE) and, if none is set, whether the hub's host answers within a couple
of seconds (one HEAD request, once per process). Without this check a plain
`datasets.load_dataset` retries for minutes.
"""

from __future__ import annotations

import os
import threading
import urllib.error
import urllib.request

HUB_HOST = "huggingface.co"
CONNECT_TIMEOUT_S = 3.0
_TRUE = {"1", "ON", "YES", "TRUE"}
_reachable: dict[str, bool] = {}


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


def load_hub_dataset(what: str, alternative: str, path: str, config: str | None = None, **kwargs):
    """Call `datasets.load_dataset` after the offline check; a cache miss offline raises our message."""
    mode = require_hub(what, alternative)
    import datasets

    try:
        return datasets.load_dataset(path, config, **kwargs)
    except (ConnectionError, FileNotFoundError, OSError, ValueError) as err:
        if mode == "cache":
            raise HubUnavailableError(
                offline_message(what, alternative, "offline mode is set and no cached copy was found")
            ) from err
        raise


def load_hub_pretrained(what: str, alternative: str, loader, name: str, **kwargs):
    """Call a transformers `from_pretrained` loader after the offline check, with the same message."""
    mode = require_hub(what, alternative, library="hub")
    try:
        return loader(name, **kwargs)
    except OSError as err:
        if mode == "cache":
            raise HubUnavailableError(
                offline_message(what, alternative, "offline mode is set and no cached copy was found")
            ) from err
        raise
