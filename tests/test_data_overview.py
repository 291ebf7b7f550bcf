"""The data page's tables: sizes, label balance, examples, lengths and lexicon agreement."""

import numpy as np
import pandas as pd
import pytest
from datasets import ClassLabel, Dataset, Features, Value

from mlmlib.data import overview
from mlmlib.data.synonyms import SynonymTable


def _labelled(labels):
    features = Features({"text": Value("string"), "label": ClassLabel(names=["bad", "good"])})
    return Dataset.from_dict({"text": [f"text number {i}" for i in range(len(labels))],
                              "label": labels}, features=features)


def test_corpus_sizes_count_rows_and_words_per_split():
    corpora = {"c": {"train": Dataset.from_dict({"text": ["a b c", "d"]}),
                     "validation": Dataset.from_dict({"text": ["e f"]})}}
    assert overview.corpus_sizes(corpora).to_dict("records") == [
        {"dataset": "c", "split": "train", "rows": 2, "words": 4},
        {"dataset": "c", "split": "validation", "rows": 1, "words": 2}]


def test_task_balance_names_the_majority_class_and_its_share():
    tasks = {"t": {"train": _labelled([1, 1, 1, 0]), "test": _labelled([1, 1, 1])}}
    rows = overview.task_balance(tasks).to_dict("records")
    assert rows[0] == {"task": "t", "split": "train", "rows": 4, "classes present": 2,
                       "majority class": "good", "majority share": 0.75}
    assert rows[1]["classes present"] == 1 and rows[1]["majority share"] == 1.0


def test_example_rows_draw_from_the_generator_and_name_labels():
    ds = _labelled([0, 1, 0, 1, 0])
    rows = overview.example_rows(ds, 2, np.random.default_rng(0), max_chars=6)
    picked = np.random.default_rng(0).choice(5, 2, replace=False)
    assert list(rows.columns) == ["label", "text"] and rows["text"].tolist() == ["text n"] * 2
    assert rows["label"].tolist() == [["bad", "good"][i % 2] for i in picked]
    unlabelled = overview.example_rows(Dataset.from_dict({"text": ["x", "y"]}), 1,
                                       np.random.default_rng(0))
    assert list(unlabelled.columns) == ["text"]


def test_lengths_and_their_percentiles():
    lengths = overview.words_per_row({"a": ["one two", "one", "one two three four"]})
    assert lengths["a"].tolist() == [2, 1, 4]
    table = overview.length_percentiles(lengths)
    assert table.loc["median words", "a"] == 2 and table.loc["95th percentile", "a"] == 3


def test_sign_agreement_needs_every_list_to_agree():
    lists = {"vader": {"good": 1.9, "bad": -2.5, "odd": 0.5, "only": 1.0},
             "bing": {"good": 1, "bad": -1, "odd": 1},
             "afinn": {"good": 3, "bad": -3, "odd": -1}}
    assert overview.sign_agreement(lists) == (3, pytest.approx(2 / 3))
    table = overview.scores_of(lists, ["good", "only"])
    assert table.loc["good"].tolist() == [1.9, 1, 3] and pd.isna(table.loc["only", "bing"])


def test_synonym_counts_and_the_split_cover_every_pair():
    table = SynonymTable.from_synsets([("n", ["movie", "film", "picture"]),
                                       ("a", ["fast", "quick"])])
    counts = overview.synonym_counts(table, seed=0)
    assert counts["pairs"] == len(table) and counts["split_80"] + counts["split_20"] == len(table)
    assert counts["pairs_n"] + counts["pairs_a"] == len(table) and counts["pairs_v"] == 0
    shown = overview.synonym_count_table(counts)
    assert shown.loc["noun pairs", "count"] == counts["pairs_n"]
    assert overview.synonym_examples(table, ["movie"]).loc["movie", "synonyms"] == "film, picture"


def test_bundle_tables_read_the_manifest():
    manifest = {"bytes": {"a.txt": 10, "b.parquet": 20}, "rows": {"b.parquet": 3},
                "debian": {"wordnet": "3.0"}, "pypi": {"vader": "3.3"}}
    files = overview.bundle_files(manifest)
    assert files.loc["b.parquet", "rows"] == 3 and files.loc["a.txt", "rows"] == ""
    assert overview.source_packages(manifest).to_dict("index") == {
        "wordnet": {"version": "3.0", "from": "Debian"}, "vader": {"version": "3.3", "from": "PyPI"}}
    assert overview.licence_table("# Licences\n| a | b |\n|---|---|\ntext\n") == "| a | b |\n|---|---|"
    assert sum(overview.manifest()["bytes"].values()) > 0  # the shipped bundle's manifest
