"""Stand-ins for the paper plan's hub resources: built offline into a mirror, they load through mlmlib's
own loaders, by hub name, with the hub's schemas, and the network is never touched."""

from __future__ import annotations

import pytest

from mlmlib.data import hub, load_corpus, load_task, load_vectors
from mlmlib.data.tasks import HUB_TASKS
from mlmlib.data.hub_resources import Resource
from mlmlib.runs.plans import load_plan
from mlmlib.offline.resources import needed
from mlmlib.offline.standins import build_standins

SQUAD = Resource("dataset", "rajpurkar/squad")
GLUE = ("sst2", "cola", "mrpc", "qnli", "rte", "mnli", "qqp")


@pytest.fixture(scope="module")
def resources():
    return [*needed(load_plan("paper")), SQUAD]


@pytest.fixture(scope="module")
def root(tmp_path_factory, resources):
    root = tmp_path_factory.mktemp("standins")
    build_standins(root, resources)
    return root




def test_every_resource_is_built_whole_and_once(root, resources):
    assert all(r.present(root) for r in resources)
    assert not list(root.rglob(".*partial")), "a temporary copy was left behind"
    assert build_standins(root, resources) == []  # present: nothing is rebuilt


@pytest.mark.parametrize("task", GLUE)
def test_glue_tasks_load_with_the_hub_schema(root, mirrored, task):
    import datasets

    raw = datasets.load_from_disk(str(hub.mirror_dataset_dir(root, "nyu-mll/glue", task)))
    tests = [s for s in raw if s.startswith("test")]
    assert tests and all(set(raw[s]["label"]) == {-1} for s in tests)  # hidden labels, as GLUE serves them
    assert raw["train"].features["idx"].dtype == "int32"
    data = load_task(task)
    pair = HUB_TASKS[task].text_pair is not None
    assert data["train"].column_names == ["text", *(["text_pair"] if pair else []), "label"]
    assert set(data) == ({"train", "validation", "validation_mismatched"} if task == "mnli" else {"train", "validation"})
    names = data["train"].features["label"].names
    assert names == raw["train"].features["label"].names
    for split in data.values():
        assert set(split["label"]) == set(range(len(names)))  # every class in every split
    assert mirrored == []


def test_imdb_and_hate_speech_load(mirrored):
    imdb = load_task("imdb")
    assert set(imdb) == {"train", "validation", "test"}  # unsupervised dropped, validation carved from train
    assert imdb["test"].features["label"].names == ["neg", "pos"] and set(imdb["test"]["label"]) == {0, 1}
    tweets = load_task("tweets-hate-speech")
    assert set(tweets) == {"train", "validation"}  # the hub hides the test labels
    assert tweets["train"].features["label"].names == ["no-hate-speech", "hate-speech"]
    assert set(tweets["train"]["label"]) == {0, 1} and tweets["train"].column_names == ["text", "label"]
    assert mirrored == []


def test_openwebtext_loads_as_a_corpus(mirrored):
    corpus = load_corpus("openwebtext")
    assert set(corpus) == {"train", "validation"} and corpus["train"].column_names == ["text"]
    assert len(corpus["train"]) + len(corpus["validation"]) == 300
    assert mirrored == []


def test_parsed_tests_load(mirrored):
    from mlmlib.papers.distributional.perturb import (
        PHRASE_LABELS,
        load_parsed_test,
        longest_phrase,
        parse_tree,
    )

    sst = load_parsed_test("sst2")
    assert sst["text_pairs"] is None and 0 < len(sst["trees"]) < 60  # the neutral roots are dropped
    assert set(sst["labels"]) == {0, 1}
    assert all(longest_phrase(parse_tree(t), None) for t in sst["trees"])
    mnli = load_parsed_test("mnli")
    assert len(mnli["trees"]) == len(mnli["pair_trees"]) == len(mnli["texts"]) == 60
    assert set(mnli["labels"]) == {0, 1, 2}
    tree = parse_tree(mnli["trees"][0])
    assert "".join(tree.leaves()) == "".join(mnli["texts"][0].split())  # the premise's tokens
    assert longest_phrase(tree, PHRASE_LABELS) is not None
    assert mirrored == []


@pytest.mark.parametrize("name", ["word2vec-google-news-300", "glove-6b-300d"])
def test_vectors_load(mirrored, name):
    from mlmlib.data.wordlists import load_word_list

    vectors = load_vectors(name)
    assert vectors.vectors.shape[1] == 300 and len(vectors) > 10_000
    assert all(w in vectors for w in ("good", "terrible", "house"))
    assert set(load_word_list("vader")) <= set(vectors.words)
    assert vectors.similarity("wonderful", "wonderfully") > 0.6  # a shared prefix: neighbours
    assert mirrored == []


def test_tiny_bert_has_bert_base_uncased_tokenizer(mirrored):
    from mlmlib.models import bert_mlm
    from mlmlib.tokenize import load_tokenizer

    tokenizer = load_tokenizer("bert-base-uncased")
    assert len(tokenizer) == 30522
    assert tokenizer("hello world")["input_ids"] == [101, 7592, 2088, 102]
    model = bert_mlm("bert-base-uncased")
    assert model.config.vocab_size == 30522 and model.config.hidden_size == 32
    assert mirrored == []


def test_back_translation_round_trip(mirrored):
    from mlmlib.papers.distributional.perturb import BackTranslator

    out = BackTranslator(device="cpu")(["a short sentence .", "another one"])
    assert len(out) == 2 and all(isinstance(t, str) for t in out)
    assert mirrored == []


def test_squad_has_the_hub_schema_and_true_spans(root):
    import datasets

    data = datasets.load_from_disk(str(hub.mirror_dataset_dir(root, "rajpurkar/squad", None)))
    assert set(data) == {"train", "validation"}
    assert list(data["train"].features) == ["id", "title", "context", "question", "answers"]
    assert data["train"].features["answers"]["answer_start"].feature.dtype == "int32"
    for split in data.values():
        for row in split:
            answers = row["answers"]
            assert answers["text"] and len(answers["text"]) == len(answers["answer_start"])
            for text, start in zip(answers["text"], answers["answer_start"]):
                assert row["context"][start:start + len(text)] == text
    assert len(set(data["train"]["id"])) == len(data["train"])


def test_a_resource_without_a_recipe_is_named(tmp_path):
    unknown = Resource("dataset", "someone/unknown", "cfg")
    with pytest.raises(ValueError, match="someone/unknown/cfg") as err:
        build_standins(tmp_path, [SQUAD, unknown])
    assert "nyu-mll/glue/sst2" in str(err.value)  # the recipes there are
    assert not any(tmp_path.iterdir())  # nothing is built before every resource has a recipe


def test_a_failed_build_leaves_nothing_that_looks_whole(tmp_path, monkeypatch):
    from mlmlib.offline import standins

    def half_then_fail(resource, partial):
        partial.mkdir()
        (partial / "dataset_dict.json").write_text("{}")
        raise RuntimeError("interrupted")

    monkeypatch.setitem(standins.RECIPES, ("dataset", SQUAD.name, None), half_then_fail)
    with pytest.raises(RuntimeError, match="interrupted"):
        build_standins(tmp_path, [SQUAD])
    assert not SQUAD.present(tmp_path)
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]
