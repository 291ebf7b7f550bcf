"""Tables that describe the shipped data: sizes, label balance, row lengths, examples, lexicon
agreement. The data page shows them and records their numbers, so a changed bundle shows up."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd

from mlmlib.paths import EMBEDDED_DIR

SENTIMENT_LISTS = ("vader", "bing", "afinn")  # the three lists that score sentiment in sign
SYNONYM_LABELS = {"pairs": "pairs", "words": "words", "pairs_n": "noun pairs",
                  "pairs_v": "verb pairs", "pairs_a": "adjective pairs", "pairs_r": "adverb pairs",
                  "split_80": "pairs in the 80% part", "split_20": "pairs in the 20% part"}


def manifest(folder: Path = EMBEDDED_DIR) -> dict:
    """The bundle's MANIFEST.json: file sizes, row counts, source package versions, checksums."""
    return json.loads((folder / "MANIFEST.json").read_text())


def bundle_files(manifest: dict) -> pd.DataFrame:
    """One row per bundle file: its bytes and, for tables, its rows."""
    return pd.DataFrame([{"file": name, "bytes": size, "rows": manifest["rows"].get(name, "")}
                         for name, size in manifest["bytes"].items()]).set_index("file")


def source_packages(manifest: dict) -> pd.DataFrame:
    """The Debian and PyPI packages the bundle was built from, with their versions."""
    return pd.DataFrame([{"package": name, "version": version, "from": source}
                         for source, key in (("Debian", "debian"), ("PyPI", "pypi"))
                         for name, version in manifest[key].items()]).set_index("package")


def licence_table(licences: str) -> str:
    """The markdown table of LICENSES.md (its attribution rows), without the licence texts."""
    return "\n".join(line for line in licences.splitlines() if line.startswith("|"))


def corpus_sizes(corpora: dict) -> pd.DataFrame:
    """Rows and whitespace-separated words of each split of each corpus."""
    return pd.DataFrame([{"dataset": name, "split": split, "rows": len(ds),
                          "words": sum(len(t.split()) for t in ds["text"])}
                         for name, data in corpora.items() for split, ds in data.items()])


def task_balance(tasks: dict) -> pd.DataFrame:
    """Per task and split: rows, classes present, the majority class and its share (the floor
    of accuracy)."""
    rows = []
    for name, data in tasks.items():
        names = data["train"].features["label"].names
        for split, ds in data.items():
            counts = np.bincount(ds["label"], minlength=len(names))
            rows.append({"task": name, "split": split, "rows": len(ds),
                         "classes present": int((counts > 0).sum()),
                         "majority class": names[counts.argmax()],
                         "majority share": round(counts.max() / len(ds), 3)})
    return pd.DataFrame(rows)


def example_rows(ds, n: int, rng: np.random.Generator, max_chars: int | None = None
                 ) -> pd.DataFrame:
    """`n` rows drawn by `rng` without replacement: their text (cut to `max_chars`) and, for a
    labelled set, the label's name first."""
    picked = ds.select(rng.choice(len(ds), n, replace=False))
    out = {"text": [t[:max_chars] for t in picked["text"]]}
    if "label" in ds.column_names:
        out = {"label": [ds.features["label"].names[y] for y in picked["label"]], **out}
    return pd.DataFrame(out)


def words_per_row(texts: dict) -> dict[str, np.ndarray]:
    """Whitespace-separated words in each row, per named list of texts."""
    return {name: np.array([len(t.split()) for t in rows]) for name, rows in texts.items()}


def length_percentiles(lengths: dict[str, np.ndarray]) -> pd.DataFrame:
    """Median and 95th percentile of words per row: what a max_length has to cover."""
    return pd.DataFrame({k: {"median words": int(np.median(v)),
                             "95th percentile": int(np.percentile(v, 95))}
                         for k, v in lengths.items()})


def synonym_counts(synonyms, seed: int) -> dict[str, int]:
    """Pairs and words of a synonym table, pairs per part of speech, and the sizes of its 80/20
    split (paper B's correction part and held-out part)."""
    held_in, held_out = synonyms.split(0.8, seed=seed)
    return {"pairs": len(synonyms), "words": len(synonyms.words()),
            **{f"pairs_{pos}": len(synonyms.pairs(pos)) for pos in ("n", "v", "a", "r")},
            "split_80": len(held_in), "split_20": len(held_out)}


def synonym_examples(synonyms, words, shown: int = 12) -> pd.DataFrame:
    """The first `shown` synonyms (sorted) of each word."""
    return pd.DataFrame({w: [", ".join(sorted(synonyms.synonyms(w))[:shown])] for w in words},
                        index=["synonyms"]).T.rename_axis("word")


def word_list_ranges(lists: dict[str, dict[str, float]]) -> pd.DataFrame:
    """Words and score range of each word list."""
    return pd.DataFrame([{"list": k, "words": len(v), "lowest score": min(v.values()),
                          "highest score": max(v.values())}
                         for k, v in lists.items()]).set_index("list")


def sign_agreement(lists: dict[str, dict[str, float]], names=SENTIMENT_LISTS) -> tuple[int, float]:
    """How many words all of `names` score, and the share of those whose score signs all agree."""
    shared = set.intersection(*(set(lists[name]) for name in names))
    agree = np.mean([all(np.sign(lists[a][w]) == np.sign(lists[b][w]) for a, b in pairwise(names))
                     for w in shared])
    return len(shared), float(agree)


def scores_of(lists: dict[str, dict[str, float]], words, names=SENTIMENT_LISTS) -> pd.DataFrame:
    """Each list's score of each word (None where the list lacks it)."""
    return pd.DataFrame({k: [lists[k].get(w) for w in words] for k in names},
                        index=list(words)).rename_axis("score of")


def pair_similarities(vectors, pairs) -> pd.DataFrame:
    """Cosine similarity of word pairs in a set of word vectors."""
    return pd.DataFrame({"cosine": [vectors.similarity(a, b) for a, b in pairs]},
                        index=[f"{a} ~ {b}" for a, b in pairs]).rename_axis("pair")


def neighbours(vectors, word: str, k: int = 8) -> pd.DataFrame:
    """The `k` nearest words to `word` by cosine."""
    column = f"neighbour of '{word}'"
    return pd.DataFrame(vectors.most_similar(word, k), columns=[column, "cosine"]).set_index(column)


def synonym_count_table(counts: dict[str, int]) -> pd.DataFrame:
    """synonym_counts() as a table with readable row names."""
    table = pd.Series(counts, name="count").rename(index=SYNONYM_LABELS)
    return table.rename_axis("WordNet").to_frame()
