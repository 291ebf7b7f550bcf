"""A general pretrained BERT: a small one pretrained here, the shipped MiniLM, or a hub model.

Papers A (real text) and C start from "a pretrained BERT". At paper scale that is
bert-base-uncased; in the smoke profile it is a small BERT pretrained once on the embedded
English corpus and cached (mlmlib.cache), so every run and notebook shares the same base.
`minilm-l6` is all-MiniLM-L6-v2 from an installable package (mlmlib.minilm): a real pretrained
English encoder offline, with an MLM head fitted here (the training fields below fit the head).
"""

from __future__ import annotations

import json
from dataclasses import fields

import torch

from mlmlib import cache, minilm
from mlmlib.base_config import EMBEDDED, BaseModelConfig
from mlmlib.models import ModelSize, bert_mlm, load_model, save_model, saved_files, size_of
from mlmlib.objectives import MASK_RATE
from mlmlib.pretrain import PretrainConfig, masked_lm_logits, pretrain
from mlmlib.tokenize import encode_corpus, first_word_id, load_tokenizer


def pretrained_base(config: BaseModelConfig, progress: bool | None = None):
    """Return (model, tokenizer, history) for the base; the embedded one is built once and cached."""
    if config.name == minilm.NAME:
        if config.tokenizer != minilm.NAME:
            raise ValueError(f"base model {minilm.NAME!r} needs tokenizer={minilm.NAME!r} "
                             f"(bert-base-uncased's vocabulary), got {config.tokenizer!r}")
        # the head fit takes the base's training fields (same names): they size the fit
        fit = {f.name: getattr(config, f.name) for f in fields(minilm.HeadFit)}
        return minilm.minilm_mlm(minilm.HeadFit(**fit), progress=progress)
    tokenizer = load_tokenizer(config.tokenizer)
    if config.name != EMBEDDED:
        return bert_mlm(config.name), tokenizer, []

    def build(folder):
        from mlmlib.data import load_corpus

        texts = load_corpus(config.corpus)["train"]["text"][: config.max_sentences]
        data = encode_corpus(tokenizer, texts, config.max_length)
        size = ModelSize(vocab_size=len(tokenizer), hidden=config.hidden, layers=config.layers,
                         heads=config.heads, max_len=config.max_length)
        model = bert_mlm(size, seed=config.seed)
        history = pretrain(
            model, data,
            PretrainConfig(steps=config.steps, batch_size=config.batch_size, lr=config.lr,
                           mask_rate=config.mask_rate, seed=config.seed,
                           log_every=max(1, config.steps // 20)),
            mask_id=tokenizer.mask_token_id, num_special=first_word_id(tokenizer),
            progress=progress,
        )
        save_model(model, folder / "model", tokenizer)
        (folder / "history.json").write_text(json.dumps(history))

    folder = cache.cached("base-model", config.key(), build, code_of=__name__,
                          expect=(*saved_files(), "history.json"))
    history = json.loads((folder / "history.json").read_text())
    return load_model(folder / "model"), tokenizer, history


@torch.no_grad()
def classifier_size(name: str, mlm) -> ModelSize | str:
    """What a classifier on the base `name` is built from: the base's own geometry (its encoder is
    then copied from `mlm`) for the bases built or shipped here, the hub name otherwise (the
    classifier loads it, pooler included)."""
    return size_of(mlm.config) if name in (EMBEDDED, minilm.NAME) else name


def masked_predictions(model, tokenizer, texts: list[str], *, max_length: int = 64,
                       mask_rate: float = MASK_RATE, seed: int = 0, batch_size: int = 64):
    """Mask word pieces of texts (each by [MASK]) and predict them.

    Returns (row, target, prediction), one entry per masked piece: the text it came from (for
    intervals over texts), the original piece and the model's top prediction.
    """
    if not 0 < mask_rate < 1:
        raise ValueError(f"mask_rate must be in (0, 1), got {mask_rate}")
    data = encode_corpus(tokenizer, texts, max_length)
    generator = torch.Generator().manual_seed(seed)
    candidates = data["attention_mask"].bool() & ~data["special_tokens_mask"].bool()
    masked = candidates & (torch.rand(candidates.shape, generator=generator) < mask_rate)
    inputs = data["input_ids"].masked_fill(masked, tokenizer.mask_token_id)
    model.eval()
    device = next(model.parameters()).device
    predictions = []
    for start in range(0, len(inputs), batch_size):
        rows = slice(start, start + batch_size)
        logits = masked_lm_logits(model, inputs[rows].to(device),
                                  data["attention_mask"][rows].to(device), masked[rows].to(device))
        predictions.append(logits.argmax(-1).cpu())
    return masked.nonzero()[:, 0], data["input_ids"][masked], torch.cat(predictions)


def masked_accuracy(model, tokenizer, texts: list[str], **kwargs) -> float:
    """Share of masked word pieces (all replaced by [MASK]) that the model predicts exactly."""
    _, targets, predictions = masked_predictions(model, tokenizer, texts, **kwargs)
    return float((predictions == targets).float().mean())


def most_frequent_piece(tokenizer, texts: list[str], max_length: int = 64) -> int:
    """The commonest non-special word piece of texts: the unigram baseline's one prediction."""
    data = encode_corpus(tokenizer, texts, max_length)
    pieces = data["input_ids"][data["attention_mask"].bool() & ~data["special_tokens_mask"].bool()]
    return int(torch.bincount(pieces).argmax())
