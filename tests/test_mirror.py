"""The hub mirror: with MLMLIB_HUB_MIRROR set, hub tasks, models, tokenizers and vectors load from
local copies and the network is never touched; the mirror command lists and fills a profile's needs."""

from __future__ import annotations

import numpy as np
import pytest
from datasets import ClassLabel, Dataset, DatasetDict, Features, Value

from mlmlib.data import HubUnavailableError, hub, load_task, load_vectors
from mlmlib.offline import mirror as mirror_cmd
from mlmlib.offline.resources import needed
from mlmlib.runs.plans import Plan, Run, load_plan

MODEL = "someone/tiny-bert"  # a hub name that only the test mirror has
SENTIMENT = ClassLabel(names=["negative", "positive"])


def sst2_copy(splits=("train", "validation", "test"), text="sentence") -> DatasetDict:
    """GLUE SST-2 as the hub serves it: sentence, label, idx; the test split's labels are hidden (-1)."""
    features = Features({text: Value("string"), "label": SENTIMENT, "idx": Value("int32")})
    sizes = {"train": 20, "validation": 6, "test": 4}
    return DatasetDict({s: Dataset.from_dict(
        {text: [f"{s} sentence {i}" for i in range(sizes[s])],
         "label": [-1 if s == "test" else i % 2 for i in range(sizes[s])], "idx": list(range(sizes[s]))},
        features=features) for s in splits})


def tiny_model(vocab_size: int):
    from mlmlib.models import ModelSize, bert_mlm

    return bert_mlm(ModelSize(vocab_size=vocab_size, hidden=16, layers=1, heads=2, max_len=32), seed=0)


def tiny_vectors():
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=4)
    kv.add_vectors(["good", "great", "carrot"], np.arange(12, dtype=np.float32).reshape(3, 4))
    return kv


@pytest.fixture(scope="module")
def tokenizer():
    from mlmlib.tokenize import load_tokenizer

    return load_tokenizer("embedded-wordpiece-8k")


@pytest.fixture(scope="module")
def root(tmp_path_factory, tokenizer):
    """A tiny mirror in the hub's formats: SST-2, one model folder (model and tokenizer), one vector set."""
    root = tmp_path_factory.mktemp("mirror")
    sst2_copy().save_to_disk(str(root / "datasets/nyu-mll/glue/sst2"))
    tokenizer.save_pretrained(root / "models" / MODEL)
    tiny_model(len(tokenizer)).save_pretrained(root / "models" / MODEL)
    tiny_model(len(tokenizer)).save_pretrained(root / "models/someone/model-only")  # no tokenizer
    (root / "vectors").mkdir()
    tiny_vectors().save(str(root / "vectors/glove-wiki-gigaword-300.kv"))
    return root




# ---------------------------------------------------------------- reading the mirror


def test_task_loads_from_the_mirror(root, mirrored):
    data = load_task("sst2")
    assert set(data) == {"train", "validation"}  # the hidden-label test split is dropped
    assert data["train"].column_names == ["text", "label"]
    assert list(data["train"]["text"]) == [f"train sentence {i}" for i in range(20)]
    assert list(data["validation"]["label"]) == [0, 1] * 3
    assert data["train"].features["label"].names == ["negative", "positive"]
    assert mirrored == []


def test_split_and_streaming_kwargs_are_honoured(root, mirrored):
    validation = hub.load_hub_dataset("task 'sst2'", "-", "nyu-mll/glue", "sst2", split="validation")
    assert isinstance(validation, Dataset) and len(validation) == 6
    streamed = hub.load_hub_dataset("task 'sst2'", "-", "nyu-mll/glue", "sst2", streaming=True)
    assert [r["sentence"] for r in streamed["test"]] == [f"test sentence {i}" for i in range(4)]
    with pytest.raises(HubUnavailableError, match="validation_matched"):
        hub.load_hub_dataset("task 'sst2'", "-", "nyu-mll/glue", "sst2", split="validation_matched")
    with pytest.raises(ValueError, match="data_dir"):
        hub.load_hub_dataset("task 'sst2'", "-", "nyu-mll/glue", "sst2", data_dir="main")
    # a revision says what a download reads: the mirror holds the copy downloaded at it
    assert len(hub.load_hub_dataset("task 'sst2'", "-", "nyu-mll/glue", "sst2", split="validation",
                                    revision="main")) == 6
    assert mirrored == []


