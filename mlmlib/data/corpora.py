"""Unlabelled English text for MLM pretraining: the embedded bundle offline, hub corpora at paper scale."""

from __future__ import annotations

import hashlib
import json
import lzma
from dataclasses import dataclass
from functools import cache

from datasets import Dataset, DatasetDict, concatenate_datasets

from mlmlib.data.hub import load_hub_dataset
from mlmlib.paths import EMBEDDED_DIR

EMBEDDED_CORPORA = ("austen", "wordnet-glosses", "embedded-english")
# Hub datasets whose default branch is a loading script (a .py file that the hub runs to build
# the data): `datasets` 4 and later refuse to run any such script, whatever the caller allows,
# so a corpus names a branch or commit of plain data files instead. Source -> the corpus to use.
SCRIPT_SOURCES = {"Skylion007/openwebtext": "openwebtext"}
# OpenWebText as plain parquet files, no script: the dataset owner's own conversion (93 files,
# the whole 8,013,769 documents, its script deleted), pinned by commit. Not the hub's automatic
# parquet export (revision "refs/convert/parquet"): for this dataset that export stops at a
# "partial-train" split of ten files, a fraction of the corpus.
OPENWEBTEXT_PARQUET = "cf22a3730519fbb9629cd35ddf1669bbfe9e2b97"


@dataclass(frozen=True)
class HubCorpus:
    """A hub corpus that `datasets.load_dataset` reads from plain data files (no loading script)."""

    path: str
    config: str | None = None
    column: str = "text"
    revision: str | None = None  # a branch or commit of data files; None: the default branch

    def __post_init__(self) -> None:
        if self.path in SCRIPT_SOURCES and self.revision is None:
            raise ValueError(f"{self.path}: its default branch is a dataset script, which datasets "
                             "4 and later refuse; name a revision of plain data files")


HUB_CORPORA = {
    "wikitext-2": HubCorpus("Salesforce/wikitext", "wikitext-2-raw-v1"),
    "wikitext-103": HubCorpus("Salesforce/wikitext", "wikitext-103-raw-v1"),
    "openwebtext": HubCorpus("Skylion007/openwebtext", revision=OPENWEBTEXT_PARQUET),
    "wikipedia": HubCorpus("wikimedia/wikipedia", "20231101.en"),
    "bookcorpus": HubCorpus("bookcorpus/bookcorpus"),
}
# Synsets whose definition hashes to a bucket >= this are the wordnet-lexname test split; the
# glosses corpus puts them in its validation split, so MLM pretraining never sees a test gloss.
# Hashing the definition (not the synset id) keeps the 1% of definitions shared by several
# synsets inside one split.
WORDNET_TEST_BUCKET = 90
WORDNET_VALIDATION_BUCKET = 80


@cache
def embedded_lines(filename: str) -> tuple[str, ...]:
    """Read the lines of one xz file of the embedded bundle (cached for the process)."""
    path = EMBEDDED_DIR / filename
    if not path.exists():
        raise FileNotFoundError(f"{path}: the embedded bundle is missing; run scripts/build_bundle.py")
    with lzma.open(path, "rt", encoding="utf-8") as f:
        return tuple(line.rstrip("\n") for line in f if line.strip())


@cache
def embedded_rows(filename: str) -> tuple[dict, ...]:
    """Read one JSONL file of the embedded bundle as dicts (cached; do not mutate them)."""
    return tuple(json.loads(line) for line in embedded_lines(filename))


def wordnet_bucket(definition: str) -> int:
    """The stable 0..99 bucket of a synset's definition that fixes its split in every WordNet dataset."""
    return int.from_bytes(hashlib.sha256(definition.encode()).digest()[:8], "big") % 100


@cache
def _austen() -> DatasetDict:
    rows = embedded_rows("austen.jsonl.xz")
    return DatasetDict(
        {s: Dataset.from_dict({"text": [r["text"] for r in rows if r["split"] == s]})
         for s in ("train", "validation")}
    )


@cache
def _wordnet_glosses() -> DatasetDict:
    # Definitions and usage examples, one sentence per row.
    texts: dict[str, list[str]] = {"train": [], "validation": []}
    for r in embedded_rows("wordnet.jsonl.xz"):
        split = "validation" if wordnet_bucket(r["definition"]) >= WORDNET_TEST_BUCKET else "train"
        texts[split].append(r["definition"][:1].upper() + r["definition"][1:] + ".")
        texts[split].extend(r["examples"])
    return DatasetDict({s: Dataset.from_dict({"text": t}) for s, t in texts.items()})


def load_corpus(name: str = "embedded-english", **kwargs) -> DatasetDict:
    """Load a text corpus as a DatasetDict with one column `text` (train, validation where present)."""
    # Built once per process; callers get their own DatasetDict (Datasets are immutable).
    if name == "austen":
        return DatasetDict(_austen())
    if name == "wordnet-glosses":
        return DatasetDict(_wordnet_glosses())
    if name == "embedded-english":
        parts = [_austen(), _wordnet_glosses()]
        return DatasetDict({s: concatenate_datasets([p[s] for p in parts]) for s in ("train", "validation")})
    check_corpus(name, "load_corpus: name")
    return _hub_corpus(name, **kwargs)


def check_corpus(name: str, parameter: str = "corpus") -> str:
    """`name` if it is a known corpus; a ValueError naming `parameter` otherwise, and for a hub
    dataset that only a loading script builds, the corpus to use instead."""
    if name in EMBEDDED_CORPORA or name in HUB_CORPORA:
        return name
    if name in SCRIPT_SOURCES:
        import datasets

        raise ValueError(f"{parameter}={name!r}: this hub dataset is built by a loading script, which "
                         f"datasets {datasets.__version__} refuses to run; use {parameter}="
                         f"{SCRIPT_SOURCES[name]!r} instead (the same text as plain parquet files)")
    known = [*EMBEDDED_CORPORA, *HUB_CORPORA]
    raise ValueError(f"{parameter}={name!r} is unknown; known corpora: {', '.join(known)}")


def _hub_corpus(name: str, **kwargs):
    """Download a hub corpus (kwargs go to `datasets.load_dataset`, e.g. streaming=True) as `text` only."""
    source = HUB_CORPORA[name]
    data = load_hub_dataset(f"corpus {name!r}", 'corpus "embedded-english"', source.path,
                            source.config, revision=source.revision, **kwargs)
    column = source.column
    data = data.select_columns([column])
    if column != "text":
        data = data.rename_column(column, "text")
    data = data.filter(lambda t: bool(t.strip()), input_columns="text")  # wikitext has many empty lines
    if isinstance(data, DatasetDict) and "validation" not in data and "train" in data:
        # OpenWebText and Wikipedia have no validation split: carve a small seeded one.
        size = min(0.005, 10_000 / len(data["train"]))
        parts = data["train"].train_test_split(test_size=size, seed=0)
        data = DatasetDict({**data, "train": parts["train"], "validation": parts["test"]})
    return data
