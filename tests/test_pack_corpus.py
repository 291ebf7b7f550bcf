"""B0, the corpus packed once: a hub source without a loading script, the packed file's cheap
identity (size, sampled blocks, recipe), the cache that checks it, and plans in which B1 and B2
read the file B0 packed."""

from __future__ import annotations

import inspect
import os
import re
from pathlib import Path

import pytest
import torch
from datasets import Dataset, DatasetDict

from mlmlib import checkpoint as ckpt
from mlmlib.data import corpora, hub
from mlmlib.papers.true_negatives import corpus
from mlmlib.papers.true_negatives import packed_identity as ident
from mlmlib.papers.true_negatives.corpus_config import Corpus
from mlmlib.paths import PACKAGE_DIR
from mlmlib.runs.plans import full_params, load_plan

B0, B1, B2 = "B0_pack_corpus", "B1_true_negatives_pretrain", "B2_true_negatives_overhead"


# ---------------------------------------------------------------- a source without a script

@pytest.fixture
def fake_hub(monkeypatch):
    """`datasets.load_dataset` replaced by a recorder that returns a tiny corpus; hub "online"."""
    import datasets

    calls = []

    def load_dataset(path, name=None, **kwargs):
        calls.append({"path": path, "name": name, **kwargs})
        texts = [f"text {i}" if i % 10 else "" for i in range(400)]  # wikitext-like empty lines
        return DatasetDict({"train": Dataset.from_dict({"text": texts})})

    monkeypatch.delenv(hub.MIRROR_ENV, raising=False)
    monkeypatch.setattr(hub, "require_hub", lambda what, alternative, library="datasets": "online")
    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls


@pytest.mark.parametrize("name", sorted(corpora.HUB_CORPORA))
def test_a_hub_corpus_loads_without_a_dataset_script(fake_hub, name):
    """The call datasets 4 and later accept: no trust_remote_code, no .py script named, and a
    source whose default branch is a script is read at a revision of plain data files."""
    data = corpora.load_corpus(name)
    assert "" not in data["train"]["text"] and len(data["train"]) + len(data["validation"]) == 360
    (call,) = fake_hub
    source = corpora.HUB_CORPORA[name]
    assert "trust_remote_code" not in call
    assert not call["path"].endswith(".py") and not str(call["name"] or "").endswith(".py")
    assert not any(str(v).endswith(".py") for v in call.values() if isinstance(v, str))
    assert call["path"] == source.path and call["name"] == source.config
    if source.path in corpora.SCRIPT_SOURCES:
        assert call["revision"] == source.revision is not None
    else:
        assert "revision" not in call


def test_openwebtext_is_read_from_its_pinned_parquet_commit(fake_hub):
    corpora.load_corpus("openwebtext")
    assert fake_hub[0]["revision"] == corpora.OPENWEBTEXT_PARQUET
    assert re.fullmatch(r"[0-9a-f]{40}", corpora.OPENWEBTEXT_PARQUET)


def test_no_loader_of_the_library_passes_trust_remote_code():
    """datasets 4 refuses scripts whatever the flag; a call that passes it hides a script source."""
    named = [p for p in PACKAGE_DIR.rglob("*.py") if "trust_remote_code" in p.read_text()]
    assert named == []


def test_a_source_that_needs_a_script_names_the_replacement():
    with pytest.raises(ValueError, match=r"corpus='Skylion007/openwebtext'.*loading script.*"
                                         r"use corpus='openwebtext' instead"):
        corpora.check_corpus("Skylion007/openwebtext")
    with pytest.raises(ValueError, match="use corpus='openwebtext' instead"):  # fails at the config
        Corpus(corpus="Skylion007/openwebtext")
    with pytest.raises(ValueError, match="load_corpus: name='Skylion007/openwebtext'"):
        corpora.load_corpus("Skylion007/openwebtext")
    with pytest.raises(ValueError, match="name a revision of plain data files"):
        corpora.HubCorpus("Skylion007/openwebtext")
    with pytest.raises(ValueError, match="corpus='nope' is unknown; known corpora: austen"):
        Corpus(corpus="nope")


def test_the_mirror_downloads_the_corpus_at_its_revision():
    from mlmlib.data.hub_resources import RunParameters
    from mlmlib.data.resources import hub_resources
    from mlmlib.offline import mirror

    (found,) = hub_resources(RunParameters({"corpus": "openwebtext"}, {}))
    assert (found.name, found.revision) == ("Skylion007/openwebtext", corpora.OPENWEBTEXT_PARQUET)
    assert "revision=resource.revision" in inspect.getsource(mirror.fetch)


# ---------------------------------------------------------------- the packed file's identity

RECIPE = Corpus(max_texts=100, max_length=16, pack=True).key()