def test_model_tokenizer_and_vectors_load_by_hub_name(root, tokenizer, mirrored):
    import torch

    from mlmlib.models import bert_classifier, bert_mlm
    from mlmlib.tokenize import load_tokenizer

    assert load_tokenizer(MODEL).get_vocab() == tokenizer.get_vocab()
    model = bert_mlm(MODEL)
    saved = tiny_model(len(tokenizer))  # seed 0: the weights the mirror holds
    assert torch.equal(model.bert.embeddings.word_embeddings.weight, saved.bert.embeddings.word_embeddings.weight)
    classifier = bert_classifier(MODEL, 3)
    assert torch.equal(classifier.bert.encoder.layer[0].output.dense.weight,
                       saved.bert.encoder.layer[0].output.dense.weight)
    vectors = load_vectors("glove-6b-300d")  # the alias of glove-wiki-gigaword-300
    assert vectors.words == ["good", "great", "carrot"] and vectors.vector("great").tolist() == [4, 5, 6, 7]
    assert mirrored == []


def test_missing_resources_name_themselves_and_the_folder(root, mirrored, monkeypatch):
    from mlmlib.models import bert_mlm
    from mlmlib.tokenize import load_tokenizer

    cases = [
        (lambda: load_task("imdb"), "imdb", root / "datasets/stanfordnlp/imdb/default"),
        (lambda: bert_mlm("someone/absent"), "someone/absent", root / "models/someone/absent"),
        (lambda: load_tokenizer("someone/model-only"), "someone/model-only", root / "models/someone/model-only"),
        (lambda: load_vectors("word2vec-google-news-300"), "word2vec-google-news-300",
         root / "vectors/word2vec-google-news-300.kv"),
    ]
    for load, name, folder in cases:
        with pytest.raises(HubUnavailableError) as err:
            load()
        assert name in str(err.value) and str(folder) in str(err.value) and hub.MIRROR_ENV in str(err.value)
    monkeypatch.setenv(hub.MIRROR_ENV, str(root / "nowhere"))
    with pytest.raises(HubUnavailableError, match="does not exist"):
        load_task("sst2")
    assert mirrored == []


def test_a_copy_without_a_split_or_column_is_refused(tmp_path, monkeypatch, no_network):
    monkeypatch.setenv(hub.MIRROR_ENV, str(tmp_path))
    glue = tmp_path / "datasets/nyu-mll/glue"
    sst2_copy(splits=("train", "test")).save_to_disk(str(glue / "sst2"))
    with pytest.raises(ValueError, match=r"lacks split\(s\) \['validation'\]") as err:
        load_task("sst2")
    assert str(glue / "sst2") in str(err.value)
    sst2_copy(text="text").save_to_disk(str(glue / "cola"))  # CoLA's text column is 'sentence' too
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['sentence'\]") as err:
        load_task("cola")
    assert str(glue / "cola") in str(err.value)
    # MNLI's renamed splits must all be there
    sst2_copy(splits=("train", "validation")).save_to_disk(str(glue / "mnli"))
    with pytest.raises(ValueError, match="validation_matched"):
        load_task("mnli")
    assert no_network == []


# ---------------------------------------------------------------- the mirror command


def test_paper_plan_needs(root, no_network, capsys, monkeypatch):
    """--list names what the paper plan downloads, says what the mirror has, and fetches nothing."""
    monkeypatch.setattr(mirror_cmd, "fetch", lambda *a: pytest.fail("--list must not download"))
    needs = {(r.kind, r.name, r.config) for r in needed(load_plan("paper"))}
    glue = {("dataset", "nyu-mll/glue", t) for t in ("sst2", "mnli", "cola", "mrpc", "qnli", "rte", "qqp")}
    assert needs == glue | {
        ("dataset", "stanfordnlp/imdb", None),
        ("dataset", "tweets-hate-speech-detection/tweets_hate_speech_detection", None),
        ("dataset", "rajpurkar/squad", None),  # B1's task squad
        ("dataset", "Skylion007/openwebtext", None),
        ("dataset", "nyu-mll/multi_nli", None), ("dataset", "stanfordnlp/sst", "ptb"),  # A5's parsed inputs
        ("model", "bert-base-uncased", None),
        ("model", "facebook/wmt19-en-de", None), ("model", "facebook/wmt19-de-en", None),
        ("vectors", "glove-wiki-gigaword-300", None), ("vectors", "word2vec-google-news-300", None),
    }
    assert mirror_cmd.main(["--profile", "paper", "--to", str(root), "--list"]) == 0
    out = capsys.readouterr().out
    assert "have     dataset nyu-mll/glue/sst2" in out
    assert "have     vectors glove-wiki-gigaword-300" in out
    assert "missing  model bert-base-uncased (BertForMaskedLM, AutoTokenizer)" in out
    assert "missing  model facebook/wmt19-en-de (FSMTForConditionalGeneration, FSMTTokenizer)" in out
    assert "missing  dataset Skylion007/openwebtext" in out
    assert no_network == []


