"""Tokenizers for real text: BERT-style uncased WordPiece trained on the embedded corpus, or a hub tokenizer."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerFast

from mlmlib import minilm_package

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_EMBEDDED = re.compile(r"^embedded-wordpiece-(\d+)k$")
HUB_TOKENIZERS = ("bert-base-uncased", "google/electra-small-discriminator", "google/electra-base-discriminator")


def _texts_digest(texts: Iterable[str], settings: dict) -> tuple[list[str], str]:
    """Materialise the texts and hash them together with the training settings."""
    texts = list(texts)
    h = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\x00")
    return texts, h.hexdigest()[:16]


MIN_FREQUENCY = 2


def train_wordpiece(
    texts: Iterable[str], vocab_size: int = 8000, min_frequency: int = MIN_FREQUENCY, cache: bool = True
) -> PreTrainedTokenizerFast:
    """Train an uncased BERT WordPiece tokenizer ([PAD]=0 [UNK] [CLS] [SEP] [MASK]); cached by a hash of its inputs."""
    if vocab_size < len(SPECIAL_TOKENS) + 26:
        raise ValueError(f"vocab_size={vocab_size} is too small; use at least {len(SPECIAL_TOKENS) + 26}")
    settings = {"kind": "wordpiece-uncased", "vocab_size": vocab_size, "min_frequency": min_frequency}
    texts, digest = _texts_digest(texts, settings)
    if not cache:
        return _wrap(_train(texts, vocab_size, min_frequency))
    return _cached({**settings, "texts": digest}, lambda: _train(texts, vocab_size, min_frequency))


def _cached(config: dict, train):
    """The tokenizer cached under `config` (and the tokenizer code), trained with train() if missing."""
    from tokenizers import Tokenizer

    from mlmlib import cache

    def build(folder: Path) -> None:
        train().save(str(folder / "tokenizer.json"))

    folder = cache.cached("tokenizers", config, build, code_of=__name__, expect=("tokenizer.json",))
    return _wrap(Tokenizer.from_file(str(folder / "tokenizer.json")))


def _train(texts: list[str], vocab_size: int, min_frequency: int):
    """Train a `tokenizers.Tokenizer` (uncased WordPiece, BERT's special tokens and template)."""
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True, clean_text=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=SPECIAL_TOKENS, show_progress=False
    )
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    # The trainer numbers its tokens in a hash-map order that changes between processes; number
    # them in sorted order (special tokens first) so the same texts always give the same ids.
    learned = sorted(set(tok.get_vocab()) - set(SPECIAL_TOKENS))
    vocab = {t: i for i, t in enumerate([*SPECIAL_TOKENS, *learned])}
    tok.model = models.WordPiece(vocab=vocab, unk_token="[UNK]", continuing_subword_prefix="##")
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return tok


def _wrap(tok) -> PreTrainedTokenizerFast:
    """Wrap a `tokenizers.Tokenizer` as a transformers tokenizer with BERT's special tokens."""
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
        sep_token="[SEP]", mask_token="[MASK]", model_max_length=512,
    )


def _embedded_corpus_key(vocab_size: int) -> str:
    """What the embedded tokenizer depends on, without reading the corpus: the bundle files'
    checksums (MANIFEST.json), the code that turns them into sentences, and the settings."""
    from mlmlib.data import corpora

    manifest = json.loads((Path(corpora.__file__).parent / "embedded" / "MANIFEST.json").read_text())
    h = hashlib.sha256(json.dumps({"vocab_size": vocab_size, "sha256": manifest["sha256"]},
                                  sort_keys=True).encode())
    h.update(Path(corpora.__file__).read_bytes())
    return h.hexdigest()[:16]


def encode_split(tokenizer, split, max_length: int = 128) -> dict[str, torch.Tensor]:
    """A labelled split (text, optional text_pair, label) as the tensors `finetune` takes."""
    if hasattr(split, "column_names"):  # a datasets.Dataset: its columns as lists
        split = split.to_dict()
    pair = list(split["text_pair"]) if split.get("text_pair") is not None else None
    enc = encode(tokenizer, list(split["text"]), max_length=max_length, text_pair=pair)
    out = {k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc}
    return out | {"labels": torch.tensor(list(split["label"]), dtype=torch.long)}