@pytest.fixture
def big_file(tmp_path):
    """A 4 MiB "packed" file (whole rows of 16 int32) with its identity written beside it."""
    path = tmp_path / corpus.PACKED_FILE
    path.write_bytes(os.urandom(4 * 16 * 65536))
    ident.write_identity(path, RECIPE, rows=65536)
    return path


def _flip(path: Path, offset: int) -> None:
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 0xFF]))


def test_the_identity_checks_out_and_names_itself(big_file):
    assert ident.check_packed(big_file, RECIPE).startswith("packed:")
    saved = ident.read_identity(big_file)
    assert saved["recipe"] == RECIPE and saved["bytes"] == big_file.stat().st_size
    assert saved["rows"] == 65536


def test_a_changed_sampled_block_is_caught(big_file):
    offsets = ident.sample_offsets(big_file.stat().st_size)
    assert len(offsets) == ident.SAMPLED_BLOCKS and offsets[0] == 0
    assert offsets[-1] + ident.BLOCK_BYTES == big_file.stat().st_size  # the last block is read
    _flip(big_file, offsets[7] + 123)
    with pytest.raises(ident.PackedFileMismatch, match="a sampled block changed"):
        ident.check_packed(big_file, RECIPE)


def test_a_change_between_the_sampled_blocks_is_the_price_of_not_reading_it_all(big_file):
    offsets = ident.sample_offsets(big_file.stat().st_size)
    _flip(big_file, offsets[3] + ident.BLOCK_BYTES + 10)  # after block 3, before block 4
    assert ident.check_packed(big_file, RECIPE)


@pytest.mark.parametrize("change", ["truncated", "grown"])
def test_a_changed_size_is_caught(big_file, change):
    data = big_file.read_bytes()
    big_file.write_bytes(data[:-64] if change == "truncated" else data + bytes(64))
    with pytest.raises(ident.PackedFileMismatch, match=r"bytes, 4194304 when it was packed"):
        ident.check_packed(big_file, RECIPE)


def test_another_recipe_is_caught_and_named(big_file):
    other = {**RECIPE, "max_texts": 200, "tokenizer": "bert-base-uncased"}
    with pytest.raises(ident.PackedFileMismatch,
                       match=r"another recipe \(max_texts: packed 100, asked 200; tokenizer: packed "
                             r"'embedded-wordpiece-8k', asked 'bert-base-uncased'\)"):
        ident.check_packed(big_file, other)
    big_file.with_name(ident.IDENTITY_FILE).unlink()
    with pytest.raises(ident.PackedFileMismatch, match="its identity packed.json cannot be read"):
        ident.check_packed(big_file, RECIPE)


def test_the_check_reads_a_few_blocks_not_the_file(big_file, monkeypatch):
    read = []

    class Counting:
        """A file opened for reading that counts the bytes read from it."""

        def __init__(self, path, mode):
            self.path, self.mode = path, mode

        def __enter__(self):
            self.handle = Path(self.path).open(self.mode)  # closed by __exit__
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def seek(self, offset):
            return self.handle.seek(offset)

        def read(self, size=-1):
            chunk = self.handle.read(size)
            read.append(len(chunk))
            return chunk

    monkeypatch.setattr(ident, "open", Counting, raising=False)
    ident.check_packed(big_file, RECIPE)
    assert 0 < sum(read) <= ident.SAMPLED_BLOCKS * ident.BLOCK_BYTES <= big_file.stat().st_size / 4


def test_a_checkpoint_fingerprint_takes_the_identity_instead_of_the_values(monkeypatch):
    from mlmlib.models import ModelSize, bert_mlm
    from mlmlib.pretrain import PretrainConfig

    model = bert_mlm(ModelSize(vocab_size=30, hidden=8, layers=1, heads=1, max_len=8), seed=0)
    ids = torch.randint(5, 30, (4, 8), dtype=torch.int32)
    data = {"input_ids": ids, ckpt.DATA_IDENTITY: "packed:0123"}
    hashed = []
    real = ckpt.tensors_digest
    monkeypatch.setattr(ckpt, "tensors_digest", lambda t: hashed.append(t) or real(t))
    fingerprint = ckpt.fingerprint(PretrainConfig(), model, data)
    assert fingerprint["data_values"] == "packed:0123" and fingerprint["data"] == {"input_ids": [4, 8]}
    assert all(t is not data for t in hashed)  # the weights are hashed, never the data
    assert ckpt.fingerprint(PretrainConfig(), model, {"input_ids": ids})["data_values"] != "packed:0123"


# ---------------------------------------------------------------- the cache entry B0 builds

@pytest.fixture(scope="module")
def wordpiece():
    from mlmlib.tokenize import load_tokenizer

    return load_tokenizer("embedded-wordpiece-8k")