def test_fill_writes_what_the_loaders_read(tmp_path, tokenizer, no_network, monkeypatch, capsys):
    """A fill (downloads faked) writes the layout the loaders read; a failed fetch is listed, the rest done."""
    import torch
    from transformers import AutoTokenizer, BertForMaskedLM

    from mlmlib.data import vectors
    from mlmlib.models import bert_mlm
    from mlmlib.tokenize import load_tokenizer

    model = tiny_model(len(tokenizer))
    downloads = {AutoTokenizer: tokenizer, BertForMaskedLM: model}
    monkeypatch.setattr(hub, "download_hub_dataset", lambda what, alt, path, config, revision: sst2_copy())
    monkeypatch.setattr(hub, "download_hub_pretrained", lambda what, alt, loader, name: downloads[loader.__self__])
    monkeypatch.setattr(vectors, "download_gensim", lambda name: tiny_vectors())
    plan = Plan("x", tmp_path / "x.yaml", "", [Run(
        "C1_task_scores", {"task": "sst2", "base_model": MODEL, "base_tokenizer": MODEL, "vectors": "glove-6b-300d"},
        (), "", "", 1)])
    root = tmp_path / "mirror"
    assert mirror_cmd.mirror(plan, root) == 0
    assert all(r.present(root) for r in needed(plan))
    assert not list(root.rglob("*.partial"))

    monkeypatch.setenv(hub.MIRROR_ENV, str(root))
    assert list(load_task("sst2")["train"]["text"]) == [f"train sentence {i}" for i in range(20)]
    assert load_tokenizer(MODEL).get_vocab() == tokenizer.get_vocab()
    assert torch.equal(bert_mlm(MODEL).cls.predictions.transform.dense.weight,
                       model.cls.predictions.transform.dense.weight)
    assert len(load_vectors("glove-wiki-gigaword-300")) == 3
    assert no_network == []

    plan.runs[0].params["task"] = "imdb"  # now one fetch fails: it is reported, the exit code says so
    monkeypatch.setattr(hub, "download_hub_dataset",
                        lambda *a, **k: (_ for _ in ()).throw(HubUnavailableError("off")))
    assert mirror_cmd.mirror(plan, root) == 1
    out = capsys.readouterr().out
    assert "FAILED   dataset stanfordnlp/imdb" in out and "have     vectors glove-wiki-gigaword-300" in out
    assert "1 could not be fetched" in out and "stanfordnlp/imdb: HubUnavailableError: off" in out
    assert not (root / "datasets/stanfordnlp/imdb/default").exists()


# ---------------------------------------------------------------- the declarations


def test_each_layer_declares_its_own_resources():
    from mlmlib.offline.resources import declaring_modules

    assert [m.__name__ for m in declaring_modules()] == [
        "mlmlib.data.resources", "mlmlib.papers.distributional.resources",
        "mlmlib.papers.true_negatives.resources"]


def test_a_resource_is_selected_by_a_plain_parameter_or_a_group_field():
    from mlmlib.base_config import BaseModelConfig
    from mlmlib.data import resources
    from mlmlib.data.hub_resources import RunParameters, merged

    base = {"name": "bert-base-uncased", "tokenizer": "bert-base-uncased", "corpus": "openwebtext"}
    grouped = RunParameters({"base": base, "setup": {"tasks": ["sst2", "amazon-food"]}, "seed": 0},
                            {"base": BaseModelConfig, "setup": dict})
    found = merged(resources.hub_resources(grouped))
    assert [r.label for r in found] == [
        "dataset nyu-mll/glue/sst2", "dataset Skylion007/openwebtext",
        "model bert-base-uncased (BertForMaskedLM, AutoTokenizer)"]
    flat = RunParameters({"base_model": "embedded", "base_tokenizer": "minilm-l6", "task": "imdb",
                          "arms": ["none", "step@glove-6b-300d"]}, {})
    assert [r.label for r in resources.hub_resources(flat)] == [
        "dataset stanfordnlp/imdb", "vectors glove-wiki-gigaword-300"]


def test_phrase_perturbations_need_the_parsed_test_and_the_translators():
    from mlmlib.data.hub_resources import RunParameters
    from mlmlib.papers.distributional import resources

    words = RunParameters({"task": "sst2", "perturbations": ["word"]}, {})
    assert resources.hub_resources(words) == []
    phrases = RunParameters({"task": "sst2", "perturbations": ["word", "short-phrase"]}, {})
    assert [r.label for r in resources.hub_resources(phrases)] == [
        "dataset stanfordnlp/sst/ptb",
        "model facebook/wmt19-en-de (FSMTForConditionalGeneration, FSMTTokenizer)",
        "model facebook/wmt19-de-en (FSMTForConditionalGeneration, FSMTTokenizer)"]


def test_the_mirror_command_is_dispatched_by_the_entry_point(tmp_path):
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "mlmlib", "mirror", "--profile", "nope", "--to", str(tmp_path)],
                          capture_output=True, text=True, check=False, env={**os.environ})
    assert done.returncode == 2 and "unknown profile 'nope'" in done.stderr
