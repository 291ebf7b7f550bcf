"""Where a correction table can come from: WordNet's synonyms or word-vector neighbours."""

from __future__ import annotations

from mlmlib.data.synonyms import load_synonyms
from mlmlib.data.vectors import ALIASES, EMBEDDED_VECTORS, GENSIM_VECTORS

SYNONYM_SOURCES = ("wordnet", "nltk-wordnet")
VECTOR_SOURCES = (*EMBEDDED_VECTORS, *GENSIM_VECTORS, *ALIASES)
SOURCES = (*SYNONYM_SOURCES, *VECTOR_SOURCES)
OFFLINE_SOURCES = ("wordnet", *EMBEDDED_VECTORS)


def check_source(source: str) -> None:
    """Fail early on an unknown table source (availability is checked when it is loaded)."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES} (offline: {OFFLINE_SOURCES}), got {source!r}")


def load_source(source: str):
    """Load a synonym table or word vectors; a source that needs the network names the offline one."""
    check_source(source)
    try:
        if source in SYNONYM_SOURCES:
            return load_synonyms(source)
        from mlmlib.data import load_vectors

        return load_vectors(source)
    except (ImportError, RuntimeError, OSError) as err:  # HubUnavailableError is a RuntimeError/OSError
        alternative = "wordnet" if source in SYNONYM_SOURCES else EMBEDDED_VECTORS[0]
        raise ValueError(f"source={source!r} is not available here ({err}); the embedded "
                         f"alternative is source={alternative!r}") from err