@pytest.fixture
def packing(tmp_path, monkeypatch, wordpiece):
    """An empty work folder, the tokenizer at hand, and a count of the packings."""
    from mlmlib import tokenize

    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path / "work"))
    monkeypatch.setattr(tokenize, "load_tokenizer", lambda name: wordpiece)
    packed = []
    real = corpus.pack_texts
    monkeypatch.setattr(corpus, "pack_texts", lambda *a: packed.append(a[3]) or real(*a))
    return packed


def test_b1_reads_the_file_b0_packed_and_checks_it(packing, capsys):
    config = Corpus(max_texts=200, max_length=16, pack=True)
    folder = corpus.encoded_corpus(config)  # B0
    summary = corpus.corpus_summary(config, folder)
    assert summary["texts"] == 200 and summary["rows"] > 10 and summary["tokens"] == summary["rows"] * 16
    data, _ = corpus.pretraining_data(Corpus(max_texts=200, max_length=16, pack=True))  # B1
    assert len(packing) == 1  # packed once
    assert data["input_ids"].shape == (summary["rows"], 16)
    assert data[ckpt.DATA_IDENTITY] == ident.check_packed(folder / corpus.PACKED_FILE, config.key())

    # a damaged file is set aside, saying why, and packed again
    _flip(folder / corpus.PACKED_FILE, 5)
    again = corpus.encoded_corpus(config)
    assert again == folder and len(packing) == 2
    assert "a sampled block changed since it was packed; set aside" in capsys.readouterr().out
    assert ident.check_packed(folder / corpus.PACKED_FILE, config.key())


def test_the_unpacked_corpus_is_cached_too(packing):
    config = Corpus(max_texts=50, max_length=16, pack=False)
    summary = corpus.corpus_summary(config, corpus.encoded_corpus(config))
    assert summary["rows"] <= 50 and summary["packed"] is False and packing == []
    data, _ = corpus.pretraining_data(config)
    assert data["input_ids"].shape[0] == summary["rows"] and ckpt.DATA_IDENTITY not in data


# ---------------------------------------------------------------- the plans

def _corpus_of(notebook: str, params: dict) -> dict:
    """The run's corpus as its cache key has it (the preset's name aside: its values are here)."""
    return {k: v for k, v in full_params(notebook, params)["corpus"].items() if k != "preset"}


@pytest.mark.parametrize("profile", ["paper", "paper-rehearsal", "test"])
def test_the_runs_that_need_b0_use_the_corpus_it_packed(profile):
    """Same corpus group (seed 0 unless a plan says), same cache key: B1 and B2 never pack again."""
    runs = load_plan(profile).runs
    packed = [_corpus_of(B0, r.params) for r in runs if r.notebook == B0]
    readers = [r for r in runs if B0 in r.needs]
    assert packed and readers
    for run in readers:
        assert run.notebook in (B1, B2)
        assert _corpus_of(run.notebook, run.params) in packed, (profile, run.notebook)
    assert all(c["pack"] for c in packed)


def test_the_paper_plan_packs_openwebtext_before_the_gpu_runs():
    plan = load_plan("paper")
    notebooks = [r.notebook for r in plan.runs]
    assert notebooks.index(B0) < notebooks.index(B1) < notebooks.index(B2)
    for name in (B1, B2):
        assert all(r.needs == (B0,) for r in plan.runs if r.notebook == name)
    (b0,) = [r for r in plan.runs if r.notebook == B0]
    assert _corpus_of(B0, b0.params)["corpus"] == "openwebtext"
    assert 0 < b0.gpu_hours <= 2 and not b0.alone


def test_the_packed_corpus_is_keyed_by_the_code_b0_runs(tmp_path):
    """An edit in paper B outside the packing code changes neither B0's code version nor the
    corpus's cache key (B1 and B2 find B0's file); an edit of the packing code changes both."""
    import shutil

    from mlmlib import cache, code_digest
    from mlmlib.runs.plans import notebooks_dir

    tree = tmp_path / "mlmlib"
    shutil.copytree(PACKAGE_DIR, tree, ignore=shutil.ignore_patterns("__pycache__", "*.xz"))
    page = notebooks_dir() / f"{B0}.ipynb"

    def versions():
        return (code_digest.module_version(corpus.__name__, tree),
                code_digest.notebook_version(page, tree))

    before = versions()
    (tree / "papers" / "true_negatives" / "negatives.py").write_text("# the method, edited\n")
    assert versions() == before
    with open(tree / "papers" / "true_negatives" / "packed_identity.py", "a") as handle:
        handle.write("# the identity, edited\n")
    after = versions()
    assert after[0] != before[0] and after[1] != before[1]
    assert cache.keyed_config({}, corpus.__name__, narrow=True)["_code"] == \
        code_digest.module_version(corpus.__name__)
