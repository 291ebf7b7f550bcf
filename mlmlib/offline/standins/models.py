"""Stand-ins of hub models: a tiny BERT with bert-base-uncased's tokenizer, tiny FSMT translators."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from mlmlib.offline.standins.texts import SEED, austen_sentences, reviews


def tiny_bert(folder: Path) -> None:
    """A tiny, seeded BERT with bert-base-uncased's vocabulary and real tokenizer.

    Saved as the hub's checkpoint is: BertForPreTraining's weights (the pooler and the next-sentence
    head beside the MLM head) under a config naming BertForMaskedLM, so a classifier loaded from it
    gets a pooler, and an MLM leaves the same weights unused, as with the real checkpoint.
    """
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForPreTraining

    from mlmlib.minilm import minilm_dir

    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()))
    tokenizer.model_max_length = 512  # bert-base-uncased's
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model = BertForPreTraining(config)
    model.save_pretrained(folder)
    config_file = folder / "config.json"  # save_pretrained names the class saved; the hub's names BertForMaskedLM
    config_file.write_text(json.dumps({**json.loads(config_file.read_text()), "architectures": ["BertForMaskedLM"]},
                                      indent=2, sort_keys=True) + "\n")
    tokenizer.save_pretrained(folder)


@cache
def _fsmt_vocabulary() -> tuple[dict[str, int], tuple[tuple[str, str], ...]]:
    """FSMT's vocabulary (specials first, as fairseq numbers them) and no merges: every word is cut
    into its characters, the last one ending in </w>. The characters are those of stand-in text
    tokenised as FSMTTokenizer tokenises (Moses, escaped); a character-level vocabulary is all a
    random translator needs, and it spares us a BPE learner of our own."""
    from sacremoses import MosesTokenizer

    moses = MosesTokenizer(lang="en")
    texts = [*austen_sentences("train")[:150], *(t for t, _ in reviews("train")[:30])]
    words = {w for t in texts for w in moses.tokenize(t, aggressive_dash_splits=True, escape=True)}
    symbols = {s for w in words for s in (*w[:-1], w[-1] + "</w>", w[-1])}
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for symbol in sorted(symbols):
        vocab.setdefault(symbol, len(vocab))
    return vocab, ()


def tiny_fsmt(name: str, folder: Path) -> None:
    """A tiny, seeded FSMT translator for a wmt19 name (its language pair from the name) with its tokenizer."""
    import torch
    from transformers import FSMTConfig, FSMTForConditionalGeneration, FSMTTokenizer

    langs = name.rsplit("-", 2)[-2:]
    vocab, merges = _fsmt_vocabulary()
    folder.mkdir(parents=True, exist_ok=True)
    for file in ("vocab-src.json", "vocab-tgt.json"):
        (folder / file).write_text(json.dumps(vocab, ensure_ascii=False, indent=1))
    (folder / "merges.txt").write_text("".join(f"{a} {b}\n" for a, b in merges))
    tokenizer = FSMTTokenizer(langs=langs, src_vocab_file=str(folder / "vocab-src.json"),
                              tgt_vocab_file=str(folder / "vocab-tgt.json"), merges_file=str(folder / "merges.txt"))
    config = FSMTConfig(langs=langs, src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), d_model=16,
                        encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                        encoder_ffn_dim=32, decoder_ffn_dim=32, architectures=["FSMTForConditionalGeneration"])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model = FSMTForConditionalGeneration(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