def first_word_id(tokenizer) -> int:
    """The smallest id of a real word piece; random MLM replacements are drawn from it on.

    Below it a vocabulary holds only bracketed tokens: ours [PAD] [UNK] [CLS] [SEP] [MASK]
    (ids 0-4), BERT's also [unusedN] (first word "!" at 999). A tokenizer with a special token
    above its first word cannot keep that token out of the draws, so it is refused.
    """
    vocab = tokenizer.get_vocab()
    first = min(i for token, i in vocab.items() if not (token.startswith("[") and token.endswith("]")))
    above = sorted(t for t, i in vocab.items() if i > first and t in tokenizer.all_special_tokens)
    if above:
        raise ValueError(f"tokenizer: special token(s) {above} come after the first word piece "
                         f"(id {first}); random replacements need the special tokens first")
    return first


def load_tokenizer(name: str = "embedded-wordpiece-8k"):
    """Load a tokenizer: "embedded-wordpiece-<N>k" (trained on the embedded English corpus) or a hub name."""
    match = _EMBEDDED.match(name)
    if match:
        from mlmlib.data.corpora import load_corpus

        vocab_size = int(match.group(1)) * 1000
        # Keyed by the bundle's checksums: decompressing and hashing the corpus (seconds per
        # process) happens only when the tokenizer has to be trained.
        config = {"kind": "embedded-wordpiece", "bundle": _embedded_corpus_key(vocab_size)}
        return _cached(config, lambda: _train(list(load_corpus("embedded-english")["train"]["text"]),
                                              vocab_size, MIN_FREQUENCY))
    if name == minilm_package.NAME:  # bert-base-uncased's vocabulary, shipped with the MiniLM package
        return minilm_package.minilm_tokenizer()
    if name in HUB_TOKENIZERS or "/" in name:
        from transformers import AutoTokenizer

        from mlmlib.data.hub import load_hub_pretrained

        return load_hub_pretrained(
            f"tokenizer {name!r}", 'tokenizer "embedded-wordpiece-8k"', AutoTokenizer.from_pretrained, name
        )
    raise ValueError(
        f"load_tokenizer: name={name!r} is unknown; use embedded-wordpiece-<N>k (e.g. embedded-wordpiece-8k), minilm-l6, "
        f"{', '.join(HUB_TOKENIZERS)} or another hub name owner/model"
    )


def encode(
    tokenizer, texts: Sequence[str], max_length: int = 128, text_pair: Sequence[str] | None = None
) -> dict[str, torch.Tensor]:
    """Tokenize a batch (padded to the longest) into input_ids, attention_mask, special_tokens_mask, word_ids
    (and token_type_ids when the tokenizer makes them).

    word_ids[b, t] is the index of the whole word token t belongs to, counted across both texts of a
    pair, and -1 for special and padding tokens: whole-word masking groups tokens by it.
    """
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings, not one string")
    enc = tokenizer(
        list(texts), list(text_pair) if text_pair is not None else None, max_length=max_length,
        truncation=True, padding="longest", return_special_tokens_mask=True, return_tensors="pt",
    )
    word_ids = torch.full_like(enc["input_ids"], -1)
    for b in range(enc["input_ids"].shape[0]):
        offset, first_len = 0, 0
        for t, (w, s) in enumerate(zip(enc.word_ids(b), enc.sequence_ids(b))):
            if w is None:
                continue
            if s == 0:
                first_len = max(first_len, w + 1)
            else:
                offset = first_len  # the second text's words follow the first text's
            word_ids[b, t] = w + offset
    out = {k: enc[k] for k in ("input_ids", "attention_mask", "special_tokens_mask")}
    if "token_type_ids" in enc:  # which text of a pair each token belongs to, for BERT's segment embeddings
        out["token_type_ids"] = enc["token_type_ids"]
    out["word_ids"] = word_ids
    return out


def encode_corpus(tokenizer, texts: list[str], max_length: int) -> dict:
    """Tokenize texts into the tensors the training core takes (shorter-than-2-token rows dropped)."""
    data = encode(tokenizer, texts, max_length=max_length)
    keep = data["attention_mask"].sum(1) > 3  # [CLS] w w [SEP] at least
    return {k: v[keep] for k, v in data.items()}
